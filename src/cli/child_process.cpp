#include "cli/child_process.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"
#include "core/error.h"
#include "runtime/spawn.h"

namespace emo::cli {
namespace {

volatile sig_atomic_t g_child_pid = 0;

void forward(int sig, siginfo_t* info, void*) {
  // Signals from the terminal reach the command's process group already; pass on kill()'s.
  if (g_child_pid > 0 && info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) {
    kill(g_child_pid, sig);
  }
}

}  // namespace

namespace {
std::vector<std::string>& separated_command() {
  static std::vector<std::string> command;
  return command;
}
}  // namespace

void set_command_after_separator(int argc, char** argv) {
  auto& command = separated_command();
  command.clear();
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      command.assign(argv + i + 1, argv + argc);
      break;
    }
  }
}

const std::vector<std::string>& command_after_separator() { return separated_command(); }

void require_command(const std::vector<std::string>& argv, const std::string& verb) {
  if (argv.empty()) throw InputError("emo " + verb, "no command given after --");
}

ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env) {
  if (argv.empty()) throw InputError("emo", "no command given after --");
  runtime::SpawnOptions child;
  child.argv = argv;
  child.env = runtime::merged_environment(extra_env);
  struct sigaction sa {}, old_int{}, old_term{}, old_hup{};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = runtime::spawn(child);  // throws InputError when the exec fails
  g_child_pid = pid;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const auto t1 = std::chrono::steady_clock::now();
  g_child_pid = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  ChildResult r;
  r.duration_s = std::chrono::duration<double>(t1 - t0).count();
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
  } else {
    r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

std::string tracer_library_path() {
  const char* env = std::getenv("EMO_TRACER_LIBRARY");
  std::string path;
  if (env != nullptr && *env != '\0') {
    path = env;
  } else {
    path = executable_dir() / "libemo_tracer.so";
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
#ifdef EMO_TRACER_BUILT
    throw InputError(path, "the tracer library is missing (rebuild emo, or set EMO_TRACER_LIBRARY)");
#else
    throw InputError(path, "the tracer library was not built: CUPTI was not found when emo was built (set "
                           "CUDA_HOME and rebuild, or set EMO_TRACER_LIBRARY)");
#endif
  }
  return std::filesystem::absolute(path).string();
}

std::filesystem::path executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path(".") : exe.parent_path();
}

std::string cupti_library_path() {
#ifdef EMO_CUPTI_LIBRARY
  std::error_code ec;
  const std::filesystem::path bundled = executable_dir() / EMO_CUPTI_SONAME;
  if (std::filesystem::is_regular_file(bundled, ec)) return bundled.string();
  return EMO_CUPTI_LIBRARY;
#else
  return "";
#endif
}

}  // namespace emo::cli
