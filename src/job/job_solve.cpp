#include "job/job_solve.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "driver/front_end.h"
#include "graph/dep_graph.h"
#include "runtime/sim_backend.h"
#include "runtime/sim_device.h"
#include "runtime/sim_run.h"
#include "timing/port_deadlines.h"
#include "timing/ports.h"
#include "timing/timing.h"

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

StaticSearch::StaticSearch(std::vector<double> above_idle_j, const driver::Evaluated& baseline, double idle_w,
                           std::size_t ranks, TimeNs target_ns)
    : above_(std::move(above_idle_j)), idle_w_(idle_w), ranks_(ranks), target_ns_(target_ns),
      baseline_ns_(baseline.time_ns), time_(above_.size()) {
  for (const double e : above_) {
    if (!std::isfinite(e)) throw std::invalid_argument("StaticSearch: an energy that is not finite");
  }
  if (!std::isfinite(idle_w) || idle_w < 0) throw std::invalid_argument("StaticSearch: an idle power that is not finite and ≥ 0");
  if (baseline.time_ns <= target_ns) best_ = baseline;
}

TimeNs StaticSearch::time_bound(std::size_t i) const {
  TimeNs t = baseline_ns_;
  for (std::size_t j = 0; j <= i; ++j) {
    if (time_[j]) t = std::max(t, *time_[j]);
  }
  return t;
}

double StaticSearch::energy_bound(std::size_t i) const {
  // evaluate()'s expression, at the time bound: rounding is monotone, so never above the energy measured.
  return job_energy_j(above_[i], idle_w_, time_bound(i), ranks_);
}

bool StaticSearch::beats_best(double energy_j, std::size_t i) const {
  if (!best_) return true;
  return energy_j < best_->energy_j || (energy_j == best_->energy_j && best_index_ != SIZE_MAX && i < best_index_);
}

bool StaticSearch::open(std::size_t i) const {
  return !time_[i] && time_bound(i) <= target_ns_ && beats_best(energy_bound(i), i);
}

std::vector<std::size_t> StaticSearch::next_batch() const {
  std::size_t lowest_within = 0;  // clocks below this index are known within the target
  for (std::size_t j = 0; j < time_.size(); ++j) {
    if (time_[j] && *time_[j] <= target_ns_) lowest_within = j + 1;
  }
  std::vector<std::size_t> unknown, within;
  for (std::size_t i = 0; i < above_.size(); ++i) {
    if (open(i)) (i < lowest_within ? within : unknown).push_back(i);
  }
  if (!unknown.empty()) {
    if (unknown.size() <= kStaticSplit) return unknown;
    std::vector<std::size_t> out;
    for (std::size_t k = 1; k <= kStaticSplit; ++k) out.push_back(unknown[k * unknown.size() / (kStaticSplit + 1)]);
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  std::stable_sort(within.begin(), within.end(), [&](std::size_t a, std::size_t b) { return energy_bound(a) < energy_bound(b); });
  if (within.size() > kStaticBatch) within.resize(kStaticBatch);
  std::sort(within.begin(), within.end());
  return within;
}

void StaticSearch::record(std::size_t i, const driver::Evaluated& run) {
  if (time_.at(i)) return;
  time_[i] = run.time_ns;
  ++measured_;
  if (run.time_ns <= target_ns_ && beats_best(run.energy_j, i)) {
    best_ = run;
    best_index_ = i;
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

namespace {

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
  driver::Evaluated e{jt.makespan_ns, job_energy_j(above, gpu.idle_power_w, jt.makespan_ns, run.size()), 0};
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

/// The job policy of the plan `plan`: each rank's section of `plans`, device = its position in the
/// job; every pack at `static_mhz` when > 0; the job's target and baseline from `d`.
policy::Policy job_policy(const JobPorts& jp, std::vector<RankPlan>& plans, const DecomposedSolve& d,
                          const driver::Evaluated& plan, double static_mhz) {
  policy::Policy p = plans.empty() ? policy::Policy{} : plans[0].policy;
  p.trace = jp.path;
  p.simulated = true;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    plans[i].section.device = static_cast<std::int32_t>(i);
    plans[i].section.rank = jp.link.info.ranks[i].rank;
    p.gpus.push_back(plans[i].section);
  }
  if (static_mhz > 0) {
    for (policy::GpuPolicy& sec : p.gpus) {
      sec.default_clock_mhz = static_mhz;
      for (policy::PackClock& pc : sec.packs) pc.clock_mhz = static_mhz;
    }
  }
  p.max_slowdown = d.max_slowdown;
  p.latency_target_ns = d.baseline.target_ns;
  p.baseline_time_ns = d.baseline.run.time_ns;
  p.baseline_energy_j = d.baseline.run.energy_j;
  p.predicted_time_ns = plan.time_ns;
  p.predicted_energy_j = plan.energy_j;
  return p;
}

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
/// max clock is `baseline`), by StaticSearch on the ranks' static energies. nullopt: none fits.
std::optional<driver::Evaluated> best_static(const JobPorts& jp, RankWorker& worker, const std::vector<double>& clocks_mhz,
                                             const driver::Evaluated& baseline, const model::GpuSpec& gpu, TimeNs target_ns) {
  if (baseline.time_ns > target_ns) return std::nullopt;  // every clock is at least as slow (StaticSearch)
  std::vector<double> above(clocks_mhz.size(), 0.0);
  if (!clocks_mhz.empty()) {
    const std::vector<std::vector<double>> per_rank = worker.static_energies(clocks_mhz);
    if (per_rank.size() != jp.open.size()) throw std::invalid_argument("solve_decomposed: static energies per rank expected");
    for (const std::vector<double>& e : per_rank) {  // in rank order, as evaluate() sums them
      if (e.size() != clocks_mhz.size()) throw std::invalid_argument("solve_decomposed: an energy per static clock expected");
      for (std::size_t k = 0; k < e.size(); ++k) above[k] += e[k];
    }
  }
  StaticSearch search(std::move(above), baseline, gpu.idle_power_w, jp.open.size(), target_ns);
  for (std::vector<std::size_t> batch = search.next_batch(); !batch.empty(); batch = search.next_batch()) {
    std::vector<double> f;
    for (const std::size_t i : batch) f.push_back(clocks_mhz[i]);
    const std::vector<std::vector<RankRun>> runs = worker.statics(f);
    for (std::size_t k = 0; k < batch.size(); ++k) {
      std::vector<const RankRun*> run;
      for (const auto& r : runs) run.push_back(&r.at(k));
      driver::Evaluated e = evaluate(jp, run, gpu);
      e.clock_mhz = f[k];
      search.record(batch[k], e);
    }
  }
  return search.best();
}

/// The collectives' stretch that the target `max_slowdown` leaves beside c's two shares.
double stretch_beside_shares(const ComposedRounds& c, double max_slowdown) {
  return (1.0 + max_slowdown) / (1.0 + c.rank_slowdown + c.compose_reserve) - 1.0;
}

}  // namespace

void first_split(ComposedRounds& c, double max_slowdown) {
  c.rank_slowdown = max_slowdown * kRankShare;
  c.compose_reserve = max_slowdown * kComposeReserve;
  c.pin_stretch = stretch_beside_shares(c, max_slowdown);
}

bool next_split(ComposedRounds& c, double max_slowdown, double miss) {
  if (!(miss > 0)) throw std::invalid_argument("next_split: the round did not miss the target");
  const double cut = (1.0 + c.pin_stretch) / (1.0 + miss) - 1.0 - kRetryMargin;
  if (cut > 0) {
    c.pin_stretch = cut;
  } else if (c.rank_slowdown > 0) {
    c.rank_slowdown /= kShareCut;
    c.compose_reserve /= kShareCut;
    c.pin_stretch = stretch_beside_shares(c, max_slowdown);
  } else if (c.pin_stretch > 0) {
    c.pin_stretch = 0;
  } else {
    return false;
  }
  return true;
}

namespace {

/// Pointers to `runs`, as evaluate() reads them.
std::vector<const RankRun*> view_of(const std::vector<RankRun>& runs) {
  std::vector<const RankRun*> out;
  for (const RankRun& r : runs) out.push_back(&r);
  return out;
}

/// What time_recorded computes: the summary, and the runs and timing later steps read.
struct RecordedStep {
  RecordedJob summary;
  std::vector<RankRun> runs;    ///< Per rank: its ports at its recorded durations (no energy).
  timing::JobTiming timing;     ///< The job timed from them.
};

/// Steps 0 and 1's input: every rank reduced by `worker`, the job timed from the reductions.
RecordedStep time_recorded(const JobPorts& jp, RankWorker& worker, const model::GpuSpec& gpu) {
  const std::vector<timing::PortGraph> recorded = worker.recorded();
  if (recorded.size() != jp.open.size()) throw std::invalid_argument("solve_decomposed: a reduction per rank expected");
  RecordedStep out;
  out.runs.resize(recorded.size());
  for (std::size_t r = 0; r < recorded.size(); ++r) out.runs[r].ports = recorded[r];
  evaluate(jp, view_of(out.runs), gpu, &out.timing);
  out.summary = {out.timing.makespan_ns, static_cast<std::int64_t>(jp.instances), out.timing.cycle_breaks};
  return out;
}

/// The baseline from the first round's `plans` (each holds its run at the max clock) and the
/// target `max_slowdown` above it.
JobBaseline baseline_of(const JobPorts& jp, const std::vector<RankPlan>& plans, const model::GpuSpec& gpu,
                        double max_slowdown) {
  std::vector<const RankRun*> view;
  for (const RankPlan& p : plans) {
    if (p.statics.empty() || p.statics.front().first != gpu.max_sm_clock_mhz()) {
      throw std::invalid_argument("solve_decomposed: a rank's run at the max clock is missing");
    }
    view.push_back(&p.statics.front().second);
  }
  JobBaseline out{evaluate(jp, view, gpu), 0, {}};
  for (const RankRun* r : view) out.rank_above_idle_j.push_back(r->above_idle_j);
  out.run.clock_mhz = gpu.max_sm_clock_mhz();
  out.target_ns = driver::target_of(out.run.time_ns, max_slowdown);
  return out;
}

/// Per rank: `cuts`' pins with their starts at the job's transfer starts `transfer_start_ns` (job
/// clock, per instance), on the rank's clock; and into `moved_ns` the largest change of a pin's
/// start (ns).
std::vector<trace::JobCut> released_at(const JobPorts& jp, const std::vector<trace::JobCut>& cuts,
                                       const std::vector<TimeNs>& transfer_start_ns, TimeNs& moved_ns) {
  std::vector<trace::JobCut> out = cuts;
  moved_ns = 0;
  for (std::size_t r = 0; r < out.size(); ++r) {
    const TimeNs off = jp.link.info.ranks[r].offset_ns;
    for (std::size_t p = 0; p < out[r].pins.size(); ++p) {
      const TimeNs s = transfer_start_ns.at(static_cast<std::size_t>(jp.instance[r][p])) - off;
      moved_ns = std::max(moved_ns, s > out[r].pins[p].start_ns ? s - out[r].pins[p].start_ns : out[r].pins[p].start_ns - s);
      out[r].pins[p].start_ns = s;
    }
  }
  return out;
}

/// Step 3: the plans of one round (`plans`, each run released at its cut of `cuts`) composed to a
/// fixed point: the job timed from their runs; while a transfer start moved, every rank run again
/// released at the job's transfer starts (RankWorker::released) and the job timed again, at most
/// kComposePasses times. Each plan's run becomes its last; c.passes and c.residual_ns are set.
driver::Evaluated compose(const JobPorts& jp, std::vector<trace::JobCut> cuts, std::vector<RankPlan>& plans,
                          const model::GpuSpec& gpu, RankWorker& worker, ComposedRounds& c) {
  for (c.passes = 1;; ++c.passes) {
    std::vector<const RankRun*> view;
    for (const RankPlan& p : plans) view.push_back(&p.plan);
    timing::JobTiming jt;
    const driver::Evaluated e = evaluate(jp, view, gpu, &jt);
    cuts = released_at(jp, cuts, jt.transfer_start_ns, c.residual_ns);
    if (c.residual_ns == 0 || c.passes == kComposePasses) return e;
    std::vector<RankRun> runs = worker.released(cuts);
    if (runs.size() != plans.size()) throw std::invalid_argument("solve_decomposed: a released run per rank expected");
    for (std::size_t r = 0; r < runs.size(); ++r) plans[r].plan = std::move(runs[r]);
  }
}

/// What solve_rounds computes: the baseline (first round), the rounds, and the last round's plans.
struct RoundsStep {
  JobBaseline baseline;
  ComposedRounds composed;
  std::vector<RankPlan> plans;
};

/// Steps 1–3, at most kDecomposedRounds times: cut, solve every rank by `worker`, compose; again
/// with a tighter stretch while the composed plan misses the target (kDecomposedRounds).
RoundsStep solve_rounds(const JobPorts& jp, const RecordedStep& rec, const model::GpuSpec& gpu,
                        const driver::OptimizeOptions& options, RankWorker& worker) {
  RoundsStep out;
  ComposedRounds& c = out.composed;
  first_split(c, options.max_slowdown);
  for (c.rounds = 1;; ++c.rounds) {
    std::vector<trace::JobCut> cuts = cuts_of(jp, view_of(rec.runs), rec.timing, c.pin_stretch);
    out.plans = worker.solve(cuts, c.rounds - 1, c.rank_slowdown);
    if (out.plans.size() != jp.open.size()) throw std::invalid_argument("solve_decomposed: a plan per rank expected");
    if (c.rounds == 1) out.baseline = baseline_of(jp, out.plans, gpu, options.max_slowdown);
    c.plan = compose(jp, std::move(cuts), out.plans, gpu, worker, c);
    if (c.plan.time_ns <= out.baseline.target_ns || c.rounds == kDecomposedRounds) break;
    const double miss = static_cast<double>(c.plan.time_ns) / static_cast<double>(out.baseline.target_ns) - 1.0;
    if (!next_split(c, options.max_slowdown, miss)) break;
  }
  return out;
}

/// Never worse than locking one clock: the cheapest static clock within the target (best_static
/// over the clocks every rank of `plans` offered), kept when cheaper than `composed` or when
/// `composed` misses the target.
StaticChoice choose_static(const JobPorts& jp, RankWorker& worker, const std::vector<RankPlan>& plans,
                           const JobBaseline& base, const driver::Evaluated& composed, const model::GpuSpec& gpu) {
  StaticChoice out;
  if (const auto st = best_static(jp, worker, common_clocks(plans, gpu.max_sm_clock_mhz()), base.run, gpu, base.target_ns)) {
    out.best = *st;
    out.kept = st->energy_j < composed.energy_j || composed.time_ns > base.target_ns;
  }
  return out;
}

}  // namespace

DecomposedSolve decompose(const JobPorts& jp, const model::GpuSpec& gpu, const driver::OptimizeOptions& options,
                          RankWorker& worker) {
  DecomposedSolve out;
  out.max_slowdown = options.max_slowdown;
  const RecordedStep rec = time_recorded(jp, worker, gpu);
  out.recorded = rec.summary;
  RoundsStep rounds = solve_rounds(jp, rec, gpu, options, worker);
  out.baseline = rounds.baseline;
  out.composed = rounds.composed;
  out.static_choice = choose_static(jp, worker, rounds.plans, out.baseline, out.composed.plan, gpu);
  out.plan = out.static_choice.kept ? out.static_choice.best : out.composed.plan;
  out.composed.policy = job_policy(jp, rounds.plans, out, out.composed.plan, 0);
  out.policy = out.static_choice.kept ? job_policy(jp, rounds.plans, out, out.plan, out.static_choice.best.clock_mhz)
                                      : out.composed.policy;
  for (std::size_t r = 0; r < rounds.plans.size(); ++r) {
    RankSolve s = rounds.plans[r].solve;
    s.rank = jp.link.info.ranks[r].rank;
    s.wait_ns = rec.timing.wait_ns[r];
    out.ranks.push_back(s);
    out.composed.runs.push_back(std::move(rounds.plans[r].plan));
  }
  return out;
}

DecomposedSolve solve_decomposed(const JobPorts& ports, std::vector<trace::Trace> rank_traces, const model::GpuSpec& gpu,
                                 const driver::OptimizeOptions& options, const DecomposedOptions& how) {
  if (rank_traces.size() != ports.open.size()) throw std::invalid_argument("solve_decomposed: one trace per rank of the job expected");
  std::vector<std::size_t> position(rank_traces.size());
  for (std::size_t i = 0; i < position.size(); ++i) position[i] = i;
  const std::unique_ptr<RankWorker> worker = wrapped(
      std::make_unique<ThreadRankWorker>(rank_traces, std::move(position), ports.open, gpu, rank_options(options), how), how);
  DecomposedSolve out = decompose(ports, gpu, options, *worker);
  if (how.lanes) out.view = job_view(ports, out, *worker, gpu);
  return out;
}

}  // namespace emo::job
