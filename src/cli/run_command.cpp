// `emo run --policy FILE [--dry-run] [--log FILE] [--no-tracer] [--timeout S] -- CMD ARGS...`: runs
// a command and applies a clock policy at its pack boundaries (runtime/policy_runtime.h,
// docs/runtime.md). Clocks are reset on every exit path, by a guardian process after kill -9
// (runtime/guardian.h); --dry-run never calls an NVML setter and logs each intended switch.
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/child_process.h"
#include "cli/commands.h"
#include "cli/reset_command.h"
#include "model/gpu_catalog.h"
#include "policy/policy.h"
#include "runtime/nvml.h"
#include "runtime/nvml_device.h"
#include "runtime/policy_runtime.h"
#include "core/error.h"

namespace emo::cli {
namespace {

struct RunCliOptions {
  std::string policy;
  bool dry_run = false;
  std::string log;
  bool no_tracer = false;
  double timeout_s = 0;  ///< 0 = none
  std::vector<std::string> command;
};

/// Checks the policy against the GPUs: each policy GPU exists, is the policy's GPU model, and
/// supports every clock the policy sets. Throws InputError naming the policy file.
void check_policy(const policy::Policy& p, const std::string& path,
                  const std::map<std::int32_t, std::unique_ptr<runtime::NvmlDevice>>& devices) {
  for (const auto& g : p.gpus) {
    const auto& dev = *devices.at(g.device);
    if (!p.gpu.empty()) {
      const auto* spec = dev.spec();
      const auto* want = model::GpuCatalog::builtin().find(p.gpu);
      if (want != nullptr && spec != want) {
        throw InputError(path, fmt::format("the policy is for {} but GPU {} is {}", p.gpu, g.device, dev.name()));
      }
    }
    const auto clocks = dev.supported_sm_clocks_mhz();
    auto supported = [&](double mhz) {
      for (double c : clocks) {
        if (std::abs(c - mhz) <= 0.5) return true;
      }
      return false;
    };
    for (const auto& k : g.packs) {
      if (!supported(k.clock_mhz)) {
        throw InputError(path, fmt::format("pack {} of GPU {}: {} MHz is not a supported SM clock of {}", k.index,
                                           g.device, k.clock_mhz, dev.name()));
      }
    }
    if (g.default_clock_mhz > 0 && !supported(g.default_clock_mhz)) {
      throw InputError(path, fmt::format("GPU {}: default clock {} MHz is not supported by {}", g.device,
                                         g.default_clock_mhz, dev.name()));
    }
  }
}

int run_run(const RunCliOptions& o) {
  require_command(o.command, "run");
  runtime::RunOptions ro;
  ro.policy = policy::load_policy(o.policy);
  ro.policy_path = o.policy;
  ro.command = o.command;
  ro.dry_run = o.dry_run;
  ro.log_path = o.log;
  ro.timeout_s = o.timeout_s;
  ro.guardian_command = {std::filesystem::read_symlink("/proc/self/exe").string(), "__guardian"};
  if (!o.no_tracer) {
    ro.tracer_library = tracer_library_path();
    ro.cupti_library = cupti_library_path();
  }
  std::map<std::int32_t, std::unique_ptr<runtime::NvmlDevice>> owned;
  std::shared_ptr<runtime::Nvml> nvml;
  try {
    nvml = runtime::Nvml::open();
  } catch (const runtime::NvmlError& e) {
    if (!o.dry_run) throw;
    fmt::print(stderr, "emo run: [dry-run] {}; the policy is not checked against the GPUs\n", e.what());
  }
  if (nvml) {
    handle_stale_locks(*nvml, "emo run", !o.dry_run);
    for (const auto& g : ro.policy.gpus) {
      if (g.device < 0) throw InputError(o.policy, fmt::format("GPU index {} is negative", g.device));
      owned[g.device] = std::make_unique<runtime::NvmlDevice>(nvml, static_cast<unsigned>(g.device));
    }
    check_policy(ro.policy, o.policy, owned);
  }
  std::map<std::int32_t, runtime::Device*> devices;
  if (!o.dry_run) {
    for (auto& [index, dev] : owned) devices[index] = dev.get();
  }
  const runtime::RunReport r = runtime::run_policy(ro, devices);
  fmt::print(stderr,
             "emo run: {}{} switches ({} late, {} skipped as redundant) from {} pack starts; clocks reset on {} GPU(s); "
             "command {} {}{}\n",
             o.dry_run ? "[dry-run] " : "", r.switches, r.late_switches, r.skipped_switches, r.progress_lines, r.resets,
             r.child_signal ? "killed by signal" : "exited with code", r.child_signal ? r.child_signal : r.exit_code,
             r.timed_out ? fmt::format(" (stopped after --timeout {} s: exit code 124)", o.timeout_s) : "");
  return r.exit_code;
}

}  // namespace

Action add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunCliOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run a command and apply a clock policy at its pack boundaries");
  cmd->add_option("--policy", o->policy, "Clock policy (emo.policy/1)")->required();
  cmd->add_flag("--dry-run", o->dry_run, "Change nothing: log each intended switch and its time");
  cmd->add_option("--log", o->log, "Write a JSON-lines log of progress, switches and resets to FILE ('-' = stderr)");
  cmd->add_flag("--no-tracer", o->no_tracer,
                "Do not inject the CUPTI tracer: the command reports pack starts itself on $EMO_PROGRESS_FD");
  CLI::Option* timeout = cmd->add_option(
      "--timeout", o->timeout_s,
      "Stop the command after SECONDS: SIGTERM to its process group, SIGKILL 10 s later, clocks reset, exit 124");
  cmd->add_option("command", o->command, "The command to run, after --");
  return [cmd, o, timeout]() -> int {
    if (!cmd->parsed()) return -1;
    if (timeout->count() > 0 && !(o->timeout_s > 0 && std::isfinite(o->timeout_s))) {
      throw InputError("--timeout", fmt::format("{} is not a number of seconds > 0", o->timeout_s));
    }
    return run_run(*o);
  };
}

}  // namespace emo::cli
