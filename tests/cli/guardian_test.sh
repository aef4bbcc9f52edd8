#!/usr/bin/env bash
# The guardian (docs/runtime.md, "The guardian: clocks reset after kill -9"), `emo run --timeout`,
# `emo reset` and the stale-lock note, without a GPU: NVML is the recording stand-in with three
# GPUs (every call logged, one write(2) per line, so a killed process leaves its calls on disk);
# the workloads are bash scripts that write progress lines themselves (--no-tracer).
# Usage: guardian_test.sh PATH/TO/emo PATH/TO/libemo_fake_nvml.so
set -u
EMO=${1:?usage: guardian_test.sh EMO FAKE_NVML}
FAKE=${2:?usage: guardian_test.sh EMO FAKE_NVML}
dir=$(mktemp -d)
left=()  # processes a case leaves behind on purpose, stopped at exit
trap 'for p in "${left[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
A100="NVIDIA A100-SXM4-80GB"
export EMO_NVML_LIBRARY=$FAKE EMO_FAKE_NVML_LOG=$dir/nvml.log EMO_STATE_DIR=$dir/state
export EMO_FAKE_NVML_GPUS="$A100,$A100,$A100"
unset EMO_FAKE_NVML_FAIL
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_tool
require_built "$FAKE"
require_tool python3
setters() { grep -E '^nvmlDevice(Set|Reset)' "${1:-$dir/nvml.log}" 2>/dev/null | tr '\n' ';'; }
fresh() { rm -f "$dir/nvml.log" "$dir"/*.pid "$dir/err" "$dir/run.log"; }
count() { grep -c "$1" "$dir/nvml.log" 2>/dev/null || true; }
# wait_for N PATTERN: up to 5 s until the stand-in log holds N lines matching PATTERN.
wait_for() { for _ in $(seq 500); do [[ $(count "$2") -ge $1 ]] && return 0; sleep 0.01; done; return 1; }
# gone PID: the process is not running (exited, possibly a zombie nobody reaps in a container).
gone() { [[ ! -e /proc/$1 ]] || [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]; }
guardian_pid() { grep -o '"event":"guardian","pid":[0-9]*' "$dir/run.log" | grep -o '[0-9]*$'; }

python3 "$(dirname "$0")/three_pack_policy.py" "$dir/p3.json" 0 1 2
# Pack 1 of iteration 0 seen on each GPU: a late switch to 990 MHz on each, then the command
# records its pid and sleeps (exec: the pid is the sleeper's).
LOCK3='for g in 0 1 2; do echo "P $g 1 0" >&$EMO_PROGRESS_FD; done; echo $$ > '"$dir"'/child.pid'
start_reset='nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceResetGpuLockedClocks 1;nvmlDeviceResetGpuLockedClocks 2;'
locks='nvmlDeviceSetGpuLockedClocks 0 990 990;nvmlDeviceSetGpuLockedClocks 1 990 990;nvmlDeviceSetGpuLockedClocks 2 990 990;'
guardian_resets='nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceResetMemoryLockedClocks 0;nvmlDeviceResetGpuLockedClocks 1;nvmlDeviceResetMemoryLockedClocks 1;nvmlDeviceResetGpuLockedClocks 2;nvmlDeviceResetMemoryLockedClocks 2;'

# --- kill -9 of emo run mid-run -------------------------------------------------------------------
fresh
"$EMO" run --policy "$dir/p3.json" --no-tracer --log "$dir/run.log" -- bash -c "$LOCK3; exec sleep 30" 2>"$dir/err" &
emo_pid=$!
wait_for 6 'SetGpuLockedClocks [012] ' || true   # the three locks (each twice: late switch, then pack 2's)
for _ in $(seq 300); do [[ -s "$dir/child.pid" ]] && break; sleep 0.01; done
gp=$(guardian_pid); child=$(cat "$dir/child.pid")
fds=$(ls "/proc/$gp/fd" 2>/dev/null | sort -n | tr '\n' ' ')
[[ "$fds" == "0 1 2 3 " && $(readlink "/proc/$gp/fd/0") == /dev/null && $(readlink "/proc/$gp/fd/1") == /dev/null ]] \
  && ok "guardian holds only stdin/stdout=/dev/null, stderr and its socket" || bad "guardian fds: <<$fds>>"
read -r g_sid g_pgid < <(ps -o sid=,pgid= -p "$gp")
read -r c_pgid < <(ps -o pgid= -p "$child")
[[ "$g_sid" == "$gp" && "$g_pgid" == "$gp" && "$c_pgid" == "$child" ]] \
  && ok "guardian in its own session, command in its own process group" \
  || bad "sessions: guardian $gp sid=$g_sid pgid=$g_pgid; command $child pgid=$c_pgid"
record=$(cat "$dir"/state/emo-run-"$emo_pid".locks 2>/dev/null | tr '\n' ';')
[[ "$record" == "emo-locks/1;pid $emo_pid;gpu 0;gpu 1;gpu 2;" ]] && ok "lock record names the 3 GPUs" || bad "record <<$record>>"
kill -TERM "$gp"; kill -INT "$gp"; kill -HUP "$gp"; sleep 0.05
[[ -e /proc/$gp ]] && ! gone "$gp" && ok "guardian ignores SIGTERM, SIGINT, SIGHUP" || bad "guardian died of a signal"
before=$(wc -l < "$dir/nvml.log")
t0=$(date +%s%N)
kill -KILL "$emo_pid"
# Polled for up to 3 s: the guardian resets as soon as its socket closes, but this loop forks
# three processes per look, which under a loaded ctest -j2 (ASan) takes its own time.
for _ in $(seq 300); do
  [[ "$(setters <(tail -n +$((before + 1)) "$dir/nvml.log"))" == "$guardian_resets" ]] && break; sleep 0.01
done
t1=$(date +%s%N); ms=$(( (t1 - t0) / 1000000 ))
after=$(setters <(tail -n +$((before + 1)) "$dir/nvml.log"))
[[ "$after" == "$guardian_resets" && $ms -lt 3000 ]] \
  && ok "kill -9 of emo run: all 3 GPUs reset (SM and memory) by the guardian ${ms} ms after the kill" \
  || bad "kill -9: after ${ms} ms the log has <<$after>>"
for _ in $(seq 300); do gone "$child" && break; sleep 0.01; done
gone "$child" && ok "kill -9: the command's process group was stopped (SIGTERM)" || bad "command $child still running"
for _ in $(seq 300); do gone "$gp" && break; sleep 0.01; done
gone "$gp" && [[ ! -e "$dir/state/emo-run-$emo_pid.locks" ]] && ok "guardian exited and removed the lock record" \
  || bad "guardian $gp still there or record left: $(ls "$dir/state")"
grep -q "emo guardian: emo run (pid $emo_pid) ended without resetting clocks: reset GPU 0, 1, 2; stopping its command (process group $child)" "$dir/err" \
  && ok "guardian says what it did on stderr" || bad "guardian message: $(cat "$dir/err")"
wait "$emo_pid" 2>/dev/null

# --- normal exit: the guardian is told "done" and touches nothing ---------------------------------
fresh
# The command exits once pack 2's switch (to 1410 MHz, about 8 ms after pack 1's) is on every GPU:
# a fixed sleep of 0.1 s before it lost that race once under a loaded ctest -j2 (stop 43's CI).
WAIT_1410='for _ in $(seq 500); do [[ $(grep -c "SetGpuLockedClocks [012] 1410 " "$EMO_FAKE_NVML_LOG") -ge 3 ]] && break; sleep 0.01; done'
"$EMO" run --policy "$dir/p3.json" --no-tracer --log "$dir/run.log" -- bash -c "$LOCK3; $WAIT_1410; exit 5" 2>"$dir/err"; rc=$?
gp=$(guardian_pid)
want="${start_reset}${locks}nvmlDeviceSetGpuLockedClocks 0 1410 1410;nvmlDeviceSetGpuLockedClocks 1 1410 1410;nvmlDeviceSetGpuLockedClocks 2 1410 1410;${start_reset}"
[[ $rc -eq 5 && "$(setters)" == "$want" && -n "$gp" && ! -e /proc/$gp && -z "$(ls "$dir/state")" ]] \
  && ok "normal exit: exact setter sequence, guardian gone without a reset, no record, exit 5" \
  || bad "normal exit: rc=$rc gp=$gp setters=$(setters) state=$(ls "$dir/state")"

# A command that cannot start: one line, nothing from the guardian (it was never told of a job).
expect_error run_bad_command "cannot run the command: No such file or directory" \
  "$EMO" run --policy "$dir/p3.json" --no-tracer -- "$dir/no-such-command"

# --- the command crashes ----------------------------------------------------------------------------
for sig in SEGV ABRT; do
  fresh
  "$EMO" run --policy "$dir/p3.json" --no-tracer --log "$dir/run.log" -- bash -c "$LOCK3; sleep 0.05; kill -$sig \$\$" 2>"$dir/err"; rc=$?
  want_rc=$(( 128 + $(kill -l "$sig") ))
  s=$(setters)
  [[ $rc -eq $want_rc && "$s" == "$start_reset$locks"*"$start_reset" && "$s" != *Memory* ]] \
    && ok "command killed by SIG$sig: clocks reset by emo run, exit $rc" || bad "SIG$sig: rc=$rc setters=$s"
done

# --- the command hangs past --timeout -----------------------------------------------------------------
fresh
t0=$(date +%s%N)
"$EMO" run --policy "$dir/p3.json" --no-tracer --timeout 0.3 --log "$dir/run.log" -- bash -c "$LOCK3; exec sleep 30" 2>"$dir/err"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
s=$(setters)
if [[ $rc -eq 124 && $ms -lt 2000 && "$s" == "$start_reset$locks"*"$start_reset" ]] && gone "$(cat "$dir/child.pid")" \
   && grep -q '"event":"timeout"' "$dir/run.log" && grep -q 'stopped after --timeout 0.3 s: exit code 124' "$dir/err"; then
  ok "--timeout 0.3: command stopped after ${ms} ms, clocks reset, exit 124"
else bad "timeout: rc=$rc ${ms} ms setters=$s err=$(cat "$dir/err")"; fi
expect_error timeout_zero "--timeout: 0 is not a number of seconds > 0" "$EMO" run --policy "$dir/p3.json" --no-tracer --timeout 0 -- true
expect_error timeout_negative "--timeout: -1 is not a number of seconds > 0" "$EMO" run --policy "$dir/p3.json" --no-tracer --timeout -1 -- true

# --- a launcher that exits early, leaving a grandchild behind -------------------------------------
fresh
"$EMO" run --policy "$dir/p3.json" --no-tracer --log "$dir/run.log" -- \
  bash -c "$LOCK3; sleep 30 </dev/null >/dev/null 2>&1 & echo \$! > $dir/grandchild.pid; exit 7" 2>"$dir/err"; rc=$?
grandchild=$(cat "$dir/grandchild.pid"); left+=("$grandchild")
s=$(setters)
# The launcher exits right after its three progress messages, and the grandchild keeps the progress
# pipe open: emo run may see the exit before it has read them all (under load it applied two of
# three). What must hold is the reset after: the locks applied in between are a prefix of the three.
middle=${s#"$start_reset"}; middle=${middle%"$start_reset"}
[[ $rc -eq 7 && "$s" == "$start_reset"*"$start_reset" && "$locks" == "$middle"* && "$s" != *Memory* ]] && ! gone "$grandchild" \
  && ok "launcher exits 7 leaving a grandchild: clocks reset, exit 7, the grandchild left running" \
  || bad "launcher: rc=$rc setters=$s grandchild gone? $(gone "$grandchild" && echo yes)"

# --- on a terminal: the command gets it (reads it, gets Ctrl-C), emo run takes it back after -------
if command -v script >/dev/null; then
  fresh
  cat > "$dir/term.sh" <<EOF
#!/bin/sh
"$EMO" run --policy "$dir/p3.json" --no-tracer -- sh -c 'read x; echo "read: \$x"; echo "P 0 1 0" >&\$EMO_PROGRESS_FD; exec sleep 30'
echo "rc=\$?"
ps -o pgid=,tpgid= -p \$\$
EOF
  chmod +x "$dir/term.sh"
  # Ctrl-C only once the command has read the line and its lock is applied, and the input held
  # open until the clocks are reset after it (polled, up to 5 s each: fixed sleeps raced a loaded
  # machine).
  locked() { grep -q 'SetGpuLockedClocks 0 990 990' "$dir/nvml.log" 2>/dev/null; }
  reset_after() { [[ "$(setters)" == *"SetGpuLockedClocks 0 990 990;"*"ResetGpuLockedClocks 2;" ]]; }
  out=$( (sleep 0.3; echo hello; for _ in $(seq 500); do locked && break; sleep 0.01; done; printf '\003'
          for _ in $(seq 500); do reset_after && break; sleep 0.01; done; sleep 0.1) \
        | timeout 15 script -qec "$dir/term.sh" /dev/null | tr -d '\r')
  read -r pg tpg < <(tail -1 <<<"$out")
  [[ "$out" == *"read: hello"*"command killed by signal 2"*"rc=130"* && "$pg" == "$tpg" \
     && "$(setters)" == *"SetGpuLockedClocks 0 990 990;"*"ResetGpuLockedClocks 2;" ]] \
    && ok "terminal: the command reads it and gets Ctrl-C (exit 130, clocks reset); the shell has it back" \
    || bad "terminal: <<$out>> setters=$(setters)"
else
  echo "(no script(1): terminal case not run)"
fi

# --- --dry-run: no guardian --------------------------------------------------------------------------
fresh
"$EMO" run --policy "$dir/p3.json" --no-tracer --dry-run --log "$dir/run.log" -- bash -c "$LOCK3" 2>"$dir/err"; rc=$?
[[ $rc -eq 0 && -z "$(setters)" && -z "$(guardian_pid)" ]] && ok "--dry-run: no setter, no guardian" \
  || bad "dry-run: rc=$rc setters=$(setters) guardian=$(guardian_pid)"

# --- emo reset ------------------------------------------------------------------------------------------
fresh
out=$("$EMO" reset --all 2>"$dir/err"); rc=$?
want_out="GPU 0 ($A100): SM and memory locked clocks reset
GPU 1 ($A100): SM and memory locked clocks reset
GPU 2 ($A100): SM and memory locked clocks reset"
[[ $rc -eq 0 && "$out" == "$want_out" && "$(setters)" == "$guardian_resets" && ! -s "$dir/err" ]] \
  && ok "reset --all: one line per GPU, SM then memory reset on each" || bad "reset --all: rc=$rc <<$out>> setters=$(setters)"
fresh
out=$("$EMO" reset --gpu-index 1); rc=$?
[[ $rc -eq 0 && "$out" == "GPU 1 ($A100): SM and memory locked clocks reset" \
   && "$(setters)" == "nvmlDeviceResetGpuLockedClocks 1;nvmlDeviceResetMemoryLockedClocks 1;" ]] \
  && ok "reset --gpu-index 1: only GPU 1" || bad "reset --gpu-index 1: rc=$rc <<$out>> setters=$(setters)"
out=$(EMO_FAKE_NVML_FAIL=nvmlDeviceResetMemoryLockedClocks=3 "$EMO" reset --gpu-index 0); rc=$?
[[ $rc -eq 0 && "$out" == "GPU 0 ($A100): SM locked clocks reset (no memory clock lock on this GPU)" ]] \
  && ok "reset: memory locked clocks not supported is not an error" || bad "reset no memory lock: rc=$rc <<$out>>"
expect_error reset_no_such_gpu "GPU 5: no such GPU (3 visible to NVML)" "$EMO" reset --gpu-index 5
expect_error reset_which "emo reset: say which GPUs: --gpu-index I or --all, one of them (see emo --help)" "$EMO" reset
expect_error reset_both "emo reset: say which GPUs: --gpu-index I or --all, one of them (see emo --help)" \
  "$EMO" reset --all --gpu-index 0
expect_error reset_negative "emo reset: --gpu-index -1 is negative; give a number >= 0 (see emo --help)" \
  "$EMO" reset --gpu-index -1
expect_error reset_no_permission "nvmlDeviceResetGpuLockedClocks: no permission: changing clocks needs root or CAP_SYS_ADMIN" \
  env EMO_FAKE_NVML_FAIL=nvmlDeviceResetGpuLockedClocks=4 "$EMO" reset --all
expect_error reset_no_driver "no NVIDIA driver installed" env EMO_NVML_LIBRARY=$dir/none.so "$EMO" reset --all
expect_error reset_driver_not_loaded "the NVIDIA driver is not loaded" env EMO_FAKE_NVML_FAIL=nvmlInit_v2=9 "$EMO" reset --all

# --- the stale-lock note ---------------------------------------------------------------------------------
dead=$(bash -c 'echo $$')  # a pid that has exited
stale() { mkdir -p "$dir/state"; printf 'emo-locks/1\npid %s\ngpu 2\n' "$dead" > "$dir/state/emo-run-$dead.locks"; }
python3 - "$dir/p3.json" "$dir/p0.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); doc["gpus"] = doc["gpus"][:1]; open(sys.argv[2], "w").write(json.dumps(doc))
PY
fresh; stale
"$EMO" run --policy "$dir/p0.json" --no-tracer -- bash -c 'echo "P 0 1 0" >&$EMO_PROGRESS_FD; sleep 0.05' 2>"$dir/err"; rc=$?
note="emo run: a previous emo run (pid $dead) left clocks locked on GPU 2; resetting them first"
[[ $rc -eq 0 && "$(head -1 "$dir/err")" == "$note" && "$(setters)" == "nvmlDeviceResetGpuLockedClocks 2;nvmlDeviceResetMemoryLockedClocks 2;nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceSetGpuLockedClocks 0 990 990;"* \
   && ! -e "$dir/state/emo-run-$dead.locks" ]] \
  && ok "stale-lock note at emo run's start, GPU 2 reset first, record removed" || bad "stale: rc=$rc err=$(cat "$dir/err") setters=$(setters)"
fresh; stale
"$EMO" run --policy "$dir/p0.json" --no-tracer --dry-run -- true 2>"$dir/err"; rc=$?
[[ $rc -eq 0 && "$(head -1 "$dir/err")" == "emo run: a previous emo run (pid $dead) left clocks locked on GPU 2; not reset (dry run; \`emo reset --all\` resets them)" \
   && -z "$(setters)" && -e "$dir/state/emo-run-$dead.locks" ]] && ok "stale-lock note in a dry run: nothing reset" \
  || bad "stale dry-run: rc=$rc err=$(cat "$dir/err") setters=$(setters)"
fresh
"$EMO" reset --gpu-index 0 >/dev/null 2>"$dir/err"
grep -qx "emo reset: a previous emo run (pid $dead) left clocks locked on GPU 2; not all reset here (\`emo reset --all\` resets them)" "$dir/err" \
  && [[ -e "$dir/state/emo-run-$dead.locks" ]] && ok "reset --gpu-index 0 reports the stale record, keeps it" || bad "reset stale: $(cat "$dir/err")"
"$EMO" reset --all >/dev/null 2>"$dir/err"
grep -qx "emo reset: a previous emo run (pid $dead) left clocks locked on GPU 2; reset above, record removed" "$dir/err" \
  && [[ ! -e "$dir/state/emo-run-$dead.locks" ]] && ok "reset --all reports the stale record, removes it" || bad "reset --all stale: $(cat "$dir/err")"
printf 'emo-locks/1\npid %s\ngpu 1\n' $$ > "$dir/state/emo-run-$$.locks"  # a live pid: not stale
fresh
"$EMO" run --policy "$dir/p0.json" --no-tracer -- true 2>"$dir/err"
! grep -q "previous emo run" "$dir/err" && ok "a record of a live emo run is not reported" || bad "live record reported: $(cat "$dir/err")"

# --- issue 28: lock records only in a directory of emo's own ----------------------------------------
refusal_tail="refusing this lock-record directory: it is owned by uid 65534, not by uid 0; emo keeps lock records only in a directory of its own, mode 0700 (remove it, or set EMO_STATE_DIR to such a directory)"
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null; then
  chmod 0711 "$dir"  # nobody may pass through to plant a record
  evil=$dir/evil; mkdir -p "$evil"; chown nobody:nogroup "$evil"; chmod 1777 "$evil"
  setpriv --reuid nobody --regid nogroup --clear-groups \
    sh -c "printf 'emo-locks/1\npid $dead\ngpu 2\n' > $evil/emo-run-$dead.locks"
  for cmd in "run --policy $dir/p0.json --no-tracer -- true" "run --policy $dir/p0.json --no-tracer --dry-run -- true" "reset --all"; do
    fresh
    # shellcheck disable=SC2086
    EMO_STATE_DIR=$evil "$EMO" $cmd >/dev/null 2>"$dir/err"; rc=$?
    [[ $rc -eq 2 && "$(cat "$dir/err")" == "emo: error: $evil: $refusal_tail" && -z "$(setters)" \
       && -e "$evil/emo-run-$dead.locks" ]] \
      && ok "emo ${cmd%% *}: a planted record in another user's directory refused, one line, exit 2, no GPU touched" \
      || bad "evil dir ($cmd): rc=$rc err=$(cat "$dir/err") setters=$(setters)"
  done
  # The issue's own case: root, no XDG_RUNTIME_DIR, /tmp/emo-0 made world-writable by another user,
  # who planted a stale record and a link at the old temporary name (in a private /tmp).
  if unshare -m true 2>/dev/null; then
    fresh
    # emo and the stand-in are copied into $dir (seen as /mnt): the build may itself be under /tmp,
    # which the private /tmp hides.
    cp "$EMO" "$dir/emo.bin" && cp "$FAKE" "$dir/fake_nvml.so"
    out=$(unshare -m bash -c '
      mount --make-rprivate / && mount --bind "$1" /mnt && mount -t tmpfs tmpfs /tmp || exit 99
      mkdir /tmp/emo-0 && chown nobody:nogroup /tmp/emo-0 && chmod 1777 /tmp/emo-0
      setpriv --reuid nobody --regid nogroup --clear-groups sh -c "printf \"emo-locks/1\npid $3\ngpu 2\n\" > /tmp/emo-0/emo-run-$3.locks"
      env -u XDG_RUNTIME_DIR -u EMO_STATE_DIR EMO_FAKE_NVML_LOG=/mnt/nvml.log EMO_NVML_LIBRARY=/mnt/fake_nvml.so \
        /mnt/emo.bin run --policy /mnt/p0.json --no-tracer -- bash -c "echo \"P 0 1 0\" >&\$EMO_PROGRESS_FD" 2>/mnt/err
      echo "rc=$? $(ls /tmp/emo-0)"' sh "$dir" "$EMO" "$dead")
    [[ "$out" == "rc=2 emo-run-$dead.locks" && "$(cat "$dir/err")" == "emo: error: /tmp/emo-0: $refusal_tail" && -z "$(setters)" ]] \
      && ok "root, no XDG_RUNTIME_DIR, /tmp/emo-0 planted by nobody: refused (exit 2), no GPU reset, nothing written there" \
      || bad "planted /tmp/emo-0: $out err=$(cat "$dir/err") setters=$(setters)"
  else
    echo "(unshare -m not permitted here: the private-/tmp case not run)"
  fi
else
  echo "(not root or no setpriv: the other-user lock-record directory cases not run)"
fi

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
