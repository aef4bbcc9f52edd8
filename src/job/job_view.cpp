#include "job/job_view.h"

#include <stdexcept>

#include "job/job_solve.h"

namespace emo::job {

JobView job_view(const JobPorts& jp, const DecomposedSolve& d, RankWorker& worker, const model::GpuSpec& gpu) {
  const std::size_t n = jp.open.size();
  JobView v;
  v.static_mhz = d.static_choice.kept ? d.static_choice.best.clock_mhz : 0.0;
  std::vector<RankRun> at_static;
  if (v.static_mhz > 0) {
    for (std::vector<RankRun>& r : worker.statics({v.static_mhz})) at_static.push_back(std::move(r.at(0)));
  }
  const std::vector<RankRun>& runs = v.static_mhz > 0 ? at_static : d.composed.runs;
  if (runs.size() != n || d.baseline.rank_above_idle_j.size() != n || jp.instance.size() != n) {
    throw std::invalid_argument("job_view: the solve is not of this job (a run per rank expected)");
  }
  std::vector<timing::RankPorts> ranks(n);
  for (std::size_t r = 0; r < n; ++r) ranks[r] = {&runs[r].ports, jp.instance[r], jp.link.info.ranks[r].offset_ns};
  const timing::JobTiming jt = timing::time_job(ranks, jp.instances);
  v.start_ns = jt.start_ns;
  v.makespan_ns = jt.makespan_ns;
  v.path = timing::job_critical_path(ranks, jp.instances, jt);
  std::vector<std::vector<TimeNs>> ends(n);
  for (std::size_t r = 0; r < n; ++r) {
    for (const std::int64_t c : jp.instance[r]) ends[r].push_back(jt.end_ns.at(static_cast<std::size_t>(c)) - ranks[r].offset_ns);
  }
  std::vector<RankLane> lanes = worker.lanes(ends, v.static_mhz);
  if (lanes.size() != n) throw std::invalid_argument("job_view: a lane per rank expected");
  const double idle_w = gpu.idle_power_w;
  for (std::size_t r = 0; r < n; ++r) {
    JobViewRank k;
    k.packs = std::move(lanes[r]);
    for (RankLanePack& p : k.packs) p.start_ns += ranks[r].offset_ns, p.end_ns += ranks[r].offset_ns;
    k.baseline_j = d.baseline.rank_above_idle_j[r] + idle_w * static_cast<double>(d.baseline.run.time_ns) * 1e-9;
    k.kept_j = runs[r].above_idle_j + idle_w * static_cast<double>(jt.makespan_ns) * 1e-9;
    v.ranks.push_back(std::move(k));
  }
  return v;
}

}  // namespace emo::job
