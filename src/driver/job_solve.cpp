#include "driver/job_solve.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/progress.h"
#include "graph/dep_graph.h"
#include "runtime/sim_backend.h"
#include "runtime/sim_device.h"
#include "runtime/sim_run.h"
#include "timing/timing.h"

namespace emo::driver {

std::vector<double> op_clocks(const trace::Trace& t, const OptimizeResult& r) {
  const graph::DepGraph& g = r.packs.analysis.graph;
  const std::vector<double> node = runtime::node_clocks(g, r.packs.packing, r.plan().pack_clock_mhz);
  std::vector<double> out(t.ops.size(), 0.0);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) out[g.op[n]] = node[n];
  return out;
}

Evaluated run_job_plan(const trace::Trace& job, const graph::DepGraph& g, const model::GpuSpec& gpu,
                       std::uint64_t seed, const std::vector<double>& node_clock_mhz) {
  runtime::SimDeviceOptions dev_opts;
  dev_opts.seed = seed;
  const runtime::SimDevice device(gpu, dev_opts);
  runtime::SimRunOptions o;
  o.seed = seed + 1;
  const runtime::SimRunResult res = runtime::run_on_sim(job, g, device, node_clock_mhz, {}, o);
  return {res.makespan_ns, res.energy_j, 0};
}

void check_rank_traces(const trace::Trace& job, std::size_t rank_traces, const char* who) {
  const trace::JobInfo& info = job.meta.job;
  if (info.ranks.empty() || info.source_row.size() != job.ops.size()) {
    throw std::invalid_argument(std::string(who) + ": not a linked trace");
  }
  if (rank_traces != info.ranks.size()) {
    throw std::invalid_argument(std::string(who) + ": one trace per rank of the job expected");
  }
}

namespace {

/// Step 1 of the file comment: each rank's cut (pins and end, on its own clock) and its wait.
struct CrossRank {
  std::vector<trace::JobCut> cuts;     // per rank
  std::vector<TimeNs> wait_ns;         // per rank
  std::int64_t instances = 0;
  TimeNs makespan_ns = 0;
};

CrossRank cross_rank_problem(const trace::Trace& job, const graph::DepGraph& g,
                             const std::vector<trace::Trace>& rank_traces, double max_slowdown) {
  const trace::JobInfo& info = job.meta.job;
  const std::size_t ranks = info.ranks.size();
  const timing::Schedule s = timing::replay(g, g.dur);
  const TimeNs w = g.window_start_ns;
  const double k = 1.0 + max_slowdown;
  auto stretch = [&](TimeNs t) { return w + static_cast<TimeNs>(std::floor(static_cast<double>(t - w) * k)); };
  CrossRank out;
  out.cuts.resize(ranks);
  out.wait_ns.assign(ranks, 0);
  out.makespan_ns = s.makespan_ns;
  std::vector<std::uint32_t> node_of(job.ops.size(), UINT32_MAX);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) node_of[g.op[n]] = n;
  std::map<std::int64_t, std::vector<std::uint32_t>> instances;  // linked instance -> its nodes
  const trace::CollectiveTable& ct = job.collectives;
  for (std::size_t c = 0; c < ct.size(); ++c) {
    if (c < ct.match.size() && ct.match[c] != trace::kNone && node_of[ct.op[c]] != UINT32_MAX) {
      instances[ct.match[c]].push_back(node_of[ct.op[c]]);
    }
  }
  for (const auto& [id, nodes] : instances) {
    if (nodes.size() < 2) continue;  // not linked in the graph: keeps its recorded duration
    ++out.instances;
    TimeNs last = INT64_MIN;
    for (std::uint32_t n : nodes) last = std::max(last, s.start(n));
    const TimeNs pinned = stretch(last);
    for (std::uint32_t n : nodes) {
      const std::uint32_t row = g.op[n];
      const auto i = static_cast<std::size_t>(job.ops.device[row]);
      const std::uint32_t source = info.source_row[row];
      const TimeNs offset = info.ranks[i].offset_ns;
      const trace::Trace& own = rank_traces[i];
      if (source >= own.ops.size() || own.ops.start_ns[source] + offset != job.ops.start_ns[row] ||
          own.strings.view(own.ops.name[source]) != job.strings.view(job.ops.name[row])) {
        throw std::invalid_argument("solve_decomposed: a rank trace does not match the job (reduced differently?)");
      }
      out.cuts[i].pins.push_back({source, pinned - offset, g.dur[n]});
      out.wait_ns[i] += last - s.start(n);
    }
  }
  const TimeNs end = w + static_cast<TimeNs>(std::floor(static_cast<double>(s.makespan_ns) * k));
  for (std::size_t i = 0; i < ranks; ++i) out.cuts[i].end_ns = end - info.ranks[i].offset_ns;
  return out;
}

/// What the job keeps of one rank's solve (its OptimizeResult is dropped: it holds the graph).
struct RankPlan {
  std::vector<double> clock_of_row;  // per row of its own trace
  policy::GpuPolicy section;
  policy::Policy policy;             // its own, for the job policy's header (rank 0's)
  std::vector<double> option_clocks_mhz;  // the clocks its solve offered, descending
  RankSolve solve;
};

RankPlan solve_rank(trace::Trace& cut, const model::GpuSpec& gpu, const OptimizeOptions& options) {
  OptimizeOptions o = options;  // max_slowdown: the rank's own share (file comment, step 2)
  o.progress = nullptr;
  const OptimizeResult r = optimize(cut, graph::Window{}, gpu, o);
  RankPlan p;
  p.clock_of_row = op_clocks(cut, r);
  p.option_clocks_mhz = r.profile.option_clocks_mhz;
  if (r.policy().gpus.size() != 1) throw std::invalid_argument("solve_decomposed: a rank's trace has more than one GPU");
  p.section = r.policy().gpus[0];
  p.policy = r.policy();
  p.policy.gpus.clear();
  p.solve.packs = static_cast<std::int64_t>(r.packs.packing.packs.size());
  p.solve.pinned = static_cast<std::int64_t>(cut.meta.cut.pins.size());
  p.solve.own_savings = r.savings();
  p.solve.own_met = r.evaluation.emo.time_ns <= r.evaluation.target_ns;
  const graph::DepGraph& g = r.packs.analysis.graph;
  double weighted = 0, total = 0;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    const double f = p.clock_of_row[g.op[n]];
    if (!g.gpu[n] || f <= 0) continue;
    weighted += f * static_cast<double>(g.dur[n]);
    total += static_cast<double>(g.dur[n]);
  }
  p.solve.mean_clock_mhz = total > 0 ? weighted / total : 0;
  return p;
}

/// Runs solve_rank over every cut on `threads` threads; progress from the calling thread.
std::vector<RankPlan> solve_ranks(std::vector<trace::Trace>& cuts, const model::GpuSpec& gpu,
                                  const OptimizeOptions& options, const DecomposedOptions& how, int round) {
  const std::size_t n = cuts.size();
  std::vector<RankPlan> plans(n);
  std::atomic<std::size_t> next{0}, done{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto one = [&](std::size_t i) {
    try {
      plans[i] = solve_rank(cuts[i], gpu, options);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
    ++done;
  };
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) one(i);
  };
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::max<std::size_t>(1, std::min(how.threads <= 0 ? hw : static_cast<std::size_t>(how.threads), n));
  Progress progress(how.progress);
  progress.start(round == 0 ? "ranks (decomposed solve)" : "ranks (decomposed solve, again)", static_cast<std::int64_t>(n));
  std::vector<std::thread> pool;
  for (std::size_t k = 1; k < threads; ++k) pool.emplace_back(work);
  for (std::size_t i = next++; i < n; i = next++) {  // the calling thread works too, and reports
    one(i);
    progress.step(static_cast<std::int64_t>(done.load()) - progress.done());
  }
  for (std::thread& t : pool) t.join();
  progress.finish();
  if (error) std::rethrow_exception(error);
  return plans;
}

/// Per node of g: the composed plan's clock (0 for host nodes; the max clock for ops in no pack).
std::vector<double> compose(const trace::Trace& job, const graph::DepGraph& g, const std::vector<RankPlan>& plans,
                            double f_max) {
  std::vector<double> clock(g.nodes(), 0.0);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (!g.gpu[n]) continue;
    const std::uint32_t row = g.op[n];
    const double f = plans[static_cast<std::size_t>(job.ops.device[row])].clock_of_row[job.meta.job.source_row[row]];
    clock[n] = f > 0 ? f : f_max;  // an op in no pack of its rank runs at the max clock
  }
  return clock;
}

/// The cheapest static clock within `target_ns` on the job's graph, among `clocks_mhz`
/// (descending; the ranks' option clocks, as optimize()'s static curve): from the max down until
/// one misses (a lower clock is never faster). {} when none fits.
std::optional<Evaluated> best_static(const trace::Trace& job, const graph::DepGraph& g, const model::GpuSpec& gpu,
                                     std::uint64_t seed, TimeNs target_ns, const std::vector<double>& clocks_mhz) {
  std::optional<Evaluated> best;
  for (const double f : clocks_mhz) {
    std::vector<double> clock(g.nodes(), 0.0);
    for (std::uint32_t n = 0; n < g.nodes(); ++n) clock[n] = g.gpu[n] ? f : 0.0;
    Evaluated e = run_job_plan(job, g, gpu, seed, clock);
    if (e.time_ns > target_ns) break;
    e.clock_mhz = f;
    if (!best || e.energy_j < best->energy_j) best = e;
  }
  return best;
}

/// The option clocks every rank's solve offered (descending).
std::vector<double> common_clocks(const std::vector<RankPlan>& plans) {
  std::vector<double> out = plans.empty() ? std::vector<double>{} : plans[0].option_clocks_mhz;
  for (const RankPlan& p : plans) {
    std::erase_if(out, [&](double f) { return std::find(p.option_clocks_mhz.begin(), p.option_clocks_mhz.end(), f) == p.option_clocks_mhz.end(); });
  }
  return out;
}

/// The job policy of the composed plan: each rank's section, device = its position in the job.
policy::Policy job_policy(const trace::Trace& job, std::vector<RankPlan>& plans) {
  policy::Policy p = plans.empty() ? policy::Policy{} : plans[0].policy;
  p.trace = job.meta.path;
  p.simulated = true;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    plans[i].section.device = static_cast<std::int32_t>(i);
    plans[i].section.rank = job.meta.job.ranks[i].rank;
    p.gpus.push_back(plans[i].section);
  }
  return p;
}

}  // namespace

DecomposedSolve solve_decomposed(const trace::Trace& job, const graph::DepGraph& g, std::vector<trace::Trace> rank_traces,
                                 const model::GpuSpec& gpu, const OptimizeOptions& options,
                                 const DecomposedOptions& how) {
  const trace::JobInfo& info = job.meta.job;
  check_rank_traces(job, rank_traces.size(), "solve_decomposed");
  if (g.nodes() == 0 || g.op.size() > job.ops.size()) throw std::invalid_argument("solve_decomposed: the graph is not the job's");
  DecomposedSolve out;
  out.max_slowdown = options.max_slowdown;
  const double f_max = gpu.max_sm_clock_mhz();
  std::vector<double> clock(g.nodes(), 0.0);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) clock[n] = g.gpu[n] ? f_max : 0.0;
  out.baseline = run_job_plan(job, g, gpu, options.seed, clock);
  out.target_ns = static_cast<TimeNs>(static_cast<double>(out.baseline.time_ns) * (1.0 + options.max_slowdown));

  // Step 1 and 2 (file comment), again once with a smaller stretch when the composed plan misses.
  OptimizeOptions rank_options = options;
  rank_options.max_slowdown = options.max_slowdown * kRankShare;
  out.rank_slowdown = rank_options.max_slowdown;
  out.pin_stretch = (1.0 + options.max_slowdown) / (1.0 + rank_options.max_slowdown) - 1.0;
  std::vector<RankPlan> plans;
  CrossRank cross;
  for (out.rounds = 1;; ++out.rounds) {
    cross = cross_rank_problem(job, g, rank_traces, out.pin_stretch);
    for (std::size_t i = 0; i < rank_traces.size(); ++i) rank_traces[i].meta.cut = std::move(cross.cuts[i]);
    plans = solve_ranks(rank_traces, gpu, rank_options, how, out.rounds - 1);
    out.plan = run_job_plan(job, g, gpu, options.seed, compose(job, g, plans, f_max));
    if (out.plan.time_ns <= out.target_ns || out.rounds == kDecomposedRounds) break;
    const double miss = static_cast<double>(out.plan.time_ns) / static_cast<double>(out.target_ns) - 1.0;
    out.pin_stretch = std::max(0.0, (1.0 + out.pin_stretch) / (1.0 + miss) - 1.0 - kRetryMargin);
  }
  out.model_makespan_ns = cross.makespan_ns;
  out.collectives_pinned = cross.instances;
  out.policy = job_policy(job, plans);
  out.own_plan = out.plan;
  // Never worse than locking one clock: the cheapest static clock within the target, if cheaper.
  if (const auto st = best_static(job, g, gpu, options.seed, out.target_ns, common_clocks(plans))) {
    out.static_best = *st;
    if (st->energy_j < out.plan.energy_j || out.plan.time_ns > out.target_ns) {
      out.static_kept = true;
      out.plan = *st;
      for (policy::GpuPolicy& sec : out.policy.gpus) {
        sec.default_clock_mhz = st->clock_mhz;
        for (policy::PackClock& pc : sec.packs) pc.clock_mhz = st->clock_mhz;
      }
    }
  }
  out.policy.max_slowdown = options.max_slowdown;
  out.policy.latency_target_ns = out.target_ns;
  out.policy.baseline_time_ns = out.baseline.time_ns;
  out.policy.baseline_energy_j = out.baseline.energy_j;
  out.policy.predicted_time_ns = out.plan.time_ns;
  out.policy.predicted_energy_j = out.plan.energy_j;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    plans[i].solve.rank = info.ranks[i].rank;
    plans[i].solve.wait_ns = cross.wait_ns[i];
    out.ranks.push_back(plans[i].solve);
  }
  return out;
}

}  // namespace emo::driver
