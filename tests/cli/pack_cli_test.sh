#!/usr/bin/env bash
# `emo pack`: the --json keys, the --overlay pack track, and bad input (exit 2, one line on
# stderr naming the file or option). Usage: pack_cli_test.sh PATH/TO/emo
set -u
EMO=${1:?usage: pack_cli_test.sh EMO_BINARY}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_data, DATA
a="$DATA/kineto/hta_cuda_event_sync_multi_stream.json.gz"
require_data "$a"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

if "$EMO" pack "$a" --json - --min-pack-ms 0.001 > "$out/a.json" 2> "$out/a.err" &&
   "$EMO" pack "$a" --json "$out/b.json" --overlay "$out/overlay.json" > "$out/b.txt" 2> "$out/b.err"; then
  ok "pack runs"
else
  bad "pack exited non-zero: $(cat "$out/a.err" "$out/b.err")"
fi
[[ ! -s "$out/a.err" && ! -s "$out/b.err" ]] && ok "nothing on stderr" || bad "stderr: $(cat "$out/a.err" "$out/b.err")"
grep -q "contraction" "$out/b.txt" && ok "text summary" || bad "no text summary"
if python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
a = json.load(open(f"{d}/a.json"))
b = json.load(open(f"{d}/b.json"))
for j in (a, b):
    for k in ("ops", "packs", "compression_ratio", "forced_short", "contraction_error", "contraction",
              "cuts", "gpus", "min_pack_ns", "makespan_ns", "pack_graph", "window"):
        assert k in j, f"missing key {k}"
    assert j["ops"] == 6, j["ops"]   # 3 kernels + 3 memsets
    assert 1 <= j["packs"] <= j["ops"]
    assert abs(j["compression_ratio"] - j["ops"] / j["packs"]) < 1e-9
    assert j["contraction_error"] == 0, j["contraction_error"]
    assert [c["case"] for c in j["contraction"]["uniform"]] == ["x1", "x1.1", "x1.3", "x2"]
    assert sum(j["cuts"].values()) == j["packs"]
    n = 0
    for g in j["gpus"]:
        for p in g["packs"]:
            assert {"id", "start_ns", "end_ns", "dur_ns", "span_ns", "ops", "slack_ns", "critical",
                    "starts_at", "forced_short"} <= set(p), p
            assert p["dur_ns"] == p["end_ns"] - p["start_ns"] and p["slack_ns"] >= 0
            n += p["ops"]
    assert n == j["ops"]
assert a["min_pack_ns"] == 1000 and a["min_pack_source"] == "--min-pack-ms"
assert b["min_pack_ns"] == 20000000, b["min_pack_ns"]
o = json.load(open(f"{d}/overlay.json"))
names = [e["args"]["name"] for e in o["traceEvents"] if e.get("ph") == "M"]
assert "EMO packs, GPU 0" in names, names
packs = [e for e in o["traceEvents"] if e.get("cat") == "emo"]
assert len(packs) == b["packs"], (len(packs), b["packs"])
assert all("clock_mhz" not in e["args"] for e in packs)  # emo pack chooses no clock
PY
then ok "JSON keys, values and overlay pack track"; else bad "JSON or overlay"; fi

# --- bad input: exit 2, exactly one line on stderr naming the problem ------------------------
expect_error "missing file" "no_such.json" "$EMO" pack "$out/no_such.json"
expect_error "min pack not a number" "--min-pack-ms abc" "$EMO" pack "$a" --min-pack-ms abc
expect_error "min pack zero" "--min-pack-ms 0" "$EMO" pack "$a" --min-pack-ms 0
expect_error "min pack negative" "--min-pack-ms -5" "$EMO" pack "$a" --min-pack-ms=-5
expect_error "min pack nan" "--min-pack-ms nan" "$EMO" pack "$a" --min-pack-ms nan
expect_error "min pack huge" "--min-pack-ms 1e9" "$EMO" pack "$a" --min-pack-ms 1e9
expect_error "unknown window" "no annotation" "$EMO" pack "$a" --window NoSuchStep
expect_error "overlay unwritable" "/nonexistent/dir/o.json" "$EMO" pack "$a" --overlay /nonexistent/dir/o.json

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
