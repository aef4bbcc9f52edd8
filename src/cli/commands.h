// Sub-commands of the `emo` CLI. Each registers its options on the app and returns the action
// to run when it is chosen. The CLI is thin: parsing options, calling the library, printing.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace emo::cli {

/// Runs the chosen command; returns the process exit code.
using Action = std::function<int()>;

/// `emo inspect TRACE... [--json FILE|-]`
Action add_inspect_command(CLI::App& app);

}  // namespace emo::cli
