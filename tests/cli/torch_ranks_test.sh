#!/usr/bin/env bash
# emo.torch under a 2-process torchrun-like launcher, its clocks through the clock service (issue
# 28, item 5): `emo serve` as root on the recording NVML stand-in (3 GPUs); `emo run --no-tracer`
# as the user nobody (its own stand-in refuses every setter, EMO_FAKE_NVML_ROOT_ONLY=1, so every
# clock goes through the service) over tests/cli/fake_launcher.py, which starts 2 Python workers
# with RANK/LOCAL_RANK/WORLD_SIZE and CUDA_VISIBLE_DEVICES as torchrun does. Each worker is a
# training loop calling emo.torch.step() (a two-file stand-in `torch` package, CUDA unavailable:
# no torch needed); emo.torch must report only its own rank's section and name its own GPU.
# The job's policy has 2 sections with distinct clocks; the expected setter sequence of each GPU
# is worked out by hand below from the policy, and compared with the service's stand-in log.
# Usage: torch_ranks_test.sh PATH/TO/emo PATH/TO/libemo_fake_nvml.so PATH/TO/_emo.so|""
set -u
EMO_BUILT=${1:?usage: torch_ranks_test.sh EMO FAKE_NVML EXTENSION}
FAKE_BUILT=${2:?usage: torch_ranks_test.sh EMO FAKE_NVML EXTENSION}
EXT_BUILT=${3:-}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, require_tool, skip_or_fail
source "$(dirname "$0")/serve_lib.sh"  # write_serve_conf, start_service
require_built "$FAKE_BUILT"
require_tool python3 setpriv
[[ -n "$EXT_BUILT" ]] || skip_or_fail "the Python extension is not built (EMO_BUILD_PYTHON=OFF)"
require_built "$EXT_BUILT"
[[ $(id -u) -eq 0 ]] || skip_or_fail "this test runs the clock service as root and the job as nobody: run it as root"
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d); chmod 0755 "$dir"
left=()
trap 'for p in "${left[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
# nobody runs copies: emo, the stand-in, the emo package with its extension, the launcher, the stand-in torch.
mkdir -p "$dir/bin" "$dir/py/torch" "$dir/nobody"; chown nobody:nogroup "$dir/nobody"; chmod 0700 "$dir/nobody"
install -m 0755 "$EMO_BUILT" "$dir/bin/emo"; install -m 0755 "$FAKE_BUILT" "$dir/bin/libfake_nvml.so"
cp -r "$src/python/emo" "$dir/py/"; cp "$EXT_BUILT" "$dir/py/emo/"; cp "$src/tests/cli/fake_launcher.py" "$dir/bin/"
printf 'from . import cuda, profiler\n__version__ = "0.0-stand-in"\n' > "$dir/py/torch/__init__.py"
printf 'def is_available():\n    return False\n' > "$dir/py/torch/cuda.py"
: > "$dir/py/torch/profiler.py"
chmod -R a+rX "$dir/py" "$dir/bin"
# A python3 that nobody may run and that loads the extension (a pyenv shim under /root is not one).
PY=""
for p in "$(command -v python3)" /usr/bin/python3 /usr/local/bin/python3; do
  if [[ -x "$p" ]] && setpriv --reuid nobody --regid nogroup --clear-groups env PYTHONPATH="$dir/py" "$p" \
       -c 'import emo.torch' 2>/dev/null; then PY=$p; break; fi
done
[[ -n "$PY" ]] || skip_or_fail "no python3 that the user nobody may run imports the built extension $EXT_BUILT"
EMO=$dir/bin/emo SOCK=$dir/run/emo.sock
A100="NVIDIA A100-SXM4-80GB"
export EMO_NVML_LIBRARY=$dir/bin/libfake_nvml.so EMO_FAKE_NVML_GPUS="$A100,$A100,$A100" EMO_FAKE_NVML_PROCS=$dir/procs
unset EMO_FAKE_NVML_FAIL EMO_CLOCK_SERVICE XDG_RUNTIME_DIR RANK LOCAL_RANK WORLD_SIZE SLURM_PROCID
write_serve_conf
start_service || exit 1
# NVML's process lists: nobody's training job on GPUs 1 and 2, root's own process on GPU 0 (the
# service refuses GPU 0 to nobody: a process reporting a section not its own shows as an error).
setpriv --reuid nobody --regid nogroup --clear-groups sleep 300 & job=$!; left+=("$job")
printf '0 %s\n1 %s\n2 %s\n' $$ "$job" "$job" > "$dir/procs"

# The job's policy: section r is rank r; 3 packs at 0/10/20 ms; default 1410 MHz.
#   rank 0: 1395 1200 1005   rank 1: 1380 1185 990
python3 "$src/tests/cli/three_pack_policy.py" "$dir/job.json" --job 1395,1200,1005 1380,1185,990
chmod 0644 "$dir/job.json"
# A worker: one training step reported with emo.torch.step() (pack 0 of iteration 0), then the
# step's 30 ms and more, so that emo run plays packs 1 and 2 and the default clock.
cat > "$dir/bin/train.py" <<'PY'
import time
import emo.torch
emo.torch.step()
time.sleep(0.3)
PY
chmod 0644 "$dir/bin/train.py"
# By hand, per GPU (as in runtime_multigpu_test.sh): reset before its first lock; pack 0 seen with
# no clock requested yet → its clock at once; packs 1 and 2 early; the default 1410 after pack 2;
# reset at the end. A GPU no rank runs on: no setter.
want() { echo "ResetGpuLockedClocks;SetGpuLockedClocks $1 $1;SetGpuLockedClocks $2 $2;SetGpuLockedClocks $3 $3;SetGpuLockedClocks 1410 1410;ResetGpuLockedClocks;"; }
W0=$(want 1395 1200 1005) W1=$(want 1380 1185 990)
setters_of() {  # GPU LOG: that GPU's SM setter calls in LOG, in order, the GPU index left out
  awk -v g="$1" '/^nvmlDevice(Set|Reset)GpuLockedClocks / && $2 == g { s = $1; for (i = 3; i <= NF; i++) s = s " " $i; print s }' \
    "$2" 2>/dev/null | sed 's/nvmlDevice//' | tr '\n' ';'
}
job_run() {  # VISIBLE [EMO RUN FLAG]: the job as nobody, on those GPUs
  local visible=$1 flag=(); [[ -n "${2:-}" ]] && flag=("$2")
  rm -f "$dir/svc.log" "$dir/nobody/cli.log"
  err=$(setpriv --reuid nobody --regid nogroup --clear-groups env EMO_FAKE_NVML_ROOT_ONLY=1 EMO_CLOCK_SOCKET="$SOCK" \
        EMO_STATE_DIR="$dir/nobody/state" EMO_FAKE_NVML_LOG="$dir/nobody/cli.log" PYTHONPATH="$dir/py" \
        "$EMO" run "${flag[@]}" --policy "$dir/job.json" --no-tracer --log "$dir/nobody/run.log" -- \
        "$PY" "$dir/bin/fake_launcher.py" --nproc 2 --visible "$visible" -- "$PY" "$dir/bin/train.py" 2>&1); rc=$?
}
check() {  # NAME WANT_GPU0 WANT_GPU1 WANT_GPU2 [MAX_DIRECT]: MAX_DIRECT setter calls nobody's own
  # NVML may see (refused: it has no permission; without --via-service the first is tried there)
  local name=$1 g got okay=1 direct max=${5:-0}; shift
  for g in 0 1 2; do
    got=$(setters_of $g "$dir/svc.log")
    if [[ "$got" != "$1" ]]; then okay=0; echo "   GPU $g: got  <<$got>>"; echo "   GPU $g: want <<$1>>"; fi
    shift
  done
  direct=$(grep -c '^nvmlDevice\(Set\|Reset\)' "$dir/nobody/cli.log" 2>/dev/null)
  [[ $okay -eq 1 && $rc -eq 0 && $direct -le $max && "$err" != *warning* ]] && ok "$name" \
    || bad "$name: rc=$rc direct setters=$direct <<$err>>"
}

# 1. CUDA_VISIBLE_DEVICES as UUIDs (GPU 2's, then GPU 1's): rank 0 (LOCAL_RANK 0) runs on GPU 2,
#    rank 1 on GPU 1: GPU 2 gets rank 0's switches, GPU 1 rank 1's, GPU 0 (root's) none.
U1=GPU-fake-0000-0000-0000-000000000001 U2=GPU-fake-0000-0000-0000-000000000002
job_run "$U2,$U1"
check "emo.torch, 2 ranks, CUDA_VISIBLE_DEVICES=GPU 2's UUID,GPU 1's: GPU 2 rank 0's switches, GPU 1 rank 1's, GPU 0 none (through the service after NVML's no permission)" \
  "" "$W1" "$W0" 1
[[ $(grep -c '"event":"hello".*"accepted":true' "$dir/nobody/run.log") -eq 2 ]] \
  && ok "2 hellos accepted (one per rank)" || bad "hellos: $(grep hello "$dir/nobody/run.log")"
grep -q "uid 65534 pid [0-9]*: lock GPU 2 SM 1395-1395 MHz" "$dir/audit.log" && ! grep -q "GPU 0" "$dir/audit.log" \
  && ok "audit: nobody locked GPU 2 at rank 0's first clock; nothing asked of GPU 0" || bad "audit: $(cat "$dir/audit.log")"
# 2. The other order, --via-service: rank 0 on GPU 1, rank 1 on GPU 2; nobody's NVML sees no setter.
job_run "$U1,$U2" --via-service
check "CUDA_VISIBLE_DEVICES swapped, --via-service: GPU 1 rank 0's switches, GPU 2 rank 1's" "" "$W0" "$W1"

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
