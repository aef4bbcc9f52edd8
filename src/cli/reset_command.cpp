// `emo reset (--gpu-index I | --all)`: for an operator, resets the SM and memory locked clocks of
// one GPU or of every GPU NVML sees, one line per GPU on stdout. Also reports (and removes) lock
// records left by an `emo run` that died with its guardian. Bad input: one line, exit 2.
#include "cli/reset_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "runtime/guardian.h"

namespace emo::cli {

int handle_stale_locks(runtime::Nvml& nvml, const std::string& who, bool reset) {
  const auto stale = runtime::find_stale_locks(runtime::lock_state_dir());
  for (const auto& s : stale) {
    fmt::print(stderr, "{}: {}; {}\n", who, runtime::stale_note(s),
               reset ? "resetting them first" : "not reset (dry run; `emo reset --all` resets them)");
    if (!reset) continue;
    const unsigned n = nvml.device_count();
    for (unsigned g : s.gpus) {
      if (g < n) runtime::reset_locked_clocks(nvml, g);
    }
    ::unlink(s.path.c_str());
  }
  return static_cast<int>(stale.size());
}

namespace {

struct ResetOptions {
  int gpu_index = -1;
  bool all = false;
};

int run_reset(const ResetOptions& o, bool index_given) {
  // Usage errors: one line with the hint the other usage errors give (cli/main.cpp).
  if (index_given == o.all) {
    throw InputError("emo reset", "say which GPUs: --gpu-index I or --all, one of them (see emo --help)");
  }
  if (index_given && o.gpu_index < 0) {
    throw InputError("emo reset",
                     fmt::format("--gpu-index {} is negative; give a number >= 0 (see emo --help)", o.gpu_index));
  }
  const auto nvml = runtime::Nvml::open();
  const unsigned n = nvml->device_count();
  std::vector<unsigned> gpus;
  if (o.all) {
    for (unsigned i = 0; i < n; ++i) gpus.push_back(i);
  } else if (static_cast<unsigned>(o.gpu_index) >= n) {
    throw runtime::NvmlError(fmt::format("GPU {}", o.gpu_index), fmt::format("no such GPU ({} visible to NVML)", n),
                             static_cast<int>(runtime::NvmlStatus::kNotFound));
  } else {
    gpus.push_back(static_cast<unsigned>(o.gpu_index));
  }
  const auto stale = runtime::find_stale_locks(runtime::lock_state_dir());
  for (unsigned g : gpus) {
    const std::string name = nvml->name(g);
    const bool memory = runtime::reset_locked_clocks(*nvml, g);
    fmt::print("GPU {} ({}): {}\n", g, name,
               memory ? "SM and memory locked clocks reset" : "SM locked clocks reset (no memory clock lock on this GPU)");
  }
  std::fflush(stdout);
  const std::set<unsigned> done(gpus.begin(), gpus.end());
  for (const auto& s : stale) {
    const bool covered = std::all_of(s.gpus.begin(), s.gpus.end(), [&](unsigned g) { return done.contains(g) || g >= n; });
    fmt::print(stderr, "emo reset: {}; {}\n", runtime::stale_note(s),
               covered ? "reset above, record removed" : "not all reset here (`emo reset --all` resets them)");
    if (covered) ::unlink(s.path.c_str());
  }
  return 0;
}

}  // namespace

Action add_reset_command(CLI::App& app) {
  auto o = std::make_shared<ResetOptions>();
  CLI::App* cmd = app.add_subcommand("reset", "Reset the SM and memory locked clocks of one GPU or of all GPUs");
  add_via_service_flag(cmd);
  CLI::Option* index = cmd->add_option("--gpu-index", o->gpu_index, "NVML index of the GPU to reset");
  cmd->add_flag("--all", o->all, "Reset every GPU NVML sees");
  return [cmd, o, index]() -> int {
    if (!cmd->parsed()) return -1;
    return run_reset(*o, index->count() > 0);
  };
}

}  // namespace emo::cli
