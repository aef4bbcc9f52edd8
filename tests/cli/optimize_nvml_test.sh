#!/usr/bin/env bash
# `emo optimize --device nvml` end to end without a GPU. NVML is the recording stand-in
# (EMO_NVML_LIBRARY=libemo_fake_nvml.so) with a power curve P(f) = 60 + 240 (f/1410)^3 W whose
# integral is its energy counter; the workload is tests/cli/fake_workload.py, which reads the
# watch list, "runs" each pack for MEM + COMP * 1410/f ms at the clock the stand-in says is
# locked, and reports pack starts on $EMO_PROGRESS_FD as the tracer would (--no-tracer).
# The trace is synthetic: one iteration of the same three packs (host syncs between them).
# Checks: the clock locks (K profiling clocks, each reset after its run, then baseline, static,
# EMO; reset last), the measured pack times follow the fake's scaling, the policy, simulated =
# false, savings and slowdowns equal to what the fake's curves imply for the clocks chosen
# (computed here), clocks reset when the workload fails, and one-line errors (exit 2).
# Usage: optimize_nvml_test.sh PATH/TO/emo PATH/TO/libemo_fake_nvml.so
set -u
EMO=${1:?usage: optimize_nvml_test.sh EMO FAKE_NVML}
FAKE=${2:?usage: optimize_nvml_test.sh EMO FAKE_NVML}
HERE=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export EMO_NVML_LIBRARY=$FAKE EMO_FAKE_NVML_STATE=$dir/clock EMO_FAKE_NVML_POWER_CURVE=60,240,3
export EMO_STATE_DIR=$dir/state  # the guardian's lock records (docs/runtime.md)
unset EMO_FAKE_NVML_FAIL EMO_FAKE_NVML_GPUS EMO_FAKE_NVML_LOG
source "$HERE/check_lib.sh"  # ok, bad, expect_error, require_tool
require_built "$FAKE"
require_tool python3
setters() { grep -E '^nvmlDevice(Set|Reset)GpuLocked' "$1" 2>/dev/null | tr '\n' ';'; }

# Packs: name, MEM ms, COMP ms (time at f: MEM + COMP * 1410 / f). Pack 0 is two kernels in the
# trace (gemm_big + gemm_big_tail); the workload times the pack as a whole.
PACKS="gemm_big=2:58 copy_mem=55:5 mixed_op=20:20"
python3 "$HERE/three_pack_trace.py" "$dir/trace.json"

# The target sits between the 1170 and 1185 MHz static clocks (0.37 % from each), so that the
# best static clock is not decided by measurement noise.
SLOWDOWN=0.1024
log=$dir/nvml.log
optimize_fake() {
  rm -f "$log" "$dir"/run.*.jsonl
  EMO_FAKE_NVML_LOG=$log "$EMO" optimize "$dir/trace.json" --max-slowdown $SLOWDOWN --device nvml --no-tracer \
    --json "$dir/r.json" --policy "$dir/policy.json" --run-log "$dir/run" \
    -- python3 "$HERE/fake_workload.py" 8 0 $PACKS > "$dir/r.txt" 2> "$dir/r.err"
}
optimize_fake; rc=$?
# On a real GPU EMO validates its plan in one run, and keeps the baseline when that run misses the
# target (and says so). EMO's plan sits as close under the target as its models allow, and the
# fake's sleeps overshoot on a loaded machine: once in a CI run (stop 45) its one run measured 0.27 %
# over a target its models met. That honest outcome is not what this test checks, so the run is
# made once more then; a plan that misses twice fails below.
if [[ $rc -eq 0 ]] && grep -q "the baseline (max clock) is kept" "$dir/r.txt"; then
  echo "note: the baseline was kept ($(grep -o 'EMO.s own plan [^)]*' "$dir/r.txt")); running once more"
  optimize_fake; rc=$?
fi
if [[ $rc -eq 0 ]]; then ok "optimize --device nvml runs"; else bad "optimize --device nvml: rc=$rc $(cat "$dir/r.err")"; fi
cat "$dir/r.txt"
if ! grep -q SIMULATED "$dir/r.txt" && grep -qE "measured on GPU 0 \(NVIDIA A100-SXM4-80GB\) by running the workload \([0-9]+ runs\)" "$dir/r.txt"; then
  ok "text: measured on the GPU, not labelled simulated"; else bad "text labels"; fi
[[ -s "$dir/run.0.jsonl" && -s "$dir/run.$(( $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['workload_runs'])" "$dir/r.json") - 1 )).jsonl" ]] && ok "--run-log writes one runtime log per run" || bad "run logs: $(ls "$dir")"

if python3 - "$dir" "$SLOWDOWN" "$(setters "$log")" "$PACKS" <<'PY'
import json, sys
d, slowdown, setters, spec = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
r = json.load(open(f"{d}/r.json"))
pol = json.load(open(f"{d}/policy.json"))
packs = [(n, float(v.split(":")[0]), float(v.split(":")[1])) for n, v in (s.split("=") for s in spec.split())]
def t_ms(k, f): return packs[k][1] + packs[k][2] * 1410 / f
def p_w(f): return 60 + 240 * (f / 1410) ** 3
# Times come from the fake's own sleeps: on an idle machine within 1 %, on a loaded one (CI's other
# processes; the test runs alone within ctest) sleeps overshoot by a few ms: 3 %.
TIME_TOL = 0.03
def close(a, b, rel, what):
    assert abs(a - b) <= rel * abs(b), f"{what}: {a} vs expected {b} (rel {rel})"

# Profiling clocks: the supported clocks nearest 1410 x {1, 0.75, 0.5} (ties to the higher).
supported = list(range(1410, 209, -15))
want = [min(supported, key=lambda c: (abs(c - 1410 * x), -c)) for x in (1, 0.75, 0.5)]
assert r["profiled_clocks_mhz"] == want, r["profiled_clocks_mhz"]
assert r["simulated"] is False and pol["simulated"] is False
assert r["packs"] == 3 and r["device"] == "GPU 0 (NVIDIA A100-SXM4-80GB)"
# Runs: 3 profiling clocks, then one run per refinement clock (profile where the plan decides) in
# each refinement round (1 or 2: a second round measures where the refitted plan moved, which the
# measured times decide), then baseline, static and EMO.
points = [[pt["clock_mhz"] for pt in prof["points"]] for prof in r["pack_profiles"]]
refined = {f for p in points for f in p if f not in want}
rounds = r["profiling"]["refinement_rounds"]
assert 1 <= rounds <= 2 and r["profiled_runs"] >= 3 + len(refined) and len(refined) >= 1, (r["profiled_runs"], refined, rounds)
assert r["workload_runs"] == r["profiled_runs"] + 3 and r["validation_runs"] == 1, r
assert r["profiling"]["pack_clock_profiles"] == sum(map(len, points)) and r["packs_at_run_power"] == 0
assert r["profiling"]["refinement_profiles"] == sum(map(len, points)) - 9
assert all(len(p) <= 5 for p in points), points  # K = 3 plus at most 2 refinement clocks per pack

# Clock locks: per profiling clock, then per refinement clock (descending within each round),
# reset / lock / reset; then baseline (1410), static, EMO; reset last.
calls = [c for c in setters.split(";") if c]
locks = lambda f: ["nvmlDeviceResetGpuLockedClocks 0", f"nvmlDeviceSetGpuLockedClocks 0 {f:.0f} {f:.0f}",
                   "nvmlDeviceResetGpuLockedClocks 0"]
static = r["static_best"]["clock_mhz"]
n_refine = r["profiled_runs"] - 3
refine_seq = [int(calls[3 * i + 1].split()[-1]) for i in range(3, 3 + n_refine)]  # each run's lock
descents = 1 + sum(b >= a for a, b in zip(refine_seq, refine_seq[1:]))  # rounds the order needs at least
assert set(refine_seq) == refined and descents <= rounds, (refine_seq, refined, rounds)
head = sum((locks(f) for f in want + refine_seq + [1410, static]), [])
assert calls[:len(head)] == head, calls[:len(head)]
emo_calls = calls[len(head):]
assert emo_calls[0] == emo_calls[-1] == "nvmlDeviceResetGpuLockedClocks 0" and len(emo_calls) >= 3, emo_calls

# Measured pack times follow MEM + COMP * 1410 / f; energies P(f) * t; the fit reproduces them.
for prof in r["pack_profiles"]:
    k = prof["pack"]
    assert set(want) <= {pt["clock_mhz"] for pt in prof["points"]}, prof["points"]
    for pt in prof["points"]:
        f = pt["clock_mhz"]
        close(pt["time_s"] * 1e3, t_ms(k, f), TIME_TOL, f"pack {k} time at {f}")
        # Energy: the parent reads the stand-in's counter when it receives each P line, so the
        # scheduler's delay on a loaded machine (CI runs tests in parallel, also under ASan) moves
        # energy between neighbouring spans: 10 % (< 1 % idle; 2.2 % seen under load with 3
        # profiling runs, 8 % once in ~6 runs under ASan with three builds beside it). A wrong
        # clock is far outside it: P(1005 MHz) is half of P(1410 MHz).
        close(pt["energy_j"], p_w(f) * t_ms(k, f) * 1e-3, 0.10, f"pack {k} energy at {f}")
        # The fit is a smooth model through the measured points, whose sleeps overshoot by a few
        # 0.1 ms under load: 1.5 % (0.51 % seen in a CI run, over the 0.5 % this once allowed);
        # the clocks themselves are checked by the measured times above.
        close(pt["fitted_time_s"], pt["time_s"], 0.015, f"pack {k} fitted time at {f}")

# The best static clock within the target, from the fake's curves (over EMO's option clocks).
T = lambda f: sum(t_ms(k, f) for k in range(3))
options = [c for c in supported if c >= min(want)]
ok = [f for f in options if T(f) <= (1 + slowdown) * T(1410)]
exp_static = min(ok, key=lambda f: p_w(f) * T(f))
margin = min(abs(T(f) / T(1410) - 1 - slowdown) for f in options)
assert margin > 0.002, f"test design: a clock sits {margin} from the target"
# The models are fitted to measured (timing-noisy) points: the predicted best static clock may be
# the neighbour of the fake's exact one.
assert abs(static - exp_static) <= 15, (static, exp_static)
close(r["static_best"]["time_ns"] * 1e-6, T(static), TIME_TOL, "static time")
close(r["static_savings"], 1 - p_w(static) * T(static) / (p_w(1410) * T(1410)), 0.05, "static savings")

# Baseline and EMO: one iteration (median). Each pack runs at its own clock (the fake reads the
# clock at its start, and every switch is asked for before it: runtime/switch_timing.h); the
# stand-in changes a clock at once, so the clock timeline of an iteration (from pack 0's start, in
# steady state: the next iteration's first switch predicted from the period) is: c_k from
# start_k − lead_k to the next switch, lead = the policy's switch latency L up, L / 4 down; the
# default clock at the last pack's end − its lead; a switch a later one is asked before is
# overtaken (dropped). Energy = ∫ P(clock) dt over the iteration.
def timeline_energy(clocks, default, latency_ms):
    ts = [sum(t_ms(j, clocks[j]) for j in range(k)) for k in range(len(clocks))]
    T = ts[-1] + t_ms(len(clocks) - 1, clocks[-1])
    lead = lambda a, b: latency_ms if b > a else latency_ms / 4
    before_first = default if default > 0 else clocks[-1]
    asked = [(ts[k] - lead(clocks[k - 1], clocks[k]), clocks[k]) for k in range(1, len(clocks))]
    if default > 0:
        asked.append((T - lead(clocks[-1], default), default))
    asked.append((T - lead(before_first, clocks[0]), clocks[0]))  # the next iteration's pack 0
    kept, nxt = [], float("inf")
    for a in reversed(asked):
        if a[0] < nxt:
            kept.append(a); nxt = a[0]
    kept.reverse()
    current = clocks[0]  # the previous iteration's last switch (never overtaken) was to pack 0's clock
    e, t = 0.0, 0.0
    for at, c in kept:
        at = min(max(at, 0.0), T)
        e += p_w(current) * (at - t); t, current = at, c
    return (e + p_w(current) * (T - t)) * 1e-3
close(r["baseline"]["time_ns"] * 1e-6, T(1410), TIME_TOL, "baseline time")
close(r["baseline"]["energy_j"], p_w(1410) * T(1410) * 1e-3, 0.05, "baseline energy")
gp = pol["gpus"][0]
clocks = [k["clock_mhz"] for k in gp["packs"]]
assert [k["start"]["op_name"] for k in gp["packs"]] == [p[0] for p in packs]
assert all(c in options for c in clocks), clocks
assert r["pack_clocks_mhz"] == {f"{c:.0f}": clocks.count(c) for c in set(clocks)}
t_emo = sum(t_ms(k, c) for k, c in enumerate(clocks))
e_emo = timeline_energy(clocks, gp.get("default_clock_mhz", 0), pol["switch_latency_ms"])
close(r["emo"]["time_ns"] * 1e-6, t_emo, TIME_TOL, "EMO time")
close(r["emo"]["energy_j"], e_emo, 0.05, "EMO energy")
exp_savings = 1 - e_emo / (p_w(1410) * T(1410) * 1e-3)
exp_slowdown = t_emo / T(1410) - 1
# Savings: from the measured energies checked above (each within 5 % of the fake's curves), so
# their tolerance is theirs: E / B with E and B each off by up to 5 % moves the savings by up to
# 0.1 E / B (0.068 here); 0.03 was tighter than the energies' own tolerance and failed once under
# ASan with three builds beside it (EMO's iteration measured 4.5 % under the curves' energy, within
# the 5 %: 0.351 against 0.318). The arithmetic itself is checked exactly.
assert abs(r["savings"] - (1 - r["emo"]["energy_j"] / r["baseline"]["energy_j"])) < 1e-9, r["savings"]
assert abs(r["savings"] - exp_savings) <= 0.1 * e_emo / (p_w(1410) * T(1410) * 1e-3), (r["savings"], exp_savings)
assert abs(r["slowdown"] - exp_slowdown) < 2 * TIME_TOL, (r["slowdown"], exp_slowdown)
# Chosen from measured points, the plan may sit a hair over the target on the fake's exact
# curves (0.006 points seen under load); more than half a point would be a planning error.
assert exp_slowdown <= slowdown + 0.005, f"the policy's clocks miss the target on the fake: {exp_slowdown}"
# The models are exact here: the prediction matches the fake too.
close(r["emo"]["predicted_time_ns"] * 1e-6, t_emo, TIME_TOL, "EMO predicted time")
assert exp_savings > 0.2, exp_savings
print(f"clocks {clocks} static {static}: savings {r['savings']:.4f} (expected {exp_savings:.4f}), "
      f"slowdown {r['slowdown']:.4f} (expected {exp_slowdown:.4f}), static savings {r['static_savings']:.4f}")
PY
then ok "locks, pack profiles, static clock, savings and slowdown as the fake's curves imply"; else bad "nvml result"; fi

# The workload fails during profiling: one-line error, the clock reset after its run, nothing more.
log=$dir/fail.log
err=$(EMO_FAKE_NVML_LOG=$log "$EMO" optimize "$dir/trace.json" --max-slowdown 0.05 --device nvml --no-tracer \
  -- python3 "$HERE/fake_workload.py" 2 3 $PACKS 2>&1 >/dev/null); rc=$?
want="nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceSetGpuLockedClocks 0 1410 1410;nvmlDeviceResetGpuLockedClocks 0;"
if [[ $rc -eq 2 && $(printf '%s' "$err" | grep -c '') -eq 1 && "$err" == *"exited with code 3 during profiling at 1410 MHz"* &&
      "$(setters "$log")" == "$want" ]]; then
  ok "failing workload: $err"; else bad "failing workload: rc=$rc <<$err>> setters=$(setters "$log")"; fi
# Killed by a signal during profiling: same.
log=$dir/kill.log
err=$(EMO_FAKE_NVML_LOG=$log "$EMO" optimize "$dir/trace.json" --max-slowdown 0.05 --device nvml --no-tracer \
  -- bash -c 'kill -SEGV $$' 2>&1 >/dev/null); rc=$?
if [[ $rc -eq 2 && "$err" == *"was killed by signal 11 during profiling at 1410 MHz"* && "$(setters "$log")" == "$want" ]]; then
  ok "crashing workload: $err"; else bad "crashing workload: rc=$rc <<$err>> setters=$(setters "$log")"; fi

# kill -9 of emo optimize while a profiling run's workload runs (its clock locked at 1410 MHz):
# the guardian each run starts resets the GPU (SM and memory locked clocks) within 1 s.
log=$dir/kill9.log
EMO_FAKE_NVML_LOG=$log "$EMO" optimize "$dir/trace.json" --max-slowdown 0.05 --device nvml --no-tracer \
  -- python3 "$HERE/fake_workload.py" 1000 0 $PACKS >/dev/null 2>"$dir/kill9.err" &
emo_pid=$!
for _ in $(seq 500); do grep -q '^nvmlDeviceSetGpuLockedClocks 0 1410 1410' "$log" 2>/dev/null && break; sleep 0.01; done
sleep 0.2  # the workload is running at the locked clock
before=$(wc -l < "$log")
t0=$(date +%s%N)
kill -KILL "$emo_pid"
guardian_resets="nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceResetMemoryLockedClocks 0;"
resets_after() { tail -n +$((before + 1)) "$log" | grep -E '^nvmlDevice(Set|Reset)' | tr '\n' ';'; }
for _ in $(seq 100); do [[ "$(resets_after)" == "$guardian_resets" ]] && break; sleep 0.01; done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
wait "$emo_pid" 2>/dev/null
if [[ "$(resets_after)" == "$guardian_resets" && $ms -lt 1000 ]] \
   && grep -q "emo guardian: emo run (pid $emo_pid) ended without resetting clocks: reset GPU 0" "$dir/kill9.err"; then
  ok "kill -9 of emo optimize mid-profiling: GPU 0 reset by the guardian ${ms} ms after the kill"
else bad "kill -9 of emo optimize: after ${ms} ms <<$(resets_after)>> $(cat "$dir/kill9.err")"; fi
for _ in $(seq 100); do [[ -z "$(ls "$dir/state" 2>/dev/null)" ]] && break; sleep 0.01; done
[[ -z "$(ls "$dir/state" 2>/dev/null)" ]] && ok "kill -9: the lock record removed" || bad "lock record left: $(ls "$dir/state")"

T=$dir/trace.json
expect_error nvml_without_command "--device nvml: needs the workload" "$EMO" optimize "$T" --max-slowdown 0.05 --device nvml
expect_error command_with_sim "only run with --device nvml" "$EMO" optimize "$T" --max-slowdown 0.05 -- true
expect_error nvml_two_traces "takes one trace" "$EMO" optimize "$T" "$T" --max-slowdown 0.05 --device nvml -- true
expect_error nvml_not_loadable "no NVIDIA driver installed" env EMO_NVML_LIBRARY=$dir/none/libnvidia-ml.so.1 \
  "$EMO" optimize "$T" --max-slowdown 0.05 --device nvml --no-tracer -- true
expect_error gpu_index_out_of_range "GPU 3: no such GPU (1 visible to NVML)" \
  "$EMO" optimize "$T" --max-slowdown 0.05 --device nvml --gpu-index 3 --no-tracer -- true
expect_error wrong_gpu_model "GPU 0 is NVIDIA A100-SXM4-80GB, not H100-SXM5-80GB" \
  "$EMO" optimize "$T" --max-slowdown 0.05 --device nvml --gpu H100-SXM5-80GB --no-tracer -- true
expect_error no_pack_seen "the packs of the trace were not seen in the workload: no pack start of GPU 0" \
  "$EMO" optimize "$T" --max-slowdown 0.05 --device nvml --no-tracer -- python3 "$HERE/fake_workload.py" 2 0 other_kernel=5:5
expect_error some_packs_not_seen "1 of 3 packs of GPU 0 never started during profiling at 1410 MHz: 2 ('mixed_op')" \
  "$EMO" optimize "$T" --max-slowdown 0.05 --device nvml --no-tracer -- python3 "$HERE/fake_workload.py" 2 0 gemm_big=5:5 copy_mem=5:5
expect_error no_permission "needs root or CAP_SYS_ADMIN" env EMO_FAKE_NVML_FAIL=nvmlDeviceResetGpuLockedClocks=4 \
  "$EMO" optimize "$T" --max-slowdown 0.05 --device nvml --no-tracer -- python3 "$HERE/fake_workload.py" 2 0 $PACKS
expect_error no_tracer_library "tracer library" env EMO_TRACER_LIBRARY=$dir/none.so \
  "$EMO" optimize "$T" --max-slowdown 0.05 --device nvml -- true

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
