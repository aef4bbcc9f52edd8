// Joint against per-rank-independent optimisation of one job (docs/multi-rank.md, issue 16).
//
// Optimising each rank's trace alone sees a collective as a fixed block: its recorded duration
// includes the wait for the last participant, so the slack before it is invisible, and slowing one
// rank's compute is not seen to delay the others. compare_with_independent() optimises every rank
// alone, then runs the per-rank plans together on the joint graph of the linked job — where every
// collective waits for its last participant — next to the joint plan, on one simulated device.
#pragma once

#include <cstdint>
#include <vector>

#include "driver/optimize.h"
#include "trace/trace.h"

namespace emo::job {

/// One rank optimised alone: what its own optimisation measured on its own trace.
struct RankAlone {
  std::int32_t rank = -1;
  std::int64_t packs = 0;
  double savings = 0;   ///< 1 − energy / baseline energy, on its own trace.
  double slowdown = 0;  ///< time / baseline time − 1, on its own trace.
};

/// Both plans run together on the joint graph, every op at its pack's clock from its start (no
/// switch latency: the same ideal switching for both), on the simulated device of `emo optimize`
/// (same GPU and seed). Every figure is simulated.
struct JobComparison {
  driver::Evaluated baseline;      ///< Every GPU at its max clock.
  driver::Evaluated joint;         ///< The joint plan (driver::OptimizeResult::plan() of the linked job).
  driver::Evaluated independent;   ///< Each rank's own plan, optimised alone.
  TimeNs target_ns = 0;    ///< baseline × (1 + max_slowdown), floored.
  std::vector<RankAlone> ranks;
  bool simulated = true;
};

/// `job` is the linked trace (trace::link_job) that `joint` was computed from over its whole
/// trace; `rank_traces` are the ranks' own traces in the job's order (meta.job.ranks). Optimises
/// each rank alone with `options` on a simulated `gpu`, then runs the baseline, the joint plan and
/// the independent plans on the joint graph. Throws std::invalid_argument when `job` is not linked
/// or the rank traces do not match it, and what driver::optimize() throws.
JobComparison compare_with_independent(const trace::Trace& job, const driver::OptimizeResult& joint,
                                       const std::vector<trace::Trace>& rank_traces, const model::GpuSpec& gpu,
                                       const driver::OptimizeOptions& options);

}  // namespace emo::job
