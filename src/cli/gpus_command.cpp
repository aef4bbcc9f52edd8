// `emo gpus [--json FILE|-]`: every GPU NVML sees — index, name, UUID, catalog id, current SM and
// memory clocks, supported SM clock range, power and the total-energy counter. Read-only.
// `emo gpus --resolve NAME [--json FILE|-]`: the GPU catalog entry NAME means, as `emo optimize
// --gpu NAME` and Python's optimize(gpu=NAME) choose it (driver::resolve_gpu); no NVML needed.
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "driver/front_end.h"
#include "runtime/nvml.h"
#include "runtime/nvml_device.h"

namespace emo::cli {
namespace {

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

int run_gpus(const std::string& json_out) {
  const auto nvml = runtime::Nvml::open();
  const std::vector<runtime::GpuStatus> gpus = runtime::query_gpus(*nvml);
  if (json_out != "-") {
    if (gpus.empty()) fmt::print("no GPUs visible to NVML ({})\n", nvml->path());
    for (const auto& g : gpus) {
      const std::string range = g.sm_clocks_mhz.empty()
                                    ? "n/a"
                                    : fmt::format("{}-{} MHz ({} clocks)", g.sm_clocks_mhz.back(),
                                                  g.sm_clocks_mhz.front(), g.sm_clocks_mhz.size());
      fmt::print("GPU {}: {}{}\n  UUID {}\n  SM clock {} MHz (supported {}), memory clock {} MHz\n  power {}, energy counter {}\n",
                 g.index, g.name, g.catalog_id.empty() ? " (not in EMO's GPU catalog)" : " [" + g.catalog_id + "]", g.uuid,
                 g.sm_clock_mhz, range, g.memory_clock_mhz,
                 g.power_w ? fmt::format("{:.1f} W", *g.power_w) : std::string("not supported"),
                 g.energy_j ? fmt::format("{:.3f} J", *g.energy_j) : std::string("not supported"));
    }
  }
  if (!json_out.empty()) {
    nlohmann::json doc = nlohmann::json::array();
    for (const auto& g : gpus) {
      doc.push_back({{"index", g.index},
                     {"name", g.name},
                     {"uuid", g.uuid},
                     {"catalog_id", g.catalog_id},
                     {"sm_clock_mhz", g.sm_clock_mhz},
                     {"memory_clock_mhz", g.memory_clock_mhz},
                     {"supported_sm_clocks_mhz", g.sm_clocks_mhz},
                     {"supported_memory_clocks_mhz", g.memory_clocks_mhz},
                     {"power_w", opt(g.power_w)},
                     {"energy_j", opt(g.energy_j)}});
    }
    write_output(json_out, nlohmann::json{{"nvml", nvml->path()}, {"gpus", doc}}.dump(2) + "\n");
  }
  return 0;
}

/// `emo gpus --resolve NAME`: "NAME: ID (why)", or with --json {name, id, why, assumed}.
int run_resolve(const std::string& name, const std::string& json_out) {
  const model::GpuCatalog::Match m = driver::resolve_gpu(name);
  if (json_out != "-") fmt::print("{}: {} ({})\n", name, m.spec->id, m.why);
  if (!json_out.empty()) {
    write_output(json_out,
                 nlohmann::json{{"name", name}, {"id", m.spec->id}, {"why", m.why}, {"assumed", m.assumed}}.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

Action add_gpus_command(CLI::App& app) {
  auto json_out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("gpus", "List the GPUs NVML sees: clocks, power, energy counter (read-only)");
  auto resolve = std::make_shared<std::string>();
  cmd->add_option("--json", *json_out, "Also write JSON to FILE ('-' = stdout only, no text)");
  cmd->add_option("--resolve", *resolve,
                  "Only say which GPU catalog entry NAME means (as --gpu NAME of emo optimize); no NVML needed");
  return [cmd, json_out, resolve]() -> int {
    if (!cmd->parsed()) return -1;
    if (!resolve->empty()) return run_resolve(*resolve, *json_out);
    return run_gpus(*json_out);
  };
}

}  // namespace emo::cli
