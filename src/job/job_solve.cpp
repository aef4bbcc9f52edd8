#include "job/job_solve.h"

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

#include <fmt/format.h>

#include "core/error.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "core/units.h"
#include "driver/front_end.h"
#include "graph/dep_graph.h"
#include "runtime/sim_backend.h"
#include "runtime/sim_device.h"
#include "runtime/sim_run.h"
#include "timing/port_deadlines.h"
#include "timing/ports.h"
#include "timing/timing.h"

#ifdef EMO_WITH_MPI
#include <nlohmann/json.hpp>

#include "job/mpi_comm.h"
#include "model/gpu_catalog.h"
#endif

namespace emo::job {

std::vector<double> op_clocks(const trace::Trace& t, const driver::OptimizeResult& r) {
  const graph::DepGraph& g = r.packs.analysis.graph;
  const std::vector<double> node = runtime::node_clocks(g, r.packs.packing, r.plan().pack_clock_mhz);
  std::vector<double> out(t.ops.size(), 0.0);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) out[g.op[n]] = node[n];
  return out;
}

driver::Evaluated run_job_plan(const trace::Trace& job, const graph::DepGraph& g, const model::GpuSpec& gpu,
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


JobPorts job_ports(const std::vector<trace::RankDigest>& digests, trace::JobLink link) {
  if (digests.size() != link.info.ranks.size() || link.match.size() != digests.size()) {
    throw std::invalid_argument("job_ports: the digests are not those of the link");
  }
  JobPorts out;
  out.instances = static_cast<std::size_t>(link.info.collectives_linked);
  // T per instance: the shortest participant's recorded duration (as the job's graph takes it).
  std::vector<TimeNs> transfer(out.instances, INT64_MAX);
  for (std::size_t r = 0; r < digests.size(); ++r) {
    for (std::size_t c = 0; c < link.match[r].size(); ++c) {
      const std::int64_t k = link.match[r][c];
      if (k == trace::kNone) continue;
      const auto& col = digests[r].collectives.at(c);
      transfer.at(static_cast<std::size_t>(k)) = std::min(transfer[static_cast<std::size_t>(k)], col.end_ns - col.start_ns);
    }
  }
  out.open.resize(digests.size());
  out.instance.resize(digests.size());
  for (std::size_t r = 0; r < digests.size(); ++r) {
    for (std::size_t c = 0; c < link.match[r].size(); ++c) {
      const std::int64_t k = link.match[r][c];
      if (k == trace::kNone) continue;
      out.open[r].pins.push_back({digests[r].collectives[c].op, trace::kOpenPin, transfer[static_cast<std::size_t>(k)]});
      out.instance[r].push_back(k);
    }
  }
  out.path = fmt::format("job of {} ranks ({} ...)", digests.size(), digests.empty() ? "" : digests[0].path);
  out.link = std::move(link);
  return out;
}

std::uint64_t rank_noise_seed(std::uint64_t seed, std::size_t position) {
  return seed + 1 + 1'000'003ULL * (static_cast<std::uint64_t>(position) + 1);
}

namespace {

/// A rank's run reduced to its ports, and its ops' energy above idle (J).
struct RankRun {
  timing::PortGraph ports;
  double above_idle_j = 0;
};

/// What the job keeps of one rank's solve (its driver::OptimizeResult is dropped: it holds the graph).
struct RankPlan {
  policy::GpuPolicy section;
  policy::Policy policy;                  // its own, for the job policy's header (rank 0's)
  std::vector<double> option_clocks_mhz;  // the clocks its solve offered, descending
  RankSolve solve;
  RankRun plan;                           // its plan run on its own graph (ideal switching)
  std::vector<std::pair<double, RankRun>> statics;  // round 0: its run at the max clock (the baseline)
};

/// The rank's graph with its linked collectives as ports (`open`), and the ports' nodes.
struct PortedGraph {
  graph::DepGraph g;
  std::vector<std::uint32_t> port_node;
};

PortedGraph ported_graph(trace::Trace& t, const trace::JobCut& open) {
  t.meta.cut = open;
  PortedGraph out{graph::build_graph(t), {}};
  t.meta.cut = {};
  std::vector<std::uint32_t> node_of(t.ops.size(), UINT32_MAX);
  for (std::uint32_t n = 0; n < out.g.nodes(); ++n) node_of[out.g.op[n]] = n;
  for (const trace::CollectivePin& p : open.pins) {
    if (p.op >= node_of.size() || node_of[p.op] == UINT32_MAX) {
      throw std::invalid_argument("solve_decomposed: a linked collective is not in its rank's graph (" + t.meta.path + ")");
    }
    out.port_node.push_back(node_of[p.op]);
  }
  return out;
}

/// Step 0: rank `t` reduced to its ports at its recorded durations.
timing::PortGraph recorded_ports(trace::Trace& t, const trace::JobCut& open) {
  const PortedGraph pg = ported_graph(t, open);
  return timing::reduce_to_ports(pg.g, pg.g.dur, pg.port_node);
}

/// The rank's graph run at `node_clock_mhz` on `device` (a static run), or — given `policy` — with
/// the policy's clock requests as `emo run` issues them (early by the switch latency, held to the
/// minimum switch interval: runtime::SimBackend::run_policy), reduced to its ports.
RankRun run_rank(const trace::Trace& t, const PortedGraph& pg, const runtime::SimDevice& device, std::uint64_t noise_seed,
                 const std::vector<double>& node_clock_mhz, const policy::Policy* policy = nullptr) {
  runtime::SimRunOptions o;
  o.seed = noise_seed;
  std::vector<runtime::ClockRequest> requests;
  if (policy != nullptr) {
    requests = runtime::hold_to_interval(
        runtime::switch_requests(*policy, ms_to_ns(device.switch_latency_ms()), o.initial_clock_mhz),
        ms_to_ns(policy->min_switch_interval_ms), o.initial_clock_mhz);
  }
  const runtime::SimRunResult res = runtime::run_on_sim(t, pg.g, device, node_clock_mhz, requests, o);
  std::vector<TimeNs> dur(pg.g.dur.begin(), pg.g.dur.end());
  RankRun out;
  for (const runtime::RunOp& op : res.ops) {
    dur[op.node] = op.dur_ns;
    out.above_idle_j += op.above_idle_w * static_cast<double>(op.dur_ns) * 1e-9;
  }
  out.ports = timing::reduce_to_ports(pg.g, dur, pg.port_node);
  return out;
}

/// Step 2 for one rank at `position` in the job: its trace against `cut`, then its plan (and, with
/// `statics`, the max clock) run on its own graph and reduced to its ports.
RankPlan solve_rank(trace::Trace& t, const trace::JobCut& cut, const trace::JobCut& open, const model::GpuSpec& gpu,
                    const driver::OptimizeOptions& options, std::size_t position, bool statics) {
  driver::OptimizeOptions o = options;  // max_slowdown: the rank's own share (file comment, step 2)
  o.progress = nullptr;
  t.meta.cut = cut;
  const driver::OptimizeResult r = driver::optimize(t, graph::Window{}, gpu, o);
  t.meta.cut = {};
  RankPlan p;
  const std::vector<double> clock_of_row = op_clocks(t, r);
  p.option_clocks_mhz = r.profile.option_clocks_mhz;
  if (r.policy().gpus.size() != 1) throw std::invalid_argument("solve_decomposed: a rank's trace has more than one GPU");
  p.section = r.policy().gpus[0];
  p.policy = r.policy();
  p.policy.gpus.clear();
  p.solve.packs = static_cast<std::int64_t>(r.packs.packing.packs.size());
  p.solve.pinned = static_cast<std::int64_t>(cut.pins.size());
  p.solve.own_savings = r.savings();
  p.solve.own_met = r.evaluation.emo.time_ns <= r.evaluation.statics.target_ns;

  const PortedGraph pg = ported_graph(t, open);
  runtime::SimDeviceOptions dev_opts;
  dev_opts.seed = options.seed;
  const runtime::SimDevice device(gpu, dev_opts);
  const std::uint64_t noise = rank_noise_seed(options.seed, position);
  const double f_max = gpu.max_sm_clock_mhz();
  std::vector<double> clock(pg.g.nodes(), 0.0);
  double weighted = 0, total = 0;
  for (std::uint32_t n = 0; n < pg.g.nodes(); ++n) {
    if (!pg.g.gpu[n]) continue;
    const double f = clock_of_row[pg.g.op[n]];
    clock[n] = f > 0 ? f : f_max;  // an op in no pack runs at the max clock
    if (f <= 0) continue;
    weighted += f * static_cast<double>(pg.g.dur[n]);
    total += static_cast<double>(pg.g.dur[n]);
  }
  p.solve.mean_clock_mhz = total > 0 ? weighted / total : 0;
  p.plan = run_rank(t, pg, device, noise, clock, &r.policy());
  if (statics) p.statics.emplace_back(f_max, run_rank(t, pg, device, noise, static_clocks(pg.g, f_max)));
  return p;
}

/// Rank `t` at `position` run at each static clock of `clocks_mhz`, each run reduced to its ports.
std::vector<RankRun> static_runs(trace::Trace& t, const trace::JobCut& open, const model::GpuSpec& gpu, std::uint64_t seed,
                                 std::size_t position, const std::vector<double>& clocks_mhz) {
  const PortedGraph pg = ported_graph(t, open);
  runtime::SimDeviceOptions dev_opts;
  dev_opts.seed = seed;
  const runtime::SimDevice device(gpu, dev_opts);
  std::vector<RankRun> out;
  for (const double f : clocks_mhz) out.push_back(run_rank(t, pg, device, rank_noise_seed(seed, position), static_clocks(pg.g, f)));
  return out;
}

/// The per-rank work of a decomposed solve, wherever the ranks are (threads here, or MPI processes).
class RankWorker {
 public:
  virtual ~RankWorker() = default;
  /// Step 0: every rank (job order) reduced to its ports at its recorded durations.
  virtual std::vector<timing::PortGraph> recorded() = 0;
  /// Step 2: every rank solved against its cut of round `round` (0 first: with its run at the max clock).
  virtual std::vector<RankPlan> solve(std::vector<trace::JobCut>& cuts, int round) = 0;
  /// Every rank (job order) run at each of `clocks_mhz`, per rank per clock.
  virtual std::vector<std::vector<RankRun>> statics(const std::vector<double>& clocks_mhz) = 0;
};

/// Runs `work(i)` for i < n on how.threads threads; progress "ranks" from the calling thread;
/// rethrows the first error after every rank is done.
void for_ranks(std::size_t n, const DecomposedOptions& how, const char* label, const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> done{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  Progress progress(how.progress);
  progress.start(label, static_cast<std::int64_t>(n));
  parallel_for(
      n, how.threads,
      [&](std::size_t i) {
        try {
          work(i);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
        }
        ++done;
      },
      [&] { progress.step(static_cast<std::int64_t>(done.load()) - progress.done()); });
  progress.finish();
  if (error) std::rethrow_exception(error);
}

const char* round_label(int round) { return round == 0 ? "ranks (decomposed solve)" : "ranks (decomposed solve, again)"; }

/// The ranks `traces` (positions `position`, open cuts `open`) in this process.
class LocalRanks {
 public:
  LocalRanks(std::vector<trace::Trace>& traces, std::vector<std::size_t> position, std::vector<trace::JobCut> open,
             const model::GpuSpec& gpu, const driver::OptimizeOptions& options, const DecomposedOptions& how)
      : traces_(traces), position_(std::move(position)), open_(std::move(open)), gpu_(gpu), options_(options), how_(how) {
    if (open_.size() != traces_.size() || position_.size() != traces_.size()) {
      throw std::invalid_argument("solve_decomposed: one trace per rank of the job expected");
    }
    for (std::size_t i = 0; i < traces_.size(); ++i) {
      for (const trace::CollectivePin& p : open_[i].pins) {
        if (p.op >= traces_[i].ops.size()) throw std::invalid_argument("solve_decomposed: a rank trace does not match the job");
      }
    }
  }

  std::vector<timing::PortGraph> recorded() {
    std::vector<timing::PortGraph> out(traces_.size());
    for_ranks(traces_.size(), how_, "ranks (reduced to their collectives)",
              [&](std::size_t i) { out[i] = recorded_ports(traces_[i], open_[i]); });
    return out;
  }

  std::vector<RankPlan> solve(std::vector<trace::JobCut>& cuts, int round) {
    if (cuts.size() != traces_.size()) throw std::invalid_argument("solve_decomposed: cuts for other ranks");
    std::vector<RankPlan> out(traces_.size());
    for_ranks(traces_.size(), how_, round_label(round), [&](std::size_t i) {
      out[i] = solve_rank(traces_[i], cuts[i], open_[i], gpu_, options_, position_[i], round == 0);
    });
    return out;
  }

  std::vector<std::vector<RankRun>> statics(const std::vector<double>& clocks_mhz) {
    std::vector<std::vector<RankRun>> out(traces_.size());
    for_ranks(traces_.size(), how_, "ranks (static clocks)", [&](std::size_t i) {
      out[i] = static_runs(traces_[i], open_[i], gpu_, options_.seed, position_[i], clocks_mhz);
    });
    return out;
  }

 private:
  std::vector<trace::Trace>& traces_;
  std::vector<std::size_t> position_;
  std::vector<trace::JobCut> open_;
  const model::GpuSpec& gpu_;
  driver::OptimizeOptions options_;
  DecomposedOptions how_;
};

/// Each rank's own options (file comment, step 2): the job's, with its share of the target.
driver::OptimizeOptions rank_options(const driver::OptimizeOptions& options) {
  driver::OptimizeOptions o = options;
  o.max_slowdown = options.max_slowdown * kRankShare;
  o.target_ladder = false;  // a rank's pinned solve: at its share alone (the ladder's cost × ranks)
  return o;
}

/// The ranks' reductions `run` as time_job reads them.
std::vector<timing::RankPorts> rank_ports(const JobPorts& jp, const std::vector<const RankRun*>& run) {
  std::vector<timing::RankPorts> ranks(run.size());
  for (std::size_t r = 0; r < run.size(); ++r) ranks[r] = {&run[r]->ports, jp.instance[r], jp.link.info.ranks[r].offset_ns};
  return ranks;
}

/// The job timed from one reduction per rank (`run[r]`), on the simulated device: energy = every
/// rank's GPU idle power over the makespan + its ops' energy above idle (as runtime::run_on_sim).
driver::Evaluated evaluate(const JobPorts& jp, const std::vector<const RankRun*>& run, const model::GpuSpec& gpu,
                   timing::JobTiming* timing_out = nullptr) {
  const std::vector<timing::RankPorts> ranks = rank_ports(jp, run);
  double above = 0;
  for (const RankRun* r : run) above += r->above_idle_j;
  timing::JobTiming jt = timing::time_job(ranks, jp.instances);
  driver::Evaluated e{jt.makespan_ns, above + gpu.idle_power_w * static_cast<double>(jt.makespan_ns) * 1e-9 * static_cast<double>(run.size()), 0};
  if (timing_out != nullptr) *timing_out = std::move(jt);
  return e;
}

/// Step 1: the cuts of every rank. The job may take (1 + stretch) × its recorded makespan; each
/// collective's transfer is pinned where timing::float_pins puts it — its earliest start stretched
/// plus its share of the float of the longest path through it — or, when the collectives' order
/// has a cycle (no latest starts), at its earliest start stretched from the job's start.
std::vector<trace::JobCut> cuts_of(const JobPorts& jp, const std::vector<const RankRun*>& recorded,
                                   const timing::JobTiming& jt, double stretch) {
  const TimeNs w = jt.start_ns;
  const double k = 1.0 + stretch;
  auto stretched = [&](TimeNs t) { return w + static_cast<TimeNs>(std::floor(static_cast<double>(t - w) * k)); };
  const TimeNs budget = static_cast<TimeNs>(std::floor(static_cast<double>(jt.makespan_ns) * k));
  const std::vector<timing::RankPorts> ranks = rank_ports(jp, recorded);
  std::vector<TimeNs> pin = timing::float_pins(ranks, jp.instances, jt, budget).value_or(std::vector<TimeNs>{});
  if (pin.empty()) {
    for (const TimeNs t : jt.transfer_start_ns) pin.push_back(stretched(t));
  }
  std::vector<trace::JobCut> cuts(jp.open.size());
  for (std::size_t r = 0; r < cuts.size(); ++r) {
    const TimeNs off = jp.link.info.ranks[r].offset_ns;
    for (std::size_t p = 0; p < jp.open[r].pins.size(); ++p) {
      const auto c = static_cast<std::size_t>(jp.instance[r][p]);
      cuts[r].pins.push_back({jp.open[r].pins[p].op, pin[c] - off, jp.open[r].pins[p].transfer_ns});
    }
    cuts[r].end_ns = w + budget - off;
  }
  return cuts;
}

/// The job policy of the composed plan: each rank's section, device = its position in the job.
policy::Policy job_policy(const JobPorts& jp, std::vector<RankPlan>& plans) {
  policy::Policy p = plans.empty() ? policy::Policy{} : plans[0].policy;
  p.trace = jp.path;
  p.simulated = true;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    plans[i].section.device = static_cast<std::int32_t>(i);
    plans[i].section.rank = jp.link.info.ranks[i].rank;
    p.gpus.push_back(plans[i].section);
  }
  return p;
}

/// Static clocks asked of the ranks at a time (best_static): the search stops at the first clock
/// that misses the target, usually within the first few below the max at a tight target.
inline constexpr std::size_t kStaticBatch = 8;

/// The clocks every rank's solve offered, descending, without the max clock.
std::vector<double> common_clocks(const std::vector<RankPlan>& plans, double f_max) {
  std::vector<double> out = plans.empty() ? std::vector<double>{} : plans[0].option_clocks_mhz;
  for (const RankPlan& p : plans) {
    std::erase_if(out, [&](double f) { return std::find(p.option_clocks_mhz.begin(), p.option_clocks_mhz.end(), f) == p.option_clocks_mhz.end(); });
  }
  std::erase_if(out, [&](double f) { return f >= f_max; });
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

/// The cheapest static clock within the target among `clocks_mhz` (descending, below the max; the
/// max clock is `baseline`), from the max down until one misses (a lower clock is never faster),
/// asking the ranks kStaticBatch clocks at a time. nullopt: none fits.
std::optional<driver::Evaluated> best_static(const JobPorts& jp, RankWorker& worker, const std::vector<double>& clocks_mhz,
                                     const driver::Evaluated& baseline, const model::GpuSpec& gpu, TimeNs target_ns) {
  std::optional<driver::Evaluated> best;
  if (baseline.time_ns <= target_ns) best = baseline;
  for (std::size_t from = 0; from < clocks_mhz.size(); from += kStaticBatch) {
    const std::vector<double> batch(clocks_mhz.begin() + static_cast<std::ptrdiff_t>(from),
                                    clocks_mhz.begin() + static_cast<std::ptrdiff_t>(std::min(clocks_mhz.size(), from + kStaticBatch)));
    const std::vector<std::vector<RankRun>> runs = worker.statics(batch);
    for (std::size_t k = 0; k < batch.size(); ++k) {
      std::vector<const RankRun*> run;
      for (const auto& r : runs) run.push_back(&r.at(k));
      driver::Evaluated e = evaluate(jp, run, gpu);
      if (e.time_ns > target_ns) return best;
      e.clock_mhz = batch[k];
      if (!best || e.energy_j < best->energy_j) best = e;
    }
  }
  return best;
}

/// The steps of the file comment on the job `jp`, the ranks reduced and solved by `worker`.
DecomposedSolve decompose(const JobPorts& jp, const model::GpuSpec& gpu, const driver::OptimizeOptions& options, RankWorker& worker) {
  DecomposedSolve out;
  out.max_slowdown = options.max_slowdown;
  const std::size_t n = jp.open.size();
  // Step 0 and 1: the job at its recorded durations.
  const std::vector<timing::PortGraph> recorded = worker.recorded();
  std::vector<RankRun> rec(n);
  for (std::size_t r = 0; r < n; ++r) rec[r].ports = recorded[r];
  std::vector<const RankRun*> view(n);
  for (std::size_t r = 0; r < n; ++r) view[r] = &rec[r];
  timing::JobTiming jt0;
  evaluate(jp, view, gpu, &jt0);
  out.model_makespan_ns = jt0.makespan_ns;
  out.collectives_pinned = static_cast<std::int64_t>(jp.instances);
  out.cycle_breaks = jt0.cycle_breaks;

  out.rank_slowdown = rank_options(options).max_slowdown;
  out.pin_stretch = (1.0 + options.max_slowdown) / (1.0 + out.rank_slowdown) - 1.0;
  std::vector<RankPlan> plans;
  std::vector<RankRun> max_clock(n);
  for (out.rounds = 1;; ++out.rounds) {
    std::vector<const RankRun*> recorded_view(n);
    for (std::size_t r = 0; r < n; ++r) recorded_view[r] = &rec[r];
    std::vector<trace::JobCut> cuts = cuts_of(jp, recorded_view, jt0, out.pin_stretch);
    plans = worker.solve(cuts, out.rounds - 1);
    if (plans.size() != n) throw std::invalid_argument("solve_decomposed: a plan per rank expected");
    if (out.rounds == 1) {
      for (std::size_t r = 0; r < n; ++r) {
        if (plans[r].statics.empty() || plans[r].statics.front().first != gpu.max_sm_clock_mhz()) {
          throw std::invalid_argument("solve_decomposed: a rank's run at the max clock is missing");
        }
        max_clock[r] = std::move(plans[r].statics.front().second);
        view[r] = &max_clock[r];
      }
      out.baseline = evaluate(jp, view, gpu);
      out.baseline.clock_mhz = gpu.max_sm_clock_mhz();
      out.target_ns = driver::target_of(out.baseline.time_ns, options.max_slowdown);
    }
    for (std::size_t r = 0; r < n; ++r) view[r] = &plans[r].plan;
    out.plan = evaluate(jp, view, gpu);
    if (out.plan.time_ns <= out.target_ns || out.rounds == kDecomposedRounds) break;
    const double miss = static_cast<double>(out.plan.time_ns) / static_cast<double>(out.target_ns) - 1.0;
    out.pin_stretch = std::max(0.0, (1.0 + out.pin_stretch) / (1.0 + miss) - 1.0 - kRetryMargin);
  }
  out.policy = job_policy(jp, plans);
  out.own_plan = out.plan;
  // Never worse than locking one clock: the cheapest static clock within the target, if cheaper.
  if (const auto st = best_static(jp, worker, common_clocks(plans, gpu.max_sm_clock_mhz()), out.baseline, gpu, out.target_ns)) {
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
  for (std::size_t r = 0; r < n; ++r) {
    plans[r].solve.rank = jp.link.info.ranks[r].rank;
    plans[r].solve.wait_ns = jt0.wait_ns[r];
    out.ranks.push_back(plans[r].solve);
  }
  return out;
}

/// A RankWorker over LocalRanks.
class LocalWorker : public RankWorker {
 public:
  explicit LocalWorker(LocalRanks& ranks) : ranks_(ranks) {}
  std::vector<timing::PortGraph> recorded() override { return ranks_.recorded(); }
  std::vector<RankPlan> solve(std::vector<trace::JobCut>& cuts, int round) override { return ranks_.solve(cuts, round); }
  std::vector<std::vector<RankRun>> statics(const std::vector<double>& clocks_mhz) override { return ranks_.statics(clocks_mhz); }

 private:
  LocalRanks& ranks_;
};

}  // namespace

DecomposedSolve solve_decomposed(const JobPorts& ports, std::vector<trace::Trace> rank_traces, const model::GpuSpec& gpu,
                                 const driver::OptimizeOptions& options, const DecomposedOptions& how) {
  if (rank_traces.size() != ports.open.size()) throw std::invalid_argument("solve_decomposed: one trace per rank of the job expected");
  std::vector<std::size_t> position(rank_traces.size());
  for (std::size_t i = 0; i < position.size(); ++i) position[i] = i;
  LocalRanks ranks(rank_traces, std::move(position), ports.open, gpu, rank_options(options), how);
  LocalWorker worker(ranks);
  return decompose(ports, gpu, options, worker);
}

#ifdef EMO_WITH_MPI
namespace {

using nlohmann::json;

// ---- the messages (CBOR: integers and doubles exact) ------------------------------------------

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

json ports_json(const timing::PortGraph& g) {
  std::vector<std::int64_t> lags;
  lags.reserve(4 * g.lags.size());
  for (const timing::PortLag& l : g.lags) lags.insert(lags.end(), {l.from, l.to, l.lag_ns, l.into_end ? 1 : 0});
  return {{"release", g.release_ns}, {"end_release", g.end_release_ns}, {"dur", g.dur_ns},
          {"rank_end", g.end_release_ns_rank}, {"window_start", g.window_start_ns}, {"lags", std::move(lags)}};
}

timing::PortGraph ports_of(const json& j) {
  timing::PortGraph g;
  g.release_ns = j.at("release").get<std::vector<TimeNs>>();
  g.end_release_ns = j.at("end_release").get<std::vector<TimeNs>>();
  g.dur_ns = j.at("dur").get<std::vector<TimeNs>>();
  g.end_release_ns_rank = j.at("rank_end").get<TimeNs>();
  g.window_start_ns = j.at("window_start").get<TimeNs>();
  const auto lags = j.at("lags").get<std::vector<std::int64_t>>();
  if (lags.size() % 4 != 0) throw std::invalid_argument("solve_decomposed_mpi: a malformed port reduction");
  for (std::size_t i = 0; i < lags.size(); i += 4) {
    g.lags.push_back({static_cast<std::uint32_t>(lags[i]), static_cast<std::uint32_t>(lags[i + 1]), lags[i + 2], lags[i + 3] != 0});
  }
  return g;
}

json run_json(const RankRun& r) { return {{"ports", ports_json(r.ports)}, {"above_idle_j", r.above_idle_j}}; }

RankRun run_of(const json& j) { return {ports_of(j.at("ports")), j.at("above_idle_j").get<double>()}; }

/// A rank's plan: its policy (header and section) as policy::to_json writes it, the rest as numbers.
json plan_json(const RankPlan& p) {
  policy::Policy whole = p.policy;
  whole.gpus = {p.section};
  const RankSolve& s = p.solve;
  json statics = json::array();
  for (const auto& [f, run] : p.statics) statics.push_back({f, run_json(run)});
  return {{"option_clocks_mhz", p.option_clocks_mhz}, {"policy", policy::to_json(whole)}, {"packs", s.packs},
          {"pinned", s.pinned}, {"mean_clock_mhz", s.mean_clock_mhz}, {"own_savings", s.own_savings},
          {"own_met", s.own_met}, {"plan", run_json(p.plan)}, {"statics", std::move(statics)}};
}

RankPlan plan_of(const json& j) {
  RankPlan p;
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
  p.plan = run_of(j.at("plan"));
  for (const json& s : j.at("statics")) p.statics.emplace_back(s.at(0).get<double>(), run_of(s.at(1)));
  return p;
}

std::string cbor(const json& j) {
  const std::vector<std::uint8_t> b = json::to_cbor(j);
  return {b.begin(), b.end()};
}

constexpr char kPorts = 'O', kRound = 'R', kStatics = 'S', kAnswer = 'P', kFailed = 'E';

/// For tests only (tests/cli/optimize_mpi_test.sh): EMO_TEST_MPI_FAIL=P makes process P's rank
/// solves throw, to check that an error on any process ends every process without a hang.
void injected_failure(std::size_t process) {
  const char* p = std::getenv("EMO_TEST_MPI_FAIL");
  if (p != nullptr && std::to_string(process) == p) {
    throw InputError("EMO_TEST_MPI_FAIL", "process " + std::to_string(process) + " fails its rank solves as asked");
  }
}

/// Positions in the job of process p's ranks (of n, over k processes): p, p + k, p + 2k, ...
std::vector<std::size_t> positions_of(std::size_t p, std::size_t k, std::size_t n) {
  std::vector<std::size_t> out;
  for (std::size_t i = p; i < n; i += k) out.push_back(i);
  return out;
}

/// Process 0's RankWorker: each command goes to every other process with the part for its ranks
/// (exchange).
class MpiWorker : public RankWorker {
 public:
  MpiWorker(MpiShare& share, const JobPorts& jp, const model::GpuSpec& gpu, const driver::OptimizeOptions& options,
            const DecomposedOptions& how)
      : share_(share), jp_(jp), gpu_(gpu),
        own_(share.traces, positions_of(0, share.processes, jp.open.size()), part(jp.open, 0), gpu, rank_options(options), how) {}

  std::vector<timing::PortGraph> recorded() override {
    return exchange<timing::PortGraph>(
        [&](std::size_t q) {
          json mine = json::array();
          for (const trace::JobCut& c : part(jp_.open, q)) mine.push_back(cut_json(c));
          return kPorts + cbor({{"gpu", gpu_.id}, {"open", std::move(mine)}});
        },
        [&] { return own_.recorded(); }, [](const json& j) { return ports_of(j); });
  }

  std::vector<RankPlan> solve(std::vector<trace::JobCut>& cuts, int round) override {
    return exchange<RankPlan>(
        [&](std::size_t q) {
          json mine = json::array();
          for (const trace::JobCut& c : part(cuts, q)) mine.push_back(cut_json(c));
          return kRound + cbor({{"gpu", gpu_.id}, {"round", round}, {"cuts", std::move(mine)}});
        },
        [&] {
          injected_failure(0);
          std::vector<trace::JobCut> mine = part(cuts, 0);
          return own_.solve(mine, round);
        },
        [](const json& j) { return plan_of(j); });
  }

  std::vector<std::vector<RankRun>> statics(const std::vector<double>& clocks_mhz) override {
    return exchange<std::vector<RankRun>>(
        [&](std::size_t) { return kStatics + cbor({{"gpu", gpu_.id}, {"clocks", clocks_mhz}}); },
        [&] { return own_.statics(clocks_mhz); },
        [&](const json& j) {
          std::vector<RankRun> runs;
          for (const json& r : j) runs.push_back(run_of(r));
          if (runs.size() != clocks_mhz.size()) throw std::invalid_argument("solve_decomposed_mpi: a static run per clock expected");
          return runs;
        });
  }

 private:
  /// One command of a round: `command(q)` sent to every other process q, then this process's own
  /// part (`own()`, its ranks in order), then every answer received (`take(json)` per rank; always
  /// all of them, so that no process is left sending); the first error (its own, then by process)
  /// is thrown after. Returns per rank of the job, in its order.
  template <class T, class Command, class Own, class Take>
  std::vector<T> exchange(Command&& command, Own&& own, Take&& take) {
    for (std::size_t q = 1; q < share_.processes; ++q) mpi::send_bytes(command(q), static_cast<int>(q), mpi::kTagCommand);
    std::vector<T> out(jp_.open.size());
    std::exception_ptr error;
    try {
      std::vector<T> mine = own();
      for (std::size_t k = 0; k < mine.size(); ++k) out[k * share_.processes] = std::move(mine[k]);
    } catch (...) {
      error = std::current_exception();
    }
    for (std::size_t q = 1; q < share_.processes; ++q) {
      receive(q, error, [&](const json& j, std::size_t k) { out[q + k * share_.processes] = take(j); });
    }
    if (error) std::rethrow_exception(error);
    return out;
  }

  /// The entries of `all` (job order) for process q's ranks.
  std::vector<trace::JobCut> part(const std::vector<trace::JobCut>& all, std::size_t q) const {
    std::vector<trace::JobCut> out;
    for (const std::size_t i : positions_of(q, share_.processes, all.size())) out.push_back(all[i]);
    return out;
  }

  void receive(std::size_t q, std::exception_ptr& error, const std::function<void(const json&, std::size_t)>& take) {
    const std::string reply = mpi::recv_bytes(static_cast<int>(q), mpi::kTagReply);
    try {
      if (reply.empty() || reply[0] != kAnswer) mpi::throw_decoded(reply.empty() ? "X|empty reply" : reply.substr(1));
      const json j = json::from_cbor(reply.begin() + 1, reply.end());
      if (j.size() != positions_of(q, share_.processes, jp_.open.size()).size()) {
        throw std::invalid_argument("solve_decomposed_mpi: a process answered for other ranks");
      }
      for (std::size_t k = 0; k < j.size(); ++k) take(j[k], k);
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }

  MpiShare& share_;
  const JobPorts& jp_;
  const model::GpuSpec& gpu_;
  LocalRanks own_;
};

/// A process other than 0: its ranks, once process 0 has sent their ports.
class Served {
 public:
  Served(MpiShare& share, const driver::OptimizeOptions& options, const DecomposedOptions& how)
      : share_(share), options_(options), how_(how) {}

  /// Its answer to `command` (kPorts or kRound + CBOR): kAnswer + CBOR, or kFailed + the error.
  std::string answer(const std::string& command) {
    try {
      const json j = json::from_cbor(command.begin() + 1, command.end());
      json out = json::array();
      const model::GpuSpec& gpu = model::GpuCatalog::builtin().at(j.at("gpu").get<std::string>());
      if (command[0] == kPorts) {
        std::vector<trace::JobCut> open;
        for (const json& c : j.at("open")) open.push_back(cut_of(c));
        if (open.size() != share_.traces.size()) throw std::invalid_argument("solve_decomposed_mpi: ports for other ranks");
        local_.reset();
        open_ = std::move(open);
        for (const timing::PortGraph& g : ranks(gpu).recorded()) out.push_back(ports_json(g));
      } else if (command[0] == kStatics) {
        for (const std::vector<RankRun>& runs : ranks(gpu).statics(j.at("clocks").get<std::vector<double>>())) {
          json one = json::array();
          for (const RankRun& r : runs) one.push_back(run_json(r));
          out.push_back(std::move(one));
        }
      } else {
        injected_failure(share_.process);
        std::vector<trace::JobCut> cuts;
        for (const json& c : j.at("cuts")) cuts.push_back(cut_of(c));
        for (const RankPlan& p : ranks(gpu).solve(cuts, j.at("round").get<int>())) out.push_back(plan_json(p));
      }
      return kAnswer + cbor(out);
    } catch (...) {
      return kFailed + mpi::encode_error(std::current_exception());
    }
  }

 private:
  LocalRanks& ranks(const model::GpuSpec& gpu) {
    if (!local_ || gpu_ != &gpu) {
      local_.reset();
      local_.emplace(share_.traces, positions_of(share_.process, share_.processes, share_.paths.size()), open_, gpu,
                     rank_options(options_), how_);
      gpu_ = &gpu;
    }
    return *local_;
  }

  MpiShare& share_;
  driver::OptimizeOptions options_;
  DecomposedOptions how_;
  std::vector<trace::JobCut> open_;
  const model::GpuSpec* gpu_ = nullptr;
  std::optional<LocalRanks> local_;
};

}  // namespace

DecomposedSolve solve_decomposed_mpi(const JobPorts& ports, MpiShare& share, const model::GpuSpec& gpu,
                                     const driver::OptimizeOptions& options, const DecomposedOptions& how) {
  try {
    if (!share.active() || share.process != 0) throw std::invalid_argument("solve_decomposed_mpi: not process 0 of a kept MPI load");
    if (ports.open.size() != share.paths.size()) throw std::invalid_argument("solve_decomposed_mpi: one trace per rank of the job expected");
    MpiWorker worker(share, ports, gpu, options, how);
    DecomposedSolve out = decompose(ports, gpu, options, worker);
    share.release(true);
    return out;
  } catch (...) {
    share.release(false);
    throw;
  }
}

void serve_decomposed_mpi(MpiShare& share, const driver::OptimizeOptions& options, const DecomposedOptions& how) {
  Served served(share, options, how);
  while (share.active()) {
    const std::string command = mpi::recv_bytes(0, mpi::kTagCommand);
    if (command == mpi::kDone) {
      share.release(true);
    } else if (command == mpi::kGather) {
      send_own_traces_mpi(share);
    } else if (command.empty() || (command[0] != kRound && command[0] != kPorts && command[0] != kStatics)) {
      share.release(false);
      throw MpiPeerFailed();
    } else {
      mpi::send_bytes(served.answer(command), 0, mpi::kTagReply);
    }
  }
}

#else

DecomposedSolve solve_decomposed_mpi(const JobPorts&, MpiShare&, const model::GpuSpec&, const driver::OptimizeOptions&,
                                     const DecomposedOptions&) {
  throw InputError("--mpi", "emo was built without MPI");
}

void serve_decomposed_mpi(MpiShare&, const driver::OptimizeOptions&, const DecomposedOptions&) {
  throw InputError("--mpi", "emo was built without MPI");
}

#endif

}  // namespace emo::job
