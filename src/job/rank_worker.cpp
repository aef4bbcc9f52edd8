#include "job/rank_worker.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>

#include "core/parallel.h"
#include "core/units.h"
#include "graph/dep_graph.h"
#include "job/job_solve.h"
#include "runtime/sim_backend.h"
#include "runtime/sim_device.h"
#include "runtime/sim_run.h"

namespace emo::job {

driver::OptimizeOptions rank_options(const driver::OptimizeOptions& options) {
  driver::OptimizeOptions o = options;
  o.max_slowdown = options.max_slowdown * kRankShare;
  // A rank's pinned solve costs as many times as the job has ranks (docs/multi-rank.md, "Decomposed
  // solve", step 2): at its share alone (no target ladder), no frontier (none is shown), the models'
  // static clock measured once (the job's static clocks are compared on the job), one refinement
  // round, of the tighter targets only the predicted baseline (the slack a cut gives is before its
  // collectives; the rank's own share is small), and the exact local search from the solver's plan
  // and from the baseline, not from the best static plan (a rank's cut fixes its collectives'
  // times: on the straggler job of JobOptimize.TheOtherRanksSlowDownIntoTheirWaitForTheStraggler
  // the plans are the same without it and 4 points costlier without the baseline's start); that
  // start only for the plans at the rank's predicted baseline, where it wins (on the two 16-rank
  // jobs of docs/multi-rank.md, 18 of its 37 searches there; above it, at the rank's own share,
  // 1 of 128, while it took a third of the rank's CPU time).
  o.target_ladder = false;
  o.frontier_points = 0;
  o.static_sweep = false;
  o.refine_rounds = 1;
  o.tighter_plans = 1;
  o.polish_from_static = false;
  o.polish_from_max_at_baseline_only = true;
  return o;
}

std::uint64_t rank_noise_seed(std::uint64_t seed, std::size_t position) {
  return seed + 1 + 1'000'003ULL * (static_cast<std::uint64_t>(position) + 1);
}

std::unique_ptr<RankWorker> wrapped(std::unique_ptr<RankWorker> w, const DecomposedOptions& how) {
  return how.wrap_worker ? how.wrap_worker(std::move(w)) : std::move(w);
}

/// The rank's graph with its linked collectives as ports (`open`), and the ports' nodes.
struct PortedGraph {
  graph::DepGraph g;
  std::vector<std::uint32_t> port_node;
};

namespace {

PortedGraph ported_graph(trace::Trace& t, const trace::JobCut& open) {
  t.meta.cut = open;
  PortedGraph out{graph::build_graph(t), {}};
  t.meta.cut = {};
  out.g.shrink_to_fit();  // kept for the whole solve (ThreadRankWorker::graph)
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

/// Step 0: the rank's graph `pg` reduced to its ports at its recorded durations.
timing::PortGraph recorded_ports(const PortedGraph& pg) { return timing::reduce_to_ports(pg.g, pg.g.dur, pg.port_node); }

/// The simulated device of a rank's runs: `gpu`, device seed `seed` (as the rank's own solve).
runtime::SimDevice rank_device(const model::GpuSpec& gpu, std::uint64_t seed) {
  runtime::SimDeviceOptions dev_opts;
  dev_opts.seed = seed;
  return runtime::SimDevice(gpu, dev_opts);
}

/// Port p of the kept graph `pg` released no earlier than release_ns[p] (as graph::build_graph
/// applies a cut's pin) while this lives; the graph's own releases are put back however the scope
/// ends (the graph is kept for the rank's later steps), in reverse order.
class ReleasedPorts {
 public:
  ReleasedPorts(PortedGraph& pg, const std::vector<TimeNs>& release_ns) : pg_(pg) {
    // Checked before anything changes: a constructor that throws runs no destructor.
    if (release_ns.size() > pg_.port_node.size()) throw std::out_of_range("solve_decomposed: releases for more ports than the rank has");
    for (std::size_t p = 0; p < release_ns.size(); ++p) {
      TimeNs& r = pg_.g.release[pg_.port_node[p]];
      saved_.emplace_back(pg_.port_node[p], r);
      r = std::max(r, release_ns[p]);
    }
  }
  ~ReleasedPorts() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) pg_.g.release[it->first] = it->second;
  }
  ReleasedPorts(const ReleasedPorts&) = delete;
  ReleasedPorts& operator=(const ReleasedPorts&) = delete;

 private:
  PortedGraph& pg_;
  std::vector<std::pair<std::uint32_t, TimeNs>> saved_;
};

/// The rank's graph `pg` run at `node_clock_mhz` on `device` — a static run, or with `plan`'s
/// requests (each GPU's clock before its first in its initial_clock_mhz) — with port p's
/// transfer starting no earlier than release_ns[p] when `release_ns` is given (the rank's clock: a
/// cut's pins, or the job's transfer starts), reduced to its ports on `pg` as it is (its ports
/// open: the releases apply to the run only).
RankRun run_rank(const trace::Trace& t, PortedGraph& pg, const runtime::SimDevice& device, std::uint64_t noise_seed,
                 const std::vector<double>& node_clock_mhz, const RankKeptPlan* plan = nullptr,
                 const std::vector<TimeNs>& release_ns = {}, std::vector<TimeNs>* dur_out = nullptr) {
  runtime::SimRunOptions o;
  o.seed = noise_seed;
  if (plan != nullptr) o.initial_clock_mhz = plan->initial_clock_mhz;
  runtime::SimRunResult res;
  {
    const ReleasedPorts released(pg, release_ns);
    res = runtime::run_on_sim(t, pg.g, device, node_clock_mhz, plan != nullptr ? plan->requests : std::vector<runtime::ClockRequest>{}, o);
  }
  std::vector<TimeNs> dur(pg.g.dur.begin(), pg.g.dur.end());
  RankRun out;
  for (const runtime::RunOp& op : res.ops) {
    dur[op.node] = op.dur_ns;
    out.above_idle_j += op.above_idle_w * static_cast<double>(op.dur_ns) * 1e-9;
  }
  out.ports = timing::reduce_to_ports(pg.g, dur, pg.port_node);
  if (dur_out != nullptr) *dur_out = std::move(dur);
  return out;
}

/// Per port of `open` (a rank's open pins): the start of the same collective's pin in `cut`.
/// Throws std::invalid_argument when `cut` pins other collectives (`path`: the rank's trace).
std::vector<TimeNs> pin_starts(const trace::JobCut& cut, const trace::JobCut& open, const std::string& path) {
  if (cut.pins.size() != open.pins.size()) throw std::invalid_argument("solve_decomposed: releases for other collectives (" + path + ")");
  std::vector<TimeNs> out;
  for (std::size_t p = 0; p < cut.pins.size(); ++p) {
    if (cut.pins[p].op != open.pins[p].op) throw std::invalid_argument("solve_decomposed: releases for other collectives (" + path + ")");
    out.push_back(cut.pins[p].start_ns);
  }
  return out;
}

/// The kept plan's clocks per node of `pg` (RankKeptPlan::node_clock_mhz), as run_rank takes them.
std::vector<double> kept_clocks(const RankKeptPlan& keep, const PortedGraph& pg, const std::string& path) {
  if (keep.node_clock_mhz.size() != pg.g.nodes()) {
    throw std::logic_error("solve_decomposed: released runs asked of a rank not solved (" + path + ")");
  }
  return {keep.node_clock_mhz.begin(), keep.node_clock_mhz.end()};
}

/// The packs of `r`'s plan (its packing's, by op row) on `pg`'s nodes, and their clocks, into `keep`.
void keep_packs(const driver::OptimizeResult& r, const PortedGraph& pg, RankKeptPlan& keep) {
  const graph::DepGraph& og = r.packs.analysis.graph;
  std::vector<std::uint32_t> pack_of_row;  // per op row of the rank's trace (both graphs' op)
  for (std::uint32_t n = 0; n < og.nodes(); ++n) {
    if (r.packs.packing.pack_of[n] == pack::kNoPack) continue;
    if (og.op[n] >= pack_of_row.size()) pack_of_row.resize(og.op[n] + 1, UINT32_MAX);
    pack_of_row[og.op[n]] = r.packs.packing.pack_of[n];
  }
  keep.pack_of_node.assign(pg.g.nodes(), UINT32_MAX);
  for (std::uint32_t n = 0; n < pg.g.nodes(); ++n) {
    if (pg.g.gpu[n] && pg.g.op[n] < pack_of_row.size()) keep.pack_of_node[n] = pack_of_row[pg.g.op[n]];
  }
  keep.pack_clock_mhz = r.plan().pack_clock_mhz;
}

/// Step 2 for one rank at `position` in the job: its trace against `cut`, then its plan run on its
/// own graph, its collectives released at the cut's pins (as its policy was timed), and — with
/// `statics` — its run at the max clock, each reduced to its ports. The plan into `keep` (with
/// `lanes`, its packs and run durations too).
RankPlan solve_rank(trace::Trace& t, const trace::JobCut& cut, const trace::JobCut& open, PortedGraph& pg,
                    const model::GpuSpec& gpu, const driver::OptimizeOptions& options, std::size_t position, bool statics,
                    RankKeptPlan& keep, bool lanes) {
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

  const runtime::SimDevice device = rank_device(gpu, options.seed);
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
  keep.node_clock_mhz.assign(clock.begin(), clock.end());
  keep.requests = runtime::issued_requests(r.policy(), ms_to_ns(device.switch_latency_ms()), keep.initial_clock_mhz);
  keep.last_release_ns = pin_starts(cut, open, t.meta.path);
  p.plan = run_rank(t, pg, device, noise, clock, &keep, keep.last_release_ns, lanes ? &keep.dur_ns : nullptr);
  keep.last_run = p.plan;
  if (lanes) keep_packs(r, pg, keep);
  if (statics) p.statics.emplace_back(f_max, run_rank(t, pg, device, noise, static_clocks(pg.g, f_max)));
  return p;
}

/// Rank `t` at `position`: its kept plan run again with its collectives released at `releases`
/// (RankWorker::released); the kept run when its releases are those of the last one.
RankRun released_run(const trace::Trace& t, const trace::JobCut& releases, const trace::JobCut& open, PortedGraph& pg,
                     const model::GpuSpec& gpu, std::uint64_t seed, std::size_t position, RankKeptPlan& keep, bool lanes) {
  std::vector<TimeNs> release = pin_starts(releases, open, t.meta.path);
  if (!keep.node_clock_mhz.empty() && release == keep.last_release_ns) return keep.last_run;
  const std::vector<double> clock = kept_clocks(keep, pg, t.meta.path);
  const runtime::SimDevice device = rank_device(gpu, seed);
  keep.last_run = run_rank(t, pg, device, rank_noise_seed(seed, position), clock, &keep, release,
                           lanes ? &keep.dur_ns : nullptr);
  keep.last_release_ns = std::move(release);
  return keep.last_run;
}

/// Rank `t` at `position` (its graph `pg`) run at each static clock of `clocks_mhz`: each run's
/// energy above idle, and with `reduce` the run reduced to its ports (else RankRun::ports is left
/// empty: RankWorker::static_energies' runs, the same as statics()' to the bit).
std::vector<RankRun> static_runs(const trace::Trace& t, const PortedGraph& pg, const model::GpuSpec& gpu, std::uint64_t seed,
                                 std::size_t position, const std::vector<double>& clocks_mhz, bool reduce) {
  const runtime::SimDevice device = rank_device(gpu, seed);
  runtime::SimRunOptions o;
  o.seed = rank_noise_seed(seed, position);
  // As run_rank with every GPU node at f, without the replay (runtime::StaticSimRuns).
  const runtime::StaticSimRuns runs(t, pg.g, device, o);
  std::vector<RankRun> out;
  std::vector<TimeNs> dur;
  for (const double f : clocks_mhz) {
    RankRun& r = out.emplace_back();
    r.above_idle_j = runs.run(f, dur);
    if (reduce) r.ports = timing::reduce_to_ports(pg.g, dur, pg.port_node);
  }
  return out;
}

/// Each run's energy above idle (RankRun::above_idle_j), in order, J.
std::vector<double> above_idle_of(const std::vector<RankRun>& runs) {
  std::vector<double> out;
  for (const RankRun& r : runs) out.push_back(r.above_idle_j);
  return out;
}

/// Runs `work(i)` for i < n on `threads` threads; progress "ranks" to `sink` from the calling
/// thread; rethrows the first error after every rank is done.
void for_ranks(std::size_t n, int threads, ProgressSink* sink, const char* label,
               const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> done{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  Progress progress(sink);
  progress.start(label, static_cast<std::int64_t>(n));
  parallel_for(
      n, threads,
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

/// Rank `t`'s lane (RankWorker::lanes): the packs of `kept` in its plan run — or its run at the
/// static clock `static_mhz` > 0 (as static_runs) — timed with its ports ending at `port_end_ns`.
RankLane rank_lane(const trace::Trace& t, PortedGraph& pg, const RankKeptPlan& kept, const model::GpuSpec& gpu,
                   std::uint64_t seed, std::size_t position, const std::vector<TimeNs>& port_end_ns, double static_mhz) {
  if (kept.pack_of_node.size() != pg.g.nodes() || kept.dur_ns.size() != pg.g.nodes()) {
    throw std::logic_error("solve_decomposed: lanes asked of a rank whose plan was not kept (" + t.meta.path + ")");
  }
  std::vector<TimeNs> dur = kept.dur_ns;
  if (static_mhz > 0) {
    const runtime::SimDevice device = rank_device(gpu, seed);
    (void)run_rank(t, pg, device, rank_noise_seed(seed, position), static_clocks(pg.g, static_mhz), nullptr, {}, &dur);
  }
  const std::vector<TimeNs> time = timing::time_with_port_ends(pg.g, dur, pg.port_node, port_end_ns);
  RankLane lane(kept.pack_clock_mhz.size(), RankLanePack{INT64_MAX, INT64_MIN, 0, 0});
  for (std::uint32_t n = 0; n < pg.g.nodes(); ++n) {
    const std::uint32_t k = kept.pack_of_node[n];
    if (k >= lane.size()) continue;
    lane[k].start_ns = std::min(lane[k].start_ns, time[graph::DepGraph::start_tp(n)]);
    lane[k].end_ns = std::max(lane[k].end_ns, time[graph::DepGraph::end_tp(n)]);
    lane[k].clock_mhz = static_mhz > 0 ? static_mhz : kept.pack_clock_mhz[k];
    ++lane[k].ops;
  }
  std::erase_if(lane, [](const RankLanePack& p) { return p.ops == 0; });
  std::sort(lane.begin(), lane.end(), [](const RankLanePack& a, const RankLanePack& b) { return a.start_ns < b.start_ns; });
  return lane;
}

const char* round_label(int round) { return round == 0 ? "ranks (decomposed solve)" : "ranks (decomposed solve, again)"; }

}  // namespace

ThreadRankWorker::ThreadRankWorker(std::vector<trace::Trace>& traces, std::vector<std::size_t> position,
                                   std::vector<trace::JobCut> open, const model::GpuSpec& gpu,
                                   const driver::OptimizeOptions& options, const DecomposedOptions& how)
    : traces_(traces), position_(std::move(position)), open_(std::move(open)), gpu_(gpu), options_(options),
      threads_(how.threads), progress_(how.progress), keep_(how.lanes), kept_(traces.size()), graphs_(traces.size()) {
  if (open_.size() != traces_.size() || position_.size() != traces_.size()) {
    throw std::invalid_argument("solve_decomposed: one trace per rank of the job expected");
  }
  for (std::size_t i = 0; i < traces_.size(); ++i) {
    for (const trace::CollectivePin& p : open_[i].pins) {
      if (p.op >= traces_[i].ops.size()) throw std::invalid_argument("solve_decomposed: a rank trace does not match the job");
    }
  }
}

ThreadRankWorker::~ThreadRankWorker() = default;

PortedGraph& ThreadRankWorker::graph(std::size_t i) {
  if (!graphs_[i]) graphs_[i] = std::make_unique<PortedGraph>(ported_graph(traces_[i], open_[i]));
  return *graphs_[i];
}

std::vector<timing::PortGraph> ThreadRankWorker::recorded() {
  std::vector<timing::PortGraph> out(traces_.size());
  for_ranks(traces_.size(), threads_, progress_, "ranks (reduced to their collectives)",
            [&](std::size_t i) { out[i] = recorded_ports(graph(i)); });
  return out;
}

std::vector<RankPlan> ThreadRankWorker::solve(std::vector<trace::JobCut>& cuts, int round, double rank_slowdown) {
  if (cuts.size() != traces_.size()) throw std::invalid_argument("solve_decomposed: cuts for other ranks");
  if (!(rank_slowdown >= 0)) throw std::invalid_argument("solve_decomposed: a rank's share of the target below 0");
  driver::OptimizeOptions o = options_;
  o.max_slowdown = rank_slowdown;
  std::vector<RankPlan> out(traces_.size());
  for_ranks(traces_.size(), threads_, progress_, round_label(round), [&](std::size_t i) {
    out[i] = solve_rank(traces_[i], cuts[i], open_[i], graph(i), gpu_, o, position_[i], round == 0, kept_[i], keep_);
  });
  return out;
}

std::vector<RankRun> ThreadRankWorker::released(const std::vector<trace::JobCut>& releases) {
  if (releases.size() != traces_.size()) throw std::invalid_argument("solve_decomposed: releases for other ranks");
  std::vector<RankRun> out(traces_.size());
  for_ranks(traces_.size(), threads_, progress_, "ranks (composed)", [&](std::size_t i) {
    out[i] = released_run(traces_[i], releases[i], open_[i], graph(i), gpu_, options_.seed, position_[i], kept_[i], keep_);
  });
  return out;
}

std::vector<std::vector<RankRun>> ThreadRankWorker::statics(const std::vector<double>& clocks_mhz) {
  std::vector<std::vector<RankRun>> out(traces_.size());
  for_ranks(traces_.size(), threads_, progress_, "ranks (static clocks)", [&](std::size_t i) {
    out[i] = static_runs(traces_[i], graph(i), gpu_, options_.seed, position_[i], clocks_mhz, true);
  });
  return out;
}

std::vector<std::vector<double>> ThreadRankWorker::static_energies(const std::vector<double>& clocks_mhz) {
  std::vector<std::vector<double>> out(traces_.size());
  for_ranks(traces_.size(), threads_, progress_, "ranks (static clocks' energy)", [&](std::size_t i) {
    out[i] = above_idle_of(static_runs(traces_[i], graph(i), gpu_, options_.seed, position_[i], clocks_mhz, false));
  });
  return out;
}

std::vector<std::vector<double>> RankWorker::static_energies(const std::vector<double>& clocks_mhz) {
  std::vector<std::vector<double>> out;
  for (const std::vector<RankRun>& runs : statics(clocks_mhz)) out.push_back(above_idle_of(runs));
  return out;
}

std::vector<RankLane> RankWorker::lanes(const std::vector<std::vector<TimeNs>>&, double) {
  throw std::logic_error("solve_decomposed: this rank worker draws no job view");
}

std::vector<RankLane> ThreadRankWorker::lanes(const std::vector<std::vector<TimeNs>>& port_end_ns, double static_mhz) {
  if (!keep_) throw std::logic_error("solve_decomposed: lanes asked of a worker that keeps no plans (DecomposedOptions::lanes)");
  if (port_end_ns.size() != traces_.size()) throw std::invalid_argument("solve_decomposed: port ends for other ranks");
  std::vector<RankLane> out(traces_.size());
  for_ranks(traces_.size(), threads_, progress_, "ranks (job view)", [&](std::size_t i) {
    out[i] = rank_lane(traces_[i], graph(i), kept_[i], gpu_, options_.seed, position_[i], port_end_ns[i], static_mhz);
  });
  return out;
}

}  // namespace emo::job
