#!/usr/bin/env bash
# `emo gpus`, `emo measure`, `emo run`, `emo trace`, `emo export` without a GPU: NVML is the
# recording stand-in (EMO_NVML_LIBRARY=libemo_fake_nvml.so, every call logged to
# EMO_FAKE_NVML_LOG), the workloads are bash scripts that write progress lines themselves
# (--no-tracer). Checks exit codes, one-line errors, the exact clock setter sequences and that
# clocks are reset on every exit path (SIGTERM to emo run mid-run included).
# Usage: runtime_cli_test.sh PATH/TO/emo PATH/TO/libemo_fake_nvml.so
set -u
EMO=${1:?usage: runtime_cli_test.sh EMO FAKE_NVML}
FAKE=${2:?usage: runtime_cli_test.sh EMO FAKE_NVML}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export EMO_NVML_LIBRARY=$FAKE EMO_FAKE_NVML_LOG=$dir/nvml.log
unset EMO_FAKE_NVML_FAIL EMO_FAKE_NVML_GPUS
export EMO_STATE_DIR=$dir/state  # lock records (docs/runtime.md, stale-lock note) stay in this test
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_tool
require_built "$FAKE"
require_tool python3
setters() { grep -E '^nvmlDevice(Set|Reset)' "$dir/nvml.log" 2>/dev/null | tr '\n' ';'; }
fresh() { rm -f "$dir/nvml.log"; }

policy() {  # policy FILE GPU DEVICE CLOCK1 CLOCK2 CLOCK3
  python3 - "$@" <<'PY'
import json, sys
path, gpu, device, *clocks = sys.argv[1:]
packs = [{"index": i, "start": {"op_name": f"kernel_{i}", "stream": 7, "ordinal": 0},
          "start_offset_ns": 10_000_000 * i, "duration_ns": 10_000_000, "ops": 3,
          "clock_mhz": float(c), "predicted_energy_j": 1.0} for i, c in enumerate(clocks)]
doc = {"schema": "emo.policy/1", "emo_version": "0.1.0", "gpu": gpu, "trace": "t.json",
       "iteration_marker": "", "max_slowdown": 0.05, "latency_target_ns": 31_500_000,
       "baseline": {"time_ns": 30_000_000, "energy_j": 4.0},
       "predicted": {"time_ns": 31_000_000, "energy_j": 3.0}, "switch_latency_ms": 2,
       "simulated": True,
       "gpus": [{"device": int(device), "rank": -1, "default_clock_mhz": 1410, "packs": packs}]}
open(path, "w").write(json.dumps(doc))
PY
}
policy "$dir/p.json" A100-SXM4-80GB 0 1200 990 1410
WORK='echo "P 0 0 0" >&$EMO_PROGRESS_FD; sleep 0.2'

# --- emo gpus ---------------------------------------------------------------------------------
fresh
out=$("$EMO" gpus 2>&1); rc=$?
if [[ $rc -eq 0 && "$out" == *"GPU 0: NVIDIA A100-SXM4-80GB [A100-SXM4-80GB]"* && "$out" == *"210-1410 MHz (81 clocks)"* && -z "$(setters)" ]]; then
  ok "gpus lists the GPU, changes nothing"; else bad "gpus: rc=$rc <<$out>> setters=$(setters)"; fi
"$EMO" gpus --json - | python3 -c 'import json,sys; d=json.load(sys.stdin); g=d["gpus"][0]; assert g["sm_clock_mhz"]==1410 and g["power_w"]==100 and g["energy_j"]>0 and g["uuid"]=="GPU-fake-0000-0000-0000-000000000000", d' \
  && ok "gpus --json (with the UUID)" || bad "gpus --json"
expect_error gpus_no_driver "no NVIDIA driver installed" env EMO_NVML_LIBRARY=$dir/none/libnvidia-ml.so.1 "$EMO" gpus
expect_error gpus_driver_not_loaded "the NVIDIA driver is not loaded" env EMO_FAKE_NVML_FAIL=nvmlInit_v2=9 "$EMO" gpus

# --- emo measure ------------------------------------------------------------------------------
json=$("$EMO" measure --json - -- sh -c 'sleep 0.2; exit 3'); rc=$?
if [[ $rc -eq 3 ]] && python3 -c 'import json,sys; d=json.loads(sys.argv[1]); g=d["gpus"][0]; assert d["exit_code"]==3 and 0.15<d["duration_s"]<5 and 10<g["energy_j"]<500 and 50<g["mean_power_w"]<150, d' "$json"; then
  ok "measure passes the exit code through, 100 W stand-in ~ energy"; else bad "measure: rc=$rc <<$json>>"; fi
err=$("$EMO" measure -- sh -c 'kill -TERM $$' 2>&1 >/dev/null); rc=$?
[[ $rc -eq 143 && "$err" == *"killed by signal 15"* ]] && ok "measure: killed command -> 128+signal" || bad "measure killed: rc=$rc <<$err>>"
expect_error measure_no_command "no command given after --" "$EMO" measure --
expect_error measure_energy_unsupported "nvmlDeviceGetTotalEnergyConsumption: not supported on this GPU" \
  env EMO_FAKE_NVML_FAIL=nvmlDeviceGetTotalEnergyConsumption=3 "$EMO" measure -- true
expect_error measure_bad_command "cannot run the command" "$EMO" measure -- $dir/no-such-command

# --- emo run ----------------------------------------------------------------------------------
fresh
err=$("$EMO" run --policy "$dir/p.json" --dry-run --no-tracer -- bash -c "$WORK" 2>&1 >/dev/null); rc=$?
if [[ $rc -eq 0 && -z "$(setters)" && "$err" == *"[dry-run] +"*"GPU 0 pack 1 iteration 0 -> 990 MHz (early)"* ]]; then
  ok "run --dry-run logs switches, calls no setter"; else bad "dry-run: rc=$rc setters=$(setters) <<$err>>"; fi
fresh
"$EMO" run --policy "$dir/p.json" --no-tracer --log "$dir/run.log" -- bash -c "$WORK; exit 5" 2>/dev/null; rc=$?
want="nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceSetGpuLockedClocks 0 1200 1200;nvmlDeviceSetGpuLockedClocks 0 990 990;nvmlDeviceSetGpuLockedClocks 0 1410 1410;nvmlDeviceResetGpuLockedClocks 0;"
[[ $rc -eq 5 && "$(setters)" == "$want" ]] && ok "run applies switches, resets at start and exit, exit code 5" \
  || bad "run: rc=$rc setters=$(setters)"
grep -q '"event":"exit","exit_code":5' "$dir/run.log" && ok "run --log JSON lines" || bad "run log: $(cat "$dir/run.log")"

fresh
"$EMO" run --policy "$dir/p.json" --no-tracer -- bash -c 'echo "P 0 0 0" >&$EMO_PROGRESS_FD; sleep 0.05; kill -SEGV $$' 2>/dev/null; rc=$?
[[ $rc -eq 139 && "$(setters)" == *"SetGpuLockedClocks 0 1200 1200;"*"ResetGpuLockedClocks 0;" ]] \
  && ok "run: crashing command -> clocks reset, exit 139" || bad "crash: rc=$rc setters=$(setters)"

fresh
"$EMO" run --policy "$dir/p.json" --no-tracer -- bash -c 'echo "P 0 0 0" >&$EMO_PROGRESS_FD; exec sleep 30' 2>/dev/null &
pid=$!
for _ in $(seq 100); do [[ "$(setters)" == *SetGpuLockedClocks* ]] && break; sleep 0.05; done
kill -TERM $pid; wait $pid; rc=$?
if [[ $rc -eq 143 && "$(setters)" == *"SetGpuLockedClocks 0 1200 1200;"*"ResetGpuLockedClocks 0;" ]]; then
  ok "run: SIGTERM mid-run -> clocks reset, command stopped, exit 143"; else bad "sigterm: rc=$rc setters=$(setters)"; fi

fresh
# A background job of a script ignores SIGINT; give emo (and so the command) the default back.
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
  "$EMO" run --policy "$dir/p.json" --no-tracer -- bash -c 'echo "P 0 0 0" >&$EMO_PROGRESS_FD; exec sleep 30' 2>/dev/null &
pid=$!
for _ in $(seq 100); do [[ "$(setters)" == *SetGpuLockedClocks* ]] && break; sleep 0.05; done
kill -INT $pid; wait $pid; rc=$?
[[ $rc -eq 130 && "$(setters)" == *"ResetGpuLockedClocks 0;" ]] && ok "run: SIGINT mid-run -> reset, exit 130" \
  || bad "sigint: rc=$rc setters=$(setters)"

echo 'not json' > "$dir/bad.json"
expect_error run_bad_policy "bad.json" "$EMO" run --policy "$dir/bad.json" --no-tracer -- true
expect_error run_no_command "no command given after --" "$EMO" run --policy "$dir/p.json" --no-tracer --
policy "$dir/gpu3.json" A100-SXM4-80GB 3 1200 990 1410
expect_error run_unknown_gpu "GPU 3: no such GPU (1 visible to NVML)" "$EMO" run --policy "$dir/gpu3.json" --no-tracer -- true
policy "$dir/h200.json" H200-SXM-141GB 0 1200 990 1410
expect_error run_wrong_gpu_model "the policy is for H200-SXM-141GB but GPU 0 is NVIDIA A100-SXM4-80GB" \
  "$EMO" run --policy "$dir/h200.json" --dry-run --no-tracer -- true
policy "$dir/clock.json" A100-SXM4-80GB 0 1200 1234 1410
expect_error run_unsupported_clock "pack 1 of GPU 0: 1234 MHz is not a supported SM clock" \
  "$EMO" run --policy "$dir/clock.json" --no-tracer -- true
fresh
expect_error run_no_permission "needs root or CAP_SYS_ADMIN" \
  env EMO_FAKE_NVML_FAIL=nvmlDeviceResetGpuLockedClocks=4 "$EMO" run --policy "$dir/p.json" --no-tracer -- touch "$dir/ran"
[[ ! -e "$dir/ran" ]] && ok "run: no permission -> the command never started" || bad "command ran without permission"
expect_error run_no_driver "no NVIDIA driver installed" \
  env EMO_NVML_LIBRARY=$dir/none.so "$EMO" run --policy "$dir/p.json" --no-tracer -- true
err=$(EMO_NVML_LIBRARY=$dir/none.so "$EMO" run --policy "$dir/p.json" --dry-run --no-tracer -- true 2>&1); rc=$?
[[ $rc -eq 0 && "$err" == *"not checked against the GPUs"* ]] && ok "run --dry-run without NVML still runs" \
  || bad "dry-run without NVML: rc=$rc <<$err>>"

# --- emo trace / export -----------------------------------------------------------------------
expect_error trace_no_tracer "tracer library" env EMO_TRACER_LIBRARY=$dir/none.so "$EMO" trace -o "$dir/t.jsonl" -- true
expect_error run_no_tracer_library "tracer library" env EMO_TRACER_LIBRARY=$dir/none.so "$EMO" run --policy "$dir/p.json" --dry-run -- true
expect_error trace_no_command "no command given after --" "$EMO" trace --
if [[ -e "$(dirname "$EMO")/libemo_tracer.so" ]]; then
  # No CUDA here: the driver never loads the tracer, so no trace can appear.
  expect_error trace_no_cuda "no trace written" "$EMO" trace -o "$dir/t.jsonl" -- true
fi
python3 - "$dir/own.jsonl" <<'PY'
import json, sys
rows = [{"format": "emo.trace/1", "emo_version": "0.1.0", "pid": 42, "command": ["./app"], "gpus": []},
        {"kind": "gpu", "device": 0, "name": "NVIDIA H200", "sm_count": 132},
        {"kind": "runtime", "start_ns": 1000, "dur_ns": 100, "name": "cudaLaunchKernel", "pid": 42, "tid": 43, "correlation": 1},
        {"kind": "kernel", "start_ns": 1200, "dur_ns": 3000, "name": "gemm", "device": 0, "stream": 7, "correlation": 1},
        {"kind": "runtime", "start_ns": 1300, "dur_ns": 4000, "name": "cudaDeviceSynchronize", "pid": 42, "tid": 43, "correlation": 2},
        {"kind": "sync", "sync": "context_sync", "start_ns": 1300, "dur_ns": 4000, "correlation": 2, "stream": -1, "event_id": -1, "event_sync_id": -1},
        {"kind": "end", "records": 5, "dropped": 0}]
open(sys.argv[1], "w").write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
PY
a=$("$EMO" inspect --json - "$dir/own.jsonl" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["format"], d["counts"]["kernel"], d["counts"]["runtime"], d["counts"]["sync"])')
"$EMO" export "$dir/own.jsonl" --kineto "$dir/own.json" && \
b=$("$EMO" inspect --json - "$dir/own.json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["format"], d["counts"]["kernel"], d["counts"]["runtime"], d["counts"]["sync"])')
[[ "$a" == "emo-trace 1 2 1" && "${b:-}" == "kineto-json 1 2 1" ]] && ok "inspect reads emo.trace/1; export -> Kineto reads back" \
  || bad "emo trace format: <<$a>> <<${b:-}>>"

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
