#!/usr/bin/env bash
# Read-only checks of EMO on a real GPU (a session with the device tool runs this there).
# It NEVER changes a GPU setting: it lists GPUs, measures energy, traces, analyses, and applies a
# policy only with `emo run --dry-run` (which never calls an NVML setter; tests/cli prove it with
# the recording NVML stand-in). Steps, each reported as ok/FAIL, results under $OUT (or ./gpu-check-out):
#   1. emo gpus --json                       2. nvcc emo_check.cu (a small CUDA program with NVTX steps)
#   3. emo measure -- emo_check              4. emo trace -- emo_check, emo inspect, emo analyze, emo export
#   5. emo run --dry-run with a policy made from that trace: the tracer's follow mode must report pack starts
# Usage: scripts/gpu-check.sh [BUILD_DIR]   (default build/; built here if emo is missing)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT"
fails=0
step() { echo; echo "=== $*"; }
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

if [[ ! -x "$BUILD/emo" ]]; then
  step "build"
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMO_BUILD_TESTS=OFF -DEMO_BUILD_BENCH=OFF >/dev/null &&
    cmake --build "$BUILD" -j "$(nproc)" --target emo || { echo "FAIL build"; exit 1; }
fi
EMO=$BUILD/emo
[[ -e "$BUILD/libemo_tracer.so" ]] && ok "tracer built" || bad "libemo_tracer.so not built (CUPTI not found?)"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,power.draw --format=csv 2>&1 | tee "$OUT/nvidia-smi-before.txt"

step "1. emo gpus"
"$EMO" gpus && "$EMO" gpus --json "$OUT/gpus.json" >/dev/null && ok "emo gpus" || bad "emo gpus"

step "2. build the CUDA check program"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$NVCC" -O2 -o "$OUT/emo_check" scripts/gpu-check/emo_check.cu -ldl && ok "nvcc" || bad "nvcc"

step "3. emo measure"
"$EMO" measure --json "$OUT/measure.json" -- "$OUT/emo_check" 200 && ok "emo measure" || bad "emo measure"
cat "$OUT/measure.json" 2>/dev/null

step "4. emo trace, inspect, analyze, export"
"$EMO" trace -o "$OUT/emo_check.jsonl" --kineto "$OUT/emo_check.kineto.json" -- "$OUT/emo_check" 20 \
  && ok "emo trace" || bad "emo trace"
"$EMO" inspect "$OUT/emo_check.jsonl" && ok "emo inspect (emo.trace/1)" || bad "emo inspect"
"$EMO" inspect "$OUT/emo_check.kineto.json" >/dev/null && ok "Kineto export reads back" || bad "Kineto export"
"$EMO" analyze "$OUT/emo_check.jsonl" && ok "emo analyze" || bad "emo analyze"

step "5. emo run --dry-run"
if python3 scripts/gpu-check/make_policy.py "$OUT/emo_check.jsonl" "$OUT/gpus.json" "$OUT/policy.json"; then
  "$EMO" run --policy "$OUT/policy.json" --dry-run --log "$OUT/run.log" -- "$OUT/emo_check" 50 && ok "emo run --dry-run" \
    || bad "emo run --dry-run"
  starts=$(grep -c '"event":"pack_start"' "$OUT/run.log" 2>/dev/null)
  switches=$(grep -c '"event":"switch"' "$OUT/run.log" 2>/dev/null)
  applied=$(grep -c '"applied":true' "$OUT/run.log" 2>/dev/null)
  echo "run.log: ${starts:-0} pack starts, ${switches:-0} intended switches, ${applied:-0} applied"
  [[ ${starts:-0} -ge 50 ]] && ok "tracer follow mode reported pack starts" || bad "too few pack starts (${starts:-0})"
  [[ ${applied:-0} -eq 0 ]] && ok "dry run applied nothing" || bad "dry run applied a switch"
else
  bad "make_policy"
fi

nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,power.draw --format=csv 2>&1 | tee "$OUT/nvidia-smi-after.txt"
echo
echo "gpu-check: $fails failure(s); outputs in $OUT"
[[ $fails -eq 0 ]]
