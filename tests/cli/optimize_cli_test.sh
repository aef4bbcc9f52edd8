#!/usr/bin/env bash
# `emo optimize`: end to end on real traces (JSON keys and invariants, the policy file, the HTML
# report drawn in headless Chromium) and bad input (exit 2, one line on stderr naming the file or
# option). Usage: optimize_cli_test.sh PATH/TO/emo
set -u
EMO=${1:?usage: optimize_cli_test.sh EMO_BINARY}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_data, DATA
a="$DATA/kineto/hta_cuda_event_sync_multi_stream.json.gz"
b="$DATA/kineto/hta_sampled_2rank_rank0.json.gz"
require_data "$a" "$b"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

if "$EMO" optimize "$b" --gpu A100-SXM4-80GB --max-slowdown 0.05 --policy "$out/policy.json" \
     --json "$out/r.json" --report "$out/report.html" --overlay "$out/overlay.json" > "$out/r.txt" 2> "$out/r.err"; then
  ok "optimize runs"
else
  bad "optimize exited non-zero: $(cat "$out/r.err")"
fi
grep -q "SIMULATED" "$out/r.txt" && grep -q "simulated device" "$out/r.txt" && ok "text says simulated" || bad "text not labelled simulated"
if python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
r = json.load(open(f"{d}/r.json"))
for k in ("baseline", "static_best", "emo", "savings", "slowdown", "packs", "profiled_runs", "simulated"):
    assert k in r, k
assert r["simulated"] is True
for k in ("time_ns", "energy_j"):
    assert r["baseline"][k] > 0 and r["emo"][k] > 0 and r["static_best"][k] > 0, k
assert r["static_best"]["clock_mhz"] > 0
# The target holds on the (simulated) device, and EMO saves energy.
assert r["slowdown"] <= 0.05 + 1e-9, r["slowdown"]
assert 0 < r["savings"] < 1, r["savings"]
assert abs(r["savings"] - (1 - r["emo"]["energy_j"] / r["baseline"]["energy_j"])) < 1e-9
assert r["packs"] >= 1 and r["profiled_runs"] >= 3 * r["packs"]
# The target ladder up to +5 % (docs/optimize.md "A looser target never saves less"): 7 steps.
assert r["target_ladder"] == [0, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05], r["target_ladder"]
# K = 3 clocks per pack, then at most 2 more per pack where the plan decides, one more per further step.
refined = r["profiling"]["refinement_profiles"]
steps = len(r["target_ladder"])
assert r["profiling"]["pack_clock_profiles"] == 3 * r["packs"] + refined and 0 <= refined <= (2 + steps - 1) * r["packs"], r["profiling"]
assert r["profiling"]["every_clock_profiles"] == 81 * r["packs"]   # A100: 210..1410 MHz in 15 MHz steps
assert len(r["frontier"]) >= 1  # one point when the fastest schedule is also the cheapest
# CPU-bound trace: EMO is at least as cheap as the best static clock within the target (both
# measured on the simulated device). Until stop 38 the lowest-clock probe closed a 0.27-point gap
# here; with the switch heads priced (docs/optimize.md) EMO's own plan gets there without it.
assert r["probe_runs"] in (0, 1), r["probe_runs"]
assert r["savings"] >= r["static_savings"] - 1e-9, (r["savings"], r["static_savings"])
ts = [p["time_s"] for p in r["frontier"]]; es = [p["energy_j"] for p in r["frontier"]]
assert ts == sorted(ts) and es == sorted(es, reverse=True), "frontier not Pareto-ordered"
p = json.load(open(f"{d}/policy.json"))
assert p["schema"] == "emo.policy/1" and p["gpu"] == "A100-SXM4-80GB" and p["simulated"] is True
assert sum(len(g["packs"]) for g in p["gpus"]) == r["packs"]
for g in p["gpus"]:
    offs = [k["start_offset_ns"] for k in g["packs"]]
    assert offs == sorted(offs)
    for k in g["packs"]:
        assert k["clock_mhz"] in r["profiled_clocks_mhz"] or 645 <= k["clock_mhz"] <= 1410
        assert k["start"]["op_name"] and k["ops"] >= 1
o = json.load(open(f"{d}/overlay.json"))
assert any("EMO packs" in str(e.get("args", {}).get("name", "")) for e in o["traceEvents"] if e.get("ph") == "M")
# Each pack event carries the policy's clock for that pack (args.clock_mhz): per GPU, the overlay's
# packs in time order against the policy's packs (start order), paired by their op counts.
pack_pid = {e["pid"]: int(e["args"]["name"].rsplit(" ", 1)[1]) for e in o["traceEvents"]
            if e.get("ph") == "M" and str(e.get("args", {}).get("name", "")).startswith("EMO packs, GPU ")}
events = {}
for e in o["traceEvents"]:
    if e.get("ph") == "X" and e.get("pid") in pack_pid:
        events.setdefault(pack_pid[e["pid"]], []).append(e)
assert sum(map(len, events.values())) == r["packs"], events.keys()
for g in p["gpus"]:
    ev = sorted(events[g["device"]], key=lambda e: e["ts"])
    assert [e["args"]["ops"] for e in ev] == [k["ops"] for k in g["packs"]]
    assert [e["args"]["clock_mhz"] for e in ev] == [k["clock_mhz"] for k in g["packs"]], g["device"]
PY
then ok "JSON, policy and overlay"; else bad "JSON, policy or overlay content"; fi

# Zero extra latency: slack alone still saves energy on ResNet-50 (measured 30.17 %, simulated),
# and the predicted frontier starts at the baseline's time (its fast end filled by the exact
# local search).
r50="$DATA/kineto/kineto_resnet50_2021.json.gz"
if [[ -f "$r50" ]] && "$EMO" optimize "$r50" --gpu A100-SXM4-80GB --max-slowdown 0 --json "$out/z.json" >/dev/null 2>&1 &&
   python3 -c "
import json,sys; d=json.load(open('$out/z.json'))
first = min(p['time_s'] for p in d['frontier'])
sys.exit(0 if d['slowdown'] <= 1e-5 and d['savings'] > 0.2 and d['static_savings'] == 0 and first * 1e9 <= d['target_ns'] * 1.002 else 1)"; then
  ok "--max-slowdown 0 saves energy from slack alone"
else
  bad "--max-slowdown 0 on ResNet-50"
fi

# Same seed, same answer; another seed, another simulated device.
"$EMO" optimize "$b" --gpu A100-SXM4-80GB --max-slowdown 0.05 --json "$out/r2.json" >/dev/null 2>&1
"$EMO" optimize "$b" --gpu A100-SXM4-80GB --max-slowdown 0.05 --seed 7 --json "$out/r3.json" >/dev/null 2>&1
if python3 -c "
import json,sys; a,b,c=[json.load(open(f'$out/{n}.json')) for n in ('r','r2','r3')]
sys.exit(0 if a['emo']==b['emo'] and a['emo']!=c['emo'] else 1)"; then ok "deterministic per seed"; else bad "seed behaviour"; fi

# The policy is accepted by the runtime (the policy reader's checks).
if "$EMO" run --policy "$out/policy.json" --dry-run --no-tracer -- true >/dev/null 2>"$out/run.err" ||
   grep -q "NVIDIA driver\|libnvidia-ml" "$out/run.err"; then ok "policy read by emo run"; else bad "emo run rejected the policy: $(cat "$out/run.err")"; fi

# The HTML report draws in headless Chromium.
if command -v chromium >/dev/null; then
  dom=$(chromium --headless --no-sandbox --disable-gpu --user-data-dir="$out/chr" --dump-dom "file://$out/report.html" 2>/dev/null)
  if [[ "$dom" =~ data-drawn=\"([0-9]+),([0-9]+)\" ]] && ((BASH_REMATCH[1] > 0 && BASH_REMATCH[2] > 2)) &&
     [[ "$dom" == *'class="pack"'* && "$dom" == *"Simulated device"* && "$dom" == *'class="static-curve"'* &&
        "$dom" == *'class="frontier-'* && "$dom" == *'static-best-marker'* && "$dom" == *'class="target-line"'* &&
        "$dom" == *'class="critical-path"'* && "$dom" == *'class="power-line"'* && "$dom" == *'id="pack-table"'* ]]; then
    ok "report draws (${BASH_REMATCH[1]} rects, ${BASH_REMATCH[2]} points)"
  else
    bad "report did not draw"
  fi
elif [[ "${CI:-}" == "true" ]]; then bad "chromium missing in CI"; else echo "*** SKIPPED LOUDLY: chromium not installed; report drawing not checked ***"; fi

expect_error negative_slowdown "--max-slowdown -0.1: expected a fraction >= 0" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown -0.1
expect_error nvml_option_with_sim "only applies with --device nvml" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --gpu-index 1
expect_error unwritable_json "does not exist" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --json "$out/no/such/dir/r.json"
expect_error negative_seed "--seed" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --seed -1
expect_error huge_slowdown "fraction is expected" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 50
expect_error missing_slowdown "max-slowdown" "$EMO" optimize "$a" --gpu A100-SXM4-80GB
expect_error no_trace "no trace given" "$EMO" optimize --max-slowdown 0.05
expect_error example_with_trace "--example: takes no trace" "$EMO" optimize --example "$a"
expect_error nvml_device "--device nvml" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --device nvml
# Stop 50: two outputs to one place were written over each other (--policy and --json to one
# file), or mixed on stdout; '-' is --json's alone ("stdout only, no text").
expect_error same_output_file "--json: writes to '$out/same.json' as --policy does" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --policy "$out/same.json" --json "$out/same.json"
expect_error same_output_file_spelled_apart "--report: writes to '$out/./r.html' as --json does" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --json "$out/r.html" --report "$out/./r.html"
expect_error policy_to_stdout "--policy: '-' (stdout) is for --json only" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --policy - --json -
expect_error overlay_to_stdout "--overlay: '-' (stdout) is for --json only" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --overlay -
expect_error analyze_same_output "--overlay: writes to '$out/a.json' as --json does" "$EMO" analyze "$a" --json "$out/a.json" --overlay "$out/a.json"
[[ ! -e "$out/same.json" && ! -e "$out/r.html" && ! -e "$out/a.json" ]] && ok "nothing written when the outputs collide" || bad "an output was written before the error"
expect_error bad_device "device" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --device tpu
expect_error one_clock "profile-clocks" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --profile-clocks 1
expect_error unknown_gpu "unknown GPU" "$EMO" optimize "$a" --gpu Z9000 --max-slowdown 0.05
expect_error empty_gpu "an empty name" "$EMO" optimize "$a" --gpu "" --max-slowdown 0.05
expect_error gpu_not_in_catalog "not in the GPU catalog" "$EMO" optimize "$DATA/kineto/hta_amd_mi250.json.gz" --max-slowdown 0.05
expect_error missing_trace "nope.json" "$EMO" optimize "$out/nope.json" --gpu A100-SXM4-80GB --max-slowdown 0.05
expect_error bad_min_pack "min-pack-ms" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --min-pack-ms -3
expect_error bad_window "ProfilerStep#99" "$EMO" optimize "$a" --gpu A100-SXM4-80GB --max-slowdown 0.05 --window ProfilerStep#99

# Issue 19: --max-slowdown 3% is 0.03; the output names the catalog entry, why, and retargeting.
if "$EMO" optimize "$a" --max-slowdown 3% --gpu "Tesla V100-SXM2-16GB" > "$out/v.txt" 2> "$out/v.err"; then
  grep -q "target: +3.0 %" "$out/v.txt" && ok "3% is a 3 % target" || bad "3% target: $(grep target "$out/v.txt")"
  grep -q "GPU model: catalog entry V100-SXM2-32GB (--gpu Tesla V100-SXM2-16GB: assumption" "$out/v.txt" &&
    ok "catalog entry and assumption stated" || bad "no catalog note: $(cat "$out/v.txt")"
  grep -q "retargeting: the trace was recorded on .*times at its max clock" "$out/v.txt" &&
    ok "retargeting stated" || bad "no retargeting note: $(cat "$out/v.txt")"
  grep -q "clock switches per window (whole trace)" "$out/v.txt" && ok "switches per window" || bad "switch wording"
else
  bad "optimize --max-slowdown 3% failed: $(cat "$out/v.err")"
fi

# --example (docs/optimize.md): the main job's command line (scripts/main-job.sh: the repository's
# example trace, A100-SXM4-80GB, 0.05) without a trace; the same JSON. A copy of the executable
# reads the example from ../data/traces beside its own folder, before the source tree's.
repo=$(cd "$(dirname "$0")/../.." && pwd)
example=$repo/data/traces/kineto_resnet50_2021.json.gz
"$EMO" optimize --example --json "$out/ex.json" > "$out/ex.txt" 2> "$out/ex.err" || bad "--example failed: $(cat "$out/ex.err")"
"$EMO" optimize "$example" --gpu A100-SXM4-80GB --max-slowdown 0.05 --json "$out/main.json" > /dev/null 2>&1
cmp -s "$out/ex.json" "$out/main.json" && ok "--example = the main job's command line" \
  || bad "--example differs from the main job: $(diff "$out/ex.json" "$out/main.json" | head -5)"
head -1 "$out/ex.txt" | grep -q "^$example" && ok "--example names the repository's trace" || bad "--example text: $(head -1 "$out/ex.txt")"
mkdir -p "$out/inst/bin" "$out/inst/data/traces"
cp "$EMO" "$out/inst/bin/emo"
cp "$example" "$out/inst/data/traces/"
"$out/inst/bin/emo" optimize --example --max-slowdown 0.1 > "$out/inst.txt" 2> "$out/inst.err" || bad "copied emo --example: $(cat "$out/inst.err")"
head -1 "$out/inst.txt" | grep -q "^$out/inst/data/traces/kineto_resnet50_2021.json.gz" \
  && ok "--example reads the trace beside the executable's folder first" || bad "copied emo --example: $(head -1 "$out/inst.txt")"
grep -q "target: +10.0 %" "$out/inst.txt" && ok "--example takes --max-slowdown" || bad "--example target: $(grep target "$out/inst.txt")"

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
