#!/usr/bin/env bash
# The main job on the default input: installs the Debian dependencies, builds EMO and runs
# `emo optimize` end to end on each trace (graph, slack, packs, profiling on the simulated device,
# models, optimiser, policy, evaluation), after `emo inspect`. Outputs land in build/main-job/,
# which each run empties first: the policy, the JSON result and the HTML report of each trace.
#   scripts/main-job.sh [TRACE...]     (default: data/traces/kineto_resnet50_2021.json.gz, a real
#                                       ResNet-50 training trace committed with its licence)
#   EMO_MAX_SLOWDOWN=0.05 (default)    the latency target
# The build is quiet: its log (build/main-job-build.log) is printed only when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
mkdir -p build
log=build/main-job-build.log
echo "main-job: building emo (log in $log)"
if ! { cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target emo; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "main-job: error: the build failed (log above, also in $log)" >&2
  exit 1
fi
if (($# == 0)); then
  set -- data/traces/kineto_resnet50_2021.json.gz
fi
OUT=build/main-job
# build/main-job/ holds only this script's outputs: empty it before each run, so that it holds
# this run's files and nothing from an earlier one (e.g. policy.2.json of a run on more traces).
rm -rf "$OUT"
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
