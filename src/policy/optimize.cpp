#include "policy/optimize.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "opt/pack_problem.h"
#include "opt/solver.h"
#include "pack/plan_evaluator.h"
#include "runtime/profiler.h"
#include "runtime/sim_run.h"
#include "trace/error.h"

namespace emo::policy {
namespace {

using graph::DepGraph;
using trace::TimeNs;

/// A pack's ops as a unit of work for the device: each stream's ops back to back (the gaps inside
/// a pack are launch or dependency waits that the pack graph models; profiling measures the work).
runtime::Work pack_work(const trace::Trace& t, const DepGraph& g, const pack::Packing& packing, std::uint32_t p) {
  runtime::Work w;
  w.label = fmt::format("pack {}", p);
  std::map<std::int64_t, TimeNs> stream_end;
  for (const std::uint32_t n : packing.ops_of(p)) {
    const auto row = g.op[n];
    const std::int64_t stream = t.ops.stream[row];
    TimeNs& end = stream_end[stream];
    const TimeNs dur = std::max<TimeNs>(1, g.dur[n]);
    w.ops.push_back({std::string(t.strings.view(t.ops.name[row])), t.ops.kind[row], static_cast<std::int32_t>(stream),
                     end, dur});
    end += dur;
  }
  return w;
}

/// Pack clocks -> per-node clocks of the op graph (host nodes 0).
std::vector<double> node_clocks(const DepGraph& g, const pack::Packing& packing, const std::vector<double>& pack_clock) {
  std::vector<double> c(g.nodes(), 0.0);
  for (std::size_t n = 0; n < g.nodes(); ++n)
    if (g.gpu[n] && packing.pack_of[n] != pack::kNoPack) c[n] = pack_clock[packing.pack_of[n]];
  return c;
}

/// The packs' options and the two ways of scoring a choice (one option index per pack).
struct PackChoices {
  const pack::PackGraph& pg;
  std::vector<std::vector<opt::PackOption>> options;  ///< Per pack, descending clock (0 = f_max).
  double idle_w = 0;
  double gpus = 1;

  /// Idle power over the makespan on every GPU plus the packs' dynamic energy, J.
  double predicted_energy(const std::vector<int>& choice, TimeNs makespan) const {
    double e = idle_w * gpus * static_cast<double>(makespan) * 1e-9;
    for (std::size_t p = 0; p < options.size(); ++p) e += std::max(0.0, options[p][choice[p]].dynamic_energy_j);
    return e;
  }
  std::vector<double> factors(const std::vector<int>& choice) const {
    std::vector<double> f(options.size());
    for (std::size_t p = 0; p < options.size(); ++p) f[p] = options[p][choice[p]].factor;
    return f;
  }
  /// Pack p's timing at option k (pack_time at its factor), computed once.
  const pack::PackTime& time(std::size_t p, int k) const {
    if (cache.empty()) cache.resize(options.size());
    if (cache[p].empty()) cache[p].resize(options[p].size());
    auto& slot = cache[p][static_cast<std::size_t>(k)];
    if (!slot) slot = pg.pack_time(static_cast<std::uint32_t>(p), options[p][static_cast<std::size_t>(k)].factor);
    return *slot;
  }
  std::vector<pack::PackTime> times(const std::vector<int>& choice) const {
    std::vector<pack::PackTime> t;
    t.reserve(options.size());
    for (std::size_t p = 0; p < options.size(); ++p) t.push_back(time(p, choice[p]));
    return t;
  }
  /// The pack graph evaluated exactly at the choice's factors.
  timing::Schedule schedule(const std::vector<int>& choice) const { return pg.evaluate(times(choice)); }
  mutable std::vector<std::vector<std::optional<pack::PackTime>>> cache;
  std::vector<double> clocks(const std::vector<int>& choice) const {
    std::vector<double> c(options.size());
    for (std::size_t p = 0; p < options.size(); ++p) c[p] = options[p][choice[p]].clock_mhz;
    return c;
  }
};

/// Each pack's options at every option clock of `r` from its fitted model: the factor over its
/// time at f_max, and the model's energy minus idle power over that time.
std::vector<std::vector<opt::PackOption>> pack_options(const std::vector<model::ClockModel>& models,
                                                       const OptimizeResult& r, double f_max, double idle_w) {
  std::vector<std::vector<opt::PackOption>> options(models.size());
  for (std::size_t p = 0; p < models.size(); ++p) {
    const model::ClockModel& m = models[p];
    const double t_top = m.time_s(f_max);
    for (const double f : r.option_clocks_mhz) {
      const double t = m.time_s(f);
      options[p].push_back({f, t / t_top, m.energy_j(f) - idle_w * t});
    }
  }
  return options;
}

/// Repairs `choice` whose exact makespan exceeds `limit_ns`: repeatedly sets every pack with zero
/// slack in the exact schedule (and not already at f_max) to f_max. nullopt when it still does not
/// fit and no critical pack is left to raise. O(P · (V + E)) of the pack graph at most.
std::optional<std::vector<int>> raise_critical(const PackChoices& pc, std::vector<int> choice, TimeNs limit_ns) {
  const pack::PackGraph& pg = pc.pg;
  for (std::size_t round = 0; round <= pc.options.size(); ++round) {
    const timing::Schedule s = pc.schedule(choice);
    if (s.makespan_ns <= limit_ns) return choice;
    const graph::DepGraph at = pg.graph_at(pc.times(choice));
    const std::vector<TimeNs> slack = timing::slack(at, s, at.dur);
    bool raised = false;
    for (std::uint32_t p = 0; p < pg.packs; ++p) {
      if (choice[p] != 0 && slack[p] <= 0) choice[p] = 0, raised = true;
    }
    if (!raised) return std::nullopt;
  }
  return std::nullopt;
}

/// Exact local search on the pack graph: repeatedly makes the move — one pack 1, 2, 4 or 8
/// options slower — that saves the most predicted energy while the exact makespan stays within
/// `limit_ns`, until none does (at most `max_moves`). Each candidate is one
/// PackGraph::evaluate, O(V + E). The fast solver's problem fixes port-edge lags at the
/// recording (opt::build_pack_problem), so its plan can leave slack that only the exact pack
/// graph shows; this recovers it.
std::vector<int> polish(const PackChoices& pc, std::vector<int> choice, TimeNs limit_ns, int max_moves, int& moves) {
  const std::size_t P = pc.options.size();
  pack::PlanEvaluator ev(pc.pg, pc.times(choice));
  double energy = pc.predicted_energy(choice, ev.makespan_ns());
  for (int round = 0; round < max_moves; ++round) {
    int best_p = -1, best_k = 0;
    double best_e = energy - 1e-9;
    for (std::size_t p = 0; p < P; ++p) {
      const int k0 = choice[p];
      for (const int step : {1, 2, 4, 8}) {
        const int k = k0 + step;
        if (k >= static_cast<int>(pc.options[p].size())) break;
        const pack::PackTime& t = pc.time(p, k);
        if (!ev.is_slower(static_cast<std::uint32_t>(p), t)) continue;  // a non-monotone model
        const TimeNs m = ev.try_slower(static_cast<std::uint32_t>(p), t, limit_ns);
        if (m > limit_ns) break;  // slower steps only lengthen it further
        choice[p] = k;
        const double e = pc.predicted_energy(choice, m);
        choice[p] = k0;
        if (e < best_e) best_e = e, best_p = static_cast<int>(p), best_k = k;
      }
    }
    if (best_p < 0) break;
    choice[best_p] = best_k;
    ev.apply_slower(static_cast<std::uint32_t>(best_p), pc.time(static_cast<std::size_t>(best_p), best_k));
    energy = best_e;
    ++moves;
  }
  return choice;
}

/// Sorts `points` by time and keeps those whose energy strictly falls with time.
void pareto_frontier(std::vector<ReportPoint>& points) {
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return a.time_s != b.time_s ? a.time_s < b.time_s : a.energy_j < b.energy_j;
  });
  std::size_t kept = 0;
  for (const auto& pt : points) {
    if (kept == 0 || pt.energy_j < points[kept - 1].energy_j - 1e-9) points[kept++] = pt;
  }
  points.resize(kept);
}

/// The cheapest choice whose exact pack-graph makespan is within `target_ns`: the fast solver at a
/// deadline tightened by each overshoot of the exact re-evaluation (at most 8 tries; every pack
/// at f_max when none fits; at the fastest deadline, raise_critical repairs the plan), then
/// polish() on the exact pack graph. Counts the re-solves in `repairs`, polish moves in `moves`.
std::vector<int> solve_within(const PackChoices& pc, const opt::PackProblem& pp, opt::FastSolver& solver,
                              TimeNs target_ns, int& repairs, int& moves, int& greedy_wins) {
  // Pack durations are rounded to whole ns per op (pack::scale_ns), so the exact makespan may
  // exceed the solver's by a few ns: 1 µs of tolerance on the model's target (the device run
  // checks the real one).
  constexpr TimeNs kRoundingNs = 1000;
  const std::size_t P = pc.options.size();
  std::vector<int> best(P, 0);
  double best_energy = pc.predicted_energy(best, pc.schedule(best).makespan_ns);
  double deadline_s = static_cast<double>(target_ns) * 1e-9;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const bool at_fastest = deadline_s <= solver.fastest_makespan_s();
    const auto sol = solver.solve(std::max(deadline_s, solver.fastest_makespan_s()));
    if (!sol) break;
    std::vector<int> choice(P);
    for (std::size_t p = 0; p < P; ++p) choice[p] = sol->choice[pp.work_node[p]];
    const TimeNs m = pc.schedule(choice).makespan_ns;
    if (m <= target_ns + kRoundingNs) {
      const double e = pc.predicted_energy(choice, m);
      if (e < best_energy) best = choice, best_energy = e;
      break;
    }
    ++repairs;
    if (at_fastest) {
      // No tighter deadline exists: raise the packs that are critical in the exact schedule to
      // f_max until the plan fits (all packs at f_max always does).
      if (auto fixed = raise_critical(pc, choice, target_ns + kRoundingNs)) {
        const double e = pc.predicted_energy(*fixed, pc.schedule(*fixed).makespan_ns);
        if (e < best_energy) best = *fixed, best_energy = e;
      }
      break;
    }
    deadline_s -= static_cast<double>(m - target_ns) * 1e-9;
  }
  // The solver's plan, polished; and the exact local search alone from every pack at f_max
  // (it sees port-edge growth the problem does not): the cheaper prediction wins.
  std::vector<int> polished = polish(pc, std::move(best), target_ns + kRoundingNs, static_cast<int>(P) * 16, moves);
  int scratch_moves = 0;
  std::vector<int> greedy = polish(pc, std::vector<int>(P, 0), target_ns + kRoundingNs, static_cast<int>(P) * 16, scratch_moves);
  const double e_polished = pc.predicted_energy(polished, pc.schedule(polished).makespan_ns);
  const double e_greedy = pc.predicted_energy(greedy, pc.schedule(greedy).makespan_ns);
  if (e_greedy < e_polished - 1e-9) {
    ++greedy_wins;
    return greedy;
  }
  return polished;
}

/// Ordinal of each GPU node among the window's ops of the same name on its device (start order).
std::vector<std::int64_t> name_ordinals(const trace::Trace& trace, const DepGraph& g) {
  std::vector<std::uint32_t> gpu_nodes;
  for (std::uint32_t n = 0; n < g.nodes(); ++n)
    if (g.gpu[n]) gpu_nodes.push_back(n);
  std::stable_sort(gpu_nodes.begin(), gpu_nodes.end(), [&](auto a, auto b) { return g.rec_start[a] < g.rec_start[b]; });
  std::map<std::pair<std::int32_t, trace::StringId>, std::int64_t> seen;
  std::vector<std::int64_t> ordinal(g.nodes(), 0);
  for (auto n : gpu_nodes) ordinal[n] = seen[{trace.ops.device[g.op[n]], trace.ops.name[g.op[n]]}]++;
  return ordinal;
}

/// One pack's part of a policy: predicted start and end (ns, the window's time base), clock, energy.
struct PackPlan {
  TimeNs start_ns = 0, end_ns = 0;
  double clock_mhz = 0, energy_j = 0;
};

/// The policy of `plan` (one entry per pack of r.packs); `ids`, when given, receives per GPU the
/// pack id of each policy pack (policy index order).
Policy policy_of(const trace::Trace& trace, const OptimizeResult& r, const std::vector<PackPlan>& plan,
                 const model::GpuSpec& gpu, double max_slowdown,
                 std::map<std::int32_t, std::vector<std::uint32_t>>* ids = nullptr) {
  const DepGraph& g = r.packs.analysis.graph;
  const pack::Packing& packing = r.packs.packing;
  Policy pol;
  pol.emo_version = EMO_VERSION;
  pol.gpu = gpu.id;
  pol.trace = trace.meta.path;
  pol.iteration_marker = g.window.label == "whole trace" ? "" : g.window.label;
  pol.max_slowdown = max_slowdown;
  pol.latency_target_ns = r.target_ns;
  pol.baseline_time_ns = r.predicted_baseline.time_ns;
  pol.baseline_energy_j = r.predicted_baseline.energy_j;
  pol.predicted_time_ns = r.predicted_emo.time_ns;
  pol.predicted_energy_j = r.predicted_emo.energy_j;
  pol.switch_latency_ms = gpu.switch_latency_ms;
  pol.simulated = r.simulated;
  const std::vector<std::int64_t> ordinal = name_ordinals(trace, g);
  std::map<std::int32_t, GpuPolicy> per_device;
  std::map<std::int32_t, std::vector<std::uint32_t>> id_of;
  for (std::uint32_t p = 0; p < packing.packs.size(); ++p) {
    const std::int32_t d = packing.packs[p].device;
    GpuPolicy& gp = per_device[d];
    gp.device = d;
    gp.rank = trace.meta.rank;
    gp.default_clock_mhz = gpu.max_sm_clock_mhz();
    const auto first = packing.ops_of(p)[0];
    const auto row = g.op[first];
    PackClock k;
    k.start = {std::string(trace.strings.view(trace.ops.name[row])), trace.ops.stream[row], ordinal[first]};
    k.start_offset_ns = plan[p].start_ns - g.window_start_ns;
    k.duration_ns = plan[p].end_ns - plan[p].start_ns;
    k.ops = packing.packs[p].count;
    k.clock_mhz = plan[p].clock_mhz;
    k.predicted_energy_j = plan[p].energy_j;
    gp.packs.push_back(std::move(k));
    id_of[d].push_back(p);
  }
  for (auto& [d, gp] : per_device) {
    std::vector<std::size_t> order(gp.packs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return gp.packs[a].start_offset_ns < gp.packs[b].start_offset_ns;
    });
    std::vector<PackClock> sorted;
    for (const std::size_t i : order) sorted.push_back(std::move(gp.packs[i]));
    gp.packs = std::move(sorted);
    for (std::size_t i = 0; i < gp.packs.size(); ++i) gp.packs[i].index = static_cast<std::int32_t>(i);
    if (ids != nullptr) {
      auto& out = (*ids)[d];
      out.clear();
      for (const std::size_t i : order) out.push_back(id_of[d][i]);
    }
    pol.gpus.push_back(std::move(gp));
  }
  return pol;
}

/// The policy of `choice` (schedule = its exact pack-graph schedule).
Policy build_policy(const trace::Trace& trace, const OptimizeResult& r, const PackChoices& pc,
                    const std::vector<int>& choice, const timing::Schedule& schedule, const model::GpuSpec& gpu,
                    double max_slowdown) {
  std::vector<PackPlan> plan(pc.options.size());
  for (std::uint32_t p = 0; p < plan.size(); ++p) {
    const opt::PackOption& o = pc.options[p][choice[p]];
    plan[p] = {schedule.start(p), schedule.end(p), o.clock_mhz, 0};
    plan[p].energy_j = std::max(0.0, o.dynamic_energy_j) +
                       pc.idle_w * static_cast<double>(schedule.end(p) - schedule.start(p)) * 1e-9;
  }
  return policy_of(trace, r, plan, gpu, max_slowdown);
}

/// The runtime's clock requests for one iteration of `pol`: a switch one switch latency before each
/// pack whose clock differs from the previous one; the iteration starts at its last pack's clock
/// (steady state), recorded in `initial`.
std::vector<runtime::ClockRequest> switch_requests(const Policy& pol, TimeNs latency_ns,
                                                   std::map<std::int32_t, double>& initial) {
  std::vector<runtime::ClockRequest> requests;
  initial.clear();
  for (const auto& gp : pol.gpus) {
    if (gp.packs.empty()) continue;
    double prev = gp.packs.back().clock_mhz;
    initial[gp.device] = prev;
    for (const auto& k : gp.packs) {
      if (k.clock_mhz != prev) requests.push_back({gp.device, k.start_offset_ns - latency_ns, k.clock_mhz});
      prev = k.clock_mhz;
    }
  }
  return requests;
}

/// The simulated device: each pack replayed alone at each profiled clock (runtime::profile_work),
/// the whole op graph replayed for an evaluation (runtime::run_on_sim).
class SimBackend final : public OptimizeBackend {
 public:
  SimBackend(const model::GpuSpec& gpu, std::uint64_t seed) : device_(gpu, device_options(seed)) {
    run_opts_.seed = seed + 1;
  }
  runtime::Device& device() override { return device_; }
  bool static_oracle() const override { return true; }
  int max_validation_runs() const override { return 4; }

  std::vector<model::ClockModel> profile_packs(const trace::Trace& trace, OptimizeResult& r) override {
    const DepGraph& g = r.packs.analysis.graph;
    const pack::Packing& packing = r.packs.packing;
    std::vector<model::ClockModel> models;
    for (std::uint32_t p = 0; p < packing.packs.size(); ++p) {
      runtime::ProfileResult prof = runtime::profile_work(device_, pack_work(trace, g, packing, p), r.profiled_clocks_mhz);
      r.profiled_runs += prof.runs;
      r.profiling_device_s += prof.device_time_s;
      models.push_back(std::move(prof.model));
    }
    return models;
  }

  Evaluated run_static(const trace::Trace& trace, OptimizeResult& r, double f) override {
    const DepGraph& g = r.packs.analysis.graph;
    const std::vector<double> clocks(r.packs.pack_graph.packs, f);
    const auto res = runtime::run_on_sim(trace, g, device_, node_clocks(g, r.packs.packing, clocks), {}, run_opts_);
    return Evaluated{res.makespan_ns, res.energy_j, f};
  }

  void run_policy(const trace::Trace& trace, OptimizeResult& r) override {
    const DepGraph& g = r.packs.analysis.graph;
    const auto latency_ns = static_cast<TimeNs>(std::llround(device_.switch_latency_ms() * 1e6));
    const auto requests = switch_requests(r.policy, latency_ns, run_opts_.initial_clock_mhz);
    const auto run =
        runtime::run_on_sim(trace, g, device_, node_clocks(g, r.packs.packing, r.pack_clock_mhz), requests, run_opts_);
    r.emo = {run.makespan_ns, run.energy_j, 0};
    r.clock_switches = static_cast<std::int64_t>(requests.size());
    r.ops_at_other_clock = run.ops_at_other_clock;
  }

 private:
  static runtime::SimDeviceOptions device_options(std::uint64_t seed) {
    runtime::SimDeviceOptions o;
    o.seed = seed;
    return o;
  }
  runtime::SimDevice device_;
  runtime::SimRunOptions run_opts_;
};

}  // namespace

OptimizeResult optimize(const trace::Trace& trace, const graph::Window& window, const model::GpuSpec& gpu,
                        const OptimizeOptions& options) {
  SimBackend backend(gpu, options.seed);
  return optimize(trace, window, gpu, options, backend);
}

StaticPolicy static_policy(const trace::Trace& trace, const OptimizeResult& r, const model::GpuSpec& gpu,
                           double clock_mhz) {
  const pack::Packing& packing = r.packs.packing;
  std::vector<PackPlan> plan(packing.packs.size());
  for (std::size_t p = 0; p < plan.size(); ++p) plan[p] = {packing.packs[p].start_ns, packing.packs[p].end_ns, clock_mhz, 0};
  StaticPolicy out;
  out.policy = policy_of(trace, r, plan, gpu, 0, &out.pack_ids);
  for (auto& gp : out.policy.gpus) gp.default_clock_mhz = clock_mhz;
  return out;
}

OptimizeResult optimize(const trace::Trace& trace, const graph::Window& window, const model::GpuSpec& gpu,
                        const OptimizeOptions& options, OptimizeBackend& backend) {
  if (!(options.max_slowdown >= 0) || !std::isfinite(options.max_slowdown))
    throw InputError("--max-slowdown", fmt::format("{} is impossible: the target cannot be faster than every GPU at its "
                                                   "max clock (use a fraction >= 0, e.g. 0.05)",
                                                   options.max_slowdown));
  if (options.frontier_points < 2) throw std::invalid_argument("optimize: frontier_points must be >= 2");
  OptimizeResult r;
  r.trace_path = trace.meta.path;
  r.gpu = gpu.id;
  r.packs = pack::run_pack(trace, window, options.min_pack_ns);
  const DepGraph& g = r.packs.analysis.graph;
  const pack::Packing& packing = r.packs.packing;
  const std::uint32_t P = r.packs.pack_graph.packs;
  if (P == 0) throw InputError(trace.meta.path, fmt::format("no GPU ops in {}: nothing to optimise", g.window.label));

  runtime::Device& device = backend.device();
  r.simulated = device.simulated();
  const auto supported = device.supported_sm_clocks_mhz();
  try {
    r.profiled_clocks_mhz = runtime::profiling_clocks(supported, options.profile_clocks);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("--profile-clocks {}", options.profile_clocks), e.what());
  }
  r.option_clocks_mhz = runtime::trusted_clocks(supported, r.profiled_clocks_mhz);
  const double f_max = supported.front();

  // Profile, model, and set up the problem.
  r.pack_models = backend.profile_packs(trace, r);
  r.pack_clock_profiles = static_cast<std::int64_t>(P) * static_cast<std::int64_t>(r.profiled_clocks_mhz.size());
  r.every_clock_profiles = static_cast<std::int64_t>(P) * static_cast<std::int64_t>(supported.size());
  PackChoices pc{r.packs.pack_graph, pack_options(r.pack_models, r, f_max, device.idle_power_w()), device.idle_power_w(), 1, {}};
  std::vector<std::int32_t> device_of_pack(P);
  std::map<std::int32_t, int> devices;
  for (std::uint32_t p = 0; p < P; ++p) devices[device_of_pack[p] = packing.packs[p].device] = 1;
  pc.gpus = static_cast<double>(devices.size());
  const std::vector<int> all_max(P, 0);
  const TimeNs base_ns = pc.schedule(all_max).makespan_ns;
  r.predicted_baseline = {base_ns, pc.predicted_energy(all_max, base_ns), f_max};
  r.target_ns = static_cast<TimeNs>(std::floor(static_cast<double>(base_ns) * (1 + options.max_slowdown)));
  r.profiling_iterations = base_ns > 0 ? r.profiling_device_s / (static_cast<double>(base_ns) * 1e-9) : 0;
  // The problem, port-edge lags at the recording. The predicted frontier: each point's plan
  // evaluated exactly on the pack graph.
  const opt::PackProblem pp = opt::build_pack_problem(pc.pg, pc.options, device_of_pack, pc.idle_w);
  r.negative_lags = pp.negative_lags;
  opt::FastSolver solver(pp.problem);
  {
    for (const auto& s : solver.frontier(options.frontier_points)) {
      std::vector<int> choice(P);
      for (std::size_t p = 0; p < P; ++p) choice[p] = s.choice[pp.work_node[p]];
      const TimeNs m = pc.schedule(choice).makespan_ns;
      r.frontier.push_back({static_cast<double>(m) * 1e-9, pc.predicted_energy(choice, m), ""});
    }
    // The problem underestimates slowed plans (port lags at the recording), so its fastest
    // points land well above the baseline once evaluated exactly; fill that stretch with the
    // exact local search from every pack at f_max, at 4 targets between the baseline and the
    // first point.
    const double first_s = r.frontier.empty() ? 0.0 : std::min_element(r.frontier.begin(), r.frontier.end(), [](const auto& a, const auto& b) { return a.time_s < b.time_s; })->time_s;
    const double base_s = static_cast<double>(base_ns) * 1e-9;
    if (first_s > base_s * 1.002) {
      std::vector<int> plan = all_max;  // each target's search starts from the previous plan
      for (int k = 0; k < 4; ++k) {
        const auto limit = static_cast<TimeNs>(std::floor((base_s + (first_s - base_s) * k / 4.0) * 1e9));
        int moves = 0;
        plan = polish(pc, std::move(plan), std::max(limit, base_ns), static_cast<int>(P) * 16, moves);
        const TimeNs m = pc.schedule(plan).makespan_ns;
        r.frontier.push_back({static_cast<double>(m) * 1e-9, pc.predicted_energy(plan, m), ""});
      }
    }
    pareto_frontier(r.frontier);
  }

  // Evaluate on the device: baseline and the best static clock (an oracle on the simulated
  // device: every clock EMO may use, evaluated there; on a real GPU the clock the models predict).
  r.baseline = backend.run_static(trace, r, f_max);
  const auto truth_target = static_cast<TimeNs>(std::floor(static_cast<double>(r.baseline.time_ns) * (1 + options.max_slowdown)));
  r.static_best = r.baseline;
  if (backend.static_oracle()) {
    for (const double f : r.option_clocks_mhz) {
      const Evaluated e = backend.run_static(trace, r, f);
      if (e.time_ns <= truth_target && e.energy_j < r.static_best.energy_j) r.static_best = e;
    }
  } else {
    std::size_t best_k = 0;
    double best_e = r.predicted_baseline.energy_j;
    for (std::size_t k = 1; k < r.option_clocks_mhz.size(); ++k) {
      const std::vector<int> all_k(P, static_cast<int>(k));
      const TimeNs m = pc.schedule(all_k).makespan_ns;
      const double e = pc.predicted_energy(all_k, m);
      if (m <= r.target_ns && e < best_e) best_e = e, best_k = k;
    }
    if (best_k != 0) r.static_best = backend.run_static(trace, r, r.option_clocks_mhz[best_k]);
  }

  // Optimise, write the policy, run it on the device; when the run misses the target (the pack
  // models are approximate), tighten the model's target by the miss and repeat (at most
  // max_validation_runs(): 4 runs on the simulated device, 1 on a real GPU).
  TimeNs model_target_ns = r.target_ns;
  std::vector<int> best;
  auto run_plan = [&](const std::vector<int>& plan) {
    const timing::Schedule schedule = pc.schedule(plan);
    r.predicted_emo = {schedule.makespan_ns, pc.predicted_energy(plan, schedule.makespan_ns), 0};
    r.pack_clock_mhz = pc.clocks(plan);
    r.policy = build_policy(trace, r, pc, plan, schedule, gpu, options.max_slowdown);
    backend.run_policy(trace, r);
  };
  for (int round = 0; round < backend.max_validation_runs(); ++round) {
    best = solve_within(pc, pp, solver, model_target_ns, r.deadline_repairs, r.polish_moves, r.greedy_wins);
    run_plan(best);
    r.validation_runs = round + 1;
    if (r.emo.time_ns <= truth_target || model_target_ns <= base_ns) break;
    // Tighten the model's target by the miss, or by the model's relative error on this plan
    // when that is larger (a plan the model puts well inside the target can still miss it).
    const auto by_ratio = static_cast<TimeNs>(std::floor(static_cast<double>(r.predicted_emo.time_ns) *
                                                         static_cast<double>(truth_target) /
                                                         static_cast<double>(r.emo.time_ns)));
    model_target_ns = std::max(base_ns, std::min(model_target_ns - (r.emo.time_ns - truth_target) - 1000, by_ratio));
  }
  // Lowest-clock probe. Between profiled clocks the pack models interpolate, and where they put a
  // pack's energy minimum inside the lowest profiled interval (CPU-bound packs: the model's
  // knee, not the truth's), the measured lowest clock is often cheaper. When a run is left, try
  // the plan with every such pack at the lowest profiled clock, if the exact pack graph keeps it
  // within the model's target, and keep whichever measured run is cheaper within the target.
  if (!best.empty() && r.emo.time_ns <= truth_target && r.validation_runs < backend.max_validation_runs() &&
      r.profiled_clocks_mhz.size() >= 2) {
    std::vector<double> profiled = r.profiled_clocks_mhz;
    std::sort(profiled.begin(), profiled.end());
    std::vector<int> probe = best;
    for (std::uint32_t p = 0; p < P; ++p) {
      const int lowest = static_cast<int>(pc.options[p].size()) - 1;  // options descend to the lowest profiled clock
      if (pc.options[p][best[p]].clock_mhz < profiled[1] && best[p] != lowest) probe[p] = lowest;
    }
    if (probe != best && pc.schedule(probe).makespan_ns <= model_target_ns) {
      const OptimizeResult kept = r;
      run_plan(probe);
      ++r.validation_runs;
      r.probe_runs = 1;
      if (r.emo.time_ns <= truth_target && r.emo.energy_j < kept.emo.energy_j) {
        r.probe_kept = true;
      } else {
        const int runs = r.validation_runs;
        r = kept;
        r.validation_runs = runs;
        r.probe_runs = 1;
      }
    }
  }
  // The predicted frontier holds the chosen plan too (the exact search can beat the solver's
  // frontier points near it), Pareto-filtered again.
  if (r.predicted_emo.time_ns > 0) {
    r.frontier.push_back({static_cast<double>(r.predicted_emo.time_ns) * 1e-9, r.predicted_emo.energy_j, ""});
    pareto_frontier(r.frontier);
  }
  return r;
}

nlohmann::json to_json(const OptimizeResult& r) {
  nlohmann::json frontier = nlohmann::json::array();
  for (const auto& p : r.frontier) frontier.push_back({{"time_s", p.time_s}, {"energy_j", p.energy_j}});
  std::map<double, int> clocks;
  for (double f : r.pack_clock_mhz) clocks[f]++;
  nlohmann::json clock_hist = nlohmann::json::object();
  for (auto [f, n] : clocks) clock_hist[fmt::format("{:.0f}", f)] = n;
  const double static_savings = r.baseline.energy_j > 0 ? 1 - r.static_best.energy_j / r.baseline.energy_j : 0;
  nlohmann::json out = {{"trace", r.trace_path},
          {"gpu", r.gpu},
          {"simulated", r.simulated},
          {"window", r.packs.analysis.graph.window.label},
          {"baseline", {{"time_ns", r.baseline.time_ns}, {"energy_j", r.baseline.energy_j}, {"clock_mhz", r.baseline.clock_mhz}}},
          {"static_best",
           {{"clock_mhz", r.static_best.clock_mhz}, {"time_ns", r.static_best.time_ns}, {"energy_j", r.static_best.energy_j}}},
          {"emo",
           {{"time_ns", r.emo.time_ns},
            {"energy_j", r.emo.energy_j},
            {"predicted_time_ns", r.predicted_emo.time_ns},
            {"predicted_energy_j", r.predicted_emo.energy_j}}},
          {"savings", r.savings()},
          {"slowdown", r.slowdown()},
          {"static_savings", static_savings},
          {"static_slowdown", r.baseline.time_ns > 0 ? static_cast<double>(r.static_best.time_ns) / r.baseline.time_ns - 1 : 0},
          {"target_ns", r.target_ns},
          {"predicted_baseline", {{"time_ns", r.predicted_baseline.time_ns}, {"energy_j", r.predicted_baseline.energy_j}}},
          {"packs", r.packs.pack_graph.packs},
          {"ops", r.packs.packing.nodes.size()},
          {"pack_clocks_mhz", clock_hist},
          {"contraction_error", r.packs.contraction.contraction_error},
          {"profiled_clocks_mhz", r.profiled_clocks_mhz},
          {"profiled_runs", r.profiled_runs},
          {"profiling",
           {{"pack_clock_profiles", r.pack_clock_profiles},
            {"every_clock_profiles", r.every_clock_profiles},
            {"device_s", r.profiling_device_s},
            {"equivalent_iterations", r.profiling_iterations},
            {"every_clock_equivalent_iterations",
             r.pack_clock_profiles > 0 ? r.profiling_iterations * static_cast<double>(r.every_clock_profiles) /
                                             static_cast<double>(r.pack_clock_profiles)
                                       : 0.0}}},
          {"clock_switches", r.clock_switches},
          {"ops_at_other_clock", r.ops_at_other_clock},
          {"deadline_repairs", r.deadline_repairs},
          {"polish_moves", r.polish_moves},
          {"greedy_wins", r.greedy_wins},
          {"probe_runs", r.probe_runs},
          {"probe_kept", r.probe_kept},
          {"validation_runs", r.validation_runs},
          {"negative_lags", r.negative_lags},
          {"frontier", frontier}};
  if (!r.simulated) {  // measured on a real GPU by running the workload (policy/workload_backend.h)
    nlohmann::json profiles = nlohmann::json::array();
    for (std::size_t p = 0; p < r.pack_points.size(); ++p) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& pt : r.pack_points[p]) {
        nlohmann::json j = {{"clock_mhz", pt.clock_mhz}, {"time_s", pt.time_s}, {"energy_j", pt.energy_j}};
        if (p < r.pack_models.size()) {
          j["fitted_time_s"] = r.pack_models[p].time_s(pt.clock_mhz);
          j["fitted_energy_j"] = r.pack_models[p].energy_j(pt.clock_mhz);
        }
        points.push_back(std::move(j));
      }
      profiles.push_back({{"pack", p}, {"device", r.packs.packing.packs[p].device}, {"points", points}});
    }
    out["device"] = r.device_label;
    out["workload_runs"] = r.workload_runs;
    out["packs_at_run_power"] = r.packs_at_run_power;
    out["pack_profiles"] = std::move(profiles);
  }
  return out;
}

std::string to_text(const OptimizeResult& r) {
  const std::string sim = r.simulated ? " [SIMULATED]" : "";
  std::string out = fmt::format("{}: {} ({}), GPU {}{}\n", r.trace_path, r.packs.analysis.graph.window.label,
                                trace::format_duration(r.baseline.time_ns), r.gpu,
                                r.simulated ? " — simulated device: every time and energy below is simulated"
                                            : fmt::format(" — measured on {} by running the workload ({} runs)",
                                                          r.device_label, r.workload_runs));
  out += fmt::format("  {} packs of {} GPU ops; profiled at {} MHz: {} pack-clock profiles ({} runs, {:.2f} s of device "
                     "time, {:.1f} iterations); every clock would be {} profiles (~{:.0f} iterations)\n",
                     r.packs.pack_graph.packs, r.packs.packing.nodes.size(), fmt::join(r.profiled_clocks_mhz, ","),
                     r.pack_clock_profiles, r.profiled_runs, r.profiling_device_s, r.profiling_iterations,
                     r.every_clock_profiles,
                     r.pack_clock_profiles > 0 ? r.profiling_iterations * static_cast<double>(r.every_clock_profiles) /
                                                     static_cast<double>(r.pack_clock_profiles)
                                               : 0.0);
  out += fmt::format("  {:<26} {:>12} {:>12} {:>9} {:>9}\n", "schedule", "time", "energy (J)", "savings", "slowdown");
  auto row = [&](const std::string& name, const Evaluated& e) {
    const double sav = r.baseline.energy_j > 0 ? 1 - e.energy_j / r.baseline.energy_j : 0;
    const double slow = r.baseline.time_ns > 0 ? static_cast<double>(e.time_ns) / r.baseline.time_ns - 1 : 0;
    return fmt::format("  {:<26} {:>12} {:>12.3f} {:>8.2f}% {:>8.2f}%{}\n", name, trace::format_duration(e.time_ns),
                       e.energy_j, 100 * sav, 100 * slow, sim);
  };
  out += row(fmt::format("baseline ({:.0f} MHz)", r.baseline.clock_mhz), r.baseline);
  out += row(fmt::format("best static ({:.0f} MHz)", r.static_best.clock_mhz), r.static_best);
  out += row("EMO policy", r.emo);
  out += fmt::format("  target: +{:.1f} % ({} on the measured baseline, {} on the models' baseline); EMO "
                     "predicted {} and {:.3f} J; {} clock switches per window ({})\n",
                     100 * (static_cast<double>(r.target_ns) / r.predicted_baseline.time_ns - 1),
                     trace::format_duration(static_cast<TimeNs>(std::floor(
                         static_cast<double>(r.baseline.time_ns) * static_cast<double>(r.target_ns) /
                         static_cast<double>(r.predicted_baseline.time_ns)))),
                     trace::format_duration(r.target_ns), trace::format_duration(r.predicted_emo.time_ns),
                     r.predicted_emo.energy_j, r.clock_switches, r.packs.analysis.graph.window.label);
  return out;
}

HtmlReport to_report(const trace::Trace& t, const OptimizeResult& r) {
  HtmlReport h;
  const DepGraph& g = r.packs.analysis.graph;
  h.title = r.trace_path + " (" + g.window.label + ")";
  h.gpu = r.gpu;
  h.simulated = r.simulated;
  h.makespan_ns = std::max<TimeNs>(1, r.packs.analysis.schedule.makespan_ns);
  std::map<std::pair<int, std::int64_t>, ReportLane> lanes;  // (device or -1, stream or thread)
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    const auto row = g.op[n];
    const bool gpu = g.gpu[n] != 0;
    const int dev = gpu ? t.ops.device[row] : -1;
    const std::int64_t key = gpu ? t.ops.stream[row] : t.ops.thread[row];
    ReportLane& lane = lanes[{dev, key}];
    if (lane.label.empty()) {
      lane.label = gpu ? fmt::format("GPU {} · stream {}", dev, key) : fmt::format("CPU thread {}", key);
      lane.gpu = dev;
    }
    lane.intervals.push_back({g.rec_start[n] - g.window_start_ns, g.rec_end[n] - g.window_start_ns,
                              r.packs.analysis.node_slack[n] == 0, std::string(t.strings.view(t.ops.name[row]))});
  }
  for (auto& [k, lane] : lanes) h.lanes.push_back(std::move(lane));
  std::stable_sort(h.lanes.begin(), h.lanes.end(), [](const auto& a, const auto& b) { return (a.gpu < 0) < (b.gpu < 0); });
  const auto& packs = r.packs.packing.packs;
  for (std::size_t p = 0; p < packs.size(); ++p)
    h.packs.push_back({packs[p].device, packs[p].start_ns - g.window_start_ns, packs[p].end_ns - g.window_start_ns,
                       r.pack_clock_mhz[p], packs[p].count});
  h.min_clock_mhz = r.option_clocks_mhz.empty() ? 0 : r.option_clocks_mhz.back();
  h.max_clock_mhz = r.option_clocks_mhz.empty() ? 0 : r.option_clocks_mhz.front();
  h.frontier = r.frontier;
  h.markers = {{r.predicted_baseline.time_ns * 1e-9, r.predicted_baseline.energy_j, "baseline"},
               {r.predicted_emo.time_ns * 1e-9, r.predicted_emo.energy_j, "EMO"}};
  auto row = [&](const std::string& name, const Evaluated& e) {
    return ReportRow{name, e.time_ns * 1e-9, e.energy_j,
                     r.baseline.energy_j > 0 ? 1 - e.energy_j / r.baseline.energy_j : 0,
                     r.baseline.time_ns > 0 ? static_cast<double>(e.time_ns) / r.baseline.time_ns - 1 : 0};
  };
  h.rows = {row(fmt::format("baseline ({:.0f} MHz)", r.baseline.clock_mhz), r.baseline),
            row(fmt::format("best static clock ({:.0f} MHz)", r.static_best.clock_mhz), r.static_best),
            row("EMO policy", r.emo)};
  h.notes = {fmt::format("Table: evaluated on the {} device. Frontier and markers: predicted by the pack models.",
                         r.simulated ? "simulated" : "real"),
             fmt::format("{} packs; profiled at {} MHz ({} pack-clock profiles; every clock: {}).", r.packs.pack_graph.packs,
                         fmt::join(r.profiled_clocks_mhz, ", "), r.pack_clock_profiles, r.every_clock_profiles),
             fmt::format("Latency target {} (+{:.1f} %); {} clock switches per window ({}).",
                         trace::format_duration(r.target_ns),
                         100 * (static_cast<double>(r.target_ns) / r.predicted_baseline.time_ns - 1), r.clock_switches,
                         g.window.label)};
  return h;
}

}  // namespace emo::policy
