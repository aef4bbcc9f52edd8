// `emo optimize TRACE... --max-slowdown FRAC [--gpu NAME] [--device sim|nvml] [--profile-clocks K]
// [--min-pack-ms X] [--window ...] [--seed N] [--policy FILE] [--json FILE|-] [--overlay FILE]
// [--report FILE.html]`: the main job, a trace in, a clock policy and its savings out.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "model/gpu_catalog.h"
#include "pack/report.h"
#include "policy/html_report.h"
#include "policy/optimize.h"
#include "timing/analysis.h"
#include "trace/error.h"
#include "trace/load.h"

namespace emo::cli {
namespace {

struct OptimizeCliOptions {
  std::vector<std::string> traces;
  std::string gpu;
  double max_slowdown = NAN;
  std::string device = "sim";
  int profile_clocks = 3;
  std::string min_pack_ms;
  std::string window;
  std::string annotation;
  int instance = 0;
  std::uint64_t seed = 1;
  std::string policy_out, json_out, overlay_out, report_out;
};

/// FILE for trace i of n: FILE itself for one trace, else FILE with ".i" before its extension.
std::string nth(const std::string& file, std::size_t i, std::size_t n) {
  if (file.empty() || file == "-" || n == 1) return file;
  const auto slash = file.find_last_of('/');
  const auto dot = file.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return fmt::format("{}.{}", file, i);
  return fmt::format("{}.{}{}", file.substr(0, dot), i, file.substr(dot));
}

const model::GpuSpec& gpu_for(const trace::Trace& t, const std::string& option) {
  const auto& catalog = model::GpuCatalog::builtin();
  if (!option.empty()) return catalog.at(option);
  for (const auto& g : t.meta.gpus) {
    if (const auto* spec = catalog.find(g.name)) return *spec;
  }
  if (t.meta.gpus.empty()) throw InputError(t.meta.path, "the trace names no GPU; give --gpu NAME");
  throw InputError(t.meta.path,
                   fmt::format("the trace's GPU '{}' is not in the GPU catalog; give --gpu NAME", t.meta.gpus.front().name));
}

int run_optimize(const OptimizeCliOptions& o) {
  if (o.device == "nvml") {
    throw InputError("--device nvml",
                     "profiling packs on a real GPU needs the workload itself, which emo optimize does not run yet; "
                     "use --device sim (the default), then apply the policy with emo run");
  }
  if (!std::isfinite(o.max_slowdown) || o.max_slowdown < 0) {
    throw InputError(fmt::format("--max-slowdown {}", o.max_slowdown),
                     "impossible target: it must be a fraction >= 0 (0.05 = at most 5 % slower than every GPU at its "
                     "max clock)");
  }
  if (o.max_slowdown > 10) {
    throw InputError(fmt::format("--max-slowdown {}", o.max_slowdown),
                     "a fraction is expected (0.05 = 5 %); more than 10 (1000 %) is surely a mistake");
  }
  policy::OptimizeOptions opts;
  opts.max_slowdown = o.max_slowdown;
  opts.profile_clocks = o.profile_clocks;
  opts.seed = o.seed;
  opts.min_pack_ns = parse_min_pack(o.min_pack_ms);
  nlohmann::json docs = nlohmann::json::array();
  const std::size_t n = o.traces.size();
  for (std::size_t i = 0; i < n; ++i) {
    const trace::Trace t = trace::load_trace(o.traces[i]);
    const model::GpuSpec& gpu = gpu_for(t, o.gpu);
    const graph::Window window = timing::find_window(t, o.window, o.annotation, o.instance);
    const policy::OptimizeResult r = policy::optimize(t, window, gpu, opts);
    if (o.json_out != "-") fmt::print("{}", policy::to_text(r));
    docs.push_back(policy::to_json(r));
    if (!o.policy_out.empty()) write_output(nth(o.policy_out, i, n), policy::to_json(r.policy));
    if (!o.report_out.empty()) write_output(nth(o.report_out, i, n), policy::render_html_report(policy::to_report(t, r)));
    if (!o.overlay_out.empty()) pack::write_pack_overlay(t, r.packs, nth(o.overlay_out, i, n));
  }
  if (!o.json_out.empty()) {
    nlohmann::json out = docs.size() == 1 ? docs[0] : nlohmann::json{{"traces", docs}, {"simulated", true}};
    write_output(o.json_out, out.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

Action add_optimize_command(CLI::App& app) {
  auto o = std::make_shared<OptimizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "optimize", "Trace in, clock policy out: packs, profiles them at a few clocks, fits their models, minimises "
                  "energy within the latency target and evaluates the policy (on the simulated device by default)");
  cmd->add_option("trace", o->traces, "Trace file(s): Kineto JSON (plain or .gz) or nsys SQLite; each is optimised")
      ->required();
  cmd->add_option("--max-slowdown", o->max_slowdown,
                  "Latency target as a fraction over every GPU at its max clock (0.05 = 5 %)")
      ->required();
  cmd->add_option("--gpu", o->gpu, "GPU model (catalog id or NVML name; default: the trace's own GPU)");
  cmd->add_option("--device", o->device, "Where packs are profiled and the policy evaluated: sim (default) or nvml")
      ->check(CLI::IsMember({"sim", "nvml"}));
  cmd->add_option("--profile-clocks", o->profile_clocks, "Clocks profiled per pack (default 3)")
      ->check(CLI::Range(2, 10));
  cmd->add_option("--min-pack-ms", o->min_pack_ms, "Shortest pack in ms (default: the GPU's clock-switch latency)");
  auto* win = cmd->add_option("--window", o->window, "Optimise one annotation, e.g. ProfilerStep#3");
  auto* ann = cmd->add_option("--annotation", o->annotation, "Optimise an annotation by name (with --instance)");
  cmd->add_option("--instance", o->instance, "Which instance of --annotation (0-based)")
      ->check(CLI::NonNegativeNumber)
      ->needs(ann);
  win->excludes(ann);
  cmd->add_option("--seed", o->seed, "Seed of the simulated device (per-op variation and noise)");
  cmd->add_option("--policy", o->policy_out, "Write the clock policy (emo.policy/1, docs/policy.md)");
  cmd->add_option("--json", o->json_out, "Write the JSON result to FILE ('-' = stdout only, no text)");
  cmd->add_option("--overlay", o->overlay_out, "Write a Perfetto JSON trace with the critical path and the packs");
  cmd->add_option("--report", o->report_out, "Write a self-contained HTML report (timeline, frontier)");
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    return run_optimize(*o);
  };
}

}  // namespace emo::cli
