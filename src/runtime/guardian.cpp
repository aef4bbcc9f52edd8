#include "runtime/guardian.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "runtime/spawn.h"

namespace emo::runtime {
namespace {

constexpr const char* kRecordPrefix = "emo-run-";
constexpr const char* kRecordSuffix = ".locks";
constexpr int kReadyTimeoutMs = 30'000;  // nvmlInit on a many-GPU node can take seconds
constexpr int kGuardianFd = 3;

bool pid_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

/// The record text "emo-locks/1\npid P\ngpu I\n..." parsed, or nullopt-like (pid 0) when malformed.
StaleLocks parse_record(const std::string& path, const std::string& text) {
  StaleLocks s;
  s.path = path;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "emo-locks/1") return {};
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    long v = -1;
    if (!(ls >> key >> v) || v < 0) return {};
    if (key == "pid") s.pid = v;
    else if (key == "gpu") s.gpus.push_back(static_cast<unsigned>(v));
  }
  return s;
}

/// Whether process group `pgid` still has a member that is not a zombie (scans /proc).
bool group_has_live_members(pid_t pgid) {
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return ::kill(-pgid, 0) == 0;
  bool live = false;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(fmt::format("/proc/{}/stat", e->d_name));
    std::string stat;
    std::getline(in, stat);
    const auto rp = stat.rfind(')');  // "pid (comm) state ppid pgrp ..."
    if (rp == std::string::npos) continue;
    std::istringstream rest(stat.substr(rp + 1));
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (rest >> state >> ppid >> pgrp && pgrp == pgid && state != 'Z' && state != 'X') {
      live = true;
      break;
    }
  }
  ::closedir(d);
  return live;
}

/// SIGTERM to the group, then SIGKILL after the grace when live members are left.
void stop_group(pid_t pgid) {
  if (pgid <= 1 || ::kill(-pgid, SIGTERM) != 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kGuardianGraceS);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!group_has_live_members(pgid)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pgid, SIGKILL);
}

/// Why `st` (the state directory's lstat or fstat) is not this user's own directory; "" when it is.
std::string state_dir_problem(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != ::geteuid()) return fmt::format("it is owned by uid {}, not by uid {}", st.st_uid, ::geteuid());
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fmt::format("its group or others may write to it (mode {:04o})", st.st_mode & 07777);
  }
  return "";
}

[[noreturn]] void refuse_state_dir(const std::string& dir, const std::string& problem) {
  throw InputError(dir, "refusing this lock-record directory: " + problem +
                            "; emo keeps lock records only in a directory of its own, mode 0700 "
                            "(remove it, or set EMO_STATE_DIR to such a directory)");
}

/// A name no other process can predict, for the record's temporary file.
std::string unpredictable_tmp_name() {
  std::uint64_t r = 0;
  if (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) {
    r = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^ ::getpid();
  }
  return fmt::format(".emo-run-{}.{:016x}.tmp", ::getpid(), r);
}

/// Reads one line from `fd` within `timeout_ms`; "" on end-of-file or timeout.
std::string read_line(int fd, int timeout_ms) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char c = 0;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) return "";
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    if (c == '\n') return line;
    line += c;
  }
}

void send_line(int fd, const std::string& line) {
  const std::string text = line + "\n";
  (void)!::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
}

}  // namespace

std::string lock_state_dir() {
  if (const char* d = std::getenv("EMO_STATE_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0') return std::string(x) + "/emo";
  return fmt::format("/tmp/emo-{}", ::geteuid());
}

int open_state_dir(const std::string& dir, bool create) {
  struct stat path_st {};
  if (::lstat(dir.c_str(), &path_st) != 0) {
    if (errno != ENOENT || !create) {
      if (errno == ENOENT) return -1;
      throw InputError(dir, fmt::format("cannot read the lock-record directory: {}", std::strerror(errno)));
    }
    const auto parent = std::filesystem::path(dir).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      throw InputError(dir, fmt::format("cannot create the lock-record directory: {}", std::strerror(errno)));
    }
    if (::lstat(dir.c_str(), &path_st) != 0) {
      throw InputError(dir, fmt::format("cannot read the lock-record directory: {}", std::strerror(errno)));
    }
  }
  if (const std::string why = state_dir_problem(path_st); !why.empty()) refuse_state_dir(dir, why);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    refuse_state_dir(dir, fmt::format("cannot open it: {}", std::strerror(err)));
  }
  std::string why = state_dir_problem(st);
  if (why.empty() && (st.st_dev != path_st.st_dev || st.st_ino != path_st.st_ino)) why = "it was replaced while checked";
  if (!why.empty()) {
    ::close(fd);
    refuse_state_dir(dir, why);
  }
  return fd;
}

std::string read_owned_file(int dir_fd, const char* name, std::size_t max_bytes) {
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) {
    char buf[4096];
    ssize_t n = 0;
    while (text.size() < max_bytes && (n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, n);
  }
  ::close(fd);
  return text.substr(0, max_bytes);
}

std::vector<StaleLocks> find_stale_locks(const std::string& dir) {
  std::vector<StaleLocks> out;
  const int dir_fd = open_state_dir(dir, false);
  if (dir_fd < 0) return out;
  const int list_fd = ::dup(dir_fd);
  DIR* d = list_fd < 0 ? nullptr : ::fdopendir(list_fd);
  while (d != nullptr) {
    const dirent* e = ::readdir(d);
    if (e == nullptr) break;
    const std::string name = e->d_name;
    if (!name.starts_with(kRecordPrefix) || !name.ends_with(kRecordSuffix)) continue;
    StaleLocks s = parse_record(dir + "/" + name, read_owned_file(dir_fd, e->d_name));
    if (s.pid > 0 && s.pid != ::getpid() && !pid_alive(s.pid)) out.push_back(std::move(s));
  }
  if (d != nullptr) ::closedir(d);
  else if (list_fd >= 0) ::close(list_fd);
  ::close(dir_fd);
  std::sort(out.begin(), out.end(), [](const StaleLocks& a, const StaleLocks& b) { return a.path < b.path; });
  return out;
}

std::string stale_note(const StaleLocks& s) {
  return fmt::format("a previous emo run (pid {}) left clocks locked on GPU {}", s.pid, fmt::join(s.gpus, ", "));
}

bool reset_locked_clocks(Nvml& nvml, unsigned index) {
  nvml.reset_locked_sm_clocks(index);
  try {
    nvml.reset_locked_memory_clocks(index);
  } catch (const NvmlError& e) {
    if (e.code() == static_cast<int>(NvmlStatus::kNotSupported)) return false;
    throw;
  }
  return true;
}

// ---- the parent's end ------------------------------------------------------------------------------

Guardian::Guardian(const std::vector<std::string>& command, std::string state_dir)
    : state_dir_(std::move(state_dir)) {
  if (command.empty()) throw std::invalid_argument("Guardian: no command");
  dir_fd_ = open_state_dir(state_dir_, true);  // refused: throws before anything is started
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    ::close(dir_fd_);
    throw InputError("emo run", fmt::format("cannot create the guardian's socket: {}", std::strerror(errno)));
  }
  // Its own session, the socket as fd 3, stdin/stdout /dev/null, every other descriptor closed,
  // no blocked signal; `command` as given (no PATH search).
  SpawnOptions guardian;
  guardian.argv = command;
  guardian.argv.push_back(std::to_string(kGuardianFd));
  guardian.search_path = false;
  guardian.new_session = true;
  guardian.fds = {{sv[1], kGuardianFd}};
  guardian.null_stdin_stdout = true;
  guardian.close_from = kGuardianFd + 1;
  guardian.sigmask.emplace();
  sigemptyset(&*guardian.sigmask);
  try {
    pid_ = spawn(guardian);
  } catch (const std::exception& e) {
    ::close(sv[0]);
    ::close(sv[1]);
    ::close(dir_fd_);
    throw InputError("emo run", "cannot start the guardian that resets clocks if emo run is killed: " +
                                    one_line(e.what()));
  }
  ::close(sv[1]);
  fd_ = sv[0];
  const std::string answer = read_line(fd_, kReadyTimeoutMs);
  if (answer != "ready") {
    const std::string why = answer.starts_with("error ") ? answer.substr(6)
                            : answer.empty() ? fmt::format("{} did not answer", command[0])
                                             : "unexpected answer: " + one_line(answer, 80);
    ::close(fd_);
    ::close(dir_fd_);
    fd_ = -1;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    throw InputError("emo run", "cannot start the guardian that resets clocks if emo run is killed: " + why);
  }
  record_name_ = fmt::format("{}{}{}", kRecordPrefix, ::getpid(), kRecordSuffix);
  state_path_ = state_dir_ + "/" + record_name_;
  send("state " + state_path_);
}

Guardian::~Guardian() {
  if (fd_ >= 0) ::close(fd_);  // without done(): end-of-file, the guardian resets
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

void Guardian::send(const std::string& line) {
  const std::string text = line + "\n";
  if (fd_ >= 0 && ::send(fd_, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size())) return;
  if (!warned_) {
    std::fprintf(stderr, "emo run: the guardian (pid %d) is gone: clocks are reset when emo run exits, but not "
                 "if it is killed with SIGKILL\n", static_cast<int>(pid_));
    warned_ = true;
  }
}

void Guardian::write_record() {
  std::string text = fmt::format("emo-locks/1\npid {}\n", ::getpid());
  for (unsigned g : gpus_) text += fmt::format("gpu {}\n", g);
  // In the checked directory (dir_fd_), through a new file no one can have planted a link at.
  const std::string tmp = unpredictable_tmp_name();
  const int fd = ::openat(dir_fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) err = errno != 0 ? errno : EIO;
    ::close(fd);
    if (err == 0 && ::renameat(dir_fd_, tmp.c_str(), dir_fd_, record_name_.c_str()) != 0) err = errno;
    if (err != 0) ::unlinkat(dir_fd_, tmp.c_str(), 0);
  }
  if (err != 0) {
    std::fprintf(stderr, "emo run: cannot write the lock record %s: %s (no stale-lock note will name this run)\n",
                 state_path_.c_str(), std::strerror(err));
  }
}

void Guardian::will_lock(unsigned nvml_index) {
  if (!gpus_.insert(nvml_index).second) return;
  send(fmt::format("lock {}", nvml_index));
  write_record();
}

void Guardian::job_started(pid_t pgid) { send(fmt::format("job {}", pgid)); }

void Guardian::job_exited() { send("job-exited"); }

void Guardian::done() {
  if (done_) return;
  done_ = true;
  if (!gpus_.empty()) ::unlinkat(dir_fd_, record_name_.c_str(), 0);
  send("done");
  ::close(fd_);
  fd_ = -1;
  for (int i = 0; i < 100; ++i) {  // it exits at once; don't hang if it does not
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// ---- the guardian process ------------------------------------------------------------------------

namespace {

/// What the parent has told the guardian so far.
struct GuardianState {
  std::set<unsigned> gpus;
  std::string state_path;
  pid_t job_pgid = 0;
  bool done = false;

  void apply(std::string_view line) {
    const auto number = [&](std::size_t skip) { return std::atol(std::string(line.substr(skip)).c_str()); };
    if (line.starts_with("lock ")) gpus.insert(static_cast<unsigned>(number(5)));
    else if (line.starts_with("state ")) state_path = line.substr(6);
    else if (line.starts_with("job ")) job_pgid = static_cast<pid_t>(number(4));
    else if (line == "job-exited") job_pgid = 0;
    else if (line == "done") done = true;
  }
};

/// The parent is gone without "done": reset, remove the record, stop the job.
void take_over(const GuardianState& st, Nvml& nvml, pid_t parent) {
  std::vector<unsigned> reset;
  for (unsigned g : st.gpus) {
    try {
      reset_locked_clocks(nvml, g);
      reset.push_back(g);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "emo guardian: cannot reset GPU %u: %s\n", g, one_line(e.what()).c_str());
    }
  }
  if (reset.size() == st.gpus.size() && !st.state_path.empty()) ::unlink(st.state_path.c_str());
  std::string what = st.gpus.empty() ? std::string("ended")
                                     : fmt::format("ended without resetting clocks: reset GPU {}", fmt::join(reset, ", "));
  if (st.job_pgid > 0) what += fmt::format("; stopping its command (process group {})", st.job_pgid);
  if (!st.gpus.empty() || st.job_pgid > 0) {
    std::fprintf(stderr, "emo guardian: emo run (pid %d) %s\n", static_cast<int>(parent), what.c_str());
  }
  if (st.job_pgid > 0) stop_group(st.job_pgid);
}

}  // namespace

int run_guardian(int fd) {
  for (int s : {SIGINT, SIGHUP, SIGTERM, SIGPIPE}) ::signal(s, SIG_IGN);
  const pid_t parent = ::getppid();
  std::shared_ptr<Nvml> nvml;
  try {
    nvml = Nvml::open();
  } catch (const std::exception& e) {
    send_line(fd, "error " + one_line(e.what()));
    return 2;
  }
  send_line(fd, "ready");
  GuardianState st;
  std::string partial;
  char buf[512];
  while (!st.done) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end-of-file (or an error): the parent is gone
    partial.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; !st.done && (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1)) {
      st.apply(std::string_view(partial).substr(0, nl));
    }
  }
  if (!st.done) take_over(st, *nvml, parent);
  ::close(fd);
  return 0;
}

}  // namespace emo::runtime
