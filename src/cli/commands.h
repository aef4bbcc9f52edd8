// Sub-commands of the `emo` CLI. Each registers its options on the app and returns the action
// to run when it is chosen. The CLI is thin: parsing options, calling the library, printing.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace emo::cli {

/// Runs the chosen command; returns the process exit code.
using Action = std::function<int()>;

/// `emo inspect TRACE... [--json FILE|-]`
Action add_inspect_command(CLI::App& app);

/// `emo analyze TRACE [--window ...] [--json FILE|-] [--overlay FILE] [--what-if SPEC]...`
Action add_analyze_command(CLI::App& app);

/// `emo pack TRACE [--min-pack-ms X] [--window ...] [--json FILE|-] [--overlay FILE]`
Action add_pack_command(CLI::App& app);

/// `emo model check FILE --fit-clocks LIST [--json FILE|-]`
Action add_model_command(CLI::App& app);

/// `emo pipeline --stage-profile CSV --stages S --microbatches M [--frontier FILE] [--json FILE|-]`
Action add_pipeline_command(CLI::App& app);

/// `emo optimize TRACE... --max-slowdown FRAC [--gpu NAME] [--policy FILE] [--json FILE|-] [--report FILE.html] ...`
Action add_optimize_command(CLI::App& app);

/// `emo gpus [--json FILE|-]`
Action add_gpus_command(CLI::App& app);

/// `emo measure [--json FILE|-] -- CMD ARGS...`
Action add_measure_command(CLI::App& app);

/// `emo trace [-o FILE] [--kineto FILE] -- CMD ARGS...`
Action add_trace_command(CLI::App& app);

/// `emo export TRACE --kineto FILE`
Action add_export_command(CLI::App& app);

/// `emo run --policy FILE [--dry-run] [--log FILE] [--no-tracer] -- CMD ARGS...`
Action add_run_command(CLI::App& app);

/// `emo reset (--gpu-index I | --all)`
Action add_reset_command(CLI::App& app);

/// `emo serve [--config FILE] [--status]`
Action add_serve_command(CLI::App& app);
/// Adds `--via-service` to a command that changes clocks: sets EMO_CLOCK_SERVICE=always, so
/// that every clock setter goes through the clock service (runtime/clock_client.h).
void add_via_service_flag(CLI::App* cmd);

/// The command-line option that carries a library parameter: "max_slowdown" → "--max-slowdown"
/// (every parameter a library ArgumentError can name; any other field is returned as "--field"
/// with '_' as '-').
std::string option_of(const std::string& field);

/// Records the arguments after the first "--" of emo's command line (main() calls this before
/// parsing): `emo optimize --device nvml -- CMD ARGS...` needs them apart from its traces.
void set_command_after_separator(int argc, char** argv);
/// What set_command_after_separator() recorded (empty when there was no "--").
const std::vector<std::string>& command_after_separator();

/// Writes `text` to `dest` ("-" = stdout). Throws InputError when the file cannot be written.
void write_output(const std::string& dest, const std::string& text);

/// Checks a command's outputs (option name, destination; "" = not asked) before a long run, so
/// the user learns of a problem before the work, not after: first that each file can be written
/// (its directory exists and is writable; "-" is stdout), then that no two would write to one
/// place — the same file (compared after std::filesystem::weakly_canonical) or both to stdout —
/// and that "-" is given to `stdout_option` alone (its documented meaning, "stdout only, no
/// text": any other output there would mix into the text report). Throws
/// emo::InputError(destination or option, reason).
void check_outputs(const std::vector<std::pair<const char*, const std::string*>>& outputs,
                   const char* stdout_option = "--json");

}  // namespace emo::cli
