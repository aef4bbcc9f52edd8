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
//     with its switches as `emo run` issues them (switch latency, closed loop: a policy of one
//     pack per pass, support/stage_profile.h, run by runtime::run_policy_closed_loop) and with
//     ideal switching; next to the job at the max clock (the
//     baseline); and the cheapest of the JSON's frontier points (each replayed with switch
//     latency, and with ideal switching) whose replayed time is within the target.
//   emo_pipeline_crosscheck packs JOB_DIR --stages S --microbatches M --plan PIPELINE.json
//                           --policy EMO_POLICY.json --max-slowdown X [--models] [--gpu NAME] [--seed 1]
//                           [--json FILE]
//     EMO's packs of the job (as `emo optimize` packs it) with the passes each holds and their
//     stage-level clocks; on the simulated device EMO's policy (`emo optimize --policy`) with
//     switch latency (the run emo optimize measured) and with ideal switching, and the stage-level
//     plan mapped onto EMO's packs, both ways; --models adds emo optimize's own models' view of
//     both plans (docs/multi-rank.md, "Why the stage-level plan wins where it does").
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
#include <set>
#include <tuple>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "driver/front_end.h"
#include "driver/optimize.h"
#include "model/pack_options.h"
#include "pack/pack_run.h"
#include "policy/policy.h"
#include "runtime/sim_backend.h"
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
    "       emo_pipeline_crosscheck packs JOB_DIR --stages S --microbatches M --plan PIPELINE.json\n"
    "                               --policy EMO_POLICY.json --max-slowdown X [--models] [--gpu NAME] [--seed 1]\n"
    "                               [--json FILE]\n"
    "The stage-level cross-check of a generated 1F1B pipeline job (docs/multi-rank.md); figures SIMULATED.\n";

struct BadArgs : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string verb, job_dir, out, plan, json, gpu, max_slowdown, policy;
  int stages = 0, microbatches = 0;
  std::uint64_t seed = 1;
  bool models = false;
};

Args parse_args(int argc, char** argv) {
  if (argc < 3) throw BadArgs("a verb (profile, replay) and JOB_DIR are required");
  Args a;
  a.verb = argv[1];
  a.job_dir = argv[2];
  if (a.verb != "profile" && a.verb != "replay" && a.verb != "packs") throw BadArgs(fmt::format("unknown verb '{}'", a.verb));
  const std::map<std::string, std::function<void(const std::string&)>> opts = {
      {"--stages", [&](const std::string& v) { a.stages = std::stoi(v); }},
      {"--microbatches", [&](const std::string& v) { a.microbatches = std::stoi(v); }},
      {"--out", [&](const std::string& v) { a.out = v; }},
      {"--plan", [&](const std::string& v) { a.plan = v; }},
      {"--policy", [&](const std::string& v) { a.policy = v; }},
      {"--json", [&](const std::string& v) { a.json = v; }},
      {"--gpu", [&](const std::string& v) { a.gpu = v; }},
      {"--max-slowdown", [&](const std::string& v) { a.max_slowdown = v; }},
      {"--seed", [&](const std::string& v) { a.seed = std::stoull(v); }}};
  for (int i = 3; i < argc; i += 2) {
    if (std::string(argv[i]) == "--models") {  // a flag
      a.models = true;
      --i;
      continue;
    }
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
  if ((a.verb == "replay" || a.verb == "packs") && (a.plan.empty() || a.max_slowdown.empty())) {
    throw BadArgs(a.verb + " needs --plan and --max-slowdown");
  }
  if (a.verb == "packs" && a.policy.empty()) throw BadArgs("packs needs --policy");
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
  /// The plan's switches as `emo run` issues them (switch latency; closed loop, as EMO's own
  /// policies are run: runtime::run_policy_closed_loop on a policy of one pack per pass, each
  /// predicted where `ideal_run` — ideal(plan) — started it).
  emo::runtime::SimRunResult switched(const emo::testing::PassPlan& plan, const emo::runtime::SimRunResult& ideal_run) const {
    const std::vector<double> clocks = emo::testing::plan_node_clocks(job, passes, g.op, g.gpu, plan);
    const emo::policy::Policy policy = emo::testing::plan_pass_policy(job, passes, g, ideal_run, plan);
    return emo::runtime::run_policy_closed_loop(
        policy, std::llround(gpu.switch_latency_ms * 1e6),
        [&](const std::vector<emo::runtime::ClockRequest>& requests, const std::map<std::int32_t, double>& initial) {
          return run(clocks, requests, initial);
        },
        [&](const emo::runtime::SimRunResult& r) { return emo::testing::observed_pass_starts(passes, g, r); });
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
  const auto switched = rep.switched(plan, ideal);
  // The cheapest switched replay within the target among the target plan and the frontier's
  // points, else the baseline (every pass at the max clock).
  emo::runtime::SimRunResult best = switched.makespan_ns <= limit ? switched : base;
  emo::runtime::SimRunResult best_ideal = ideal.makespan_ns <= limit ? ideal : base;
  for (const auto& point : doc["frontier"]) {
    if (!point.contains("clock_mhz")) continue;
    plan.clock_mhz = point["clock_mhz"].get<std::vector<double>>();
    const auto i = rep.ideal(plan);
    const auto r = rep.switched(plan, i);
    if (r.makespan_ns <= limit && r.energy_j < best.energy_j) best = r;
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


/// The runs of one per-pack clock plan: ideal switching, and its switches as `emo run` issues them
/// (runtime::switch_requests from `policy` with these clocks, each pack's predicted start taken from
/// `policy` when `own_starts`, else from the ideal run; held to the policy's minimum interval).
struct PlanRuns {
  emo::runtime::SimRunResult ideal, switched;
};

PlanRuns run_pack_plan(const Replayer& rep, const emo::pack::PackRun& r, emo::policy::Policy policy,
                       const std::vector<double>& pack_clock, bool own_starts) {
  const emo::graph::DepGraph& g = r.analysis.graph;
  const std::vector<double> nodes = emo::runtime::node_clocks(g, r.packing, pack_clock);
  PlanRuns out;
  out.ideal = rep.run(nodes);
  std::vector<emo::TimeNs> first(r.packing.packs.size(), INT64_MAX);
  for (const auto& op : out.ideal.ops) {
    const std::uint32_t p = r.packing.pack_of[op.node];
    if (p != emo::pack::kNoPack) first[p] = std::min(first[p], op.start_ns);
  }
  std::size_t p = 0;
  for (auto& gp : policy.gpus) {
    for (auto& k : gp.packs) {
      k.clock_mhz = pack_clock[p];
      if (!own_starts) k.start_offset_ns = first[p];
      ++p;
    }
  }
  out.switched = emo::runtime::run_policy_closed_loop(
      policy, std::llround(rep.gpu.switch_latency_ms * 1e6),
      [&](const std::vector<emo::runtime::ClockRequest>& requests, const std::map<std::int32_t, double>& initial) {
        return rep.run(nodes, requests, initial);
      },
      [&](const emo::runtime::SimRunResult& run) { return emo::runtime::observed_pack_starts(policy, r.packing, run); });
  return out;
}

/// With --models: `emo optimize`'s own view (driver::optimize on the job at the target: its final
/// pack models and pack problem) of EMO's plan and of the stage-level plan mapped onto its packs:
/// the exact pack-graph makespan against the models' target, and the predicted energy. A mapped
/// clock outside EMO's options (below its lowest profiled clock) takes the lowest option.
void models_view(const Args& a, const emo::trace::Trace& job, const emo::model::GpuSpec& gpu, double target,
                 const std::vector<double>& emo_clock, const std::vector<double>& max_clock,
                 const std::vector<double>& stretch_clock,
                 const std::vector<std::vector<emo::model::ClockPoint>>& truth) {
  emo::driver::OptimizeOptions o;
  o.max_slowdown = target;
  o.seed = a.seed;
  const emo::driver::OptimizeResult res = emo::driver::optimize(job, emo::graph::Window{}, gpu, o);
  const emo::driver::ProblemStage problem =
      emo::driver::build_problem(res.packs, res.fit, gpu.idle_power_w, target,
                                  emo::driver::switch_head_ns(res.profile.switch_latency_ms));
  const emo::opt::PackChoices& pc = problem.choices;
  auto choice_of = [&](const std::vector<double>& clocks) {
    std::vector<int> c(pc.packs(), 0);
    for (std::size_t p = 0; p < pc.packs(); ++p) {
      const auto& opts = pc.options()[p];  // descending clock
      int k = static_cast<int>(opts.size()) - 1;
      for (std::size_t i = 0; i < opts.size(); ++i) {
        if (opts[i].clock_mhz <= clocks[p] + 0.5) {
          k = static_cast<int>(i);
          break;
        }
      }
      c[p] = k;
    }
    return c;
  };
  fmt::print("EMO's models (driver::optimize at +{:.2f} %: kept {:.2f} %): model target {} ns, predicted baseline {} ns, "
             "{:.3f} J\n", 100 * target, 100 * res.savings(), problem.target_ns, problem.predicted_baseline.time_ns,
             problem.predicted_baseline.energy_j);
  auto view = [&](const char* label, const std::vector<int>& c) {
    const emo::TimeNs t = pc.schedule(c).makespan_ns;
    const double e = pc.predicted_energy(c, t);
    fmt::print("  {:44s} pack graph {} ns ({}), predicted {:.3f} J ({:.2f} % under the predicted baseline)\n", label, t,
               t <= problem.target_ns ? "within the model target" : "over the model target", e,
               100 * (1 - e / problem.predicted_baseline.energy_j));
  };
  // Each pack's model time factor at the mapped clock against the truth's (true_pack_points).
  const std::vector<int> mapped = choice_of(max_clock);
  for (std::size_t p = 0; p < pc.packs(); ++p) {
    const emo::opt::PackOption& op = pc.options()[p][mapped[p]];
    double t = 0;
    for (const auto& pt : truth[p]) {
      if (pt.clock_mhz == op.clock_mhz) t = pt.time_s;
    }
    const double true_factor = t / truth[p].back().time_s;
    const double ms = truth[p].back().time_s * 1e3;
    if (std::abs(op.factor - true_factor) * ms > 0.05) {
      fmt::print("  pack {:3d} at {:.0f} MHz ({:.3f} ms of work at f_max): model factor {:.4f}, true {:.4f} ({:+.3f} ms)\n",
                 p, op.clock_mhz, ms, op.factor, true_factor, (op.factor - true_factor) * ms);
    }
  }
  view("EMO's kept plan (this run)", res.plan().choice);
  view("EMO's policy (--policy)", choice_of(emo_clock));
  view("stage-level on EMO packs (max)", choice_of(max_clock));
  view("stage-level on EMO packs (stretch)", choice_of(stretch_clock));
}

/// `packs` (analysis of the cross-check, docs/multi-rank.md "Why the stage-level plan wins where it
/// does"): EMO's packs of the job, packed as `emo optimize` packs it, each with the passes it holds
/// and their stage-level clocks; then, on the simulated device, EMO's policy (its clocks; switched as
/// `emo optimize` measured it, and with ideal switching) and the stage-level plan mapped onto EMO's
/// packs — each pack at the fastest clock of its passes ("max": no pass slower than the plan has
/// it), and at the lowest clock at which the pack is not slower than its passes at their clocks
/// are in total ("stretch": the plan's stretch of the pack, spread evenly) — a pack holding no pass
/// (a receive's wait) at the clock of the pack before it.
/// The passes of a job by trace row, their recorded kernel time and their names as `emo pipeline`
/// names them.
struct PassIndex {
  const emo::testing::PipelinePasses& passes;
  std::map<std::uint32_t, std::pair<int, int>> of_row;  ///< trace row → (stage, position in 1F1B order)
  std::map<std::pair<int, int>, emo::TimeNs> kernel_ns;  ///< (stage, position) → Σ recorded kernel time

  PassIndex(const emo::testing::PipelinePasses& p, const emo::graph::DepGraph& g) : passes(p) {
    for (int s = 0; s < p.stages; ++s)
      for (std::size_t k = 0; k < p.rows[s].size(); ++k)
        for (const std::uint32_t row : p.rows[s][k]) of_row[row] = {s, static_cast<int>(k)};
    for (std::uint32_t n = 0; n < g.nodes(); ++n) {
      const auto it = g.gpu[n] ? of_row.find(g.op[n]) : of_row.end();
      if (it != of_row.end()) kernel_ns[it->second] += g.dur[n];
    }
  }
  const emo::opt::Pass& pass(int s, int k) const { return passes.order[s][k]; }
  std::string name(int s, int k) const {
    return fmt::format("stage {} {} mb {}", s, pass(s, k).kind == emo::opt::PassKind::kForward ? "forward" : "backward",
                       pass(s, k).microbatch);
  }
};

/// The stage-level plan on EMO's packs: per pack the fastest clock of its passes ("max") and the
/// lowest clock at which the pack's work (true_pack_points, ascending clock) takes no longer than at
/// the max clock plus its passes' stretch under the plan, each pass's counted by the share of its
/// kernel time in the pack ("stretch"); a pack holding no pass takes the pack before's. `packs`: a
/// JSON row per pack, each printed as a line.
struct PackMapping {
  std::vector<double> max_clock, stretch_clock;
  nlohmann::json packs = nlohmann::json::array();
};

PackMapping map_onto_packs(const emo::pack::PackRun& r, const PassIndex& ix, const std::map<std::string, double>& plan_clock,
                           const std::map<std::tuple<int, int, double>, double>& pass_time,
                           const std::vector<std::vector<emo::model::ClockPoint>>& pack_points,
                           const std::vector<double>& emo_clock, double fmax) {
  const emo::graph::DepGraph& g = r.analysis.graph;
  const std::size_t n_packs = r.packing.packs.size();
  PackMapping m{std::vector<double>(n_packs), std::vector<double>(n_packs)};
  for (std::size_t p = 0; p < n_packs; ++p) {
    std::map<std::pair<int, int>, double> share;  // a pass's kernel time in this pack / its whole
    for (const std::uint32_t n : r.packing.ops_of(static_cast<std::uint32_t>(p))) {
      const auto it = ix.of_row.find(g.op[n]);
      if (it != ix.of_row.end())
        share[it->second] += static_cast<double>(g.dur[n]) / static_cast<double>(ix.kernel_ns.at(it->second));
    }
    const emo::pack::Pack& pk = r.packing.packs[p];
    const bool first_of_gpu = p == 0 || r.packing.packs[p - 1].device != pk.device;
    m.max_clock[p] = share.empty() && !first_of_gpu ? m.max_clock[p - 1] : share.empty() ? fmax : 0.0;
    m.stretch_clock[p] = share.empty() && !first_of_gpu ? m.stretch_clock[p - 1] : fmax;
    double need_s = pack_points[p].back().time_s;
    std::string desc;
    nlohmann::json held = nlohmann::json::array();
    for (const auto& [sk, frac] : share) {
      const auto [s, k] = sk;
      const double f = plan_clock.at(ix.name(s, k));
      const int kind = static_cast<int>(ix.pass(s, k).kind);
      m.max_clock[p] = std::max(m.max_clock[p], f);
      need_s += frac * (pass_time.at({s, kind, f}) - pass_time.at({s, kind, fmax}));
      held.push_back({{"pass", ix.name(s, k)}, {"clock_mhz", f}});
      desc += fmt::format(" {}{}@{:.0f}", kind == static_cast<int>(emo::opt::PassKind::kForward) ? "F" : "B",
                          ix.pass(s, k).microbatch, f);
    }
    if (!share.empty()) {
      for (const auto& pt : pack_points[p]) {
        if (pt.time_s <= need_s) {
          m.stretch_clock[p] = pt.clock_mhz;
          break;
        }
      }
    }
    const std::string cut(emo::pack::cut_name(pk.starts_at));
    m.packs.push_back({{"pack", p}, {"device", pk.device}, {"start_ns", pk.start_ns}, {"end_ns", pk.end_ns},
                       {"critical", pk.critical}, {"starts_at", cut}, {"emo_clock_mhz", emo_clock[p]},
                       {"max_clock_mhz", m.max_clock[p]}, {"stretch_clock_mhz", m.stretch_clock[p]}, {"passes", held}});
    fmt::print("pack {:3d} GPU {} {:9.3f}-{:9.3f} ms {:11s} {:8s} EMO {:6.0f} | max {:6.0f} stretch {:6.0f} |{}\n", p,
               pk.device, pk.start_ns * 1e-6, pk.end_ns * 1e-6, cut, pk.critical ? "critical" : "", emo_clock[p],
               m.max_clock[p], m.stretch_clock[p], desc);
  }
  return m;
}

/// Where switching costs a plan: each pack's ops' energy above idle in the switched run and the
/// ideal one (added to `packs`), and a line for each pack where they differ by more than 0.2 J.
void switch_costs(const emo::pack::PackRun& r, const PlanRuns& runs, const std::vector<double>& clock,
                  nlohmann::json& packs) {
  const std::size_t n_packs = r.packing.packs.size();
  auto above_idle = [&](const emo::runtime::SimRunResult& x) {
    std::vector<double> e(n_packs, 0.0);
    for (const auto& op : x.ops) {
      const std::uint32_t p = r.packing.pack_of[op.node];
      if (p != emo::pack::kNoPack) e[p] += op.above_idle_w * static_cast<double>(op.dur_ns) * 1e-9;
    }
    return e;
  };
  const auto e_sw = above_idle(runs.switched), e_id = above_idle(runs.ideal);
  for (std::size_t p = 0; p < n_packs; ++p) {
    packs[p]["emo_switched_above_idle_j"] = e_sw[p];
    packs[p]["emo_ideal_above_idle_j"] = e_id[p];
    if (std::abs(e_sw[p] - e_id[p]) > 0.2) {
      fmt::print("  switching costs pack {:3d} (GPU {}, EMO {:.0f} MHz) {:+.3f} J above idle ({:.3f} -> {:.3f})\n", p,
                 r.packing.packs[p].device, clock[p], e_sw[p] - e_id[p], e_id[p], e_sw[p]);
    }
  }
}

/// `packs` (analysis of the cross-check, docs/multi-rank.md "Why the stage-level plan wins where it
/// does"): EMO's packs of the job, packed as `emo optimize` packs it, each with the passes it holds
/// and their stage-level clocks; then, on the simulated device, EMO's policy (its clocks; switched as
/// `emo optimize` measured it, and with ideal switching) and the stage-level plan mapped onto EMO's
/// packs (map_onto_packs), both ways; with --models, models_view.
int run_packs(const Args& a) {
  const double target = emo::driver::parse_max_slowdown(a.max_slowdown);
  const nlohmann::json doc = read_plan(a.plan);
  const emo::trace::Trace job = load_job(a.job_dir);
  const emo::model::GpuSpec& gpu = *emo::driver::resolve_trace_gpu(job, a.gpu, "--gpu").spec;
  const emo::pack::PackRun r =
      emo::pack::run_pack(job, emo::graph::Window{}, emo::model::pack_options_for(job, std::nullopt, "--min-pack-ms"));
  const emo::graph::DepGraph& g = r.analysis.graph;
  const auto passes = emo::testing::find_passes(job, a.stages, a.microbatches);
  const emo::policy::Policy policy = emo::policy::load_policy(a.policy);
  std::vector<double> emo_clock;
  for (const auto& gp : policy.gpus)
    for (const auto& k : gp.packs) emo_clock.push_back(k.clock_mhz);
  if (emo_clock.size() != r.packing.packs.size()) {
    throw InputError(a.policy, fmt::format("{} packs, but the job packs into {}", emo_clock.size(), r.packing.packs.size()));
  }
  std::map<std::string, double> plan_clock;
  const auto names = doc["pass_names"].get<std::vector<std::string>>();
  const auto clocks = doc["target"]["clock_mhz"].get<std::vector<double>>();
  for (std::size_t i = 0; i < names.size() && i < clocks.size(); ++i) plan_clock[names[i]] = clocks[i];
  // True times: each stage's passes (stage profile) and each pack's work, at every clock.
  emo::runtime::SimDeviceOptions o;
  o.seed = a.seed;
  const emo::runtime::SimDevice device(gpu, o);
  std::vector<double> all = gpu.sm_clocks_mhz;
  std::sort(all.begin(), all.end());
  std::map<std::tuple<int, int, double>, double> pass_time;  // (stage, kind, clock) → s
  for (const auto& row : emo::testing::stage_profile(job, passes, device, all))
    pass_time[{row.stage, static_cast<int>(row.kind), row.clock_mhz}] = row.time_s;
  const auto pack_points = emo::runtime::true_pack_points(device, job, r, all);
  const double fmax = gpu.max_sm_clock_mhz();
  PackMapping m = map_onto_packs(r, PassIndex(passes, g), plan_clock, pass_time, pack_points, emo_clock, fmax);

  const Replayer rep{job, g, passes, gpu, a.seed};
  std::vector<double> max_nodes(g.nodes(), 0.0);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) max_nodes[n] = g.gpu[n] ? fmax : 0.0;
  const auto base = rep.run(max_nodes);
  const emo::TimeNs limit = emo::driver::target_of(base.makespan_ns, target);
  nlohmann::json runs = nlohmann::json::object();
  auto report = [&](const std::string& label, const emo::runtime::SimRunResult& x) {
    runs[label] = run_json(x, base);
    runs[label]["within"] = x.makespan_ns <= limit;
    fmt::print("{:34s} {:12d} ns {:+.5f} %  {:7.3f} J  saves {:6.2f} %  {}\n", label, x.makespan_ns,
               100 * (static_cast<double>(x.makespan_ns) / static_cast<double>(base.makespan_ns) - 1), x.energy_j,
               100 * (1 - x.energy_j / base.energy_j), x.makespan_ns <= limit ? "within" : "MISSES");
  };
  fmt::print("SIMULATED ({}, seed {}): baseline {} ns, {:.3f} J; target +{:.2f} % = {} ns\n", gpu.id, a.seed,
             base.makespan_ns, base.energy_j, 100 * target, limit);
  const PlanRuns emo_runs = run_pack_plan(rep, r, policy, emo_clock, true);
  report("EMO policy, switched", emo_runs.switched);
  report("EMO policy, ideal switching", emo_runs.ideal);
  switch_costs(r, emo_runs, emo_clock, m.packs);
  if (a.models) models_view(a, job, gpu, target, emo_clock, m.max_clock, m.stretch_clock, pack_points);
  const PlanRuns mx = run_pack_plan(rep, r, policy, m.max_clock, false);
  report("stage-level on EMO packs (max), switched", mx.switched);
  report("stage-level on EMO packs (max), ideal", mx.ideal);
  const PlanRuns st = run_pack_plan(rep, r, policy, m.stretch_clock, false);
  report("stage-level on EMO packs (stretch), switched", st.switched);
  report("stage-level on EMO packs (stretch), ideal", st.ideal);
  if (!a.json.empty()) {
    write_file(a.json, nlohmann::json{{"simulated", true}, {"max_slowdown", target}, {"baseline", run_json(base, base)},
                                      {"limit_ns", limit}, {"packs", m.packs}, {"runs", runs}}
                           .dump(2) + "\n");
  }
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
    if (a.verb == "packs") return run_packs(a);
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
