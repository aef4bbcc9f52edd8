// emo_pipeline_crosscheck: the stage-level cross-check of a generated 1F1B pipeline job (issue 26,
// item 5; docs/multi-rank.md, "Cross-check against the stage-level optimiser"). Every figure is
// SIMULATED (the simulated device `emo optimize` evaluates a job on).
//
//   emo_pipeline_crosscheck profile JOB_DIR --stages S --microbatches M --out PROFILE.csv
//                           [--gpu NAME] [--seed 1] [--json FILE]
//     derives the job's Perseus stage profile (support/stage_profile.h: each stage's forward and
//     backward pass at every supported clock, noise-free time and energy) in the CSV format
//     `emo pipeline --stage-profile` reads; --json also writes {"idle_power_w", "clocks", ...}.
//   emo_pipeline_crosscheck replay JOB_DIR --stages S --microbatches M --plan PIPELINE.json
//                           --max-slowdown X [--gpu NAME] [--seed 1] [--json FILE]
//     replays the plan of `emo pipeline ... --max-slowdown X --plans --json PIPELINE.json`
//     (its "target" point: one clock per pass) on the simulated device, on the job's own graph, as
//     `emo optimize` evaluates a schedule (runtime::run_on_sim, device seed S, noise seed S + 1):
//     with its switches as `emo run` issues them (switch latency; support/stage_profile.h,
//     plan_switch_requests) and with ideal switching; next to the job at the max clock (the
//     baseline); and the cheapest of the JSON's frontier points (each replayed with switch
//     latency, and with ideal switching) whose replayed time is within the target.
//
// JOB_DIR holds the job's rank*.json.gz (emo_make_job --mode pipeline, dp = tp = 1). Each trace is
// read and reduced as `emo optimize` reads it (trace::load_trace, trace::reduce_for_optimize) and
// the ranks linked (trace::link_job).
// Exit codes: 0 done; 2 bad arguments or input (one line on stderr); 1 anything else.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "driver/front_end.h"
#include "runtime/sim_run.h"
#include "support/stage_profile.h"
#include "timing/analysis.h"
#include "trace/job.h"
#include "trace/load.h"
#include "trace/reduce.h"

namespace {

namespace fs = std::filesystem;
using emo::InputError;

constexpr const char* kUsage =
    "usage: emo_pipeline_crosscheck profile JOB_DIR --stages S --microbatches M --out PROFILE.csv [--gpu NAME]\n"
    "                               [--seed 1] [--json FILE]\n"
    "       emo_pipeline_crosscheck replay JOB_DIR --stages S --microbatches M --plan PIPELINE.json\n"
    "                               --max-slowdown X [--gpu NAME] [--seed 1] [--json FILE]\n"
    "The stage-level cross-check of a generated 1F1B pipeline job (docs/multi-rank.md); figures SIMULATED.\n";

struct BadArgs : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string verb, job_dir, out, plan, json, gpu, max_slowdown;
  int stages = 0, microbatches = 0;
  std::uint64_t seed = 1;
};

Args parse_args(int argc, char** argv) {
  if (argc < 3) throw BadArgs("a verb (profile, replay) and JOB_DIR are required");
  Args a;
  a.verb = argv[1];
  a.job_dir = argv[2];
  if (a.verb != "profile" && a.verb != "replay") throw BadArgs(fmt::format("unknown verb '{}'", a.verb));
  const std::map<std::string, std::function<void(const std::string&)>> opts = {
      {"--stages", [&](const std::string& v) { a.stages = std::stoi(v); }},
      {"--microbatches", [&](const std::string& v) { a.microbatches = std::stoi(v); }},
      {"--out", [&](const std::string& v) { a.out = v; }},
      {"--plan", [&](const std::string& v) { a.plan = v; }},
      {"--json", [&](const std::string& v) { a.json = v; }},
      {"--gpu", [&](const std::string& v) { a.gpu = v; }},
      {"--max-slowdown", [&](const std::string& v) { a.max_slowdown = v; }},
      {"--seed", [&](const std::string& v) { a.seed = std::stoull(v); }}};
  for (int i = 3; i < argc; i += 2) {
    const auto it = opts.find(argv[i]);
    if (it == opts.end()) throw BadArgs(fmt::format("unknown option '{}'", argv[i]));
    if (i + 1 >= argc) throw BadArgs(fmt::format("{} needs a value", argv[i]));
    try {
      it->second(argv[i + 1]);
    } catch (const std::logic_error&) {
      throw BadArgs(fmt::format("{} takes a number, not '{}'", argv[i], argv[i + 1]));
    }
  }
  if (a.stages < 1 || a.microbatches < 1) throw BadArgs("--stages and --microbatches (>= 1) are required");
  if (a.verb == "profile" && a.out.empty()) throw BadArgs("profile needs --out");
  if (a.verb == "replay" && (a.plan.empty() || a.max_slowdown.empty())) {
    throw BadArgs("replay needs --plan and --max-slowdown");
  }
  return a;
}

/// The job's traces (JOB_DIR/*.json.gz in name order), read and reduced as emo optimize does, linked.
emo::trace::Trace load_job(const std::string& dir) {
  std::vector<std::string> paths;
  if (!fs::is_directory(dir)) throw InputError(dir, "not a directory");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().string().ends_with(".json.gz")) paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.size() < 2) throw InputError(dir, "fewer than 2 rank traces (*.json.gz)");
  std::vector<emo::trace::Trace> traces;
  for (const std::string& p : paths) traces.push_back(emo::trace::reduce_for_optimize(emo::trace::load_trace(p)));
  return emo::trace::link_job(std::move(traces));
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!(f << text)) throw std::runtime_error(fmt::format("{}: cannot write", path));
}

int run_profile(const Args& a) {
  const emo::trace::Trace job = load_job(a.job_dir);
  const emo::model::GpuSpec& gpu = *emo::driver::resolve_trace_gpu(job, a.gpu, "--gpu").spec;
  emo::runtime::SimDeviceOptions o;
  o.seed = a.seed;
  const emo::runtime::SimDevice device(gpu, o);
  std::vector<double> clocks = gpu.sm_clocks_mhz;
  std::sort(clocks.rbegin(), clocks.rend());
  const auto passes = emo::testing::find_passes(job, a.stages, a.microbatches);
  const auto rows = emo::testing::stage_profile(job, passes, device, clocks);
  write_file(a.out, emo::testing::stage_profile_csv(rows));
  fmt::print("stage profile of {} stages x {} micro-batches on {} (SIMULATED, seed {}): {} clocks {}..{} MHz, "
             "idle power {} W (give emo pipeline --p-blocked {}); wrote {}\n",
             a.stages, a.microbatches, gpu.id, a.seed, clocks.size(), clocks.front(), clocks.back(), gpu.idle_power_w,
             gpu.idle_power_w, a.out);
  if (!a.json.empty()) {
    write_file(a.json, nlohmann::json{{"gpu", gpu.id},
                                      {"idle_power_w", gpu.idle_power_w},
                                      {"clocks_mhz", clocks},
                                      {"simulated", true}}
                           .dump(2) + "\n");
  }
  return 0;
}

/// The job, its graph and passes, and the simulated device's runs of it, as `emo optimize`
/// evaluates a job's schedule (SimBackend: device seed, noise seed + 1).
struct Replayer {
  const emo::trace::Trace& job;
  const emo::graph::DepGraph& g;
  const emo::testing::PipelinePasses& passes;
  const emo::model::GpuSpec& gpu;
  std::uint64_t seed;

  emo::runtime::SimRunResult run(const std::vector<double>& clocks,
                                 const std::vector<emo::runtime::ClockRequest>& requests = {},
                                 const std::map<std::int32_t, double>& initial = {}) const {
    emo::runtime::SimDeviceOptions o;
    o.seed = seed;
    const emo::runtime::SimDevice device(gpu, o);
    emo::runtime::SimRunOptions r;
    r.seed = seed + 1;
    r.initial_clock_mhz = initial;
    return emo::runtime::run_on_sim(job, g, device, clocks, requests, r);
  }
  /// Every pass at its plan's clock from its first op (ideal switching).
  emo::runtime::SimRunResult ideal(const emo::testing::PassPlan& plan) const {
    return run(emo::testing::plan_node_clocks(job, passes, g.op, g.gpu, plan));
  }
  /// The plan's switches as `emo run` issues them (switch latency; support/stage_profile.h).
  emo::runtime::SimRunResult switched(const emo::testing::PassPlan& plan) const {
    const std::vector<double> clocks = emo::testing::plan_node_clocks(job, passes, g.op, g.gpu, plan);
    std::map<std::int32_t, double> initial;
    const auto requests = emo::testing::plan_switch_requests(job, passes, g, run(clocks), plan,
                                                             std::llround(gpu.switch_latency_ms * 1e6), initial);
    return run(clocks, requests, initial);
  }
};

nlohmann::json run_json(const emo::runtime::SimRunResult& r, const emo::runtime::SimRunResult& base) {
  return {{"time_ns", r.makespan_ns},
          {"energy_j", r.energy_j},
          {"slowdown", static_cast<double>(r.makespan_ns) / static_cast<double>(base.makespan_ns) - 1},
          {"saving", 1 - r.energy_j / base.energy_j}};
}

/// `emo pipeline --json` with a target plan and --plans.
nlohmann::json read_plan(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, fmt::format("not JSON: {}", e.what()));
  }
  if (!doc.contains("target") || !doc["target"].contains("clock_mhz") || !doc.contains("pass_names")) {
    throw InputError(path, "no target plan (write it with emo pipeline --max-slowdown X --plans --json FILE)");
  }
  return doc;
}

int run_replay(const Args& a) {
  const double target = emo::driver::parse_max_slowdown(a.max_slowdown);
  const nlohmann::json doc = read_plan(a.plan);
  const emo::trace::Trace job = load_job(a.job_dir);
  const emo::model::GpuSpec& gpu = *emo::driver::resolve_trace_gpu(job, a.gpu, "--gpu").spec;
  const emo::timing::Analysis an = emo::timing::analyze(job, emo::graph::Window{}, {});
  const auto passes = emo::testing::find_passes(job, a.stages, a.microbatches);
  const Replayer rep{job, an.graph, passes, gpu, a.seed};
  std::vector<double> max_clock(an.graph.nodes(), 0.0);
  for (std::uint32_t n = 0; n < an.graph.nodes(); ++n) max_clock[n] = an.graph.gpu[n] ? gpu.max_sm_clock_mhz() : 0.0;
  const auto base = rep.run(max_clock);
  const emo::TimeNs limit = emo::driver::target_of(base.makespan_ns, target);
  emo::testing::PassPlan plan{doc["pass_names"].get<std::vector<std::string>>(),
                              doc["target"]["clock_mhz"].get<std::vector<double>>()};
  const auto ideal = rep.ideal(plan);
  const auto switched = rep.switched(plan);
  // The cheapest switched replay within the target among the target plan and the frontier's
  // points, else the baseline (every pass at the max clock).
  emo::runtime::SimRunResult best = switched.makespan_ns <= limit ? switched : base;
  emo::runtime::SimRunResult best_ideal = ideal.makespan_ns <= limit ? ideal : base;
  for (const auto& point : doc["frontier"]) {
    if (!point.contains("clock_mhz")) continue;
    plan.clock_mhz = point["clock_mhz"].get<std::vector<double>>();
    const auto r = rep.switched(plan);
    if (r.makespan_ns <= limit && r.energy_j < best.energy_j) best = r;
    const auto i = rep.ideal(plan);
    if (i.makespan_ns <= limit && i.energy_j < best_ideal.energy_j) best_ideal = i;
  }
  const double model_saving = 1 - doc["target"]["energy_j"].get<double>() / doc["max_clock"]["energy_j"].get<double>();
  nlohmann::json j = {{"simulated", true},
                      {"max_slowdown", target},
                      {"baseline", {{"time_ns", base.makespan_ns}, {"energy_j", base.energy_j}}},
                      {"ideal", run_json(ideal, base)},
                      {"switched", run_json(switched, base)},
                      {"best_within", run_json(best, base)},
                      {"best_within_ideal", run_json(best_ideal, base)},
                      {"model_saving", model_saving}};
  const auto pct = [&](const char* k, const char* f) { return 100 * j[k][f].get<double>(); };
  fmt::print("SIMULATED ({}, seed {}): baseline (max clock) {:.3f} ms, {:.3f} J. The stage-level plan at +{:.2f} % "
             "of its own model (which saves {:.2f} % there), replayed: with switch latency {:.2f} % at {:+.3f} % "
             "({}), ideal switching {:.2f} % at {:+.3f} %; the cheapest frontier point within the target, with switch "
             "latency: {:.2f} % at {:+.3f} % (ideal switching: {:.2f} % at {:+.3f} %)\n",
             gpu.id, a.seed, base.makespan_ns * 1e-6, base.energy_j, 100 * target, 100 * model_saving,
             pct("switched", "saving"), pct("switched", "slowdown"), switched.makespan_ns <= limit ? "within" : "MISSES",
             pct("ideal", "saving"), pct("ideal", "slowdown"), pct("best_within", "saving"),
             pct("best_within", "slowdown"), pct("best_within_ideal", "saving"), pct("best_within_ideal", "slowdown"));
  if (!a.json.empty()) write_file(a.json, j.dump(2) + "\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  try {
    if (argc > 1 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
      fmt::print("{}", kUsage);
      return 0;
    }
    a = parse_args(argc, argv);
  } catch (const BadArgs& e) {
    fmt::print(stderr, "emo_pipeline_crosscheck: error: {}\n", e.what());
    return 2;
  }
  try {
    return a.verb == "profile" ? run_profile(a) : run_replay(a);
  } catch (const InputError& e) {
    fmt::print(stderr, "emo_pipeline_crosscheck: error: {}\n", e.what());
    return 2;
  } catch (const emo::ArgumentError& e) {
    fmt::print(stderr, "emo_pipeline_crosscheck: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "emo_pipeline_crosscheck: error: {}\n", e.what());
    return 1;
  }
}
