// `emo`: the command-line front end. Bad input of any kind ends with one line on stderr,
// "emo: error: FILE: problem", and exit code 2.
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>
#include <exception>
#include <new>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/version.h"
#include "runtime/guardian.h"

namespace {

/// How many of argv CLI11 parses: all, except for `emo optimize ... -- CMD ARGS`, up to `--` only
/// (the command is recorded by set_command_after_separator; the trace list is not required, with
/// --example, and CLI11 hands the words after `--` of a subcommand whose positionals are all
/// optional back as unexpected).
int words_to_parse(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "optimize") return argc;
  for (int i = 2; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") return i;
  }
  return argc;
}

/// A CLI11 usage error as one line, like every other error ("emo: error: WHAT (see emo --help)"),
/// with CLI11's "Value V not in range 0 to 1.79e308" of a NonNegativeNumber option said plainly.
std::string usage_error(const CLI::App*, const CLI::Error& e) {
  std::string what = e.what();
  const std::size_t range = what.find(" not in range 0.000000 to 1797");
  if (range != std::string::npos) {
    // "--instance: Value -1 not in range ..." -> "--instance: -1 is negative; give a number >= 0"
    const std::size_t colon = what.find(": Value ");
    if (colon != std::string::npos) {
      // CLI11 says the same of "abc": only a value with a minus sign is negative.
      const std::string value = what.substr(colon + 8, range - colon - 8);
      what = fmt::format("{}: {} is {}; give a number >= 0", what.substr(0, colon), value,
                         value.starts_with('-') ? "negative" : "not a number");
    }
  }
  return "emo: error: " + what + " (see emo --help)\n";
}

}  // namespace

int main(int argc, char** argv) {
  // The guardian `emo run` starts (runtime/guardian.h): a hidden mode, not a command.
  if (argc == 3 && std::string_view(argv[1]) == "__guardian") return emo::runtime::run_guardian(std::atoi(argv[2]));
  CLI::App app{"EMO: cut the energy of GPU AI workloads by running non-critical GPU work at "
               "lower SM clocks"};
  app.set_version_flag("--version", "emo " + std::string(emo::version()));
  app.require_subcommand(1);
  std::vector<emo::cli::Action> actions;
  actions.push_back(emo::cli::add_inspect_command(app));
  actions.push_back(emo::cli::add_analyze_command(app));
  actions.push_back(emo::cli::add_model_command(app));
  actions.push_back(emo::cli::add_pack_command(app));
  actions.push_back(emo::cli::add_pipeline_command(app));
  actions.push_back(emo::cli::add_optimize_command(app));
  actions.push_back(emo::cli::add_gpus_command(app));
  actions.push_back(emo::cli::add_measure_command(app));
  actions.push_back(emo::cli::add_trace_command(app));
  actions.push_back(emo::cli::add_export_command(app));
  actions.push_back(emo::cli::add_run_command(app));
  actions.push_back(emo::cli::add_reset_command(app));
  actions.push_back(emo::cli::add_serve_command(app));
  emo::cli::set_command_after_separator(argc, argv);
  // Our own words for the two usage errors whose CLI11 wording misleads: a first argument that is
  // no command ("A subcommand is required"), and a negative number for an option that takes a
  // count ("Value -1 not in range 0.000000 to 1797...").
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
  if (argc < 2 || (argv[1][0] != '-' &&
                   std::find(commands.begin(), commands.end(), argv[1]) == commands.end())) {
    std::fprintf(stderr, "emo: error: %s; the commands are %s (see emo --help)\n",
                 argc < 2 ? "no command given" : fmt::format("unknown command '{}'", argv[1]).c_str(),
                 fmt::format("{}", fmt::join(commands, ", ")).c_str());
    return 2;
  }
  app.failure_message(usage_error);  // one line, like every other error
  try {
    app.parse(words_to_parse(argc, argv), argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; usage errors exit 2 with CLI11's message.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (const auto& action : actions) {
      const int rc = action();
      if (rc >= 0) return rc;
    }
    return 2;
  } catch (const emo::InputError& e) {
    std::fprintf(stderr, "emo: error: %s\n", e.what());
    return 2;
  } catch (const emo::ArgumentError& e) {
    // The library names its parameter; the user gave an option.
    std::fprintf(stderr, "emo: error: %s %s: %s (see emo --help)\n", emo::cli::option_of(e.field()).c_str(),
                 e.value().c_str(), e.problem().c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "emo: error: out of memory\n");
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "emo: internal error: %s\n", emo::one_line(e.what()).c_str());
    return 1;
  }
}
