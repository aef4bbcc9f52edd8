#include "driver/true_optimum.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "driver/optimize.h"
#include "opt/exact_pack_milp.h"
#include "runtime/sim_backend.h"

namespace emo::driver {
namespace {

/// Per pack, its options from true points (one per option clock, descending, the first f_max):
/// factor = time / time at f_max, dynamic energy = energy − idle_w × time (driver::fit's
/// definitions).
std::vector<std::vector<opt::PackOption>> true_options(const std::vector<std::vector<model::ClockPoint>>& points,
                                                       double idle_w) {
  std::vector<std::vector<opt::PackOption>> out;
  for (const auto& pts : points) {
    auto& o = out.emplace_back();
    for (const model::ClockPoint& c : pts) o.push_back({c.clock_mhz, c.time_s / pts.front().time_s, c.energy_j - idle_w * c.time_s});
  }
  return out;
}

/// The MIP start: EMO's plan when it fits `limit_ns` with true costs and is cheaper than the
/// exact local search from every pack at f_max (opt::polish), else that search's plan.
std::vector<int> start_choice(const opt::PackChoices& pc, const std::vector<int>& emo, TimeNs limit_ns) {
  int moves = 0;
  std::vector<int> s = opt::polish(pc, std::vector<int>(pc.packs(), 0), limit_ns, static_cast<int>(pc.packs()) * 16, moves);
  auto energy = [&](const std::vector<int>& c) { return pc.predicted_energy(c, pc.schedule(c).makespan_ns); };
  if (emo.size() == pc.packs() && pc.schedule(emo).makespan_ns <= limit_ns && energy(emo) < energy(s)) s = emo;
  return s;
}

/// One exact plan and its measured run.
struct OracleRun {
  PlanStage plan;
  opt::ExactPackResult solve;
  runtime::RunMeasurement run;
  TimeNs model_target_ns = 0;
};

}  // namespace

TrueOptimum true_optimum(const trace::Trace& trace, const OptimizeResult& r, const model::GpuSpec& gpu,
                         const OptimizeOptions& options, runtime::OptimizeBackend& backend, const TrueOptimumOptions& to) {
  const auto* sim = dynamic_cast<const runtime::SimDevice*>(&backend.device());
  if (sim == nullptr || !r.simulated)
    throw ArgumentError("true_optimum", backend.device().name(),
                        "the true optimum needs the simulated device's ground truth (run without --device nvml)");
  TrueOptimum out;
  out.packs = r.packs.pack_graph.packs;
  if (out.packs > to.max_packs) {
    out.not_computed = fmt::format("{} packs > {}", out.packs, to.max_packs);
    return out;
  }
  const double idle_w = sim->idle_power_w();
  const auto points = runtime::true_pack_points(*sim, trace, r.packs, r.profile.option_clocks_mhz);
  // No switch heads: the exact MILP's costs are per pack (opt/exact_pack_milp.h), and the local
  // search's start and the reported energies must be scored as it scores them.
  const ProblemStage problem =
      build_problem(r.packs, FitStage{{}, true_options(points, idle_w)}, idle_w, options.max_slowdown, 0);
  const opt::PackChoices& pc = problem.choices;
  const Evaluation& ev = r.evaluation;
  out.emo_true_time_ns = pc.schedule(r.plan().choice).makespan_ns;
  out.emo_true_energy_j = pc.predicted_energy(r.plan().choice, out.emo_true_time_ns);
  opt::ExactPackOptions eo;
  eo.max_packs = to.max_packs;
  eo.time_limit_s = to.time_limit_s;
  const bool exact_floor = options.max_slowdown == 0;  // as driver::optimize's solver (FastSolverOptions)
  eo.start = start_choice(pc, r.plan().choice, opt::search_limit_ns(pc, problem.target_ns, exact_floor));
  const TimeNs base_ns = problem.predicted_baseline.time_ns;
  TimeNs model_target = problem.target_ns;
  std::vector<OracleRun> runs;
  const PolicyBuilder policies(trace, r.packs);
  // Solve, run; while the run misses the measured target, tighten the model target as
  // driver::evaluate's tighter re-plans do (tighter_model_target_ns) and re-solve.
  while (static_cast<int>(runs.size()) < to.max_runs) {
    OracleRun o;
    o.model_target_ns = model_target;
    o.solve = opt::solve_exact_pack(pc, opt::search_limit_ns(pc, model_target, exact_floor), eo);
    out.seconds += o.solve.seconds;
    ++out.solves;
    if (o.solve.choice.empty()) break;
    o.plan.schedule = pc.schedule(o.solve.choice);
    o.plan.predicted = {o.plan.schedule.makespan_ns, pc.predicted_energy(o.solve.choice, o.plan.schedule.makespan_ns), 0};
    o.plan.pack_clock_mhz = pc.clocks(o.solve.choice);
    o.plan.choice = o.solve.choice;
    const policy::Policy pol = plan_policy(policies, problem, o.plan, gpu, options.max_slowdown, true);
    o.run = backend.run_policy(trace, r.packs, pol, o.plan.pack_clock_mhz);
    runs.push_back(o);
    if (o.run.time_ns <= ev.statics.target_ns || model_target <= base_ns) break;
    model_target = tighter_model_target_ns(model_target, base_ns, ev.statics.target_ns, o.plan.predicted.time_ns,
                                           o.run.time_ns);
  }
  out.runs = static_cast<int>(runs.size());
  if (runs.empty()) {
    out.not_computed = "no plan within the target";
    return out;
  }
  const OracleRun* kept = &runs.back();
  for (const OracleRun& o : runs) {
    if (o.run.time_ns <= ev.statics.target_ns && (kept->run.time_ns > ev.statics.target_ns || o.run.energy_j < kept->run.energy_j)) kept = &o;
  }
  out.computed = true;
  out.status = opt::exact_status_name(kept->solve.status);
  out.solver_gap = kept->solve.gap;
  out.model_target_ns = kept->model_target_ns;
  out.time_ns = kept->run.time_ns;
  out.energy_j = kept->run.energy_j;
  out.predicted_time_ns = kept->plan.predicted.time_ns;
  out.predicted_energy_j = kept->plan.predicted.energy_j;
  out.met_target = kept->run.time_ns <= ev.statics.target_ns;
  out.savings = ev.statics.baseline.energy_j > 0 ? 1 - out.energy_j / ev.statics.baseline.energy_j : 0;
  out.gap = out.energy_j > 0 ? ev.emo.energy_j / out.energy_j - 1 : 0;
  out.pack_clock_mhz = kept->plan.pack_clock_mhz;
  return out;
}

TrueOptimum true_optimum(const trace::Trace& trace, const OptimizeResult& r, const model::GpuSpec& gpu,
                         const OptimizeOptions& options, const TrueOptimumOptions& to) {
  if (!r.simulated)
    throw ArgumentError("true_optimum", "--device nvml",
                        "the true optimum needs the simulated device's ground truth (run without --device nvml)");
  runtime::SimBackend backend(gpu, options.seed);
  const runtime::RunMeasurement base = backend.run_static(trace, r.packs, r.profile.option_clocks_mhz.front());
  if (base.time_ns != r.evaluation.statics.baseline.time_ns || base.energy_j != r.evaluation.statics.baseline.energy_j)
    throw std::logic_error("true_optimum: the simulated device does not reproduce the measured baseline (another seed?)");
  return true_optimum(trace, r, gpu, options, backend, to);
}

}  // namespace emo::driver
