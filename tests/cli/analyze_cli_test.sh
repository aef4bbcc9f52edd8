#!/usr/bin/env bash
# `emo analyze`: the --json keys, the --overlay file, a sync record naming no event stream (issue
# 31), and bad input (exit 2, one line on stderr).
# Usage: analyze_cli_test.sh PATH/TO/emo
set -u
EMO=${1:?usage: analyze_cli_test.sh EMO_BINARY}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_data, DATA
a="$DATA/kineto/hta_cuda_event_sync.json.gz"
b="$DATA/kineto/hta_cuda_event_sync_multi_stream.json.gz"
require_data "$a" "$b"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

# --- JSON and overlay -------------------------------------------------------------------------
if "$EMO" analyze "$a" --annotation ProfilerStep --instance 0 --json - --what-if 'gpu:x2' \
     --what-if 'kind=kernel:x1.5;name~spin:+1us' > "$out/a.json" 2> "$out/a.err" &&
   "$EMO" analyze "$b" --json "$out/b.json" --overlay "$out/overlay.json" > "$out/b.txt" 2> "$out/b.err"; then
  ok "analyze runs"
else
  bad "analyze exited non-zero: $(cat "$out/a.err" "$out/b.err")"
fi
[[ ! -s "$out/a.err" && ! -s "$out/b.err" ]] && ok "nothing on stderr" || bad "stderr: $(cat "$out/a.err" "$out/b.err")"
if python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
a = json.load(open(f"{d}/a.json"))   # --json - : stdout holds only the JSON
b = json.load(open(f"{d}/b.json"))
for j in (a, b):
    for k in ("makespan_ns", "replay_error", "critical_path_ns", "critical_path", "edges", "gpus",
              "bound_by", "what_if", "window", "nodes", "graph"):
        assert k in j, f"missing key {k}"
    assert isinstance(j["makespan_ns"], int) and j["makespan_ns"] > 0
    assert 0 <= j["replay_error"] <= 0.01, j["replay_error"]
    assert 0 < j["critical_path_ns"] <= j["makespan_ns"]
    for step in j["critical_path"]:
        assert {"id", "name", "kind", "start_ns", "dur_ns", "via"} <= set(step), step
        if step["kind"] in ("kernel", "memcpy", "memset", "collective"):
            assert isinstance(step["stream"], int) and isinstance(step["device"], int), step
    assert j["critical_path"][0]["via"] is None
    types = ("stream_order", "program_order", "nesting", "launch", "host_sync", "event_wait")
    for t in types:
        assert isinstance(j["edges"][t], int) and isinstance(j["edges"]["inferred"][t], int), t
        assert 0 <= j["edges"]["inferred"][t] <= j["edges"][t]
    cats = {"cpu", "gpu_compute", "communication", "launch_overhead", "sync_wait", "idle",
            "before_window"}
    for key in ("bound_by", "bound_by_makespan", "bound_by_critical_path"):
        assert set(j[key]) == cats, j[key]
        assert abs(sum(j[key].values()) - 1) < 1e-9, j[key]
        assert min(j[key].values()) >= 0, j[key]
    assert j["bound_by_critical_path"][j["path_lead"]["category"]] <= j["bound_by"][j["path_lead"]["category"]]
    for g in j["gpus"]:
        assert {"device", "busy_ns", "critical_busy_ns", "slack_ns", "slack_windows"} <= set(g)
        assert g["slack_ns"] == g["busy_ns"] - g["critical_busy_ns"]
        assert g["slack_ns"] == sum(e - s for s, e in g["slack_windows"])
# Values known from the trace (see tests/timing/real_traces_test.cpp).
assert a["window"]["label"] == "ProfilerStep (instance 0)", a["window"]
names = [s["name"] for s in a["critical_path"]]
i = next(k for k, n in enumerate(names) if "spin_kernel" in n)
assert names[i + 1] == "cudaEventSynchronize" and a["critical_path"][i + 1]["via"] == "host_sync"
assert a["critical_path"][i]["stream"] == 7
assert [w["spec"] for w in a["what_if"]] == ["gpu:x2", "kind=kernel:x1.5;name~spin:+1us"]
for w in a["what_if"]:
    assert isinstance(w["makespan_ns"], int) and w["makespan_ns"] >= a["makespan_ns"], w
assert b["edges"]["event_wait"] == 1 and b["what_if"] == []
# Overlay: a Chrome trace whose events all have known phases and numeric timestamps.
o = json.load(open(f"{d}/overlay.json"))
ev = o["traceEvents"]
assert ev, "empty overlay"
phases = {e["ph"] for e in ev}
assert phases <= {"X", "s", "f", "M"}, phases
assert {"X", "M"} <= phases
for e in ev:
    if e["ph"] != "M":
        assert isinstance(e["ts"], (int, float)), e
    if e["ph"] == "X":
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
crit = [e for e in ev if e.get("cat") == "critical_path" and e["ph"] == "X"]
assert len(crit) == len(b["critical_path"]), (len(crit), len(b["critical_path"]))
flows = [e for e in ev if e["ph"] in "sf"]
assert len(flows) == 2 * (len(crit) - 1)
slack_ops = [e for e in ev if e["ph"] == "X" and "slack_ns" in e.get("args", {})]
assert len(slack_ops) == b["nodes"], (len(slack_ops), b["nodes"])
print("json and overlay checks passed")
PY
then ok "json keys and overlay"; else bad "json keys and overlay"; fi
grep -q "critical path" "$out/b.txt" && ok "text summary printed alongside --json FILE" || bad "no text summary"

# --- issue 31: an Event Sync record without wait_on_stream waits for every stream --------------
# The issue's trace (µs): a 1 ms GEMM on stream 7 launched at 0, cudaEventRecord at 6, and a
# cudaEventSynchronize [9, 1012) whose record names the record's correlation but no event stream
# (then the same with "wait_on_stream": 7). Either way the sync waits for the GEMM: GPU-bound
# (gpu_compute 1000 of 1012 µs), no slack; only the first says so in one line and counts it.
issue31() {  # issue31 FILE EXTRA_SYNC_ARGS
  cat > "$1" <<EOF
{"traceEvents": [
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": 0, "dur": 5, "args": {"correlation": 1}},
 {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7, "ts": 10, "dur": 1000, "args": {"device": 0, "stream": 7, "correlation": 1}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 100, "tid": 1, "ts": 6, "dur": 2, "args": {"correlation": 2}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventSynchronize", "pid": 100, "tid": 1, "ts": 9, "dur": 1003, "args": {"correlation": 3}},
 {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": -1, "ts": 9, "dur": 1003, "args": {"cuda_sync_kind": "Event Sync", $2"wait_on_cuda_event_record_corr_id": 2, "stream": -1, "correlation": 3, "device": 0}}]}
EOF
}
issue31 "$out/i31.json" ""
issue31 "$out/i31_stream.json" '"wait_on_stream": 7, '
line="1 sync records name no event stream: waited for every stream"
for f in i31 i31_stream; do
  "$EMO" analyze "$out/$f.json" --json "$out/$f.out.json" > "$out/$f.txt" 2> "$out/$f.err" || bad "$f: $(cat "$out/$f.err")"
done
grep -q "$line" "$out/i31.txt" && ! grep -q "name no event stream" "$out/i31_stream.txt" &&
  ok "unknown event stream: one line in the text" || bad "unknown event stream line: $(cat "$out/i31.txt")"
if python3 - "$out/i31.out.json" "$out/i31_stream.out.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for j, unknown in ((a, 1), (b, 0)):
    assert j["graph"]["unknown_event_streams"] == unknown, j["graph"]
    assert j["edges"]["host_sync"] == 1 and j["edges"]["inferred"]["host_sync"] == unknown, j["edges"]
    assert j["makespan_ns"] == 1012000, j["makespan_ns"]
    assert abs(j["bound_by"]["gpu_compute"] - 1000 / 1012) < 1e-9, j["bound_by"]
    assert [g["slack_ns"] for g in j["gpus"]] == [0], j["gpus"]
PY
then ok "unknown event stream: GPU-bound, no slack, counted"; else bad "unknown event stream json"; fi

# --- bad input: exit 2, one line on stderr ------------------------------------------------------
check() { local name=$1 want=$2; shift 2; expect_error "$name" "$want" "$EMO" analyze "$@"; }
check unknown_window "no annotation named 'NoSuchStep'" "$a" --window NoSuchStep
check instance_out_of_range "has 1 instance(s)" "$a" --annotation ProfilerStep --instance 5
check bad_what_if "--what-if kind=gpu:x2: unknown kind 'gpu'" "$a" --what-if 'kind=gpu:x2'
check bad_what_if_unit "unknown unit" "$a" --what-if 'all:+3 parsecs'
check missing_file "does_not_exist.json" "$out/does_not_exist.json"
check bad_overlay_path "cannot write: directory '$out/no/such/dir' does not exist" "$a" --overlay "$out/no/such/dir/o.json"

# Usage errors (CLI11) also exit 2 and name the conflict on the first line. CLI11 adds a second
# line ("Run with --help for more information."), so only the first line is checked here.
usage() {  # usage NAME EXPECTED_TEXT ARGS...
  local name=$1 want=$2; shift 2
  local err rc
  err=$("$EMO" analyze "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -eq 2 && "$(printf '%s\n' "$err" | head -n1)" == *"$want"* ]]; then
    ok "$name"
  else
    bad "$name: rc=$rc stderr=<<$err>>"
  fi
}
usage window_and_annotation "excludes" "$a" --window ProfilerStep#100 --annotation ProfilerStep
usage instance_without_annotation "requires --annotation" "$a" --instance 1
usage durations_window_without_from "requires --durations-from" "$a" --durations-window ProfilerStep#1

# --durations-from: step 1 of the v100 trace predicted from step 2's graph with its own durations
# (the bench-fidelity case: within 0.1 %, every GPU op matched), and the text says so.
v100="$DATA/kineto/hta_v100_ns_resolution.json.gz"
require_data "$v100"
if "$EMO" analyze "$v100" --annotation ProfilerStep --instance 2 --durations-from "$v100" \
     --durations-instance 1 --json "$out/d.json" > "$out/d.txt" 2> "$out/d.err" &&
   python3 - "$out/d.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["durations_from"]
assert d["gpu_matched"] == d["gpu_ops"] == d["source_gpu_ops"] > 1000, d
assert abs(d["error"]) < 0.001, d
assert d["predicted_makespan_ns"] > 0 and d["source_makespan_ns"] > 0, d
PY
then
  grep -q "predicted     makespan .* the source window recorded .*: error" "$out/d.txt" && ok "durations_from" ||
    bad "durations_from text: $(cat "$out/d.txt")"
else
  bad "durations_from: $(cat "$out/d.err")"
fi

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
