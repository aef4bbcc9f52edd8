#!/usr/bin/env bash
# The Slurm prolog and epilog (deploy/slurm/, docs/runtime.md "Slurm") against the NVML stand-in
# (4 GPUs; GPU i's UUID is GPU-fake-0000-0000-0000-<i, 12 digits>) and `emo serve` as root, the
# job's user nobody: the prolog's job file, exact; the service lets nobody lock the job's GPUs
# (1 and 3) and no other; the epilog removes the file and resets exactly those GPUs (the
# stand-in's recorded reset calls), after which the service refuses them to nobody again; the
# hooks' one-line complaints for bad input (exit 0: a failing prolog would drain the node).
# Usage: slurm_hooks_test.sh PATH/TO/emo PATH/TO/libemo_fake_nvml.so
set -u
EMO_BUILT=${1:?usage: slurm_hooks_test.sh EMO FAKE_NVML}
FAKE_BUILT=${2:?usage: slurm_hooks_test.sh EMO FAKE_NVML}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, require_tool, skip_or_fail
source "$(dirname "$0")/serve_lib.sh"  # write_serve_conf, start_service
require_built "$FAKE_BUILT"
require_tool python3 setpriv
[[ $(id -u) -eq 0 ]] || skip_or_fail "the hooks run as root (as slurmd runs them) and the job as nobody: run it as root"
HOOKS=$(cd "$(dirname "$0")/../../deploy/slurm" && pwd)
dir=$(mktemp -d); chmod 0755 "$dir"
left=()
trap 'for p in "${left[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
mkdir -p "$dir/bin" "$dir/nobody"; chown nobody:nogroup "$dir/nobody"; chmod 0700 "$dir/nobody"
install -m 0755 "$EMO_BUILT" "$dir/bin/emo"; install -m 0755 "$FAKE_BUILT" "$dir/bin/libfake_nvml.so"
EMO=$dir/bin/emo SOCK=$dir/run/emo.sock
A100="NVIDIA A100-SXM4-80GB"
export EMO_NVML_LIBRARY=$dir/bin/libfake_nvml.so EMO_FAKE_NVML_GPUS="$A100,$A100,$A100,$A100"
export EMO_FAKE_NVML_PROCS=$dir/procs EMO_SERVE_CONFIG=$dir/serve.conf EMO_BIN=$EMO EMO_STATE_DIR=$dir/rootstate
unset EMO_FAKE_NVML_FAIL EMO_CLOCK_SERVICE XDG_RUNTIME_DIR SLURM_JOB_ID SLURM_JOB_UID SLURM_JOB_GPUS CUDA_VISIBLE_DEVICES
: > "$dir/procs"  # no process on any GPU: only a job file can give one to nobody
write_serve_conf
start_service || exit 1
uuid() { printf 'GPU-fake-0000-0000-0000-%012d' "$1"; }
hook() {  # prolog|epilog [VAR=VALUE...]: the hook as slurmd runs it; stderr in $err, stand-in log $dir/hook.log
  local which=$1; shift
  err=$(env EMO_FAKE_NVML_LOG="$dir/hook.log" "$@" "$HOOKS/$which.sh" 2>&1); rc=$?
}
# lock_as_nobody GPU...: `emo run --via-service` as nobody of a policy with those GPUs (their clock
# locked to pack 1's 990 MHz at once); rc and stderr in $rc, $err.
lock_as_nobody() {
  python3 "$(dirname "$0")/three_pack_policy.py" "$dir/p.json" "$@"; chmod 0644 "$dir/p.json"
  local work="" g
  for g in "$@"; do work+="echo \"P $g 1 0\" >&\$EMO_PROGRESS_FD; "; done
  err=$(setpriv --reuid nobody --regid nogroup --clear-groups env EMO_FAKE_NVML_ROOT_ONLY=1 EMO_CLOCK_SOCKET="$SOCK" \
        EMO_STATE_DIR="$dir/nobody/state" EMO_FAKE_NVML_LOG="$dir/nobody/cli.log" \
        "$EMO" run --via-service --policy "$dir/p.json" --no-tracer -- bash -c "$work sleep 0.1" 2>&1); rc=$?
}
job=(SLURM_JOB_ID=4242 SLURM_JOB_UID=65534)

# --- prolog: the job file, exact ----------------------------------------------------------------------
hook prolog "${job[@]}" SLURM_JOB_GPUS=1,3
want="uid 65534
gpu $(uuid 1)
gpu $(uuid 3)"
[[ $rc -eq 0 && -z "$err" && "$(cat "$dir/jobs/4242" 2>/dev/null)" == "$want" \
   && "$(stat -c '%U %a' "$dir/jobs/4242")" == "root 644" && "$(stat -c '%U %a' "$dir/jobs")" == "root 755" \
   && -z "$(ls -A "$dir/jobs" | grep -v '^4242$')" ]] \
  && ok "prolog: jobs/4242 = uid 65534, GPU 1's and GPU 3's UUIDs; root's, 0644, in a root 0755 directory, nothing else left" \
  || bad "prolog: rc=$rc <<$err>> file <<$(cat "$dir/jobs/4242" 2>&1)>> $(ls -la "$dir/jobs")"
! grep -q '^nvmlDevice\(Set\|Reset\)' "$dir/hook.log" && ok "prolog: no NVML setter" || bad "prolog set clocks: $(cat "$dir/hook.log")"

# --- the service: the job's GPUs are nobody's, the others not -----------------------------------------
: > "$dir/svc.log"
lock_as_nobody 1 3
[[ $rc -eq 0 ]] && grep -q '^nvmlDeviceSetGpuLockedClocks 1 990 990$' "$dir/svc.log" \
   && grep -q '^nvmlDeviceSetGpuLockedClocks 3 990 990$' "$dir/svc.log" \
  && ok "service: nobody locks GPUs 1 and 3 (the job file's) through it" || bad "lock 1 3: rc=$rc <<$err>> $(cat "$dir/svc.log")"
lock_as_nobody 2
[[ $rc -eq 2 && "$err" == *"GPU 2: clock service: GPU 2 runs no process of uid 65534 and no job file gives it to uid 65534"* ]] \
  && ! grep -q '^nvmlDevice\(Set\|Reset\)GpuLockedClocks 2' "$dir/svc.log" \
  && ok "service: GPU 2 (not the job's) refused to nobody, nothing set" || bad "lock 2: rc=$rc <<$err>>"

# --- epilog: the file gone, exactly the job's GPUs reset ---------------------------------------------
rm -f "$dir/hook.log"
hook epilog "${job[@]}" SLURM_JOB_GPUS=1,3
resets=$(grep -E '^nvmlDevice(Set|Reset)' "$dir/hook.log" 2>/dev/null | tr '\n' ';')
[[ $rc -eq 0 && -z "$err" && ! -e "$dir/jobs/4242" \
   && "$resets" == "nvmlDeviceResetGpuLockedClocks 1;nvmlDeviceResetMemoryLockedClocks 1;nvmlDeviceResetGpuLockedClocks 3;nvmlDeviceResetMemoryLockedClocks 3;" ]] \
  && ok "epilog: jobs/4242 removed; GPU 1 and GPU 3 reset (SM and memory), no other setter" \
  || bad "epilog: rc=$rc <<$err>> file: $(ls "$dir/jobs") setters <<$resets>>"
lock_as_nobody 1
[[ $rc -eq 2 && "$err" == *"GPU 1 runs no process of uid 65534 and no job file gives it to uid 65534"* ]] \
  && ok "after the epilog the service refuses GPU 1 to nobody" || bad "after epilog: rc=$rc <<$err>>"

# --- the GPUs as UUIDs in CUDA_VISIBLE_DEVICES; a job without GPUs ---------------------------------------
hook prolog SLURM_JOB_ID=77 SLURM_JOB_UID=1000 CUDA_VISIBLE_DEVICES="$(uuid 2),$(uuid 0)"
[[ $rc -eq 0 && "$(cat "$dir/jobs/77" 2>/dev/null)" == "uid 1000"$'\n'"gpu $(uuid 2)"$'\n'"gpu $(uuid 0)" ]] \
  && ok "prolog: UUIDs from CUDA_VISIBLE_DEVICES, in its order" || bad "prolog uuids: rc=$rc <<$err>> <<$(cat "$dir/jobs/77" 2>&1)>>"
rm -f "$dir/hook.log"
hook epilog SLURM_JOB_ID=77 CUDA_VISIBLE_DEVICES="$(uuid 2),$(uuid 0)"
resets=$(grep -E '^nvmlDevice(Set|Reset)' "$dir/hook.log" 2>/dev/null | tr '\n' ';')
[[ $rc -eq 0 && ! -e "$dir/jobs/77" \
   && "$resets" == "nvmlDeviceResetGpuLockedClocks 2;nvmlDeviceResetMemoryLockedClocks 2;nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceResetMemoryLockedClocks 0;" ]] \
  && ok "epilog by UUIDs: GPUs 2 and 0 reset" || bad "epilog uuids: rc=$rc <<$err>> <<$resets>>"
hook prolog SLURM_JOB_ID=78 SLURM_JOB_UID=1000
[[ $rc -eq 0 && -z "$err" && ! -e "$dir/jobs/78" ]] && ok "prolog: a job without GPUs writes nothing" || bad "no gpus: <<$err>>"

# --- bad input: one line on stderr, exit 0, no file --------------------------------------------------------
complaint() {  # NAME WANT VAR=VALUE...: the prolog says WANT in one line, exits 0, writes nothing new
  local name=$1 want=$2; shift 2
  local before; before=$(ls -A "$dir/jobs" 2>/dev/null)
  hook prolog "$@"
  [[ $rc -eq 0 && $(grep -c '' <<<"$err") -eq 1 && "$err" == *"$want"* && "$(ls -A "$dir/jobs" 2>/dev/null)" == "$before" ]] \
    && ok "$name: $err" || bad "$name: rc=$rc <<$err>> $(ls -A "$dir/jobs")"
}
complaint no_such_gpu "emo prolog: job 4242: GPU 7: not among the 4 GPUs NVML sees" "${job[@]}" SLURM_JOB_GPUS=1,7
complaint bad_uid "SLURM_JOB_UID 'root' is not a uid" SLURM_JOB_ID=4242 SLURM_JOB_UID=root SLURM_JOB_GPUS=1
complaint bad_job_id "SLURM_JOB_ID '../x' is not a job id" SLURM_JOB_ID=../x SLURM_JOB_UID=1 SLURM_JOB_GPUS=1
complaint no_nvml "emo prolog: job 4242: $EMO gpus: " "${job[@]}" SLURM_JOB_GPUS=1 EMO_NVML_LIBRARY=$dir/none.so
chmod 0777 "$dir/jobs"
complaint open_jobs_dir "refusing the jobs directory: $dir/jobs: its group or others may write to it (mode 777)" \
  "${job[@]}" SLURM_JOB_GPUS=1
chmod 0755 "$dir/jobs"; chown nobody "$dir/jobs"
complaint foreign_jobs_dir "$dir/jobs is owned by uid 65534, not root" "${job[@]}" SLURM_JOB_GPUS=1
chown root "$dir/jobs"
"$HOOKS/emo_job_hook.sh" 2>/dev/null; [[ $? -eq 2 ]] && ok "emo_job_hook.sh without a mode: usage, exit 2" || bad "usage"

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
