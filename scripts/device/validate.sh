#!/usr/bin/env bash
# Issue 9's one device call (docs/device-validation.md): on the H200 machine, in ~7 minutes,
#   setup     pick emo (carried .device-bundle/emo, or build it there from .device-bundle/debs)
#   nvml      scripts/device/nvml_probe.py: read-only NVML facts (clocks, idle/busy power,
#             energy-counter update period) -> $OUT/nvml.json
#   workload  scripts/device/workload.py: sleep calibration, GPT-like 2-stream training loop under
#             the PyTorch profiler (CUDA sync events), baseline + perturbation sessions, NVML
#             energy per step -> workload.json + traces
#   emo       what the binary has: emo gpus / emo measure / emo trace (issue 8), emo inspect and
#             emo analyze on the baseline trace
#   analysis  scripts/device/analyze_results.py there too (a preview; the real one runs here)
#   pack      at most 8 files into $OUT
# NEVER changes clocks, power limits, persistence or compute mode: NVML and nvidia-smi are read.
#   scripts/device/validate.sh [OUT_DIR]       (default $OUT, else /tmp/emo-validate-out)
# Environment: EMO_VALIDATE_DRY=1 runs the workload on the CPU (--device cpu --dry), for a check
#   of this script where there is no GPU; EMO_BUILD_ON_DEVICE=1 builds emo there even if the carried one runs;
#   EMO_VALIDATE_WORKLOAD_S (default 230); EMO_VALIDATE_ONLY=E1,E5 runs only those experiments; EMO_TRACE_ARGS / EMO_MEASURE_ARGS override the guessed
#   options of `emo trace` / `emo measure` (everything before `-- COMMAND`); PYTHON (python3).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${1:-${OUT:-/tmp/emo-validate-out}}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=${EMO_VALIDATE_WORK:-/tmp/emo-validate}
rm -rf "$WORK" && mkdir -p "$WORK/wl" "$WORK/emo"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
exec > >(tee -a "$OUT/validate.log") 2>&1
T0=$SECONDS
WORKLOAD_S=${EMO_VALIDATE_WORKLOAD_S:-230}
declare -A BUDGET=([setup]=30 [nvml]=45 [workload]=$((WORKLOAD_S + 15)) [emo]=75 [analysis]=30 [pack]=15)
PHASES=()
phase() {
  CUR=$1 PSTART=$SECONDS
  echo "=== [+$((SECONDS - T0)) s] phase $1 (budget ${BUDGET[$1]} s)"
}
phase_end() {
  local used=$((SECONDS - PSTART)) over=""
  ((used > BUDGET[$CUR])) && over=" OVER BUDGET"
  echo "=== [+$((SECONDS - T0)) s] phase $CUR: ${used} s of ${BUDGET[$CUR]} s$over"
  PHASES+=("$CUR=$used/${BUDGET[$CUR]}")
}
run() {  # run SECONDS LABEL CMD...: bounded, logged, never fatal
  local t=$1 label=$2; shift 2
  echo "--- $label: $*"
  timeout --kill-after=5 "$t" "$@"
  local rc=$?
  ((rc != 0)) && echo "--- $label: exit $rc"
  return $rc
}

# ---- setup ------------------------------------------------------------------------------------
phase setup
date -u +"%Y-%m-%dT%H:%M:%SZ"; uname -a
run 20 nvidia-smi nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,persistence_mode,compute_mode --format=csv
run 60 torch "$PY" -c 'import torch, pynvml; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name(0))'
B=$ROOT/.device-bundle
EMO=""
if [[ -x $B/emo/bin/emo ]] && "$B/emo/bin/emo" --help >/dev/null 2>&1; then
  EMO=$B/emo/bin/emo
elif [[ -x $B/emo/emo-loader ]] && "$B/emo/emo-loader" --help >/dev/null 2>&1; then
  EMO=$B/emo/emo-loader
fi
echo "carried emo: ${EMO:-none that runs} ($(cat "$B/emo/COMMIT" 2>/dev/null | tr '\n' ' '))"
build_on_device() {  # emo from source with the carried Debian -dev packages; log in $WORK/build.log
  local deps=/tmp/emo-deps lib=/tmp/emo-deps/usr/lib/x86_64-linux-gnu
  rm -rf "$deps" && mkdir -p "$deps"
  for d in "$B"/debs/*.deb; do dpkg-deb -x "$d" "$deps" || return 1; done
  PKG_CONFIG_LIBDIR=$lib/pkgconfig:$deps/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$deps \
    cmake -S "$ROOT" -B /tmp/emo-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMO_BUILD_TESTS=OFF \
      -DEMO_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$deps/usr" -DCMAKE_BUILD_RPATH="$lib" &&
    cmake --build /tmp/emo-build -j 16 --target emo
}
BUILD_PID=""
if [[ ${EMO_BUILD_ON_DEVICE:-0} == 1 || -z $EMO ]] && compgen -G "$B/debs/*.deb" >/dev/null; then
  echo "building emo on the device in the background (log: build.log in emo.tar.gz)"
  (build_on_device >"$WORK/build.log" 2>&1) &
  BUILD_PID=$!
fi
phase_end

# ---- nvml -------------------------------------------------------------------------------------
phase nvml
run 70 nvml "$PY" scripts/device/nvml_probe.py --out "$OUT/nvml.json"
phase_end

# ---- workload ---------------------------------------------------------------------------------
phase workload
DRY=()
[[ ${EMO_VALIDATE_DRY:-0} == 1 ]] && DRY=(--device cpu --dry)
ONLY=()
[[ -n ${EMO_VALIDATE_ONLY:-} ]] && ONLY=(--only "$EMO_VALIDATE_ONLY")
run $((WORKLOAD_S + 40)) workload "$PY" scripts/device/workload.py --out "$WORK/wl" \
  --budget-s "$WORKLOAD_S" "${DRY[@]}" "${ONLY[@]}"
phase_end

# ---- emo --------------------------------------------------------------------------------------
phase emo
if [[ -n $BUILD_PID ]]; then
  wait "$BUILD_PID" && [[ -x /tmp/emo-build/emo ]] && /tmp/emo-build/emo --help >/dev/null 2>&1 &&
    { echo "built on the device: /tmp/emo-build/emo"; EMO=/tmp/emo-build/emo; } ||
    echo "build on the device failed (build.log); keeping ${EMO:-no emo}"
fi
BATCH=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["batch"])' "$WORK/wl/workload.json" 2>/dev/null || echo 8)
PLAIN=("$PY" "$ROOT/scripts/device/workload.py" --mode plain --batch "$BATCH" "${DRY[@]}")
if [[ -n $EMO ]]; then
  "$EMO" --help >"$WORK/emo/help.txt" 2>&1
  cat "$WORK/emo/help.txt"
  has() { grep -Eq "^[[:space:]]+$1([[:space:]]|$)" "$WORK/emo/help.txt"; }
  base=$WORK/wl/base0.pt.trace.json.gz
  [[ -f $base ]] && run 60 inspect "$EMO" inspect "$base" && run 60 analyze "$EMO" analyze "$base" --window 'ProfilerStep#2'
  if has gpus; then
    "$EMO" gpus --help >"$WORK/emo/gpus-help.txt" 2>&1
    run 20 gpus "$EMO" gpus | tee "$WORK/emo/gpus.txt"
  fi
  if has measure; then
    "$EMO" measure --help >"$WORK/emo/measure-help.txt" 2>&1
    read -r -a margs <<<"${EMO_MEASURE_ARGS:---json $WORK/emo/measure.json}"
    run 60 measure "$EMO" measure "${margs[@]}" -- "${PLAIN[@]}" --steps 20 --out "$WORK/emo/measure-plain" |
      tee "$WORK/emo/measure.txt"
  else
    echo "emo has no 'measure' command: energy is the workload's own NVML reading (workload.json: energy)"
  fi
  if has trace; then
    "$EMO" trace --help >"$WORK/emo/trace-help.txt" 2>&1
    read -r -a targs <<<"${EMO_TRACE_ARGS:---output $WORK/emo/emo_trace.json}"
    run 90 trace "$EMO" trace "${targs[@]}" -- "${PLAIN[@]}" --steps 8 --out "$WORK/emo/trace-plain" |
      tee "$WORK/emo/trace.txt"
    for f in "$WORK"/emo/emo_trace*; do
      [[ -f $f ]] && run 30 inspect-emo-trace "$EMO" inspect "$f" && run 30 analyze-emo-trace "$EMO" analyze "$f"
    done
  else
    echo "emo has no 'trace' command: the PyTorch profiler traces are the only traces"
  fi
else
  echo "no emo that runs here: the analysis runs at home (scripts/device/analyze_results.py)"
fi
phase_end

# ---- analysis (preview) -------------------------------------------------------------------------
phase analysis
cp "$OUT/nvml.json" "$WORK/wl/" 2>/dev/null
if [[ -n $EMO && -f $WORK/wl/workload.json ]]; then
  run 60 analysis "$PY" scripts/device/analyze_results.py "$WORK/wl" --emo "$EMO" \
    --md "$WORK/analysis.md" --json "$WORK/analysis.json" >/dev/null
fi
phase_end

# ---- pack: at most 8 files into $OUT ----------------------------------------------------------------
phase pack
cp "$WORK/wl/workload.json" "$OUT/" 2>/dev/null
cp "$WORK/wl/base0.pt.trace.json.gz" "$OUT/" 2>/dev/null
others=()
for f in "$WORK"/wl/*.pt.trace.json.gz; do
  [[ -f $f && $(basename "$f") != base0.pt.trace.json.gz ]] && others+=("$(basename "$f")")
done
# Up to two tars of at most 15 MiB each (the tool brings back files of at most 16 MiB).
limit=$((15 * 1024 * 1024)) size=0 part=1 list1=() list2=()
for f in "${others[@]}"; do
  s=$(stat -c %s "$WORK/wl/$f")
  if ((size + s > limit)); then part=2; size=0; fi
  if ((part == 1)); then list1+=("$f"); else list2+=("$f"); fi
  size=$((size + s))
done
((${#list1[@]})) && tar -C "$WORK/wl" -cf "$OUT/traces.tar" "${list1[@]}"
((${#list2[@]})) && tar -C "$WORK/wl" -cf "$OUT/traces2.tar" "${list2[@]}"
cp "$WORK"/build.log "$WORK"/analysis.md "$WORK"/analysis.json "$WORK/emo/" 2>/dev/null
tar -C "$WORK" -czf "$OUT/emo.tar.gz" --exclude='*.pt.trace.json*' emo
phase_end
"$PY" - "$OUT/validate.json" "$EMO" "$((SECONDS - T0))" "${PHASES[@]}" <<'PY'
import json, sys
out, emo, total, *phases = sys.argv[1:]
ph = {p.split("=")[0]: dict(zip(("seconds", "budget_s"), map(int, p.split("=")[1].split("/"))))
      for p in phases}
json.dump({"schema": "emo-device-validate/1", "emo": emo or None, "total_s": int(total),
           "phases": ph}, open(out, "w"), indent=1)
PY
ls -la "$OUT"
echo "=== total $((SECONDS - T0)) s; phases: ${PHASES[*]}"
[[ -f $WORK/analysis.md ]] && cat "$WORK/analysis.md"
exit 0
