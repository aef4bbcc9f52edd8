#!/usr/bin/env bash
# Issue 32: pack starts at copies and inside CUDA graphs, through `emo run --no-tracer` with the
# recording NVML stand-in. The workload plays the tracer: it writes the progress lines the tracer
# would write for a copy and a graph launch. Checks the watch list emo run hands it, the switch
# times against those worked out by hand, the seen/expected counts and their warnings, and the
# refusal of a policy whose starts cannot be observed.
# Usage: observable_starts_test.sh PATH/TO/emo PATH/TO/libemo_fake_nvml.so
set -u
EMO=${1:?usage: observable_starts_test.sh EMO FAKE_NVML}
FAKE=${2:?usage: observable_starts_test.sh EMO FAKE_NVML}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export EMO_NVML_LIBRARY=$FAKE EMO_FAKE_NVML_LOG=$dir/nvml.log EMO_STATE_DIR=$dir/state
unset EMO_FAKE_NVML_FAIL EMO_FAKE_NVML_GPUS
source "$(dirname "$0")/check_lib.sh"
require_built "$FAKE"
require_tool python3
setters() { grep -E '^nvmlDevice(Set|Reset)' "$dir/nvml.log" 2>/dev/null | tr '\n' ';'; }

# Packs (switch latency 2 ms, default 1410 MHz):
#   0 at  0 ms, 10 ms, 1200 MHz: starts at the iteration's first host-to-device copy
#   1 at 10 ms, 10 ms,  990 MHz: kernel "gemm" (never reported below)
#   2 at 60 ms, 10 ms, 1095 MHz: op 2 of launch 1 of graph (3 kernels, first "g0"), launch at 24 ms
#   3 at 70 ms, 10 ms, 1005 MHz: op 3 of the same launch
python3 - "$dir/p.json" "$dir/old.json" <<'PY'
import json, sys
def pack(i, start, offset, mhz):
    return {"index": i, "start": start, "start_offset_ns": offset * 10**6, "duration_ns": 10**7, "ops": 3,
            "clock_mhz": mhz, "predicted_energy_j": 1.0}
graph = lambda index: {"op_name": f"g{index}", "stream": 7, "ordinal": 1, "observed_by": "graph",
                       "anchor_offset_ns": 24 * 10**6, "graph": {"kernels": 3, "first_kernel": "g0", "index": index}}
packs = [pack(0, {"op_name": "Memcpy HtoD (Pageable -> Device)", "stream": 7, "ordinal": 0, "observed_by": "copy"}, 0, 1200),
         pack(1, {"op_name": "gemm", "stream": 7, "ordinal": 0, "observed_by": "kernel"}, 10, 990),
         pack(2, graph(2), 60, 1095), pack(3, graph(3), 70, 1005)]
doc = {"schema": "emo.policy/1", "emo_version": "0.1.0", "gpu": "A100-SXM4-80GB", "trace": "t.json",
       "iteration_marker": "", "max_slowdown": 0.05, "latency_target_ns": 90 * 10**6,
       "baseline": {"time_ns": 80 * 10**6, "energy_j": 4.0}, "predicted": {"time_ns": 82 * 10**6, "energy_j": 3.0},
       "switch_latency_ms": 2, "simulated": True,
       "gpus": [{"device": 0, "rank": -1, "default_clock_mhz": 1410, "packs": packs}]}
open(sys.argv[1], "w").write(json.dumps(doc))
for k in packs:  # as written before issue 32: no observed_by (pack 0's copy cannot be followed)
    k["start"] = {f: k["start"][f] for f in ("op_name", "stream", "ordinal")}
open(sys.argv[2], "w").write(json.dumps(doc))
PY

# --- a copy and a graph launch ------------------------------------------------------------------
# The workload plays the tracer: the copy reached at t0, the graph launch at t1 = t0 + 24 ms (as
# predicted), each line stamped with its CLOCK_MONOTONIC time as the tracer stamps it, so that a
# loaded machine delays the lines but not the times the planner works from. Pack 2's line stands
# for packs 2 and 3 (one launch). With FAKE_ONLY_GRAPH=1 the copy is not reported.
WORK='cp "$EMO_WATCH_FILE" "'$dir'/watch"; exec python3 -c "
import os, time
fd, t0 = int(os.environ[\"EMO_PROGRESS_FD\"]), time.monotonic_ns()
if not os.environ.get(\"FAKE_ONLY_GRAPH\"): os.write(fd, f\"P 0 0 0 {t0}\\n\".encode())
while time.monotonic_ns() < t0 + 24_000_000: time.sleep(0.0005)
os.write(fd, f\"P 0 2 0 {t0 + 24_000_000}\\n\".encode())
time.sleep(0.15)"'
err=$("$EMO" run --policy "$dir/p.json" --no-tracer --log "$dir/run.log" -- bash -c "$WORK" 2>&1 >/dev/null); rc=$?
w=$(cat "$dir/watch" 2>/dev/null)
if [[ "$w" == *$'\ncopy 0 0 7 0 Memcpy HtoD (Pageable -> Device)\n'* && "$w" == *$'\npack 0 1 7 0 gemm\n'* &&
      "$w" == *$'\ngraph 0 2 7 1 3 2 g0\n'* && "$w" == *$'\ngraph 0 3 7 1 3 3 g0'* ]]; then
  ok "watch list: a copy line, a kernel line, two graph lines (identity 3 kernels / g0, launch 1)"
else bad "watch list: <<$w>>"; fi
want="nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceSetGpuLockedClocks 0 1200 1200;nvmlDeviceSetGpuLockedClocks 0 990 990;nvmlDeviceSetGpuLockedClocks 0 1095 1095;nvmlDeviceSetGpuLockedClocks 0 1005 1005;nvmlDeviceSetGpuLockedClocks 0 1410 1410;nvmlDeviceResetGpuLockedClocks 0;"
[[ $rc -eq 0 && "$(setters)" == "$want" ]] && ok "copy + graph: clocks 1200, 990, 1095, 1005, then 1410" \
  || bad "copy + graph: rc=$rc setters=$(setters) <<$err>>"
# By hand (a switch up one latency, 2 ms, before its pack; down a quarter of one, 0.5 ms): pack 0 at
# t0 itself (late: nothing predicted it); pack 1 (990, down) from the copy at t0 + 10 - 0.5 =
# t0 + 9.5 ms; from the graph launch at t1: pack 2 (1095, up) at t1 + (60 - 24) - 2 = t1 + 34 ms,
# pack 3 (1005, down) at t1 + 46 - 0.5 = t1 + 45.5 ms, the default clock (1410, up) at
# t1 + (70 + 10 - 24) - 2 = t1 + 54 ms.
check_times() {  # check_times LOG EXPECTED_SEEN PACKS...: the switches of PACKS at the times above
  python3 - "$@" <<'PY'
import json, sys
log, seen_want, packs = sys.argv[1], json.loads(sys.argv[2]), [int(p) for p in sys.argv[3:]]
ev = [json.loads(l) for l in open(log)]
seen = {e["pack"]: e["observed_ms"] for e in ev if e["event"] == "pack_start"}
sw = [e for e in ev if e["event"] == "switch" and e.get("reason") != "start"]
t1 = seen[2]
t0 = seen.get(0, t1 - 24)
want = {0: (t0, "late"), 1: (t0 + 9.5, "early"), 2: (t1 + 34, "early"), 3: (t1 + 45.5, "early"), -1: (t1 + 54, "default")}
assert [e["pack"] for e in sw] == packs, sw
for e in sw:
    t, reason = want[e["pack"]]
    assert abs(e["planned_ms"] - t) < 0.002 and e["reason"] == reason, (t, reason, e)
starts = [e for e in ev if e["event"] == "pack_starts"]
assert len(starts) == 1 and starts[0]["gpu"] == 0 and starts[0]["expected"] == 4 and starts[0]["seen"] == seen_want, starts
PY
}
check_times "$dir/run.log" '[3]' 0 1 2 3 -1 && ok "switch times as worked out by hand (t0: copy, t1: graph launch)" \
  || bad "switch times: $(cat "$dir/run.log")"
[[ "$err" == *"emo run: pack starts seen (seen/expected), policy section 0: 3/4 in iteration 0"* && "$err" != *warning* ]] \
  && ok "seen/expected: 3/4 (the copy, the graph launch's two packs; the kernel pack unseen)" || bad "counts: <<$err>>"
rm -f "$dir/nvml.log"
err=$(FAKE_ONLY_GRAPH=1 "$EMO" run --policy "$dir/p.json" --no-tracer --log "$dir/graph.log" -- bash -c "$WORK" 2>&1 >/dev/null); rc=$?
want="nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceSetGpuLockedClocks 0 1095 1095;nvmlDeviceSetGpuLockedClocks 0 1005 1005;nvmlDeviceSetGpuLockedClocks 0 1410 1410;nvmlDeviceResetGpuLockedClocks 0;"
[[ $rc -eq 0 && "$(setters)" == "$want" ]] && check_times "$dir/graph.log" '[2]' 2 3 -1 &&
  [[ "$err" == *"policy section 0: 2/4 in iteration 0"* ]] \
  && ok "the graph launch alone: packs 2, 3 and the default clock at t1 + 34, 45.5, 54 ms; 2/4 seen" \
  || bad "graph alone: rc=$rc setters=$(setters) <<$err>> $(cat "$dir/graph.log")"

# --- iterations that saw nothing ----------------------------------------------------------------
err=$("$EMO" run --policy "$dir/p.json" --no-tracer --dry-run -- bash -c 'echo "P 0 0 0" >&$EMO_PROGRESS_FD; echo "P 0 2 2" >&$EMO_PROGRESS_FD' 2>&1 >/dev/null); rc=$?
[[ $rc -eq 0 && "$err" == *"policy section 0: 1/4 in iteration 0, 0/4 in iteration 1, 2/4 in iteration 2"* &&
   "$err" == *"emo run: warning: policy section 0: no pack start was seen in 1 of 3 iterations (1)"* ]] \
  && ok "an iteration without pack starts: named in a warning" || bad "empty iteration: rc=$rc <<$err>>"
err=$("$EMO" run --policy "$dir/p.json" --no-tracer --dry-run -- true 2>&1 >/dev/null); rc=$?
[[ $rc -eq 0 && "$err" == *"policy section 0: none seen of 4 per iteration"* &&
   "$err" == *"warning: policy section 0: no pack start was seen in any iteration"* ]] \
  && ok "no pack start at all: a warning, none seen" || bad "none seen: rc=$rc <<$err>>"

# --- refusal --------------------------------------------------------------------------------------
rm -f "$dir/nvml.log"
expect_error run_unobservable_starts "1 of 4 pack starts cannot be observed" \
  "$EMO" run --policy "$dir/old.json" --no-tracer -- touch "$dir/ran"
[[ ! -e "$dir/ran" && -z "$(setters)" ]] && ok "refused before the command ran or a clock changed" \
  || bad "refusal ran something: setters=$(setters)"

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
