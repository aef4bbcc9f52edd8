#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "driver/front_end.h"
#include "model/pack_options.h"
#include "output/pack_output.h"
#include "pack/pack_run.h"
#include "timing/analysis.h"
#include "core/error.h"
#include "core/units.h"

namespace emo::cli {
namespace {

struct PackCliOptions {
  std::vector<std::string> traces;
  JobOptions job;
  WindowOptions win;
  std::string min_pack_ms;
  std::string json_out;
  std::string overlay_out;
};

int run_pack_command(const PackCliOptions& o) {
  const std::optional<TimeNs> min_pack = driver::parse_min_pack_ms(o.min_pack_ms);
  const trace::Trace t = load_trace_or_job("pack", o.traces, o.job);
  const graph::Window window = o.win.find(t);
  const pack::PackRun r = pack::run_pack(t, window, model::pack_options_for(t, min_pack, "--min-pack-ms"));
  if (o.json_out != "-") fmt::print("{}", output::to_text(t, r));
  if (!o.json_out.empty()) write_output(o.json_out, output::to_json(t, r).dump(2) + "\n");
  if (!o.overlay_out.empty()) output::write_pack_overlay(t, r, o.overlay_out);
  return 0;
}

}  // namespace

Action add_pack_command(CLI::App& app) {
  auto opts = std::make_shared<PackCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "pack", "Dependency-aware packing of each GPU's timeline, the pack graph and its exactness");
  cmd->add_option("trace", opts->traces,
                  "Trace file (Kineto JSON, plain or .gz, or nsys SQLite); several: the ranks of one job, linked "
                  "through their collectives (docs/multi-rank.md)")
      ->required();
  add_job_options(cmd, opts->job, false);
  cmd->add_option("--min-pack-ms", opts->min_pack_ms,
                  "Shortest pack in ms (default: the GPU's clock-switch latency from the catalog, "
                  "else 20)");
  add_window_options(cmd, opts->win, "Pack");
  cmd->add_option("--json", opts->json_out,
                  "Write the JSON result to FILE ('-' = stdout only, no text)");
  cmd->add_option("--overlay", opts->overlay_out,
                  "Write a Chrome/Perfetto JSON trace with a track of packs per GPU");
  return [cmd, opts]() -> int {
    if (!cmd->parsed()) return -1;
    check_outputs({{"--json", &opts->json_out}, {"--overlay", &opts->overlay_out}});
    return run_pack_command(*opts);
  };
}

}  // namespace emo::cli
