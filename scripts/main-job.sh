#!/usr/bin/env bash
# The main job on the default input: installs the Debian dependencies, builds EMO and runs
# `emo optimize` end to end on each trace (graph, slack, packs, profiling on the simulated device,
# models, optimiser, policy, evaluation), after `emo inspect`. Outputs land in build/main-job/:
# the policy, the JSON result and the HTML report of each trace.
#   scripts/main-job.sh [TRACE...]     (default: a real ResNet-50 training trace from ../shared/data)
#   EMO_MAX_SLOWDOWN=0.05 (default)    the latency target
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target emo
DATA=${EMO_DATA_DIR:-../shared/data}
if (($# == 0)); then
  set -- "$DATA/kineto/kineto_resnet50_2021.json.gz"
fi
OUT=build/main-job
mkdir -p "$OUT"
build/emo inspect "$@"
i=0
for t in "$@"; do
  echo
  build/emo optimize "$t" --gpu "${EMO_GPU:-A100-SXM4-80GB}" --max-slowdown "${EMO_MAX_SLOWDOWN:-0.05}" \
    --policy "$OUT/policy.$i.json" --json "$OUT/result.$i.json" --report "$OUT/report.$i.html"
  echo "  wrote $OUT/policy.$i.json, $OUT/result.$i.json, $OUT/report.$i.html"
  i=$((i + 1))
done
