#include "runtime/policy_runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"
#include "core/json_text.h"
#include "runtime/guardian.h"
#include "runtime/nvml_device.h"
#include "runtime/spawn.h"
#include "runtime/start_tally.h"

namespace emo::runtime {

// ---- the runner: the log, the clock guard and the event loop around the command ----------------

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
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

  double ms(std::int64_t t_ns) const { return ns_to_ms(t_ns - t0_ns_); }

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
  /// `only_locked`: reset only the devices locked since (before_lock); else every device.
  ClockGuard(std::map<std::int32_t, Device*> devices, bool dry_run, RunLog& log, bool only_locked)
      : devices_(std::move(devices)), dry_run_(dry_run), log_(log), only_locked_(only_locked) {}
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
      if (only_locked_ && !locked_.contains(index)) continue;
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
  /// Device `index` is about to be locked. With only_locked, its first lock is preceded by a
  /// reset (the clean start the others get at start-up) and it is reset from then on.
  void before_lock(std::int32_t index) {
    if (!only_locked_ || dry_run_ || !locked_.insert(index).second) return;
    if (const auto it = devices_.find(index); it != devices_.end()) {
      it->second->reset_sm_clock();
      log_.event("reset", fmt::format("\"gpu\":{},\"why\":\"first lock\"", index), now_ns());
    }
  }

 private:
  std::map<std::int32_t, Device*> devices_;
  bool dry_run_;
  RunLog& log_;
  bool only_locked_;
  std::set<std::int32_t> locked_;
  bool done_ = false;
};

/// A job's policy (sections with ranks, docs/multi-rank.md): its processes claim GPUs at run time,
/// so only the GPUs they lock are touched (a node's other GPUs may be someone else's).
bool is_job(const policy::Policy& p) {
  return std::any_of(p.gpus.begin(), p.gpus.end(), [](const policy::GpuPolicy& g) { return g.rank >= 0; });
}

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

/// The command's environment: emo's, with the progress pipe, the watch list and, when tracing, the
/// tracer's injection (NVTX_INJECTION64_PATH only when emo's environment does not set it).
std::vector<std::string> child_environment(const RunOptions& o, int progress_fd, const std::string& watch_path) {
  std::vector<std::string> overrides = {fmt::format("EMO_PROGRESS_FD={}", progress_fd),
                                        watch_path.empty() ? "EMO_WATCH_FILE" : "EMO_WATCH_FILE=" + watch_path};
  if (!o.tracer_library.empty()) {
    overrides.push_back("CUDA_INJECTION64_PATH=" + o.tracer_library);
    overrides.push_back("EMO_TRACER_MODE=follow");
    if (!o.cupti_library.empty() && std::getenv("NVTX_INJECTION64_PATH") == nullptr) {
      overrides.push_back("NVTX_INJECTION64_PATH=" + o.cupti_library);
    }
  }
  return merged_environment(overrides);
}

std::string command_json(const std::vector<std::string>& cmd) {
  std::string out = "[";
  for (std::size_t i = 0; i < cmd.size(); ++i) out += (i ? "," : "") + json_quote(cmd[i]);
  return out + "]";
}

/// One `emo run`: the command, its progress pipe, the planners and the clock guard. run() is
/// the event loop; the other methods are its steps.
class PolicyRun {
 public:
  PolicyRun(const RunOptions& o, const std::map<std::int32_t, Device*>& devices)
      : o_(o),
        devices_(devices),
        t0_(now_ns()),
        log_(o.log_path, o.dry_run, t0_),
        guard_(o.dry_run ? std::map<std::int32_t, Device*>{} : devices, o.dry_run, log_, is_job(o.policy)),
        router_(o.policy, o.gpus),
        tally_(o.policy) {
    const auto lead_ns = ms_to_ns(o.policy.switch_latency_ms);
    const auto interval_ns = ms_to_ns(o.policy.min_switch_interval_ms);
    for (const auto& g : o.policy.gpus) {
      const auto start = o.dry_run ? o.start_clock_mhz.end() : o.start_clock_mhz.find(g.device);
      planners_.emplace_back(g, lead_ns, start == o.start_clock_mhz.end() ? 0.0 : start->second, interval_ns);
    }
    for (std::size_t i = 0; i < planners_.size(); ++i) planner_of_[planners_[i].gpu().device] = i;
  }

  RunReport run() {
    if (!o_.dry_run && !o_.guardian_command.empty()) {  // before any clock is touched
      guardian_.emplace(o_.guardian_command);
      log_.event("guardian", fmt::format("\"pid\":{}", guardian_->pid()), now_ns());
    }
    // Start from default clocks; this is also the permission check before the command starts.
    guard_.reset("start");
    guard_.arm();
    if (!o_.dry_run) {
      for (const auto& [device, mhz] : o_.start_clock_mhz) {
        lock(device, mhz);
        log_.event("switch", fmt::format("\"gpu\":{},\"pack\":-1,\"iteration\":-1,\"clock_mhz\":{},\"reason\":\"start\","
                                         "\"applied\":true", device, mhz), now_ns());
      }
    }
    // The watch list goes to a program that reports progress itself (--no-tracer) as well.
    watch_.emplace(tracer::to_text(watch_list_of(o_.policy)));
    block_signals();
    start_child();
    int status = 0;
    while (true) {
      poll_once();
      const std::int64_t now = now_ns();
      if (waitpid(pid_, &status, WNOHANG) == pid_) break;
      if (o_.timeout_s > 0 && !report_.timed_out && now >= timeout_ns_) time_out(now);
      if (kill_deadline_ns_ > 0 && now >= kill_deadline_ns_) {
        signal_job(SIGKILL);
        kill_deadline_ns_ = std::numeric_limits<std::int64_t>::max();  // once
      }
      if (!stopped_) {
        for (auto& pl : planners_) {
          for (const Switch& s : pl.due(now)) apply(s, now);
        }
      }
    }
    return finish(status);
  }

 private:
  /// SIGCHLD, SIGINT, SIGTERM, SIGHUP arrive through a signalfd: blocked here (restored on
  /// destruction), restored in the child before exec.
  void block_signals() {
    sigemptyset(&mask_);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask_, s);
    if (sigprocmask(SIG_BLOCK, &mask_, &old_mask_) != 0) throw std::runtime_error("sigprocmask failed");
    restore_mask_ = true;
    sfd_.fd = signalfd(-1, &mask_, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd_.fd < 0) throw std::runtime_error("signalfd failed");
  }

  /// Starts the command (runtime/spawn.h) in its own process group, given the terminal when emo run
  /// had it, with the progress pipe open and emo run's signal mask; throws InputError when exec fails.
  void start_child() {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("cannot create the progress pipe");
    progress_read_.fd = pipe_fds[0];
    Fd progress_write{pipe_fds[1]};
    fcntl(progress_read_.fd, F_SETFL, O_NONBLOCK);
    log_.event("start",
               fmt::format("\"policy\":{},\"command\":{},\"dry_run\":{},\"tracer\":{},\"switch_latency_ms\":{}",
                           json_quote(o_.policy_path), command_json(o_.command), o_.dry_run,
                           json_quote(o_.tracer_library), o_.policy.switch_latency_ms),
               t0_);
    own_tty_ = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    SpawnOptions child;
    child.argv = o_.command;
    child.env = child_environment(o_, progress_write.fd, watch_ ? watch_->path : "");
    child.new_process_group = true;  // the timeout and the guardian stop the whole job
    child.take_terminal = own_tty_;
    child.fds = {{progress_write.fd, progress_write.fd}};  // the progress pipe survives exec
    child.sigmask = old_mask_;
    pid_ = spawn(child);
    timeout_ns_ = now_ns() + static_cast<std::int64_t>(o_.timeout_s * kNsPerS);
    if (guardian_) guardian_->job_started(pid_);
  }

  /// Waits for a signal, progress, or the next due switch (at most 1 s), and handles what came.
  void poll_once() {
    const std::int64_t now = now_ns();
    std::int64_t timeout_ms = 1000;
    if (!stopped_) {
      for (const auto& pl : planners_) {
        if (auto d = pl.next_due_ns()) timeout_ms = std::min(timeout_ms, std::max<std::int64_t>(0, (*d - now + 999'999) / 1'000'000));
      }
    }
    if (kill_deadline_ns_ > 0) {
      timeout_ms = std::min(timeout_ms, std::max<std::int64_t>(0, (kill_deadline_ns_ - now) / 1'000'000 + 1));
    }
    if (o_.timeout_s > 0 && !report_.timed_out) {
      timeout_ms = std::min(timeout_ms, std::max<std::int64_t>(0, (timeout_ns_ - now) / 1'000'000 + 1));
    }
    pollfd fds[2] = {{sfd_.fd, POLLIN, 0}, {progress_read_.fd, POLLIN, 0}};
    const int nfds = progress_read_.fd >= 0 ? 2 : 1;
    if (poll(fds, nfds, static_cast<int>(timeout_ms)) < 0 && errno != EINTR) throw std::runtime_error("poll failed");
    if (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP)) != 0) read_progress(now_ns());
    if ((fds[0].revents & POLLIN) != 0) read_signals(now_ns());
  }

  void read_progress(std::int64_t now) {
    char buf[4096];
    const ssize_t n = ::read(progress_read_.fd, buf, sizeof buf);
    if (n > 0) {
      partial_.append(buf, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = partial_.find('\n')) != std::string::npos) {
        handle_line(std::string_view(partial_).substr(0, nl), now);
        partial_.erase(0, nl + 1);
      }
      if (partial_.size() > 4096) partial_.clear();  // not a protocol line
    } else if (n == 0) {
      ::close(progress_read_.fd);  // every writer closed: no more progress
      progress_read_.fd = -1;
    }
  }

  /// A hello line: the process claims its section's GPU (GpuRouter); a refusal is one warning.
  void handle_hello(const ProcessHello& h, std::int64_t now) {
    const std::string refused = router_.claim(h);
    log_.event("hello", fmt::format("\"pid\":{},\"rank\":{},\"section\":{},\"gpu_id\":{},\"nvml_gpu\":{},\"accepted\":{}",
                                    h.pid, h.rank, h.device, json_quote(h.gpu_id), router_.gpu_of(h.device),
                                    refused.empty()),
               now);
    if (refused.empty()) {
      ++report_.hellos;
      return;
    }
    std::fprintf(stderr, "emo run: warning: %s; its pack starts are ignored\n", refused.c_str());
  }

  void handle_line(std::string_view line, std::int64_t now) {
    if (const auto h = parse_hello_line(line)) return handle_hello(*h, now);
    const auto p = parse_progress_line(line, now);
    if (!p) {
      ++report_.bad_lines;
      return;
    }
    ++report_.progress_lines;
    if (o_.on_pack_start) o_.on_pack_start(*p);
    log_.event("pack_start", fmt::format("\"gpu\":{},\"pack\":{},\"iteration\":{},\"observed_ms\":{:.3f}", p->device,
                                         p->pack, p->iteration, log_.ms(p->t_ns)),
               now);
    const auto it = planner_of_.find(p->device);
    const bool routed = it != planner_of_.end() && router_.accepts(*p);
    if (routed) routed_sections_.insert(p->device);
    if (routed) tally_.record(*p);
    if (routed && o_.on_routed_pack_start) o_.on_routed_pack_start(*p, router_.gpu_of(p->device));
    if (!routed || stopped_) return;
    if (auto late = planners_[it->second].observe(*p)) apply(*late, now);
  }

  /// SIGINT/SIGTERM/SIGHUP: reset clocks at once, stop switching, pass the signal on to the
  /// command's process group (it has its own: a terminal's signal reaches emo run only when
  /// emo run kept the terminal), and SIGKILL it after the grace period.
  void read_signals(std::int64_t now) {
    signalfd_siginfo si{};
    while (::read(sfd_.fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      const int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) continue;  // reaped by the loop
      log_.event("signal", fmt::format("\"signal\":{}", sig), now);
      if (report_.received_signal == 0) report_.received_signal = sig;
      if (!stopped_) {
        stopped_ = true;
        report_.resets += guard_.reset("signal");
      }
      signal_job(sig);
      if (kill_deadline_ns_ == 0) kill_deadline_ns_ = now + static_cast<std::int64_t>(o_.grace_s * kNsPerS);
    }
  }

  /// Locks the clock (or only logs it in a dry run). A failing lock resets every clock, stops
  /// switching and lets the command run on at default clocks.
  void apply(const Switch& s, std::int64_t now) {
    if (!o_.dry_run) {
      try {
        lock(router_.gpu_of(s.device), s.clock_mhz);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "emo run: %s; clocks reset, the command continues at default clocks\n",
                     one_line(e.what()).c_str());
        log_.event("error", fmt::format("\"message\":{}", json_quote(one_line(e.what()))), now);
        stopped_ = true;
        report_.resets += guard_.reset("error");
        return;
      }
    }
    ++report_.switches;
    if (s.reason == SwitchReason::kLate) ++report_.late_switches;
    log_.event("switch",
               fmt::format("\"gpu\":{},\"pack\":{},\"iteration\":{},\"clock_mhz\":{},\"reason\":\"{}\","
                           "\"planned_ms\":{:.3f},\"applied\":{},\"nvml_gpu\":{},\"deferred\":{}",
                           s.device, s.pack, s.iteration, s.clock_mhz, switch_reason_name(s.reason), log_.ms(s.t_ns),
                           !o_.dry_run, router_.gpu_of(s.device), s.deferred),
               now);
    log_.human(fmt::format("[dry-run] +{:.3f} ms: GPU {} {} iteration {} -> {} MHz ({})", log_.ms(now), s.device,
                           s.pack < 0 ? std::string("after the last pack") : fmt::format("pack {}", s.pack),
                           s.iteration, s.clock_mhz, switch_reason_name(s.reason)));
  }

  /// --timeout: reset clocks, stop switching, SIGTERM the command's process group (SIGKILL
  /// after the grace period); the exit code will be 124.
  void time_out(std::int64_t now) {
    report_.timed_out = true;
    log_.event("timeout", fmt::format("\"timeout_s\":{}", o_.timeout_s), now);
    if (!stopped_) {
      stopped_ = true;
      report_.resets += guard_.reset("timeout");
    }
    signal_job(SIGTERM);
    if (kill_deadline_ns_ == 0) kill_deadline_ns_ = now + static_cast<std::int64_t>(o_.grace_s * kNsPerS);
  }

  /// Signals the command's whole process group; the command alone if it has left it (setsid).
  void signal_job(int sig) {
    if (kill(-pid_, sig) != 0) kill(pid_, sig);
  }

  /// Tells the guardian (when the device is an NVML GPU) before locking the clock.
  void lock(std::int32_t device, double mhz) {
    Device* dev = devices_.at(device);
    if (const auto* nv = dynamic_cast<const NvmlDevice*>(dev); nv != nullptr && guardian_) {
      guardian_->will_lock(nv->index());
    }
    guard_.before_lock(device);
    dev->lock_sm_clock(mhz);
  }

  /// Makes emo run's process group the terminal's foreground again, once, if the command had it
  /// (SIGTTOU blocked: emo run is in the background until then).
  void take_terminal_back() {
    if (!own_tty_) return;
    own_tty_ = false;
    make_foreground(getpgrp());
  }

  /// Once any process has said hello (or the policy is a job's), a section nobody claimed and
  /// whose pack starts were never acted upon (without a hello: on the GPU of its own index) is
  /// worth a line: its GPU, if any, ran at default clocks.
  void warn_unclaimed() const {
    if (router_.claims() == 0 && !is_job(o_.policy)) return;
    for (std::int32_t d : router_.unclaimed()) {
      if (routed_sections_.contains(d)) continue;
      const auto& g = planners_[planner_of_.at(d)].gpu();
      std::fprintf(stderr, "emo run: warning: no process reported policy section %d%s; its clocks were not switched\n",
                   d, g.rank >= 0 ? fmt::format(" (rank {})", g.rank).c_str() : "");
    }
  }

  /// Pack starts seen per iteration against expected, per section: into the report and the log
  /// (issue 32; `emo run` prints them, runtime/start_tally.h seen_summary and seen_warning).
  void report_starts(std::int64_t now) {
    for (std::int32_t d : tally_.sections()) {
      const auto seen = tally_.seen(d);
      report_.starts_seen[d] = seen;
      report_.starts_expected[d] = tally_.expected(d);
      std::string list;
      for (std::size_t i = 0; i < seen.size(); ++i) list += fmt::format("{}{}", i ? "," : "", seen[i]);
      log_.event("pack_starts", fmt::format("\"gpu\":{},\"expected\":{},\"seen\":[{}]", d, tally_.expected(d), list), now);
    }
  }

  RunReport finish(int status) {
    const std::int64_t end = now_ns();
    if (guardian_) guardian_->job_exited();
    take_terminal_back();
    report_.resets += guard_.reset("exit");
    for (const auto& pl : planners_) {
      report_.skipped_switches += pl.skipped();
      report_.deferred_switches += pl.deferred();
      report_.dropped_switches += pl.dropped();
    }
    warn_unclaimed();
    report_starts(end);
    if (guardian_) guardian_->done();
    report_.duration_s = ns_to_s(end - t0_);
    if (WIFSIGNALED(status)) {
      report_.child_signal = WTERMSIG(status);
      report_.exit_code = 128 + report_.child_signal;
    } else {
      report_.exit_code = WEXITSTATUS(status);
    }
    if (report_.received_signal != 0) report_.exit_code = 128 + report_.received_signal;
    if (report_.timed_out) report_.exit_code = 124;
    log_.event("exit",
               fmt::format("\"exit_code\":{},\"child_signal\":{},\"received_signal\":{},\"switches\":{},\"late\":{},"
                           "\"skipped\":{},\"deferred\":{},\"dropped\":{},\"hellos\":{},\"progress_lines\":{},"
                           "\"bad_lines\":{},\"resets\":{}",
                           report_.exit_code, report_.child_signal, report_.received_signal, report_.switches,
                           report_.late_switches, report_.skipped_switches, report_.deferred_switches,
                           report_.dropped_switches, report_.hellos, report_.progress_lines, report_.bad_lines,
                           report_.resets),
               end);
    return report_;
  }

 public:
  ~PolicyRun() {
    take_terminal_back();  // also when the command could not start, or an exception is unwinding
    if (restore_mask_) sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  PolicyRun(const PolicyRun&) = delete;
  PolicyRun& operator=(const PolicyRun&) = delete;

 private:
  const RunOptions& o_;
  const std::map<std::int32_t, Device*>& devices_;
  std::int64_t t0_;
  RunLog log_;
  RunReport report_;
  std::vector<SwitchPlanner> planners_;
  std::map<std::int32_t, std::size_t> planner_of_;
  std::optional<Guardian> guardian_;  // before guard_: told "done", or closed after guard_'s reset
  ClockGuard guard_;  // declared after log_: destroyed (and resetting) before it
  GpuRouter router_;
  std::optional<TempFile> watch_;
  sigset_t mask_{}, old_mask_{};
  bool restore_mask_ = false;
  Fd sfd_, progress_read_;
  pid_t pid_ = -1;
  bool stopped_ = false;                ///< After a signal or a failed lock: no more switches.
  std::int64_t kill_deadline_ns_ = 0;   ///< When to SIGKILL the command after a signal, 0 = none.
  std::int64_t timeout_ns_ = 0;         ///< When --timeout stops the command.
  bool own_tty_ = false;                ///< The command was given the terminal.
  std::string partial_;                 ///< Incomplete progress line.
  std::set<std::int32_t> routed_sections_;  ///< Sections with a pack start acted upon (GpuRouter::accepts).
  StartTally tally_;                    ///< Pack starts seen per section and iteration.
};

}  // namespace

RunReport run_policy(const RunOptions& o, const std::map<std::int32_t, Device*>& devices) {
  if (o.command.empty()) throw InputError("emo run", "no command given after --");
  const auto observed = policy::observation_counts(o.policy);
  if (const auto none = observed[static_cast<std::size_t>(policy::ObservedBy::kNone)]; none > 0) {
    std::int64_t all = 0;
    for (auto n : observed) all += n;
    throw InputError(o.policy_path,
                     fmt::format("{} of {} pack starts cannot be observed (observed_by \"none\": a copy or memset in a "
                                 "policy written before observed_by existed, or a GPU with no kernel launch, async copy, "
                                 "memset or graph launch to see them by); re-run emo optimize to write the policy again",
                                 none, all));
  }
  const bool job = std::any_of(o.policy.gpus.begin(), o.policy.gpus.end(), [](const auto& g) { return g.rank >= 0; });
  if (!o.dry_run) {
    for (const auto& g : o.policy.gpus) {
      if (!job && !devices.contains(g.device)) {
        throw InputError(o.policy_path, fmt::format("policy GPU {} has no device to set clocks on", g.device));
      }
    }
    for (const auto& [device, mhz] : o.start_clock_mhz) {
      if (!devices.contains(device)) {
        throw InputError(o.policy_path, fmt::format("start clock for GPU {}, which has no device", device));
      }
    }
  }
  return PolicyRun(o, devices).run();
}

}  // namespace emo::runtime
