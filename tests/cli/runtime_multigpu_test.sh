#!/usr/bin/env bash
# `emo run` driving every GPU of a node (issue 17) without a GPU: NVML is the recording stand-in
# with 4 GPUs (every call logged to EMO_FAKE_NVML_LOG); the job is tests/cli/fake_launcher.py, a
# stand-in for torchrun/mpirun whose 4 workers each get CUDA_VISIBLE_DEVICES in a remapped order
# and their rank environment, and report their GPU's UUID and pack starts as the tracer would
# (--no-tracer: hello and P lines on $EMO_PROGRESS_FD). The job policy is written by hand: 4
# sections (rank r = section r) with distinct clocks, so that a GPU given another rank's section
# shows. Expected setter sequences per GPU are worked out by hand below.
# Usage: runtime_multigpu_test.sh PATH/TO/emo PATH/TO/libemo_fake_nvml.so
set -u
EMO=${1:?usage: runtime_multigpu_test.sh EMO FAKE_NVML}
FAKE=${2:?usage: runtime_multigpu_test.sh EMO FAKE_NVML}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
A100="NVIDIA A100-SXM4-80GB"
export EMO_NVML_LIBRARY=$FAKE EMO_FAKE_NVML_LOG=$dir/nvml.log EMO_FAKE_NVML_GPUS="$A100,$A100,$A100,$A100"
unset EMO_FAKE_NVML_FAIL
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_tool, DATA
require_built "$FAKE"
require_tool python3
LAUNCH="$(dirname "$0")/fake_launcher.py"
# setters_of GPU: that GPU's setter calls, in order, ';'-separated, the GPU index left out.
setters_of() {
  awk -v g="$1" '/^nvmlDevice(Set|Reset)GpuLockedClocks / && $2 == g { s = $1; for (i = 3; i <= NF; i++) s = s " " $i; print s }' \
    "$dir/nvml.log" | tr '\n' ';'
}
fresh() { rm -f "$dir/nvml.log"; }

# Job policy: section r is rank r; 3 packs at 0/10/20 ms; default 1410 MHz.
#   rank 0: 1395 1200 1005   rank 1: 1380 1185 990   rank 2: 1365 1170 975   rank 3: 1350 1155 960
POLICY="$(dirname "$0")/three_pack_policy.py"
python3 "$POLICY" "$dir/job.json" --job 1395,1200,1005 1380,1185,990 1365,1170,975 1350,1155,960
python3 "$POLICY" "$dir/job15.json" --job 1395,1200,1005 1380,1185,990 1365,1170,975 1350,1155,960 \
  --min-switch-interval-ms 15
# By hand: a worker reports pack 0 at t0; its clock is not the one requested (none yet), so a
# late switch to pack 0's clock at once; pack 1 at t0+10 ms and pack 2 at t0+20 ms get their
# switches 2 ms early; the default 1410 follows pack 2's end (t0+30 ms, 2 ms early). Reset before
# its first lock and at the end.
want() { echo "ResetGpuLockedClocks;SetGpuLockedClocks $1 $1;SetGpuLockedClocks $2 $2;SetGpuLockedClocks $3 $3;SetGpuLockedClocks 1410 1410;ResetGpuLockedClocks;"; }
norm() { sed 's/nvmlDevice//g'; }  # ResetGpuLockedClocks;SetGpuLockedClocks 1395 1395;...
W0=$(want 1395 1200 1005) W1=$(want 1380 1185 990) W2=$(want 1365 1170 975) W3=$(want 1350 1155 960)
check_gpus() {  # NAME WANT_GPU0 WANT_GPU1 WANT_GPU2 WANT_GPU3
  local name=$1 g got okay=1; shift
  for g in 0 1 2 3; do
    got=$(setters_of $g | norm)
    if [[ "$got" != "$1" ]]; then okay=0; echo "   GPU $g: got  <<$got>>"; echo "   GPU $g: want <<$1>>"; fi
    shift
  done
  [[ $okay -eq 1 ]] && ok "$name" || bad "$name"
}

# 1. torchrun-like: CUDA_VISIBLE_DEVICES=2,0,3,1 for all, LOCAL_RANK r → rank r runs on NVML GPU
#    [2,0,3,1][r]: GPU 2 gets rank 0's section, GPU 0 rank 1's, GPU 3 rank 2's, GPU 1 rank 3's.
fresh
err=$("$EMO" run --policy "$dir/job.json" --no-tracer --log "$dir/run1.log" -- \
      python3 "$LAUNCH" --nproc 4 --visible 2,0,3,1 --rank-env torch 2>&1); rc=$?
[[ $rc -eq 0 ]] && ok "torchrun-like job: exit 0" || bad "torchrun-like job: rc=$rc <<$err>>"
check_gpus "torchrun-like job, CUDA_VISIBLE_DEVICES=2,0,3,1: each GPU its rank's setter sequence, reset at start and end" \
  "$W1" "$W3" "$W0" "$W2"
[[ $(grep -c '"event":"hello".*"accepted":true' "$dir/run1.log") -eq 4 && "$err" == *"from 4 pack starts of 4 process GPU(s)"* \
   && "$err" != *warning* ]] && ok "4 hellos accepted, no warning" || bad "hellos: $(grep hello "$dir/run1.log") <<$err>>"

# 2. mpirun-like: OMPI_COMM_WORLD_RANK, CUDA_VISIBLE_DEVICES=3,2,1,0 → rank r on GPU 3-r; rank 2
#    exits 3: the launcher passes it on, emo run passes it through; every GPU still reset.
fresh
"$EMO" run --policy "$dir/job.json" --no-tracer -- python3 "$LAUNCH" --nproc 4 --visible 3,2,1,0 --rank-env ompi \
  --exit 2=3 2>/dev/null; rc=$?
[[ $rc -eq 3 ]] && ok "mpirun-like job: a worker's exit code 3 passed through" || bad "mpirun-like job: rc=$rc"
check_gpus "mpirun-like job, CUDA_VISIBLE_DEVICES=3,2,1,0: rank r on GPU 3-r" "$W3" "$W2" "$W1" "$W0"

# 3. Two workers claim rank 0 (the second, on GPU 1, is refused with one warning: GPU 1 is never
#    touched — a job's policy resets only the GPUs it locks), no worker is rank 3 (warning at
#    exit): GPU 0 rank 0, GPU 2 rank 1, GPU 3 rank 2.
fresh
err=$("$EMO" run --policy "$dir/job.json" --no-tracer -- python3 "$LAUNCH" --ranks 0,0,1,2 --visible 0,1,2,3 \
  --stagger 0.3 2>&1); rc=$?
check_gpus "duplicate rank 0: the first claim keeps section 0, the second GPU is left alone" \
  "$W0" "" "$W1" "$W2"
[[ $rc -eq 0 && $(grep -c "already claimed by process" <<<"$err") -eq 1 \
   && "$err" == *"warning: no process reported policy section 3 (rank 3); its clocks were not switched"* ]] \
  && ok "duplicate claim and missing rank: one warning line each" || bad "warnings: rc=$rc <<$err>>"

# 4. min_switch_interval_ms 15 (by hand, t0 = pack 0 seen): pack 0's clock at t0; pack 1's switch
#    due t0+8 is held to t0+15; pack 2's due t0+18 is held (next allowed t0+30) and replaced by
#    the default 1410 due t0+28, issued at t0+30: pack 2's clock is never set.
fresh
err=$("$EMO" run --policy "$dir/job15.json" --no-tracer -- python3 "$LAUNCH" --nproc 4 --visible 0,1,2,3 2>&1); rc=$?
i15() { echo "ResetGpuLockedClocks;SetGpuLockedClocks $1 $1;SetGpuLockedClocks $2 $2;SetGpuLockedClocks 1410 1410;ResetGpuLockedClocks;"; }
check_gpus "min switch interval 15 ms: a deferred switch, a dropped one, per GPU" \
  "$(i15 1395 1200)" "$(i15 1380 1185)" "$(i15 1365 1170)" "$(i15 1350 1155)"
[[ $rc -eq 0 && "$err" == *"8 deferred and 4 dropped by the minimum switch interval"* ]] \
  && ok "min interval: counts in the summary" || bad "interval summary: rc=$rc <<$err>>"

# 5. The same minimum on a policy without one, from the command line.
fresh
"$EMO" run --policy "$dir/job.json" --min-switch-interval-ms 15 --no-tracer -- \
  python3 "$LAUNCH" --nproc 4 --visible 0,1,2,3 2>/dev/null; rc=$?
[[ $rc -eq 0 ]] && check_gpus "emo run --min-switch-interval-ms 15: as the policy's field" \
  "$(i15 1395 1200)" "$(i15 1380 1185)" "$(i15 1365 1170)" "$(i15 1350 1155)" || bad "--min-switch-interval-ms: rc=$rc"
expect_error run_negative_interval "--min-switch-interval-ms: -1 is negative" \
  "$EMO" run --policy "$dir/job.json" --min-switch-interval-ms -1 --no-tracer -- true

# 6. emo optimize writes the catalog's interval (A100: 100 ms) into the policy of a trace with
#    collectives only when its packs are at least that long (--min-pack-ms 100).
nccl=${DATA:-}/kineto/hta_nccl_allreduce_rank0.json.gz
if [[ -n "${DATA:-}" && -f "$nccl" ]]; then
  interval() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("min_switch_interval_ms", "absent"))' "$1"; }
  "$EMO" optimize "$nccl" --gpu A100-SXM4-80GB --max-slowdown 0.05 --seed 1 --policy "$dir/p20.json" >/dev/null 2>&1
  "$EMO" optimize "$nccl" --gpu A100-SXM4-80GB --max-slowdown 0.05 --seed 1 --min-pack-ms 100 --policy "$dir/p100.json" >/dev/null 2>&1
  a=$(interval "$dir/p20.json") b=$(interval "$dir/p100.json")
  [[ "$a" == absent && "$b" == 100.0 ]] && ok "optimize: the policy carries the interval only when packed with it" \
    || bad "optimize interval: default <<$a>> with --min-pack-ms 100 <<$b>>"
else
  echo "(skipped: no shared data for the emo optimize check)"
fi

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
