#!/usr/bin/env bash
# Optimiser benchmarks (docs/optimizer.md): EMO's frontier against Perseus's published frontiers
# (relative and raw time, 24 points each, frontier compute time), the fast solver's gap against
# the CBC MILP (24 instances, <= 200 nodes), and the prediction of the 38 measured Perseus plans.
#
#   scripts/bench-perseus.sh [BUILD_DIR] [--skip-gap]     (default build-bench, Release)
#
# Environment: EMO_DATA_DIR (default ../shared/data beside the checkout), EMO_BENCH_CPU (core to
# pin to, default 0). Takes ~2 min for the Perseus part and ~10 min for the gap part on a 2-core VM
# (CBC is given up to 120 s per instance). Frontier times are wall and CPU seconds of one core.
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
skip_gap=0
args=()
for a in "$@"; do
  if [[ $a == --skip-gap ]]; then skip_gap=1; else args+=("$a"); fi
done
bench_setup bench-perseus "${args[0]:-build-bench}" emo emo-bench-perseus emo-bench-opt-gap emo-bench-measured-plans
[[ -f $data/perseus/stage_profile/gpt3-175b+a100_sxm_bf16.csv ]] || die "missing $data/perseus (set EMO_DATA_DIR)"

echo "== emo pipeline, 96 microbatches, 100 deadlines (pinned to CPU $cpu)"
/usr/bin/time -f "wall %e s, CPU %U s, peak RSS %M KB" taskset -c "$cpu" "$build/emo" pipeline \
  --stage-profile "$data/perseus/stage_profile/gpt3-175b+a100_sxm_bf16.csv" --stages 8 --microbatches 96 \
  --frontier /dev/null
echo
echo "== EMO vs Perseus (emo-bench-perseus)"
taskset -c "$cpu" "$build/emo-bench-perseus" "$data"
echo
echo "== measured plans (emo-bench-measured-plans)"
"$build/emo-bench-measured-plans" "$data"
if ((skip_gap == 0)); then
  echo
  echo "== fast solver vs MILP (emo-bench-opt-gap)"
  taskset -c "$cpu" "$build/emo-bench-opt-gap" "$data"
fi
