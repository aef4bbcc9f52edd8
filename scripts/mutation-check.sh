#!/usr/bin/env bash
# Mutation check (issue 14, part 6): breaks one line of src/ at a time, rebuilds, runs the tests
# that should notice, and reports "mutation -> tests that failed". Exits non-zero when a mutation
# survives (no test failed) or cannot be applied (its text is gone: update the table below).
# Each file is restored from a copy after its mutation, and on exit, error or Ctrl-C; the build
# is brought back to the unmutated sources at the end.
#   scripts/mutation-check.sh [BUILD_DIR]      (default: build; configured beforehand)
#   MUTATIONS="a d" scripts/mutation-check.sh  (a subset, by id)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
[[ -f "$BUILD/CMakeCache.txt" ]] || { echo "mutation-check: $BUILD is not a configured build directory" >&2; exit 2; }
export EMO_DEFAULT_DATA_DIR=${EMO_DEFAULT_DATA_DIR:-$(cd .. && pwd)/shared/data}

# id @ file @ exact text (\n: newline) @ replacement @ targets to build @ ctest regex @ what it breaks
mutations=(
  "a@src/opt/pack_search.cpp@double e = idle_w_ * gpus_@double e = -idle_w_ * gpus_@emo emo_fake_nvml@^cli_optimize@the sign of the idle energy in the optimiser's predicted energy"
  "b@src/opt/pack_search.cpp@if (m <= target_ns + kRoundingNs) {@if (true) {@emo emo_fake_nvml@^cli_optimize@the exact re-evaluation of the solver's plan is skipped (its makespan is taken as fitting)"
  "c@src/opt/pack_search.cpp@for (int round = 0; round < max_moves; ++round) {@for (int round = 0; round < 0; ++round) {@emo emo_fake_nvml@^cli_optimize@the exact local search (polish) makes no move"
  "d@src/runtime/sim_backend.cpp@k.start_offset_ns - switch_lead_ns(prev, k.clock_mhz, latency_ns)@k.start_offset_ns@emo emo_fake_nvml emo_driver_tests@^(cli_optimize|Optimize\\.)@simulated clock switches are issued at the pack's start (an up switch one switch latency late)"
  "g@src/driver/optimize.cpp@if (better_within(c.run, kept.run, ev.target_ns))\n        kept = std::move(c), ev.probe_kept@if (true)\n        kept = std::move(c), ev.probe_kept@emo_driver_tests@^Optimize\\.@the lowest-clock probe's plan is kept whatever it measured"
  # (h, "EMO never keeps the measured static candidate", was dropped after issue 26: the kept plan's
  # last guard, static_or_baseline, keeps the same measured static run — the oracle's best on the
  # simulated device, the models' static run on a real GPU — so h changed nothing; h2 breaks that guard.)
  "h2@src/driver/optimize.cpp@if (runs.best && better_within(*runs.best, kept.run, ev.target_ns)) {@if (false) {@emo emo_random_traces_tests@^(RandomTraces|Promises)\\.|^cli_optimize_invariants@the best static run the oracle measured is never kept (issue 26)"
  "x@src/driver/optimize.cpp@if (kept.run.time_ns > ev.target_ns) {\n    kept = with_policy@if (false) {\n    kept = with_policy@emo_driver_tests emo_random_traces_tests@^(Optimize|Promises|RandomTraces)\\.@a kept plan that misses the target is not replaced by the baseline (issue 26)"
  "y@src/runtime/switch_timing.h@return to_mhz > from_mhz ? latency_ns : latency_ns / kDownLeadDivisor;@return latency_ns;@emo emo_runtime_tests emo_fake_nvml@^(SwitchPlanner|cli_observable_starts|cli_runtime)@a switch down asked for one switch latency early, like a switch up (issue 26)"
  "z@src/pack/packer.cpp@if (islands_[k].waits_on_rank) return Cut::kCollective;@(void)0;@emo_support_tests emo_random_traces_tests@^(PackJob|Promises)\\.@a linked job's packs span the points where the GPU waited for another rank (issue 26)"
  "i@src/driver/optimize.cpp@for (int round = 0; round < kRefineRounds; ++round) {@for (int round = 0; round < 0; ++round) {@emo emo_fake_nvml emo_random_traces_tests@^(cli_optimize|RandomTraces\\.)@no refinement profiles where the plan decides (issue 15)"
  "j@src/pack/packer.cpp@if (phase_start_[k]) return Cut::kPhase;@(void)phase_start_;@emo_pack_tests@^(Packer|PackRealTraces)\\.@no phase cuts (issue 15)"
  "e@src/timing/timing.cpp@std::abs(s.end(n) - g.rec_end[n])@(s.end(n) - g.rec_end[n])@emo_timing_tests@^(Timing|WhatIf|Shared/EveryTrace)@replay_error without abs"
  "f1@src/pack/pack_graph.cpp@return static_cast<TimeNs>(std::llround(static_cast<double>(dur_ns) * factor));@return factor > 0 ? dur_ns : 0;@emo_pack_tests@^(PackGraphProperty|PackRealTraces)\\.@pack::scale_ns ignores the factor (check_contraction scales both sides with it, so it still reads 0)"
  "f2@src/pack/pack_graph.cpp@} else {\n          entries[tpk].push_back({src, member_of_[to]@} else if (false) {\n          entries[tpk].push_back({src, member_of_[to]@emo_pack_tests@^(PackGraphProperty|PackRealTraces)\\.@the contraction drops the edges entering a pack after its first op"
  "f3@src/graph/dep_graph.cpp@if (op != kNoNode) edge(DepGraph::end_tp(op), DepGraph::end_tp(call), 0, EdgeType::kHostSync, inferred);@(void)op;@emo_timing_tests@^Shared/EveryTrace\\.@the op graph loses its recorded host-sync edges (real traces)"
  "f4@src/graph/dep_graph.cpp@edge(DepGraph::start_tp(call), DepGraph::start_tp(n), 0, EdgeType::kLaunch);@(void)0;@emo_timing_tests@^Shared/EveryTrace\\.@the op graph loses its launch edges (real traces)"
  "k@src/graph/dep_graph.cpp@        edge(DepGraph::start_tp(n), DepGraph::end_tp(hub), transfer, EdgeType::kCollective);@        (void)hub;@emo_timing_tests emo_random_traces_tests@^(LinkJob|JobOptimize)@a linked collective no longer waits for its other participants (issue 16)"
  "l@src/trace/job.cpp@if (mine && ref) diff.push_back(ref->end + info_.ranks[ref->trace].offset_ns - mine->end);@if (mine && ref) diff.push_back(mine->end - ref->end - info_.ranks[ref->trace].offset_ns);@emo_timing_tests@^LinkJob@the clock offsets' sign flipped (issue 16)"
  # The job path (issue 29): linking, the ports' timing, the decomposed solve's fallbacks.
  "m@src/trace/job.cpp@Instance inst{on_s[k], on_d[k]};@Instance inst{on_s[k], on_d[on_d.size() - 1 - k]};@emo_timing_tests@^LinkJob@point-to-point kernels paired in reverse order (the k-th send with the (n-1-k)-th receive)"
  "n@src/job/job_solve.cpp@out.kept = st->energy_j < composed.energy_j@out.kept = st->energy_j > composed.energy_j@emo_random_traces_tests@^(JobSolveProperty|JobOptimize)\\.@the decomposed solve's static fallback inverted (static kept when costlier, dropped when cheaper)"
  "o@src/job/job_solve.cpp@ || composed.time_ns > base.target_ns;@;@emo_random_traces_tests@^(JobSolveProperty|JobOptimize)\\.@the decomposed solve's target fallback removed (a composed plan that misses the target kept)"
  "n2@src/job/job_solve.cpp@jp.instance[r][p])) - off;@jp.instance[r][p])) + off;@emo_random_traces_tests@^JobSolveProperty\\.@the composition's releases moved from the job's clock to a rank's with the offset's sign flipped (stop 37)"
  "n3@src/job/job_solve.cpp@if (c.residual_ns == 0 || c.passes == kComposePasses) return e;@return e;@emo_random_traces_tests@^JobSolveProperty\\.@the composition stops after its first pass: each rank's run released at its cut's pins, never at the job's transfer starts (stop 37)"
  "p@src/timing/ports.cpp@dur = std::max(dur, r_[x.rank].graph->dur_ns[x.port]);@dur = dur == 0 ? r_[x.rank].graph->dur_ns[x.port] : std::min(dur, r_[x.rank].graph->dur_ns[x.port]);@emo_timing_tests@^Ports\\.@a collective's transfer takes the shortest participant's duration in the job's timing from ports"
  "q@src/trace/job.cpp@info_.ranks[r].offset_ns = diff[diff.size() / 2];@info_.ranks[r].offset_ns = *std::min_element(diff.begin(), diff.end());@emo emo_timing_tests@^(cli_job|LinkJob)@clock offsets from the smallest difference instead of the median"
  "r@src/timing/ports.cpp@start = std::max(start, a);@start = start == kNoTime ? a : std::min(start, a);@emo_timing_tests@^Ports\\.@a collective's transfer starts at its first participant's arrival, not its last (job timing from ports)"
  # The runtime (issue 29): the guardian, the switch planner, the GPU router.
  "s@src/runtime/guardian.cpp@reset.push_back(g);@reset.push_back(g);\n      break;@emo emo_runtime_tests emo_fake_nvml@^(GuardianTest\\.|cli_guardian$)@the guardian resets only the first of its GPUs"
  "t@src/runtime/switch_planner.cpp@start_offset_ns - lead_for(before(j), packs[j].clock_mhz)@start_offset_ns@emo emo_runtime_tests emo_fake_nvml@^(SwitchPlanner|RunPolicy|cli_runtime)@the switch planner issues each switch at its pack's predicted start, not one switch latency before"
  "u@src/runtime/switch_planner.cpp@if (min_interval_ns_ > 0 && now_ns < earliest) {@if (false) {@emo emo_runtime_tests emo_fake_nvml@^(SwitchPlanner|RunPolicy|cli_runtime)@the switch planner ignores the minimum switch interval"
  "v@src/runtime/gpu_router.cpp@return o != owner_.end() && o->second.gpu >= 0 ? o->second.gpu : device;@return false ? o->second.gpu : device;@emo emo_runtime_tests emo_fake_nvml@^(GpuRouter|RunPolicy|cli_runtime)@the GPU router sends a claimed section's switches to the GPU of the section's index (the CUDA ordinal), not the GPU its process named"
  "w@src/runtime/gpu_router.cpp@if (gpu >= 0 && o.gpu == gpu) {@if (false) {@emo emo_runtime_tests emo_fake_nvml@^(GpuRouter|RunPolicy|cli_runtime)@the GPU router lets two sections claim one GPU"
)

declare -A backup=()
restore_all() {
  local f
  for f in "${!backup[@]}"; do cp "${backup[$f]}" "$f" && rm -f "${backup[$f]}"; done
  backup=()
}
trap 'restore_all' EXIT
trap 'restore_all; exit 130' INT TERM

# substitute FILE OLD NEW: exactly one occurrence of OLD (\n = newline) replaced, else exit 1.
substitute() {
  python3 - "$@" <<'PY'
import sys
path, old, new = sys.argv[1], sys.argv[2].replace("\\n", "\n"), sys.argv[3].replace("\\n", "\n")
text = open(path).read()
n = text.count(old)
if n != 1:
    sys.exit(f"{path}: the mutation's text occurs {n} times (expected once)")
open(path, "w").write(text.replace(old, new))
PY
}

only=" ${MUTATIONS:-} "
survived=0; report=()
for m in "${mutations[@]}"; do
  IFS='@' read -r id file old new targets regex what <<<"$m"
  [[ "$only" != "  " && "$only" != *" $id "* ]] && continue
  echo "=== mutation $id: $what ($file)"
  if ! git diff --quiet -- "$file"; then
    echo "mutation-check: $file has uncommitted changes; commit or stash them first" >&2; exit 2
  fi
  backup[$file]=$(mktemp) && cp -p "$file" "${backup[$file]}"
  if ! substitute "$file" "$old" "$new"; then
    report+=("$id ($what) -> NOT APPLIED"); survived=1; restore_all; continue
  fi
  # shellcheck disable=SC2086
  if ! nice cmake --build "$BUILD" -j2 --target $targets >"$BUILD/mutation-$id.build.log" 2>&1; then
    report+=("$id ($what) -> build failed (see $BUILD/mutation-$id.build.log)"); survived=1; restore_all; continue
  fi
  log="$BUILD/mutation-$id.ctest.log"
  ctest --test-dir "$BUILD" -R "$regex" -j2 --timeout 900 --output-on-failure >"$log" 2>&1
  failed=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (\(Failed\|Timeout\|SEGFAULT\|Subprocess aborted\|Exception\).*/\1/p' "$log" |
           sed 's/  # GetParam.*//' | sort | tr '\n' ' ')
  restore_all
  if [[ -z "$failed" ]]; then
    report+=("$id ($what) -> SURVIVED: no test in '$regex' failed"); survived=1
  else
    report+=("$id ($what) -> $failed")
    # The failing checks: a script's FAIL lines, the order checks' messages, a gtest's failed
    # cases (the first 12, cut to 160 characters).
    while IFS= read -r line; do report+=("      ${line:0:160}"); done < <(
      grep -E '^FAIL |times, first|^\[  FAILED  \] [^ ]+\.[^ ]+ \(' "$log" | sed 's/  # GetParam.*//' | sort -u | head -12)
  fi
done
restore_all
echo "=== rebuilding the unmutated sources"
# Everything: a mutated library is linked into more than the targets a mutation built (the
# driver tests and the Python extension kept a mutated driver after an earlier version of this line).
nice cmake --build "$BUILD" -j2 >/dev/null 2>&1 || echo "mutation-check: the rebuild failed" >&2
echo
echo "mutation -> tests that failed"
printf '  %s\n' "${report[@]}"
exit $survived
