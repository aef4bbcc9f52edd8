#include "runtime/policy_runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "trace/error.h"

extern char** environ;

namespace emo::runtime {

tracer::WatchList watch_list_of(const policy::Policy& p) {
  tracer::WatchList w;
  w.marker = p.iteration_marker;
  for (const auto& g : p.gpus) {
    for (const auto& k : g.packs) {
      w.entries.push_back({g.device, k.index, k.start.stream, k.start.ordinal, k.start.op_name});
    }
  }
  return w;
}

std::optional<PackStarted> parse_progress_line(std::string_view line, std::int64_t now_ns) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.starts_with("P ")) return std::nullopt;
  line.remove_prefix(2);
  std::int64_t v[4] = {0, 0, 0, now_ns};
  int n = 0;
  while (!line.empty()) {
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty()) break;
    if (n == 4) return std::nullopt;
    const auto r = std::from_chars(line.data(), line.data() + line.size(), v[n]);
    if (r.ec != std::errc() || (r.ptr != line.data() + line.size() && *r.ptr != ' ')) return std::nullopt;
    line.remove_prefix(static_cast<std::size_t>(r.ptr - line.data()));
    ++n;
  }
  if (n < 3 || v[0] < 0 || v[0] > 1 << 20 || v[1] < 0 || v[1] > 1 << 30 || v[2] < 0) return std::nullopt;
  return PackStarted{static_cast<std::int32_t>(v[0]), static_cast<std::int32_t>(v[1]), v[2], v[3]};
}

std::string_view switch_reason_name(SwitchReason r) noexcept {
  switch (r) {
    case SwitchReason::kEarly: return "early";
    case SwitchReason::kLate: return "late";
    case SwitchReason::kDefault: return "default";
  }
  return "?";
}

// ---- SwitchPlanner -------------------------------------------------------------------------------

SwitchPlanner::SwitchPlanner(policy::GpuPolicy gpu, std::int64_t lead_ns, double current_clock_mhz)
    : gpu_(std::move(gpu)), lead_ns_(std::max<std::int64_t>(0, lead_ns)), requested_mhz_(current_clock_mhz) {}

std::optional<Switch> SwitchPlanner::observe(const PackStarted& p) {
  const auto& packs = gpu_.packs;
  if (p.pack < 0 || static_cast<std::size_t>(p.pack) >= packs.size()) return std::nullopt;
  const auto k = static_cast<std::size_t>(p.pack);
  const std::int64_t anchor = p.t_ns - packs[k].start_offset_ns;
  iteration_anchor_ns_[p.iteration] = anchor;
  while (iteration_anchor_ns_.size() > 2) iteration_anchor_ns_.erase(iteration_anchor_ns_.begin());

  plan_.clear();
  for (std::size_t j = k + 1; j < packs.size(); ++j) {
    plan_.push_back({anchor + packs[j].start_offset_ns - lead_ns_, gpu_.device, packs[j].index, p.iteration,
                     packs[j].clock_mhz, SwitchReason::kEarly});
  }
  std::optional<Switch> next_first;
  const auto prev = iteration_anchor_ns_.find(p.iteration - 1);
  if (prev != iteration_anchor_ns_.end() && anchor > prev->second) {
    const std::int64_t period = anchor - prev->second;
    next_first = Switch{anchor + period + packs.front().start_offset_ns - lead_ns_, gpu_.device,
                        packs.front().index, p.iteration + 1, packs.front().clock_mhz, SwitchReason::kEarly};
    plan_.push_back(*next_first);
  }
  if (gpu_.default_clock_mhz > 0) {
    const auto& last = packs.back();
    const Switch def{anchor + last.start_offset_ns + last.duration_ns - lead_ns_, gpu_.device, -1, p.iteration,
                     gpu_.default_clock_mhz, SwitchReason::kDefault};
    // Never let the default clock land after the next iteration's first switch.
    if (!next_first || def.t_ns < next_first->t_ns) plan_.push_back(def);
  }
  std::stable_sort(plan_.begin(), plan_.end(), [](const Switch& a, const Switch& b) { return a.t_ns < b.t_ns; });

  if (std::abs(requested_mhz_ - packs[k].clock_mhz) > 0.5) {
    requested_mhz_ = packs[k].clock_mhz;
    return Switch{p.t_ns, gpu_.device, packs[k].index, p.iteration, packs[k].clock_mhz, SwitchReason::kLate};
  }
  return std::nullopt;
}

std::vector<Switch> SwitchPlanner::due(std::int64_t now_ns) {
  std::vector<Switch> out;
  std::size_t i = 0;
  for (; i < plan_.size() && plan_[i].t_ns <= now_ns; ++i) {
    if (std::abs(plan_[i].clock_mhz - requested_mhz_) <= 0.5) {
      ++skipped_;
      continue;
    }
    requested_mhz_ = plan_[i].clock_mhz;
    out.push_back(plan_[i]);
  }
  plan_.erase(plan_.begin(), plan_.begin() + static_cast<std::ptrdiff_t>(i));
  return out;
}

std::optional<std::int64_t> SwitchPlanner::next_due_ns() const {
  if (plan_.empty()) return std::nullopt;
  return plan_.front().t_ns;
}

// ---- the runner ----------------------------------------------------------------------------------

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// The run's log: JSON lines to a file or stderr ("-"), flushed per line so that a killed run
/// still leaves what it did; in a dry run without a log file, readable lines on stderr.
class RunLog {
 public:
  RunLog(const std::string& path, bool dry_run, std::int64_t t0_ns) : dry_run_(dry_run), t0_ns_(t0_ns) {
    if (path == "-") {
      out_ = stderr;
    } else if (!path.empty()) {
      out_ = std::fopen(path.c_str(), "w");
      if (out_ == nullptr) throw InputError(path, fmt::format("cannot write the log: {}", std::strerror(errno)));
      owned_ = true;
    }
    human_ = out_ == nullptr && dry_run;
  }
  ~RunLog() {
    if (owned_) std::fclose(out_);
  }
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  double ms(std::int64_t t_ns) const { return static_cast<double>(t_ns - t0_ns_) * 1e-6; }

  /// One JSON object `{"t_ms": ..., "event": ..., <fields>}`.
  void event(std::string_view name, const std::string& fields, std::int64_t t_ns) {
    if (out_ == nullptr) return;
    fmt::print(out_, "{{\"t_ms\":{:.3f},\"event\":\"{}\"{}{}}}\n", ms(t_ns), name, fields.empty() ? "" : ",", fields);
    std::fflush(out_);
  }
  /// A readable line on stderr in a dry run without a log file.
  void human(const std::string& text) {
    if (!human_) return;
    std::fprintf(stderr, "emo run: %s\n", text.c_str());
    std::fflush(stderr);
  }
  bool dry_run() const { return dry_run_; }

 private:
  std::FILE* out_ = nullptr;
  bool owned_ = false;
  bool human_ = false;
  bool dry_run_;
  std::int64_t t0_ns_;
};

/// Resets every device's clock once (or again after a signal); the destructor covers exceptions.
class ClockGuard {
 public:
  ClockGuard(std::map<std::int32_t, Device*> devices, bool dry_run, RunLog& log)
      : devices_(std::move(devices)), dry_run_(dry_run), log_(log) {}
  ~ClockGuard() {
    try {
      reset("unwind");
    } catch (...) {  // nothing more can be done; the error was reported by whoever threw
    }
  }
  ClockGuard(const ClockGuard&) = delete;
  ClockGuard& operator=(const ClockGuard&) = delete;

  /// Resets all clocks unless done already. Returns the number of resets. A failing reset is
  /// reported on stderr and the others are still tried; the first error is rethrown at the end.
  std::int64_t reset(std::string_view why) {
    if (done_ || dry_run_) {
      done_ = true;
      return 0;
    }
    done_ = true;
    std::int64_t n = 0;
    std::exception_ptr first;
    for (const auto& [index, dev] : devices_) {
      try {
        dev->reset_sm_clock();
        ++n;
        log_.event("reset", fmt::format("\"gpu\":{},\"why\":\"{}\"", index, why), now_ns());
      } catch (const std::exception& e) {
        if (!first) {
          first = std::current_exception();  // rethrown below, reported by the caller
        } else {
          std::fprintf(stderr, "emo run: cannot reset the clock of GPU %d: %s\n", index, one_line(e.what()).c_str());
        }
      }
    }
    if (first) std::rethrow_exception(first);
    return n;
  }
  /// Allows one more reset (after the start-up reset).
  void arm() { done_ = false; }

 private:
  std::map<std::int32_t, Device*> devices_;
  bool dry_run_;
  RunLog& log_;
  bool done_ = false;
};

/// File descriptors closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// A temporary file holding `text`, removed on scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl = std::string(dir != nullptr && *dir ? dir : "/tmp") + "/emo-watch-XXXXXX";
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) throw InputError(tmpl, fmt::format("cannot create the watch list: {}", std::strerror(errno)));
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    path = tmpl;
    if (!ok) throw InputError(path, "cannot write the watch list");
  }
  ~TempFile() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

std::vector<std::string> child_environment(const RunOptions& o, int progress_fd, const std::string& watch_path) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.starts_with("EMO_PROGRESS_FD=") || kv.starts_with("EMO_WATCH_FILE=")) continue;
    if (!o.tracer_library.empty() && kv.starts_with("CUDA_INJECTION64_PATH=")) continue;
    env.emplace_back(kv);
  }
  env.push_back(fmt::format("EMO_PROGRESS_FD={}", progress_fd));
  if (!watch_path.empty()) env.push_back("EMO_WATCH_FILE=" + watch_path);
  if (!o.tracer_library.empty()) {
    env.push_back("CUDA_INJECTION64_PATH=" + o.tracer_library);
    env.push_back("EMO_TRACER_MODE=follow");
    if (!o.cupti_library.empty() && std::getenv("NVTX_INJECTION64_PATH") == nullptr) {
      env.push_back("NVTX_INJECTION64_PATH=" + o.cupti_library);
    }
  }
  return env;
}

std::string command_json(const std::vector<std::string>& cmd) {
  std::string out = "[";
  for (std::size_t i = 0; i < cmd.size(); ++i) out += (i ? "," : "") + json_string(cmd[i]);
  return out + "]";
}

}  // namespace

RunReport run_policy(const RunOptions& o, const std::map<std::int32_t, Device*>& devices) {
  if (o.command.empty()) throw InputError("emo run", "no command given after --");
  if (!o.dry_run) {
    for (const auto& g : o.policy.gpus) {
      if (!devices.contains(g.device)) {
        throw InputError(o.policy_path, fmt::format("policy GPU {} has no device to set clocks on", g.device));
      }
    }
  }
  const std::int64_t t0 = now_ns();
  RunLog log(o.log_path, o.dry_run, t0);
  RunReport report;

  std::vector<SwitchPlanner> planners;
  const auto lead_ns = static_cast<std::int64_t>(std::llround(o.policy.switch_latency_ms * 1e6));
  for (const auto& g : o.policy.gpus) planners.emplace_back(g, lead_ns, 0.0);
  std::map<std::int32_t, std::size_t> planner_of;
  for (std::size_t i = 0; i < planners.size(); ++i) planner_of[planners[i].gpu().device] = i;

  ClockGuard guard(o.dry_run ? std::map<std::int32_t, Device*>{} : devices, o.dry_run, log);
  // Start from default clocks; this is also the permission check before the command starts.
  guard.reset("start");
  guard.arm();

  std::optional<TempFile> watch;
  if (!o.tracer_library.empty()) watch.emplace(tracer::to_text(watch_list_of(o.policy)));

  // Signals arrive through a signalfd: blocked here, restored in the child before exec.
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, s);
  if (sigprocmask(SIG_BLOCK, &mask, &old_mask) != 0) throw std::runtime_error("sigprocmask failed");
  struct MaskRestore {
    sigset_t m;
    ~MaskRestore() { sigprocmask(SIG_SETMASK, &m, nullptr); }
  } restore{old_mask};
  Fd sfd{signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)};
  int pipe_fds[2], exec_fds[2];
  if (sfd.fd < 0 || pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("cannot create signalfd/pipe");
  Fd progress_read{pipe_fds[0]}, progress_write{pipe_fds[1]};
  if (pipe2(exec_fds, O_CLOEXEC) != 0) throw std::runtime_error("cannot create pipe");
  Fd exec_read{exec_fds[0]}, exec_write{exec_fds[1]};
  fcntl(progress_read.fd, F_SETFL, O_NONBLOCK);

  const std::vector<std::string> env = child_environment(o, progress_write.fd, watch ? watch->path : "");
  std::vector<char*> envp, argv;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  log.event("start",
            fmt::format("\"policy\":{},\"command\":{},\"dry_run\":{},\"tracer\":{},\"switch_latency_ms\":{}",
                        json_string(o.policy_path), command_json(o.command), o.dry_run,
                        json_string(o.tracer_library), o.policy.switch_latency_ms),
            t0);

  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    fcntl(progress_write.fd, F_SETFD, 0);  // the progress pipe survives exec
    execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    (void)!::write(exec_write.fd, &err, sizeof err);
    _exit(127);
  }
  ::close(exec_write.fd);
  exec_write.fd = -1;
  ::close(progress_write.fd);
  progress_write.fd = -1;
  int exec_errno = 0;
  if (::read(exec_read.fd, &exec_errno, sizeof exec_errno) == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    waitpid(pid, &status, 0);
    throw InputError(o.command[0], fmt::format("cannot run the command: {}", std::strerror(exec_errno)));
  }

  bool stopped = false;  // after a signal to emo run: no more switches
  bool child_done = false;
  int status = 0;
  std::int64_t kill_deadline_ns = 0;
  std::string pending;  // partial progress line

  auto apply = [&](const Switch& s, std::int64_t t) {
    ++report.switches;
    if (s.reason == SwitchReason::kLate) ++report.late_switches;
    if (!o.dry_run) {
      try {
        devices.at(s.device)->lock_sm_clock(s.clock_mhz);
      } catch (const std::exception& e) {
        // Keep the workload running, at default clocks, and say why.
        std::fprintf(stderr, "emo run: %s; clocks reset, the command continues at default clocks\n",
                     one_line(e.what()).c_str());
        log.event("error", fmt::format("\"message\":{}", json_string(one_line(e.what()))), t);
        stopped = true;
        report.resets += guard.reset("error");
        return;
      }
    }
    log.event("switch",
              fmt::format("\"gpu\":{},\"pack\":{},\"iteration\":{},\"clock_mhz\":{},\"reason\":\"{}\","
                          "\"planned_ms\":{:.3f},\"applied\":{}",
                          s.device, s.pack, s.iteration, s.clock_mhz, switch_reason_name(s.reason), log.ms(s.t_ns),
                          !o.dry_run),
              t);
    log.human(fmt::format("[dry-run] +{:.3f} ms: GPU {} {} iteration {} -> {} MHz ({})", log.ms(t), s.device,
                          s.pack < 0 ? std::string("after the last pack") : fmt::format("pack {}", s.pack),
                          s.iteration, s.clock_mhz, switch_reason_name(s.reason)));
  };

  auto handle_line = [&](std::string_view line, std::int64_t t) {
    const auto p = parse_progress_line(line, t);
    if (!p) {
      ++report.bad_lines;
      return;
    }
    ++report.progress_lines;
    log.event("pack_start", fmt::format("\"gpu\":{},\"pack\":{},\"iteration\":{},\"observed_ms\":{:.3f}", p->device,
                                        p->pack, p->iteration, log.ms(p->t_ns)),
              t);
    const auto it = planner_of.find(p->device);
    if (it == planner_of.end() || stopped) return;
    if (auto late = planners[it->second].observe(*p)) apply(*late, t);
  };

  while (!child_done) {
    std::int64_t now = now_ns();
    int timeout_ms = 1000;
    if (!stopped) {
      for (const auto& pl : planners) {
        if (auto d = pl.next_due_ns()) {
          timeout_ms = std::min<std::int64_t>(timeout_ms, std::max<std::int64_t>(0, (*d - now + 999'999) / 1'000'000));
        }
      }
    }
    if (kill_deadline_ns > 0) {
      timeout_ms = std::min<std::int64_t>(timeout_ms, std::max<std::int64_t>(0, (kill_deadline_ns - now) / 1'000'000 + 1));
    }
    pollfd fds[2] = {{sfd.fd, POLLIN, 0}, {progress_read.fd, POLLIN, 0}};
    const int nfds = progress_read.fd >= 0 ? 2 : 1;
    if (poll(fds, nfds, timeout_ms) < 0 && errno != EINTR) throw std::runtime_error("poll failed");
    now = now_ns();

    if (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      char buf[4096];
      const ssize_t n = ::read(progress_read.fd, buf, sizeof buf);
      if (n > 0) {
        pending.append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
          handle_line(std::string_view(pending).substr(0, nl), now);
          pending.erase(0, nl + 1);
        }
        if (pending.size() > 4096) pending.clear();  // not a protocol line
      } else if (n == 0) {
        ::close(progress_read.fd);  // every writer closed: no more progress
        progress_read.fd = -1;
      }
    }

    if ((fds[0].revents & POLLIN) != 0) {
      signalfd_siginfo si{};
      while (::read(sfd.fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        const int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGCHLD) continue;  // reaped below
        log.event("signal", fmt::format("\"signal\":{}", sig), now);
        if (report.received_signal == 0) report.received_signal = sig;
        if (!stopped) {
          stopped = true;
          report.resets += guard.reset("signal");
        }
        // A signal from the terminal (SI_KERNEL) reached the child's process group as well;
        // one sent with kill() reached only us: pass it on.
        if (si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE) kill(pid, sig);
        if (kill_deadline_ns == 0) kill_deadline_ns = now + static_cast<std::int64_t>(o.grace_s * 1e9);
      }
    }
    if (waitpid(pid, &status, WNOHANG) == pid) {
      child_done = true;
      break;
    }
    if (kill_deadline_ns > 0 && now >= kill_deadline_ns) {
      kill(pid, SIGKILL);
      kill_deadline_ns = now + 3'600'000'000'000;  // once
    }
    if (!stopped) {
      for (auto& pl : planners) {
        for (const Switch& s : pl.due(now)) apply(s, now);
      }
    }
  }

  const std::int64_t end = now_ns();
  report.resets += guard.reset("exit");
  for (const auto& pl : planners) report.skipped_switches += pl.skipped();
  report.duration_s = static_cast<double>(end - t0) * 1e-9;
  if (WIFSIGNALED(status)) {
    report.child_signal = WTERMSIG(status);
    report.exit_code = 128 + report.child_signal;
  } else {
    report.exit_code = WEXITSTATUS(status);
  }
  if (report.received_signal != 0) report.exit_code = 128 + report.received_signal;
  log.event("exit",
            fmt::format("\"exit_code\":{},\"child_signal\":{},\"received_signal\":{},\"switches\":{},\"late\":{},"
                        "\"skipped\":{},\"progress_lines\":{},\"bad_lines\":{},\"resets\":{}",
                        report.exit_code, report.child_signal, report.received_signal, report.switches,
                        report.late_switches, report.skipped_switches, report.progress_lines, report.bad_lines,
                        report.resets),
            end);
  return report;
}

}  // namespace emo::runtime
