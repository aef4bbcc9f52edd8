#include "job/job_compare.h"

#include <stdexcept>

#include "driver/front_end.h"
#include "job/job_solve.h"
#include "runtime/sim_backend.h"
#include "trace/job.h"

namespace emo::job {

JobComparison compare_with_independent(const trace::Trace& job, const driver::OptimizeResult& joint,
                                       const std::vector<trace::Trace>& rank_traces, const model::GpuSpec& gpu,
                                       const driver::OptimizeOptions& options) {
  const trace::JobInfo& info = job.meta.job;
  check_rank_traces(job, rank_traces.size(), "compare_with_independent");
  JobComparison out;
  std::vector<std::vector<double>> clock_of_row;  // per rank, per row of its own trace
  for (std::size_t i = 0; i < rank_traces.size(); ++i) {
    const trace::Trace& t = rank_traces[i];
    const driver::OptimizeResult alone = driver::optimize(t, graph::Window{}, gpu, options);
    clock_of_row.push_back(op_clocks(t, alone));
    out.ranks.push_back({info.ranks[i].rank, static_cast<std::int64_t>(alone.packs.packing.packs.size()),
                         alone.savings(), alone.slowdown()});
  }
  const graph::DepGraph& g = joint.packs.analysis.graph;
  std::vector<double> independent(g.nodes(), 0.0);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (!g.gpu[n]) continue;
    const std::uint32_t row = g.op[n];
    const auto rank = static_cast<std::size_t>(job.ops.device[row]);
    const std::uint32_t source = info.source_row[row];
    if (rank >= clock_of_row.size() || source >= clock_of_row[rank].size() ||
        rank_traces[rank].strings.view(rank_traces[rank].ops.name[source]) != job.strings.view(job.ops.name[row])) {
      throw std::invalid_argument("compare_with_independent: a rank trace does not match the job (reduced differently?)");
    }
    independent[n] = clock_of_row[rank][source];
  }
  const double f_max = gpu.max_sm_clock_mhz();
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (g.gpu[n] && independent[n] <= 0) independent[n] = f_max;  // an op in no pack alone
  }
  out.baseline = run_job_plan(job, g, gpu, options.seed, static_clocks(g, f_max));
  out.joint = run_job_plan(job, g, gpu, options.seed,
                           runtime::node_clocks(g, joint.packs.packing, joint.plan().pack_clock_mhz));
  out.independent = run_job_plan(job, g, gpu, options.seed, independent);
  out.target_ns = driver::target_of(out.baseline.time_ns, options.max_slowdown);
  return out;
}

}  // namespace emo::job
