// Running the user's command for `emo measure` and `emo trace`: start it with extra environment
// variables (runtime/spawn.h, the one fork + exec), wait, pass its exit status on. (`emo run` has
// its own loop in runtime/policy_runtime.cpp, because it also follows the command's progress.)
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace emo::cli {

struct ChildResult {
  int exit_code = 0;        ///< The command's exit code, or 128 + signal when a signal ended it.
  int signal = 0;           ///< The signal that ended it, 0 if it exited.
  double duration_s = 0;    ///< Wall time from fork to exit.
};

/// Runs `argv` (argv[0] looked up in PATH) with `extra_env` ("NAME=value", replacing any
/// inherited value of NAME) and waits for it. SIGINT, SIGTERM and SIGHUP sent to emo with
/// kill() are passed on to the command (a terminal's Ctrl-C reaches both anyway); emo itself
/// keeps waiting. Throws emo::InputError when argv is empty or the command cannot be executed.
ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env);

/// The command after `--`, or InputError("emo VERB", "no command given after --").
void require_command(const std::vector<std::string>& argv, const std::string& verb);

/// Where libemo_tracer.so is: $EMO_TRACER_LIBRARY, else beside the emo executable. Throws
/// emo::InputError when it does not exist (built without CUPTI, or moved).
std::string tracer_library_path();

/// The directory of the running emo executable (/proc/self/exe), or "." when it cannot be read.
std::filesystem::path executable_dir();

/// The CUPTI library for NVTX_INJECTION64_PATH: the copy installed beside the emo executable under
/// its soname (the wheel's emo/bin/libcupti.so.N, the one libemo_tracer.so loads there through
/// RPATH $ORIGIN), else libcupti.so as found at build time; "" when built without CUPTI.
std::string cupti_library_path();

}  // namespace emo::cli
