// Starting a program: the one fork + exec of emo (`emo measure` and `emo trace` through
// cli/child_process.h, `emo run`'s command in policy_runtime.cpp, the guardian in guardian.cpp),
// and the one way a child's environment is made from emo's.
//
// Everything the child needs (argv, envp, descriptor numbers, signal mask) is built before fork;
// between fork and exec the child makes only async-signal-safe system calls (setsid, setpgid,
// sigprocmask, tcsetpgrp, fcntl, dup2, open, close_range, exec*, write, _exit; execvpe's PATH search
// as glibc does it, on the stack), so a multi-threaded emo may spawn. A failed exec is reported to
// the parent through a close-on-exec pipe and thrown there, so "no such program" is an error
// message, not a child that exits 127.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace emo::runtime {

/// The environment of a child: every "NAME=value" of `parent` whose NAME no override names, in
/// `parent`'s order, then each override "NAME=value" in order (when two name the same NAME, the
/// later one). An override "NAME" without '=' only removes NAME. Example:
///   merged_environment({"A=1", "B=2", "C=3"}, {"B=20", "D=4", "C"}) == {"A=1", "B=20", "D=4"}.
std::vector<std::string> merged_environment(const std::vector<std::string>& parent,
                                            const std::vector<std::string>& overrides);

/// merged_environment of this process's own environment (`environ`).
std::vector<std::string> merged_environment(const std::vector<std::string>& overrides);

/// How the child is started. Defaults: argv[0] looked up in PATH, emo's environment, emo's
/// process group, descriptors and signal mask.
struct SpawnOptions {
  std::vector<std::string> argv;                ///< Non-empty; argv[0] is the program.
  std::optional<std::vector<std::string>> env;  ///< Whole environment ("NAME=value"); nullopt = emo's.
  bool search_path = true;                      ///< argv[0] looked up in PATH (else a path as is).
  /// Its own process group (setpgid(0, 0) in the child, and setpgid(pid, pid) in the parent, so
  /// that a signal sent to the group right after spawn() reaches it).
  bool new_process_group = false;
  /// With new_process_group: make the child's group the terminal's foreground group (stdin's
  /// terminal; SIGTTOU blocked while doing so). The caller takes the terminal back.
  bool take_terminal = false;
  bool new_session = false;                     ///< setsid(): own session and process group.
  /// Descriptors the child gets: {from, to} dups `from` onto `to` (from == to: `from` is kept
  /// open across exec, its close-on-exec flag cleared). A `to` must not be another pair's `from`.
  std::vector<std::pair<int, int>> fds;
  bool null_stdin_stdout = false;               ///< stdin and stdout from/to /dev/null (after `fds`).
  int close_from = -1;                          ///< Close every descriptor >= this before exec (-1: none).
  std::optional<sigset_t> sigmask;              ///< The child's signal mask; nullopt = emo's.
};

/// Makes process group `pgid` the foreground group of stdin's terminal, with SIGTTOU blocked
/// meanwhile (a background group may not otherwise); the signal mask is restored after. Errors
/// (no terminal) are ignored. Async-signal-safe: the child of spawn() calls it too.
void make_foreground(pid_t pgid);

/// Forks and execs `o.argv`; returns the child's pid once the exec has succeeded (the caller
/// waits for it). Throws emo::InputError(argv[0], "cannot run the command: No such file or
/// directory") when the exec fails (the child is reaped first), std::invalid_argument when argv
/// is empty, std::runtime_error when the pipe or the fork fails.
pid_t spawn(const SpawnOptions& o);

}  // namespace emo::runtime
