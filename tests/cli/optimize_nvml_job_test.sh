#!/usr/bin/env bash
# `emo optimize --device nvml` on a job of 2 ranks (issue 17) without a GPU. NVML is the recording
# stand-in with 2 GPUs, each with the power curve P(f) = 60 + 240 (f/1410)^3 W and its clock in
# effect in $EMO_FAKE_NVML_STATE.<GPU>. The job is tests/cli/fake_launcher.py starting two
# tests/cli/fake_workload.py processes (torchrun variables, CUDA_VISIBLE_DEVICES=1,0: rank 0 on
# NVML GPU 1, rank 1 on GPU 0); each sends its hello with its GPU's stand-in UUID and its
# section's pack starts, and times each pack from the clock its own GPU has locked. The two
# rank traces are synthetic (made here, distributedInfo rank / world_size 2, one NCCL allreduce
# with process group and sequence number, so that they link into one job):
#   rank 0: gemm_big 2:58 | allreduce 5:0 + mixed_op 20:20      (MEM:COMP ms, time MEM + COMP * 1410/f)
#   rank 1: copy_mem 55:5 | allreduce 5:0 + mixed_op 20:20
# The packer makes 2 packs per rank (the allreduce, shorter than the min pack, joins mixed_op).
# In the fake the allreduce waits for both ranks (a barrier), so at one clock f on both GPUs
# (r = 1410/f) rank 1 waits (2 + 58r) - (55 + 5r) = 53 (r - 1) ms in it. Expected pack times:
#   pack 0 (rank 0 gemm_big) 2 + 58r; pack 1 (rank 0) 25 + 20r; pack 2 (rank 1 copy_mem) 55 + 5r;
#   pack 3 (rank 1, with the wait) 53 (r - 1) + 25 + 20r.
# Checks: every profiling / refinement / baseline / static run resets each GPU just before locking
# it at the run's clock, and resets both at the end (exact stand-in log); in the EMO run each GPU gets only its rank's section's
# clocks (and the default), reset at the end; hellos route rank 0 to GPU 1 and rank 1 to GPU 0;
# the pack times and energies above; simulated = false; a policy of two sections with ranks.
# Usage: optimize_nvml_job_test.sh PATH/TO/emo PATH/TO/libemo_fake_nvml.so
set -u
EMO=${1:?usage: optimize_nvml_job_test.sh EMO FAKE_NVML}
FAKE=${2:?usage: optimize_nvml_job_test.sh EMO FAKE_NVML}
HERE=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$dir"' EXIT
A100="NVIDIA A100-SXM4-80GB"
export EMO_NVML_LIBRARY=$FAKE EMO_FAKE_NVML_STATE=$dir/clock EMO_FAKE_NVML_POWER_CURVE=60,240,3
export EMO_FAKE_NVML_GPUS="$A100,$A100" EMO_STATE_DIR=$dir/state EMO_FAKE_NVML_LOG=$dir/nvml.log
unset EMO_FAKE_NVML_FAIL
source "$HERE/check_lib.sh"  # ok, bad, expect_error, require_tool
require_built "$FAKE"
require_tool python3

python3 - "$dir" <<'PY'
import json, sys
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
RANKS = {0: [("gemm_big", 2, 58), (NCCL, 5, 0), ("mixed_op", 20, 20)],
         1: [("copy_mem", 55, 5), (NCCL, 5, 0), ("mixed_op", 20, 20)]}
for rank, kernels in RANKS.items():
    ev, t, corr = [], 1000.0, 1   # us
    def x(cat, name, ts, dur, **args):
        e = {"ph": "X", "cat": cat, "name": name, "ts": round(ts, 3), "dur": round(dur, 3), "args": args}
        e.update({"pid": 0, "tid": 7} if cat == "kernel" else {"pid": 10, "tid": 11})
        ev.append(e)
    for name, mem, comp in kernels:
        coll = {"Collective name": "allreduce", "Process Group Name": "0", "Process Group Ranks": "[0, 1]",
                "Seq": 1} if name == NCCL else {}
        x("cuda_runtime", "cudaLaunchKernel", t, 5, correlation=corr)
        x("kernel", name, t + 10, (mem + comp) * 1000, device=0, stream=7, correlation=corr, **coll)
        corr += 1; t += 6
        end = t + 4 + (mem + comp) * 1000
        x("cuda_runtime", "cudaDeviceSynchronize", t, end + 5 - t, correlation=corr)
        corr += 1; t = end + 10
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}, "traceEvents": ev}
    open(f"{sys.argv[1]}/rank{rank}.json", "w").write(json.dumps(doc))
PY

workload() {  # VISIBLE ITERATIONS: sets W, the job's command
  W=(python3 "$HERE/fake_launcher.py" --nproc 2 --visible "$1" --rank-env torch -- python3 "$HERE/fake_workload.py" "$2" 0
     0/gemm_big=2:58 1/copy_mem=55:5 ncclDevKernel_AllReduce_Sum_f32_RING_LL=5:0 mixed_op=20:20)
}
SLOWDOWN=0.1
workload 1,0 10
"$EMO" optimize "$dir/rank0.json" "$dir/rank1.json" --max-slowdown $SLOWDOWN --device nvml --no-tracer \
  --json "$dir/r.json" --policy "$dir/policy.json" --run-log "$dir/run" -- "${W[@]}" > "$dir/r.txt" 2> "$dir/r.err"; rc=$?
if [[ $rc -eq 0 ]]; then ok "optimize --device nvml on a 2-rank job runs"; else bad "rc=$rc $(cat "$dir/r.err")"; fi
cat "$dir/r.txt"
grep -q "measured on 2 GPUs (NVML 0-1, NVIDIA A100-SXM4-80GB) for the job's 2 ranks by running the workload" "$dir/r.txt" \
  && ! grep -q SIMULATED "$dir/r.txt" && ok "text: measured on 2 GPUs, not labelled simulated" || bad "text labels"

if python3 - "$dir" "$SLOWDOWN" <<'PY'
import glob, json, sys
d, slowdown = sys.argv[1], float(sys.argv[2])
r = json.load(open(f"{d}/r.json"))
pol = json.load(open(f"{d}/policy.json"))
assert r["simulated"] is False and pol["simulated"] is False, (r["simulated"], pol["simulated"])
# Two sections, one per rank, device i = rank i (docs/multi-rank.md).
assert [(g["device"], g["rank"]) for g in pol["gpus"]] == [(0, 0), (1, 1)], pol["gpus"]
# Profiling clocks: the supported clocks nearest 1410 x {1, 0.75, 0.5} (ties to the higher).
supported = list(range(1410, 209, -15))
want = [min(supported, key=lambda c: (abs(c - 1410 * x), -c)) for x in (1, 0.75, 0.5)]
assert r["profiled_clocks_mhz"] == want, r["profiled_clocks_mhz"]
points = {p["pack"]: p for p in r["pack_profiles"]}
assert sorted(points) == [0, 1, 2, 3] and [points[k]["device"] for k in range(4)] == [0, 0, 1, 1], r["pack_profiles"]
refined = sorted({pt["clock_mhz"] for p in points.values() for pt in p["points"]} - set(want), reverse=True)
# Refinement: one run per clock asked for in each round (a clock may come back in a later round).
assert r["profiled_runs"] >= 3 + len(refined), (r["profiled_runs"], refined)
static = r["static_best"]["clock_mhz"]
locked_runs = r["profiled_runs"] + (1 if static == 1410 else 2)   # + baseline (+ static)
runs = locked_runs + 1                                               # + EMO
assert r["workload_runs"] == runs, (r["workload_runs"], runs)

# The stand-in log: per locked run, each GPU reset just before its first lock (a job's policy
# touches only the GPUs it locks: docs/runtime.md), locked at the run's clock; both reset at the end.
calls = [l.strip() for l in open(f"{d}/nvml.log") if l.startswith(("nvmlDeviceSetGpuLocked", "nvmlDeviceResetGpuLocked"))]
R = lambda g: f"nvmlDeviceResetGpuLockedClocks {g}"
S = lambda g, f: f"nvmlDeviceSetGpuLockedClocks {g} {f:.0f} {f:.0f}"
clocks = []
for i in range(locked_runs):
    chunk = calls[6 * i:6 * i + 6]
    f = float(chunk[1].split()[2]) if len(chunk) == 6 and chunk[1].startswith("nvmlDeviceSet") else 0
    assert chunk == [R(0), S(0, f), R(1), S(1, f), R(0), R(1)], ("run", i, chunk)
    clocks.append(f)
p = r["profiled_runs"]
assert clocks[:3] == want and set(clocks[3:p]) == set(refined), (clocks, want, refined)
assert clocks[p:] == ([1410] if static == 1410 else [1410, static]), (clocks, static)
head = calls[:6 * locked_runs]
emo = calls[len(head):]
for g in (0, 1):  # each GPU reset before its first lock, and at the end
    mine = [c for c in emo if c.split()[1] == str(g)]
    assert mine[0] == R(g) and mine[1].startswith("nvmlDeviceSet") and mine[-1] == R(g), ("EMO run resets", g, mine)
assert sorted(emo[-2:]) == [R(0), R(1)], ("EMO run resets", emo)
# EMO run: its log's switches of section 0 (rank 0) all went to NVML GPU 1, those of section 1 to
# GPU 0 (CUDA_VISIBLE_DEVICES=1,0), and each GPU's locks in the stand-in log are exactly them.
ev = [json.loads(l) for l in open(f"{d}/run.{runs - 1}.jsonl")]
sw = [e for e in ev if e["event"] == "switch" and e["applied"]]
assert sw and all(e["nvml_gpu"] == 1 - e["gpu"] for e in sw), sw
for gpu in (0, 1):
    got = [c for c in emo if c.startswith(f"nvmlDeviceSetGpuLockedClocks {gpu} ")]
    assert got == [S(gpu, e["clock_mhz"]) for e in sw if e["nvml_gpu"] == gpu], (gpu, got)
# Unless a static plan was measured cheaper and kept (static_kept: the policy is then the static
# one), the EMO run played the written policy: GPU 1 rank 0's section, GPU 0 rank 1's.
if not r["static_kept"]:
    for gpu, rank in ((1, 0), (0, 1)):
        sec = pol["gpus"][rank]
        allowed = {k["clock_mhz"] for k in sec["packs"]} | {sec["default_clock_mhz"]}
        locked = {float(c.split()[2]) for c in emo if c.startswith(f"nvmlDeviceSetGpuLockedClocks {gpu} ")}
        assert locked == allowed, (gpu, rank, locked, allowed)
# Hellos: in every run, rank 0 -> NVML GPU 1, rank 1 -> NVML GPU 0, both accepted.
logs = sorted(glob.glob(f"{d}/run.*.jsonl"))
assert len(logs) == runs, (len(logs), runs)
for path in logs:
    hellos = sorted((e["rank"], e["nvml_gpu"], e["accepted"]) for e in map(json.loads, open(path)) if e["event"] == "hello")
    assert hellos == [(0, 1, True), (1, 0, True)], (path, hellos)

# Pack times and energies from the fake's formulas (see the header); each on its own GPU.
def t_ms(k, f):
    x = 1410 / f
    return [2 + 58 * x, 25 + 20 * x, 55 + 5 * x, 53 * (x - 1) + 25 + 20 * x][k]
p_w = lambda f: 60 + 240 * (f / 1410) ** 3
for k, prof in points.items():
    assert set(want) <= {pt["clock_mhz"] for pt in prof["points"]}, prof
    for pt in prof["points"]:
        f, exp = pt["clock_mhz"], t_ms(k, pt["clock_mhz"])
        # Sleeps overshoot on a loaded machine (3 % + 3 ms); the packs with the allreduce also wait
        # for the other process to be scheduled at the barrier (on a 2-core machine shared with
        # builds, medians 4.4 ms and once 10 ms over): 10 % + 12 ms. Packs 0 and 2 (no barrier)
        # carry the clock check: at 705 MHz pack 0 takes 118 ms, 60 at 1410.
        tol = 0.10 * exp + 12 if k in (1, 3) else 0.03 * exp + 3
        assert abs(pt["time_s"] * 1e3 - exp) <= tol, f"pack {k} at {f}: {pt['time_s'] * 1e3} ms vs {exp}"
        # Energy: the pack's GPU's counter over its spans, P(f) x the measured time (10 %, as
        # tests/cli/optimize_nvml_test.sh explains).
        e = p_w(f) * pt["time_s"]
        assert abs(pt["energy_j"] - e) <= 0.10 * e, f"pack {k} at {f}: {pt['energy_j']} J vs {e}"
# The baseline: both ranks' iteration 27 + 78 ms at 1410 MHz (synchronised by the allreduce);
# energy: both GPUs at P(1410) = 300 W.
base_ms = 2 + 58 + 25 + 20
assert abs(r["baseline"]["time_ns"] * 1e-6 - base_ms) <= 0.05 * base_ms + 6, r["baseline"]
assert abs(r["baseline"]["energy_j"] - 2 * 300 * base_ms * 1e-3) <= 0.1 * 2 * 300 * base_ms * 1e-3, r["baseline"]
assert r["savings"] > 0, r["savings"]
print(f"runs {runs}, refined {refined}, static {static}, savings {r['savings']:.4f}, slowdown {r['slowdown']:.4f}")
PY
then ok "both GPUs locked per profiling and static run, routed by hello in the EMO run, reset; pack times per GPU; simulated=false"
else bad "job result"; fi

# Without hellos (FAKE_NO_HELLO=1, CUDA_VISIBLE_DEVICES=0,1): the documented rule, section i on
# NVML GPU i; no warning (the sections' clocks were switched), simulated = false.
rm -f "$dir"/run.*.jsonl
workload 0,1 6
FAKE_NO_HELLO=1 EMO_FAKE_NVML_LOG=$dir/nohello.log "$EMO" optimize "$dir/rank0.json" "$dir/rank1.json" \
  --max-slowdown $SLOWDOWN --device nvml --no-tracer --json "$dir/n.json" --run-log "$dir/run" \
  -- "${W[@]}" > /dev/null 2> "$dir/n.err"; rc=$?
if [[ $rc -eq 0 && ! -s "$dir/n.err" ]] && python3 - "$dir/n.json" "$dir/run" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ev = [json.loads(l) for l in open(f"{sys.argv[2]}.{r['workload_runs'] - 1}.jsonl")]  # EMO's run, the last
sw = [e for e in ev if e["event"] == "switch" and e["applied"]]
assert r["simulated"] is False and not [e for e in ev if e["event"] == "hello"], r["simulated"]
assert {e["gpu"] for e in sw} == {0, 1} and all(e["nvml_gpu"] == e["gpu"] for e in sw), sw
PY
then ok "no hellos: section i switched on NVML GPU i, no warning, simulated=false"
else bad "no hellos: rc=$rc $(cat "$dir/n.err")"; fi

T0=$dir/rank0.json T1=$dir/rank1.json
expect_error job_more_ranks_than_gpus "the job has 2 ranks but NVML sees 1 GPU(s)" env EMO_FAKE_NVML_GPUS="$A100" \
  "$EMO" optimize "$T0" "$T1" --max-slowdown 0.05 --device nvml --no-tracer -- true
expect_error job_two_models "GPU 1: NVIDIA H100 80GB HBM3, but GPU 0 is NVIDIA A100-SXM4-80GB: --device nvml profiles a job on GPUs of one model" \
  env EMO_FAKE_NVML_GPUS="$A100,NVIDIA H100 80GB HBM3" "$EMO" optimize "$T0" "$T1" --max-slowdown 0.05 --device nvml --no-tracer -- true
expect_error job_gpu_index "--gpu-index: a job's ranks are routed to their GPUs" \
  "$EMO" optimize "$T0" "$T1" --max-slowdown 0.05 --device nvml --gpu-index 1 --no-tracer -- true
expect_error job_independent "takes one trace, the workload's, or the traces of one job's ranks (2 given, not linked" \
  "$EMO" optimize "$T0" "$T1" --independent --max-slowdown 0.05 --device nvml --no-tracer -- true

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
