// `emo pipeline --stage-profile CSV --stages S --microbatches M [--schedule 1f1b] [--p-blocked W]
//  [--gpu NAME] [--points N] [--max-slowdown X] [--frontier FILE] [--json FILE|-] [--plans]`: builds
// the synchronous 1F1B DAG of a pipeline-parallel iteration from a Perseus stage profile and
// computes its time–energy Pareto frontier with the fast solver, energies on the measured points;
// with --max-slowdown also its minimum-energy plan within (1 + X) × the all-max-clock time.
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "driver/front_end.h"
#include "model/gpu_catalog.h"
#include "model/measurements.h"
#include "opt/pipeline.h"
#include "opt/solver.h"
#include "core/error.h"

namespace emo::cli {
namespace {

struct PipelineOptions {
  std::string profile;
  int stages = 0;
  int microbatches = 0;
  std::string schedule = "1f1b";
  double p_blocked_w = std::nan("");
  std::string gpu = "A100-SXM4-80GB";
  int points = 100;
  std::string frontier_out;
  std::string json_out;
  std::string max_slowdown;  ///< "" = no target plan.
  bool plans = false;
};

nlohmann::json point_json(const opt::Problem& p, const opt::Solution& s, bool plans) {
  nlohmann::json j = {{"time_s", s.makespan_s},
                      {"energy_j", s.energy_j},
                      {"deadline_s", s.deadline_s},
                      {"lower_bound_j", s.lower_bound_j}};
  if (plans) {
    nlohmann::json clocks = nlohmann::json::array();
    for (std::size_t i = 0; i < s.choice.size(); ++i) clocks.push_back(p.nodes()[i].options[s.choice[i]].clock_mhz);
    j["clock_mhz"] = std::move(clocks);
  }
  return j;
}

/// With --max-slowdown: the minimum-energy plan within `deadline_s` = (1 + X) × the all-max-clock
/// time (the fastest schedule when every option is a measured clock point: the max clock is each
/// pass's fastest); else nullopt. Throws InputError naming the profile when no plan fits.
std::optional<opt::Solution> target_plan(const PipelineOptions& o, opt::FastSolver& solver, double deadline_s) {
  if (o.max_slowdown.empty()) return std::nullopt;
  std::optional<opt::Solution> target = solver.solve(deadline_s);
  if (!target) throw InputError(o.profile, fmt::format("no plan within {:.6f} s", deadline_s));
  return target;
}

/// Most deadlines a frontier samples (--points).
constexpr int kMaxPoints = 100'000;
/// Most stages x micro-batches of a pipeline (its graph holds twice as many passes).
constexpr std::int64_t kMaxStageMicrobatches = 1'000'000;

/// Throws InputError naming the option for an unknown --schedule, fewer than 2 or more than
/// kMaxPoints --points, or more than kMaxStageMicrobatches stages x micro-batches.
void check_pipeline_options(const PipelineOptions& o) {
  if (o.schedule != "1f1b") throw InputError("--schedule", fmt::format("unknown schedule '{}' (known: 1f1b)", o.schedule));
  if (o.points < 2) throw InputError("--points", fmt::format("{} is fewer than 2 points", o.points));
  // Bounds that keep a typo from running out of memory or for hours (a breaker found
  // --microbatches 100000000 "out of memory", exit 3, and --points 1000000000 running on): the
  // frontier solves one deadline per point, and the graph holds 2 passes per stage and micro-batch.
  if (o.points > kMaxPoints)
    throw InputError("--points", fmt::format("{} is more than {} points", o.points, kMaxPoints));
  if (o.stages > 0 && o.microbatches > 0 &&
      static_cast<std::int64_t>(o.stages) * o.microbatches > kMaxStageMicrobatches)
    throw InputError("--microbatches", fmt::format("{} stages x {} micro-batches is more than {} (stage, micro-batch) pairs",
                                                   o.stages, o.microbatches, kMaxStageMicrobatches));
}

int run_pipeline(const PipelineOptions& o) {
  check_pipeline_options(o);
  double p_blocked = o.p_blocked_w;
  if (std::isnan(p_blocked)) {
    const model::GpuSpec& gpu = model::GpuCatalog::builtin().at(o.gpu);
    if (!gpu.blocked_power_w) {
      throw InputError("--gpu " + o.gpu, "the catalog has no blocked power for this GPU; give --p-blocked");
    }
    p_blocked = *gpu.blocked_power_w;
  }
  const model::MeasurementSet profile = model::load_measurements(o.profile);
  if (profile.format != model::MeasurementFormat::kPerseusStageProfile) {
    throw InputError(o.profile, fmt::format("not a Perseus stage profile (found {})", model::format_name(profile.format)));
  }
  const opt::PipelineProblem pp = opt::build_pipeline(profile, {o.stages, o.microbatches, p_blocked});
  const opt::Problem& p = pp.problem;
  const auto t0 = std::chrono::steady_clock::now();
  opt::FastSolver solver(p);
  const std::vector<opt::Solution> frontier = solver.frontier(o.points);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const opt::Schedule max_clock = opt::evaluate(p, opt::max_clock_assignment(p));

  const double deadline_s = o.max_slowdown.empty() ? 0 : max_clock.makespan_s * (1 + driver::parse_max_slowdown(o.max_slowdown));
  const std::optional<opt::Solution> target = target_plan(o, solver, deadline_s);
  if (!o.frontier_out.empty()) {
    std::string csv = "time,energy\n";
    for (const auto& s : frontier) csv += fmt::format("{:.9g},{:.9g}\n", s.makespan_s, s.energy_j);
    write_output(o.frontier_out, csv);
  }
  if (o.json_out != "-") {
    fmt::print("{}: {} stages x {} microbatches, 1F1B: {} passes, {} edges, P_blocked {} W\n", o.profile, o.stages,
               o.microbatches, p.node_count(), p.edge_count(), p_blocked);
    fmt::print("all passes at max clock: {:.4f} s, {:.1f} J\n", max_clock.makespan_s, max_clock.energy_j);
    if (!frontier.empty()) {
      const auto& f = frontier.front();
      const auto& l = frontier.back();
      fmt::print("fastest frontier point: {:.4f} s, {:.1f} J ({:+.2f}% energy vs max clock)\n", f.makespan_s,
                 f.energy_j, 100 * (f.energy_j / max_clock.energy_j - 1));
      fmt::print("energy minimum:         {:.4f} s, {:.1f} J ({:+.2f}% time, {:+.2f}% energy)\n", l.makespan_s,
                 l.energy_j, 100 * (l.makespan_s / max_clock.makespan_s - 1), 100 * (l.energy_j / max_clock.energy_j - 1));
    }
    fmt::print("frontier: {} Pareto points from {} deadlines in {:.3f} s\n", frontier.size(), o.points, seconds);
    if (target) {
      fmt::print("target {} (<= {:.4f} s): {:.4f} s, {:.1f} J ({:+.2f}% time, {:+.2f}% energy vs max clock)\n",
                 o.max_slowdown, deadline_s, target->makespan_s, target->energy_j,
                 100 * (target->makespan_s / max_clock.makespan_s - 1), 100 * (target->energy_j / max_clock.energy_j - 1));
    }
  }
  if (!o.json_out.empty()) {
    nlohmann::json doc;
    doc["stage_profile"] = o.profile;
    doc["schedule"] = o.schedule;
    doc["stages"] = o.stages;
    doc["microbatches"] = o.microbatches;
    doc["p_blocked_w"] = p_blocked;
    doc["passes"] = p.node_count();
    doc["edges"] = p.edge_count();
    doc["max_clock"] = {{"time_s", max_clock.makespan_s}, {"energy_j", max_clock.energy_j}};
    doc["solve_seconds"] = seconds;
    doc["frontier"] = nlohmann::json::array();
    for (const auto& s : frontier) doc["frontier"].push_back(point_json(p, s, o.plans));
    if (target) {
      doc["target"] = point_json(p, *target, o.plans);
      doc["target"]["max_slowdown"] = driver::parse_max_slowdown(o.max_slowdown);
    }
    if (o.plans) {
      nlohmann::json names = nlohmann::json::array();
      for (const auto& n : p.nodes()) names.push_back(n.name);
      doc["pass_names"] = std::move(names);
    }
    write_output(o.json_out, doc.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

Action add_pipeline_command(CLI::App& app) {
  auto o = std::make_shared<PipelineOptions>();
  CLI::App* cmd = app.add_subcommand(
      "pipeline", "Time-energy Pareto frontier of a pipeline-parallel training iteration (1F1B) from a "
                  "Perseus stage profile");
  cmd->add_option("--stage-profile", o->profile, "Perseus stage profile CSV (stage,instruction,frequency,time,energy)")
      ->required();
  cmd->add_option("--stages", o->stages, "Number of pipeline stages (must match the profile)")->required();
  cmd->add_option("--microbatches", o->microbatches, "Microbatches per iteration")->required();
  cmd->add_option("--schedule", o->schedule, "Pipeline schedule (1f1b)");
  cmd->add_option("--p-blocked", o->p_blocked_w, "Power (W) of a GPU blocked on communication; default: "
                                                 "the GPU catalog's figure for --gpu");
  cmd->add_option("--gpu", o->gpu, "GPU model for the default --p-blocked (default A100-SXM4-80GB)");
  cmd->add_option("--points", o->points, "Deadlines sampled between the fastest and the cheapest schedule "
                                         "(default 100)");
  cmd->add_option("--max-slowdown", o->max_slowdown,
                  "Also the minimum-energy plan within (1 + X) x the all-max-clock time (0.01 or 1%): "
                  "printed, and in the JSON as 'target' (its clocks with --plans)");
  cmd->add_option("--frontier", o->frontier_out, "Write the frontier as CSV time,energy (s, J) to FILE ('-' = stdout)");
  cmd->add_option("--json", o->json_out, "Also write a JSON report to FILE ('-' = stdout only, no text)");
  cmd->add_flag("--plans", o->plans, "Include each frontier point's clock per pass in the JSON");
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    return run_pipeline(*o);
  };
}

}  // namespace emo::cli
