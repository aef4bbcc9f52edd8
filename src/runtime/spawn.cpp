#include "runtime/spawn.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"

extern char** environ;

namespace emo::runtime {
namespace {

/// "NAME" of "NAME=value" (the whole entry when it has no '=').
std::string_view name_of(std::string_view entry) { return entry.substr(0, entry.find('=')); }

/// Closes descriptors lo..hi (hi = ~0U: all above lo). Async-signal-safe.
void close_span(unsigned lo, unsigned hi) {
  if (lo > hi) return;
  if (::close_range(lo, hi, 0) == 0) return;
  for (unsigned fd = lo; fd <= hi && fd < 65536; ++fd) ::close(static_cast<int>(fd));  // no close_range
}

/// Sets up the descriptors of `o` (fds, /dev/null, close_from); returns where the exec-status
/// pipe now is (moved above every target descriptor, so that no dup2 overwrites it).
/// Async-signal-safe.
int arrange_descriptors(const SpawnOptions& o, int status_fd) {
  int highest = o.null_stdin_stdout ? STDOUT_FILENO : -1;
  for (const auto& fd : o.fds) highest = std::max(highest, fd.second);
  if (status_fd <= highest) {
    const int moved = ::fcntl(status_fd, F_DUPFD_CLOEXEC, highest + 1);
    if (moved >= 0) status_fd = moved;
  }
  for (const auto& [from, to] : o.fds) {
    if (from == to) {
      ::fcntl(from, F_SETFD, 0);  // kept across exec
    } else {
      ::dup2(from, to);  // dup2 clears FD_CLOEXEC on `to`
    }
  }
  if (o.null_stdin_stdout) {
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, STDIN_FILENO);
      ::dup2(null, STDOUT_FILENO);
      if (null > STDERR_FILENO) ::close(null);
    }
  }
  if (o.close_from >= 0) {
    const auto first = static_cast<unsigned>(o.close_from);
    const auto keep = static_cast<unsigned>(status_fd);
    if (keep >= first) {
      close_span(first, keep - 1);
      close_span(keep + 1, ~0U);
    } else {
      close_span(first, ~0U);
    }
  }
  return status_fd;
}

/// In the forked child: only async-signal-safe calls, then exec. On failure writes errno to
/// `status_fd` and exits 127.
[[noreturn]] void exec_child(const SpawnOptions& o, char* const* argv, char* const* envp, int status_fd) {
  if (o.new_session) ::setsid();
  if (o.new_process_group) {
    ::setpgid(0, 0);
    if (o.take_terminal) make_foreground(getpid());
  }
  status_fd = arrange_descriptors(o, status_fd);
  if (o.sigmask) sigprocmask(SIG_SETMASK, &*o.sigmask, nullptr);
  if (o.search_path) {
    ::execvpe(argv[0], argv, envp);
  } else {
    ::execve(argv[0], argv, envp);
  }
  const int err = errno;
  (void)!::write(status_fd, &err, sizeof err);
  _exit(127);
}

}  // namespace

void make_foreground(pid_t pgid) {
  sigset_t ttou, before;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &before);
  tcsetpgrp(STDIN_FILENO, pgid);
  sigprocmask(SIG_SETMASK, &before, nullptr);
}

std::vector<std::string> merged_environment(const std::vector<std::string>& parent,
                                            const std::vector<std::string>& overrides) {
  std::set<std::string_view> named;
  for (const auto& x : overrides) named.insert(name_of(x));
  std::vector<std::string> env;
  for (const auto& kv : parent) {
    if (!named.contains(name_of(kv))) env.push_back(kv);
  }
  for (auto x = overrides.begin(); x != overrides.end(); ++x) {
    const bool sets = x->find('=') != std::string::npos;
    const bool later = std::any_of(x + 1, overrides.end(), [&](const std::string& y) { return name_of(y) == name_of(*x); });
    if (sets && !later) env.push_back(*x);
  }
  return env;
}

std::vector<std::string> merged_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> parent;
  for (char** e = environ; *e != nullptr; ++e) parent.emplace_back(*e);
  return merged_environment(parent, overrides);
}

pid_t spawn(const SpawnOptions& o) {
  if (o.argv.empty()) throw std::invalid_argument("spawn: no command");
  // Built before fork: the child must not allocate.
  std::vector<char*> argv, envp;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  if (o.env) {
    for (const auto& e : *o.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  char* const* env = o.env ? envp.data() : environ;
  int status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(o, argv.data(), env, status[1]);
  const int fork_errno = errno;
  ::close(status[1]);
  if (pid < 0) {
    ::close(status[0]);
    throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(fork_errno)));
  }
  if (o.new_process_group) ::setpgid(pid, pid);  // also here: no race with a signal to the group
  int exec_errno = 0;
  ssize_t n = 0;
  while ((n = ::read(status[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  ::close(status[0]);
  if (n != static_cast<ssize_t>(sizeof exec_errno)) return pid;  // end-of-file: the exec succeeded
  int child_status = 0;
  while (::waitpid(pid, &child_status, 0) < 0 && errno == EINTR) {
  }
  throw InputError(o.argv[0], fmt::format("cannot run the command: {}", std::strerror(exec_errno)));
}

}  // namespace emo::runtime
