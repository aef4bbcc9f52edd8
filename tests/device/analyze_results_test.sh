#!/usr/bin/env bash
# The device-validation analysis (scripts/device/analyze_results.py) on a synthetic results folder
# (tests/device/synth_results.py): targets found by hook, predictions equal to the measured
# makespans up to the spin's own launch-call time, slack classes, traces read from traces.tar,
# and the NVML facts written into a copy of the GPU catalog. No GPU, no torch.
#   analyze_results_test.sh EMO_BINARY
set -euo pipefail
emo=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/synth_results.py" "$tmp/gen" >/dev/null
mkdir "$tmp/res"
# As validate.sh returns them: base0 beside, the other traces in traces.tar.
cp "$tmp/gen/workload.json" "$tmp/gen/nvml.json" "$tmp/gen/base0.pt.trace.json.gz" "$tmp/res/"
(cd "$tmp/gen" && tar cf "$tmp/res/traces.tar" S1.pt.trace.json.gz S2.pt.trace.json.gz \
  S3.pt.trace.json.gz S4.pt.trace.json.gz base1.pt.trace.json.gz)
cp "$root/data/gpu_catalog.json" "$tmp/catalog.json"
python3 "$root/scripts/device/analyze_results.py" "$tmp/res" --emo "$emo" --json "$tmp/r.json" \
  --md "$tmp/r.md" --catalog "$tmp/catalog.json" >/dev/null
python3 - "$tmp/r.json" "$tmp/catalog.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cat = json.load(open(sys.argv[2]))
ex = {e["id"]: e for e in r["experiments"]}
assert set(ex) == {"S1", "S2", "S3", "S4"}, ex.keys()
assert set(r["baselines"]) == {"base0", "base1"}, r["baselines"].keys()
assert r["max_abs_error_trace"] < 2e-4, r["max_abs_error_trace"]   # 4 us launch call / 23.5 ms
assert ex["S1"]["error_cal"] == 0.0 and ex["S3"]["error_cal"] == 0.0
assert ex["S1"]["hooks"]["fwd.block1.mlp"]["target"]["name"] == "mlp_gemm"
assert ex["S4"]["hooks"]["bwd"]["target"]["name"] == "bwd_gemm", "launched by another thread"
assert ex["S4"]["hooks"]["side.prefetch"]["target"]["name"].startswith("Memcpy HtoD")
assert ex["S1"]["hooks"]["fwd.block1.mlp"]["emo_class"] == "critical"
assert ex["S2"]["hooks"]["side.teacher"]["emo_class"] == "within slack"
assert ex["S3"]["hooks"]["side.teacher"]["emo_class"] == "exceeds slack"
assert ex["S1"]["predicted_share_of_delay"] == 1.0
assert ex["S2"]["predicted_share_of_delay"] == 0.0
assert 0.3 < ex["S3"]["predicted_share_of_delay"] < 0.4
for e in ex.values():
    assert not e["notes"], e["notes"]
    assert e["base_replay_error_max"] == 0 and e["measured_replay_error_max"] == 0
    for h in e["hooks"].values():
        assert h["spins_found"] == 4 and h["trace_spin_ns"] == h["calibrated_ns"], h
        assert str(h["spin_stream"]) == str(h["target"]["stream"]), h
h200 = next(g for g in cat["gpus"] if g["id"].startswith("H200"))
assert h200["idle_power_w"] == 75.5 and h200["busy_power_w"] == 650.2
assert h200["sm_clock_mhz"] == [345, 1965, 1980] and h200["energy_counter_update_ms"] == 25.0
assert h200["idle_power_w_source"].startswith("measured: NVML read-only")
print("analyze_results: ok")
PY
grep -q '| S3 |' "$tmp/r.md"

# The NVML probe on the fake pynvml (idle phase only): it finds the 20 ms counter period and 75 W.
PYTHONPATH="$here/fake_pynvml" python3 "$root/scripts/device/nvml_probe.py" --out "$tmp/nvml.json" \
  --idle-s 0.3 --busy-s 0 --copy-s 0 >/dev/null
python3 - "$tmp/nvml.json" <<'PY'
import json, sys
i = json.load(open(sys.argv[1]))["idle"]
assert 15 < i["energy_counter_update"]["median_ms"] < 25, i["energy_counter_update"]
assert 70 < i["power_w_from_energy"] < 80, i["power_w_from_energy"]
print("nvml_probe: ok")
PY
# Read-only on the device: no script there may set clocks, limits or modes.
if grep -nE 'nvmlDevice(Set|Reset|Clear)|nvidia-smi[^|]*(-(lgc|rgc|lmc|rmc|pl|pm|ac|rac|c|r|mig)\b|--lock|--reset|--applications-clocks|--power-limit|--persistence-mode|--compute-mode)' \
    "$root"/scripts/device/*; then
  echo "a device script changes a GPU setting" >&2
  exit 1
fi
