# Shared by the tests that run the clock service (`emo serve`, docs/runtime.md) on the NVML
# stand-in (source it after check_lib.sh). They set EMO (the emo binary), dir (the test's
# directory), SOCK (the socket path) and an array `left` of pids the test's exit trap kills.

# write_serve_conf [LINE...]: $dir/serve.conf, everything of the service under $dir, no switch
# interval; each LINE is added (e.g. "request_timeout_ms = 400").
write_serve_conf() {
  printf '%s\n' "# the test's service: everything under $dir" "socket = $SOCK" "jobs_dir = $dir/jobs" \
    "state_dir = $dir/state" "audit_log = $dir/audit.log" "min_switch_interval_ms = 0" "$@" > "$dir/serve.conf"
}

# start_service [CONFIG]: `emo serve` as the caller (root), its stand-in log $dir/svc.log, its
# stderr $dir/serve.err; returns when it listens (svc_pid: its pid), or fails the test.
svc_pid=""
start_service() {
  EMO_FAKE_NVML_LOG=$dir/svc.log "$EMO" serve --config "${1:-$dir/serve.conf}" 2>>"$dir/serve.err" &
  svc_pid=$!; left+=("$svc_pid")
  for _ in $(seq 300); do [[ -S "$SOCK" ]] && grep -q "listening on $SOCK (pid $svc_pid)" "$dir/serve.err" && return 0; sleep 0.01; done
  bad "the service did not start: $(cat "$dir/serve.err")"; return 1
}
stop_service() { kill -TERM "$svc_pid" 2>/dev/null; wait "$svc_pid" 2>/dev/null; }
