#include "driver/job_solve.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "graph/dep_graph.h"
#include "runtime/sim_backend.h"
#include "runtime/sim_device.h"
#include "runtime/sim_run.h"
#include "timing/timing.h"

#ifdef EMO_WITH_MPI
#include <nlohmann/json.hpp>

#include "driver/mpi_comm.h"
#include "model/gpu_catalog.h"
#endif

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

std::vector<double> static_clocks(const graph::DepGraph& g, double f_mhz) {
  std::vector<double> clock(g.nodes(), 0.0);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) clock[n] = g.gpu[n] ? f_mhz : 0.0;
  return clock;
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

CrossRank cross_rank_problem(const trace::Trace& job, const graph::DepGraph& g, double max_slowdown) {
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
      out.cuts[i].pins.push_back({source, pinned - info.ranks[i].offset_ns, g.dur[n]});
      out.wait_ns[i] += last - s.start(n);
    }
  }
  const TimeNs end = w + static_cast<TimeNs>(std::floor(static_cast<double>(s.makespan_ns) * k));
  for (std::size_t i = 0; i < ranks; ++i) out.cuts[i].end_ns = end - info.ranks[i].offset_ns;
  return out;
}

/// Throws std::invalid_argument unless `own` is the trace of rank `i` of `job` as linked: each of
/// its linked collectives at the row JobInfo::source_row says, with the same start and name.
void check_rank_trace(const trace::Trace& job, std::size_t i, const trace::Trace& own) {
  const trace::JobInfo& info = job.meta.job;
  const trace::CollectiveTable& ct = job.collectives;
  for (std::size_t c = 0; c < ct.size() && c < ct.match.size(); ++c) {
    const std::uint32_t row = ct.op[c];
    if (ct.match[c] == trace::kNone || static_cast<std::size_t>(job.ops.device[row]) != i) continue;
    const std::uint32_t source = info.source_row[row];
    if (source >= own.ops.size() || own.ops.start_ns[source] + info.ranks[i].offset_ns != job.ops.start_ns[row] ||
        own.strings.view(own.ops.name[source]) != job.strings.view(job.ops.name[row])) {
      throw std::invalid_argument("solve_decomposed: a rank trace does not match the job (reduced differently?)");
    }
  }
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
  std::atomic<std::size_t> done{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  Progress progress(how.progress);
  progress.start(round == 0 ? "ranks (decomposed solve)" : "ranks (decomposed solve, again)", static_cast<std::int64_t>(n));
  parallel_for(
      n, how.threads,
      [&](std::size_t i) {
        try {
          plans[i] = solve_rank(cuts[i], gpu, options);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
        }
        ++done;
      },
      [&] { progress.step(static_cast<std::int64_t>(done.load()) - progress.done()); });
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
/// one misses (a lower clock is never faster). `baseline` is the run at the max clock (not run
/// again). {} when none fits.
std::optional<Evaluated> best_static(const trace::Trace& job, const graph::DepGraph& g, const model::GpuSpec& gpu,
                                     std::uint64_t seed, TimeNs target_ns, const std::vector<double>& clocks_mhz,
                                     const Evaluated& baseline) {
  std::optional<Evaluated> best;
  for (const double f : clocks_mhz) {
    Evaluated e = f == gpu.max_sm_clock_mhz() ? baseline : run_job_plan(job, g, gpu, seed, static_clocks(g, f));
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

/// Solves every rank against its cut of one round (per rank of the job, in its order; they may be
/// moved from), `round` from 0; returns their plans in the job's order.
using RoundSolver = std::function<std::vector<RankPlan>(std::vector<trace::JobCut>& cuts, int round)>;

/// Each rank's own options (file comment, step 2): the job's, with its share of the target.
OptimizeOptions rank_options(const OptimizeOptions& options) {
  OptimizeOptions o = options;
  o.max_slowdown = options.max_slowdown * kRankShare;
  return o;
}

/// The kept plan of `out` (its plan, target, baseline, ranks' plans set): the composed plan, or the
/// cheapest static clock when cheaper (or when the composed plan missed); then the policy's figures.
void keep_best(const trace::Trace& job, const graph::DepGraph& g, const model::GpuSpec& gpu,
               const OptimizeOptions& options, const CrossRank& cross, std::vector<RankPlan>& plans,
               DecomposedSolve& out) {
  out.model_makespan_ns = cross.makespan_ns;
  out.collectives_pinned = cross.instances;
  out.policy = job_policy(job, plans);
  out.own_plan = out.plan;
  // Never worse than locking one clock: the cheapest static clock within the target, if cheaper.
  if (const auto st = best_static(job, g, gpu, options.seed, out.target_ns, common_clocks(plans), out.baseline)) {
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
    plans[i].solve.rank = job.meta.job.ranks[i].rank;
    plans[i].solve.wait_ns = cross.wait_ns[i];
    out.ranks.push_back(plans[i].solve);
  }
}

/// The steps of the file comment on the linked job `job` (checked by the caller), the ranks solved
/// by `solve_round`: where they are solved (threads here, or MPI processes) is all that differs.
DecomposedSolve decompose(const trace::Trace& job, const graph::DepGraph& g, const model::GpuSpec& gpu,
                          const OptimizeOptions& options, const RoundSolver& solve_round) {
  DecomposedSolve out;
  out.max_slowdown = options.max_slowdown;
  const double f_max = gpu.max_sm_clock_mhz();
  out.baseline = run_job_plan(job, g, gpu, options.seed, static_clocks(g, f_max));
  out.target_ns = static_cast<TimeNs>(static_cast<double>(out.baseline.time_ns) * (1.0 + options.max_slowdown));

  // Step 1 and 2 (file comment), again once with a smaller stretch when the composed plan misses.
  out.rank_slowdown = rank_options(options).max_slowdown;
  out.pin_stretch = (1.0 + options.max_slowdown) / (1.0 + out.rank_slowdown) - 1.0;
  std::vector<RankPlan> plans;
  CrossRank cross;
  for (out.rounds = 1;; ++out.rounds) {
    cross = cross_rank_problem(job, g, out.pin_stretch);
    plans = solve_round(cross.cuts, out.rounds - 1);
    out.plan = run_job_plan(job, g, gpu, options.seed, compose(job, g, plans, f_max));
    if (out.plan.time_ns <= out.target_ns || out.rounds == kDecomposedRounds) break;
    const double miss = static_cast<double>(out.plan.time_ns) / static_cast<double>(out.target_ns) - 1.0;
    out.pin_stretch = std::max(0.0, (1.0 + out.pin_stretch) / (1.0 + miss) - 1.0 - kRetryMargin);
  }
  keep_best(job, g, gpu, options, cross, plans, out);
  return out;
}

}  // namespace

DecomposedSolve solve_decomposed(const trace::Trace& job, const graph::DepGraph& g, std::vector<trace::Trace> rank_traces,
                                 const model::GpuSpec& gpu, const OptimizeOptions& options,
                                 const DecomposedOptions& how) {
  check_rank_traces(job, rank_traces.size(), "solve_decomposed");
  if (g.nodes() == 0 || g.op.size() > job.ops.size()) throw std::invalid_argument("solve_decomposed: the graph is not the job's");
  for (std::size_t i = 0; i < rank_traces.size(); ++i) check_rank_trace(job, i, rank_traces[i]);
  const OptimizeOptions ro = rank_options(options);
  return decompose(job, g, gpu, options, [&](std::vector<trace::JobCut>& cuts, int round) {
    for (std::size_t i = 0; i < rank_traces.size(); ++i) rank_traces[i].meta.cut = std::move(cuts[i]);
    return solve_ranks(rank_traces, gpu, ro, how, round);
  });
}

#ifdef EMO_WITH_MPI
namespace {

using nlohmann::json;

// ---- the messages of a round (CBOR: integers and doubles exact) --------------------------------

json cut_json(const trace::JobCut& c) {
  json pins = json::array();
  for (const trace::CollectivePin& p : c.pins) pins.push_back({p.op, p.start_ns, p.transfer_ns});
  return {{"pins", std::move(pins)}, {"end_ns", c.end_ns}};
}

trace::JobCut cut_of(const json& j) {
  trace::JobCut c;
  c.end_ns = j.at("end_ns").get<TimeNs>();
  for (const json& p : j.at("pins")) c.pins.push_back({p.at(0).get<std::uint32_t>(), p.at(1).get<TimeNs>(), p.at(2).get<TimeNs>()});
  return c;
}

/// A rank's plan: its policy (header and section) as policy::to_json writes it, the rest as numbers.
json plan_json(const RankPlan& p) {
  policy::Policy whole = p.policy;
  whole.gpus = {p.section};
  const RankSolve& s = p.solve;
  return {{"clock_of_row", p.clock_of_row}, {"option_clocks_mhz", p.option_clocks_mhz},
          {"policy", policy::to_json(whole)}, {"packs", s.packs}, {"pinned", s.pinned},
          {"mean_clock_mhz", s.mean_clock_mhz}, {"own_savings", s.own_savings}, {"own_met", s.own_met}};
}

RankPlan plan_of(const json& j) {
  RankPlan p;
  p.clock_of_row = j.at("clock_of_row").get<std::vector<double>>();
  p.option_clocks_mhz = j.at("option_clocks_mhz").get<std::vector<double>>();
  p.policy = policy::parse_policy(j.at("policy").get<std::string>(), "a rank's plan from another MPI process");
  if (p.policy.gpus.size() != 1) throw std::invalid_argument("solve_decomposed_mpi: a rank's plan without one GPU section");
  p.section = p.policy.gpus[0];
  p.policy.gpus.clear();
  p.solve.packs = j.at("packs").get<std::int64_t>();
  p.solve.pinned = j.at("pinned").get<std::int64_t>();
  p.solve.mean_clock_mhz = j.at("mean_clock_mhz").get<double>();
  p.solve.own_savings = j.at("own_savings").get<double>();
  p.solve.own_met = j.at("own_met").get<bool>();
  return p;
}

std::string cbor(const json& j) {
  const std::vector<std::uint8_t> b = json::to_cbor(j);
  return {b.begin(), b.end()};
}

constexpr char kRound = 'R', kPlans = 'P', kFailed = 'E';

/// For tests only (tests/cli/optimize_mpi_test.sh): EMO_TEST_MPI_FAIL=P makes process P's rank
/// solves throw, to check that an error on any process ends every process without a hang.
void injected_failure(std::size_t process) {
  const char* p = std::getenv("EMO_TEST_MPI_FAIL");
  if (p != nullptr && std::to_string(process) == p) {
    throw InputError("EMO_TEST_MPI_FAIL", "process " + std::to_string(process) + " fails its rank solves as asked");
  }
}

/// Per rank of `job` (its order): the index of its trace in `paths` (JobRank::path).
std::vector<std::size_t> path_index(const trace::Trace& job, const std::vector<std::string>& paths) {
  std::vector<std::size_t> out;
  for (const trace::JobRank& r : job.meta.job.ranks) {
    const auto it = std::find(paths.begin(), paths.end(), r.path);
    if (it == paths.end()) throw std::invalid_argument("solve_decomposed_mpi: a rank's trace is not among the paths loaded");
    out.push_back(static_cast<std::size_t>(it - paths.begin()));
  }
  return out;
}

/// One round on process 0: each other process is sent the cuts of its ranks, this one solves its
/// own, then every answer is received (always all of them, so that no process is left sending);
/// the first error (its own, then by process) is thrown after.
class RoundOverMpi {
 public:
  RoundOverMpi(MpiShare& share, const trace::Trace& job, const model::GpuSpec& gpu, const OptimizeOptions& options,
               const DecomposedOptions& how)
      : share_(share), rank_of_path_(share.paths.size()), gpu_(gpu), options_(rank_options(options)), how_(how) {
    const std::vector<std::size_t> path_of_rank = path_index(job, share.paths);
    for (std::size_t i = 0; i < path_of_rank.size(); ++i) rank_of_path_[path_of_rank[i]] = i;
    for (std::size_t k = 0; k < share.traces.size(); ++k) check_rank_trace(job, rank_of(0, k), share.traces[k]);
  }

  std::vector<RankPlan> operator()(std::vector<trace::JobCut>& cuts, int round) {
    for (std::size_t q = 1; q < share_.processes; ++q) {
      json mine = json::array();
      for (std::size_t k = 0; q + k * share_.processes < share_.paths.size(); ++k) mine.push_back(cut_json(cuts[rank_of(q, k)]));
      mpi::send_bytes(kRound + cbor({{"gpu", gpu_.id}, {"round", round}, {"cuts", std::move(mine)}}), static_cast<int>(q),
                      mpi::kTagCommand);
    }
    std::vector<RankPlan> plans(cuts.size());
    std::exception_ptr error;
    try {
      injected_failure(0);
      for (std::size_t k = 0; k < share_.traces.size(); ++k) share_.traces[k].meta.cut = std::move(cuts[rank_of(0, k)]);
      std::vector<RankPlan> own = solve_ranks(share_.traces, gpu_, options_, how_, round);
      for (std::size_t k = 0; k < own.size(); ++k) plans[rank_of(0, k)] = std::move(own[k]);
    } catch (...) {
      error = std::current_exception();
    }
    for (std::size_t q = 1; q < share_.processes; ++q) receive(q, plans, error);
    if (error) std::rethrow_exception(error);
    return plans;
  }

 private:
  std::size_t rank_of(std::size_t process, std::size_t k) const { return rank_of_path_[process + k * share_.processes]; }

  void receive(std::size_t q, std::vector<RankPlan>& plans, std::exception_ptr& error) {
    const std::string reply = mpi::recv_bytes(static_cast<int>(q), mpi::kTagReply);
    try {
      if (reply.empty() || reply[0] != kPlans) mpi::throw_decoded(reply.empty() ? "X|empty reply" : reply.substr(1));
      const json j = json::from_cbor(reply.begin() + 1, reply.end());
      if (j.size() != (share_.paths.size() + share_.processes - 1 - q) / share_.processes) {
        throw std::invalid_argument("solve_decomposed_mpi: a process answered for other ranks");
      }
      for (std::size_t k = 0; k < j.size(); ++k) plans[rank_of(q, k)] = plan_of(j[k]);
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }

  MpiShare& share_;
  std::vector<std::size_t> rank_of_path_;
  const model::GpuSpec& gpu_;
  OptimizeOptions options_;
  DecomposedOptions how_;
};

/// A process other than 0: its answer to the round `command` (kRound + CBOR): its ranks' plans
/// (kPlans + CBOR), or kFailed + the error encoded.
std::string answer_round(MpiShare& share, const std::string& command, const OptimizeOptions& options,
                         const DecomposedOptions& how) {
  try {
    injected_failure(share.process);
    const json j = json::from_cbor(command.begin() + 1, command.end());
    const json& cuts = j.at("cuts");
    if (cuts.size() != share.traces.size()) throw std::invalid_argument("solve_decomposed_mpi: cuts for other ranks");
    for (std::size_t k = 0; k < cuts.size(); ++k) share.traces[k].meta.cut = cut_of(cuts[k]);
    const model::GpuSpec& gpu = model::GpuCatalog::builtin().at(j.at("gpu").get<std::string>());
    json out = json::array();
    for (const RankPlan& p : solve_ranks(share.traces, gpu, options, how, j.at("round").get<int>())) out.push_back(plan_json(p));
    return kPlans + cbor(out);
  } catch (...) {
    return kFailed + mpi::encode_error(std::current_exception());
  }
}

}  // namespace

DecomposedSolve solve_decomposed_mpi(const trace::Trace& job, const graph::DepGraph& g, MpiShare& share,
                                     const model::GpuSpec& gpu, const OptimizeOptions& options,
                                     const DecomposedOptions& how) {
  try {
    if (!share.active() || share.process != 0) throw std::invalid_argument("solve_decomposed_mpi: not process 0 of a kept MPI load");
    check_rank_traces(job, share.paths.size(), "solve_decomposed_mpi");
    if (g.nodes() == 0 || g.op.size() > job.ops.size()) throw std::invalid_argument("solve_decomposed_mpi: the graph is not the job's");
    RoundOverMpi round(share, job, gpu, options, how);
    DecomposedSolve out = decompose(job, g, gpu, options, std::ref(round));
    share.release(true);
    return out;
  } catch (...) {
    share.release(false);
    throw;
  }
}

void serve_decomposed_mpi(MpiShare& share, const OptimizeOptions& options, const DecomposedOptions& how) {
  const OptimizeOptions ro = rank_options(options);
  while (share.active()) {
    const std::string command = mpi::recv_bytes(0, mpi::kTagCommand);
    if (command == mpi::kDone) {
      share.release(true);
    } else if (command.empty() || command[0] != kRound) {
      share.release(false);
      throw MpiPeerFailed();
    } else {
      mpi::send_bytes(answer_round(share, command, ro, how), 0, mpi::kTagReply);
    }
  }
}

#else

DecomposedSolve solve_decomposed_mpi(const trace::Trace&, const graph::DepGraph&, MpiShare&, const model::GpuSpec&,
                                     const OptimizeOptions&, const DecomposedOptions&) {
  throw InputError("--mpi", "emo was built without MPI");
}

void serve_decomposed_mpi(MpiShare&, const OptimizeOptions&, const DecomposedOptions&) {
  throw InputError("--mpi", "emo was built without MPI");
}

#endif

}  // namespace emo::driver
