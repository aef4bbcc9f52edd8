#!/usr/bin/env bash
# The cross-check of EMO against the stage-level optimiser (issue 26, item 5; docs/multi-rank.md,
# "Cross-check against the stage-level optimiser"). For each generated 1F1B pipeline job
# (SYNTHETIC: emo_make_job --mode pipeline on kineto/hta_training_16rank_rank0) and target:
#   1. emo_pipeline_crosscheck profile: its Perseus stage profile from the simulated device;
#   2. emo pipeline --max-slowdown X on it (P_blocked = the GPU's idle power, as the simulated
#      device counts idle time): the stage-level frontier's plan at +X % of its own all-max-clock time;
#   3. emo_pipeline_crosscheck replay: that plan, and every point of the frontier, replayed on the
#      simulated device (the job's graph, transfers and host included; ideal switching);
#   4. emo optimize JOB --max-slowdown X: EMO's plan, evaluated on the same device (its policy run
#      with switch latency);
#   5. steps 2–3 again on the profile's clocks at or above the lowest clock EMO profiled (EMO's
#      options stop there, runtime::trusted_clocks): the stage-level reference on EMO's clock range.
# Savings are all against one baseline: the job at the max clock on the simulated device (the same
# figure in steps 3 and 4, checked). Prints a Markdown table; every figure SIMULATED.
#
#   scripts/pipeline-crosscheck.sh [BUILD_DIR] [CASE...]     CASE = STAGESxMICROBATCHES[:LAST_SCALE]
# Defaults: build, cases 4x8:1.5 4x8:1 8x16:1.5; targets 0% 1% (PIPELINE_CROSSCHECK_TARGETS); more
# options of EMO's optimize in PIPELINE_CROSSCHECK_EMO_ARGS (e.g. "--profile-clocks 5").
# Needs emo, emo_make_job and emo_pipeline_crosscheck built in BUILD_DIR; data: ../shared/data
# (or EMO_DATA_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
[[ $build = /* ]] || build=$root/$build
shift || true
cases=("$@")
((${#cases[@]})) || cases=(4x8:1.5 4x8:1 8x16:1.5)
targets=(${PIPELINE_CROSSCHECK_TARGETS:-0% 1%})
emo_args=(${PIPELINE_CROSSCHECK_EMO_ARGS:-})  # more emo optimize options, e.g. --profile-clocks 5
data=${EMO_DATA_DIR:-$root/../shared/data}
src=$data/kineto/hta_training_16rank_rank0.json.gz
die() { echo "pipeline-crosscheck.sh: $*" >&2; exit 2; }
[[ -f $src ]] || die "missing $src (set EMO_DATA_DIR)"
for b in emo emo_make_job emo_pipeline_crosscheck; do
  [[ -x $build/$b ]] || die "$build/$b not built (cmake --build $build --target emo emo_make_job emo_pipeline_crosscheck)"
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

echo "| stages × micro-batches | last stage | target | baseline (max clock) | EMO saves, at | stage-level plan (its model's target) replayed, switch latency | the same, ideal switching | stage-level, best frontier point within the target: switch latency | the same, ideal switching | stage-level, its own model | stage-level, best frontier point within the target, switch latency, on EMO's clock range | EMO wall |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  shape=${c%%:*}; scale=1; [[ $c == *:* ]] && scale=${c#*:}
  S=${shape%x*}; M=${shape#*x}
  job=$tmp/job_${S}x${M}_$scale
  "$build/emo_make_job" "$src" "$job" --mode pipeline --stages "$S" --microbatches "$M" --last-stage-scale "$scale" \
    > "$tmp/make.log" || die "emo_make_job failed: $(tail -1 "$tmp/make.log")"
  "$build/emo_pipeline_crosscheck" profile "$job" --stages "$S" --microbatches "$M" --out "$job.csv" \
    --json "$job.profile.json" > /dev/null
  idle=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['idle_power_w'])" "$job.profile.json")
  for t in "${targets[@]}"; do
    "$build/emo" pipeline --stage-profile "$job.csv" --stages "$S" --microbatches "$M" --p-blocked "$idle" \
      --max-slowdown "$t" --points 200 --plans --json "$job.$t.pipeline.json" > /dev/null
    "$build/emo_pipeline_crosscheck" replay "$job" --stages "$S" --microbatches "$M" --plan "$job.$t.pipeline.json" \
      --max-slowdown "$t" --json "$job.$t.replay.json" > /dev/null
    start=$(date +%s.%N)
    "$build/emo" optimize "$job"/*.json.gz --max-slowdown "$t" "${emo_args[@]}" -q --json "$job.$t.optimize.json" > /dev/null
    secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f} s')" "$start" "$(date +%s.%N)")
    # The same stage-level reference on EMO's clock range only: the profile's clocks at or above
    # the lowest clock EMO profiled (EMO's options stop there: runtime::trusted_clocks).
    floor=$(python3 -c "import json,sys; print(min(json.load(open(sys.argv[1]))['profiled_clocks_mhz']))" "$job.$t.optimize.json")
    awk -F, -v f="$floor" 'NR == 1 || $3 >= f' "$job.csv" > "$job.floor.csv"
    "$build/emo" pipeline --stage-profile "$job.floor.csv" --stages "$S" --microbatches "$M" --p-blocked "$idle" \
      --max-slowdown "$t" --points 200 --plans --json "$job.$t.floor.pipeline.json" > /dev/null
    "$build/emo_pipeline_crosscheck" replay "$job" --stages "$S" --microbatches "$M" --plan "$job.$t.floor.pipeline.json" \
      --max-slowdown "$t" --json "$job.$t.floor.replay.json" > /dev/null
    python3 - "$S" "$M" "$scale" "$t" "$job.$t.replay.json" "$job.$t.optimize.json" "$secs" "$job.$t.floor.replay.json" "$floor" <<'PY'
import json, math, sys
S, M, scale, t, rep, opt, secs, rep_floor, floor = sys.argv[1:]
r, o, rf = json.load(open(rep)), json.load(open(opt)), json.load(open(rep_floor))
base = r["baseline"]
# One baseline for both: the job at the max clock on the simulated device, as each tool ran it.
assert base["time_ns"] == o["baseline"]["time_ns"] and abs(base["energy_j"] - o["baseline"]["energy_j"]) < 1e-6, \
    (base, o["baseline"])
emo = 1 - o["emo"]["energy_j"] / base["energy_j"]
emo_at = o["emo"]["time_ns"] / base["time_ns"] - 1
kept = " (baseline kept)" if o.get("baseline_kept") else ""
limit = math.floor(base["time_ns"] * (1 + r["max_slowdown"]))  # as driver::target_of, on the measured baseline
def cell(k, flag=False):
    x = r[k]
    miss = " **misses**" if flag and x["time_ns"] > limit else ""
    return f"{100 * x['saving']:.2f} %, {100 * x['slowdown']:+.3f} %{miss}"
print(f"| {S} × {M} | {scale}× | +{t.rstrip('%')} % | {base['time_ns'] / 1e6:.3f} ms, {base['energy_j']:.3f} J "
      f"| **{100 * emo:.2f} %**, {100 * emo_at:+.3f} %{kept} | {cell('switched', True)} | {cell('ideal', True)} "
      f"| {cell('best_within')} | {cell('best_within_ideal')} | {100 * r['model_saving']:.2f} % "
      f"| {100 * rf['best_within']['saving']:.2f} %, {100 * rf['best_within']['slowdown']:+.3f} % (≥ {float(floor):.0f} MHz) | {secs} |")
PY
  done
done
echo
echo "All figures SIMULATED (simulated A100-SXM4-80GB, seed 1); the jobs are SYNTHETIC (emo_make_job)."
