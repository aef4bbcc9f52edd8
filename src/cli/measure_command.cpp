// `emo measure [--json FILE|-] -- CMD ARGS...`: runs a command and reports, per GPU, the energy
// it used (NVML total-energy counter, read before and after), its mean power and the duration;
// the command's exit code is passed through. In the spirit of Zeus's energy monitor. The report
// goes to stderr so that the command's own stdout stays clean.
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/child_process.h"
#include "cli/commands.h"
#include "runtime/nvml.h"

namespace emo::cli {
namespace {

struct MeasureOptions {
  std::string json_out;
  std::vector<std::string> command;
};

int run_measure(const MeasureOptions& o) {
  require_command(o.command, "measure");
  const auto nvml = runtime::Nvml::open();
  const unsigned n = nvml->device_count();
  std::vector<std::string> names;
  std::vector<std::uint64_t> before;
  for (unsigned i = 0; i < n; ++i) {
    names.push_back(nvml->name(i));
    before.push_back(nvml->total_energy_mj(i));  // NvmlError naming the GPU when not supported
  }
  const ChildResult r = run_child(o.command, {});
  std::vector<double> energy_j;
  for (unsigned i = 0; i < n; ++i) energy_j.push_back(static_cast<double>(nvml->total_energy_mj(i) - before[i]) / 1000.0);

  if (o.json_out != "-") {
    for (unsigned i = 0; i < n; ++i) {
      fmt::print(stderr, "emo measure: GPU {} ({}): {:.3f} J, mean {:.1f} W over {:.3f} s\n", i, names[i], energy_j[i],
                 r.duration_s > 0 ? energy_j[i] / r.duration_s : 0.0, r.duration_s);
    }
    if (n == 0) fmt::print(stderr, "emo measure: no GPUs visible to NVML\n");
    fmt::print(stderr, "emo measure: command {} {}\n", r.signal ? "killed by signal" : "exited with code",
               r.signal ? r.signal : r.exit_code);
  }
  if (!o.json_out.empty()) {
    nlohmann::json gpus = nlohmann::json::array();
    double total = 0;
    for (unsigned i = 0; i < n; ++i) {
      total += energy_j[i];
      gpus.push_back({{"index", i},
                      {"name", names[i]},
                      {"energy_j", energy_j[i]},
                      {"mean_power_w", r.duration_s > 0 ? energy_j[i] / r.duration_s : 0.0}});
    }
    const nlohmann::json doc = {{"command", o.command},   {"duration_s", r.duration_s},
                                {"exit_code", r.exit_code}, {"signal", r.signal},
                                {"energy_j", total},        {"gpus", gpus}};
    write_output(o.json_out, doc.dump(2) + "\n");
  }
  return r.exit_code;
}

}  // namespace

Action add_measure_command(CLI::App& app) {
  auto o = std::make_shared<MeasureOptions>();
  CLI::App* cmd = app.add_subcommand(
      "measure", "Run a command and report each GPU's energy, mean power and the duration (exit code passed through)");
  cmd->add_option("--json", o->json_out, "Also write JSON to FILE ('-' = stdout only, no text)");
  cmd->add_option("command", o->command, "The command to run, after --");
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    return run_measure(*o);
  };
}

}  // namespace emo::cli
