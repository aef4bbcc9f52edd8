// The job view of a decomposed solve (docs/multi-rank.md, "Seeing it"): what `emo optimize
// --report/--overlay` draws of a job solved by decomposition (job/job_solve.h), gathered without
// any op of any rank leaving the process that holds it — per rank its packs and two energies,
// and the critical path by rank, a few numbers per pack and per collective.
//
// From the kept plan (the composed plan, or the static clock when it is kept): each rank's run
// of it (the run the solve composed; at a kept static clock the same static run again) reduced to
// its ports and composed (timing::time_job), the job's critical path backtracked from that timing
// (timing::job_critical_path), and each rank's packs timed on its own graph with its ports ending
// when the job says (RankWorker::lanes, timing::time_with_port_ends): the packs' intervals on the
// job's clock are those of the composed run, exactly.
#pragma once

#include <vector>

#include "core/timestamp.h"
#include "job/rank_worker.h"
#include "model/gpu_catalog.h"
#include "timing/ports.h"

namespace emo::job {

struct JobPorts;
struct DecomposedSolve;

/// One rank in the job view.
struct JobViewRank {
  RankLane packs;          ///< Its packs in the kept plan's run, on the job's clock (ns), by start.
  double baseline_j = 0;   ///< Its GPU's energy at the max clock: its ops above idle + idle power over
                           ///< the baseline's makespan (J, simulated).
  double kept_j = 0;       ///< The same in the kept plan's run (its makespan). Summed over the ranks:
                           ///< the job's energies (DecomposedSolve::baseline.run, ::plan).
};

/// The job view of a decomposed solve; every figure simulated.
struct JobView {
  TimeNs start_ns = 0;     ///< The job's start in the kept plan's run (job clock, ns).
  TimeNs makespan_ns = 0;  ///< Its makespan (DecomposedSolve::plan.time_ns).
  double static_mhz = 0;   ///< The static clock kept (every pack at it), 0 when the composed plan is.
  std::vector<JobViewRank> ranks;             ///< In the job's order.
  std::vector<timing::JobPathStretch> path;   ///< The kept plan's critical path by rank (job clock).
};

/// The job view of `d`, decompose()'s result on the job `jp` with `worker` (built with
/// DecomposedOptions::lanes, still holding the ranks of that solve) on the simulated `gpu`: at a
/// kept static clock the ranks are run at it once more (RankWorker::statics), then asked for their
/// lanes (RankWorker::lanes). Throws std::invalid_argument when d is not of jp, and what the
/// worker throws.
JobView job_view(const JobPorts& jp, const DecomposedSolve& d, RankWorker& worker, const model::GpuSpec& gpu);

}  // namespace emo::job
