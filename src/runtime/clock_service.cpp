#include "runtime/clock_service.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "runtime/guardian.h"

namespace emo::runtime {
namespace {

constexpr unsigned kMaxMhz = 1'000'000;
constexpr const char* kLeaseRecord = "leases";

/// A decimal number < kMaxMhz, or nullopt.
std::optional<unsigned> parse_number(std::string_view s) {
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v >= kMaxMhz) return std::nullopt;
  return v;
}

/// "GPU-" then 1 to 80 letters, digits and '-': NVML's text form of a GPU UUID.
bool is_gpu_uuid(std::string_view s) {
  if (!s.starts_with("GPU-") || s.size() == 4 || s.size() > 84) return false;
  return std::all_of(s.begin() + 4, s.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-'; });
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < line.size();) {
    const std::size_t j = std::min(line.find(' ', i), line.size());
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string range_text(const std::optional<std::pair<unsigned, unsigned>>& r) {
  return r ? fmt::format("{}-{}", r->first, r->second) : std::string("none");
}

/// Applies "key = value" to `c`; returns the problem or "".
std::string apply_config_line(ClockServiceConfig& c, const std::string& key, const std::string& value) {
  const auto number = [&](auto& out, double lo, double hi) -> std::string {
    double v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || v < lo || v > hi) {
      return fmt::format("{} = {}: not a number in [{}, {}]", key, value, lo, hi);
    }
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    return "";
  };
  if (key == "socket") c.socket = value;
  else if (key == "socket_group") c.socket_group = value;
  else if (key == "admin_group") c.admin_group = value;
  else if (key == "jobs_dir") c.jobs_dir = value;
  else if (key == "state_dir") c.state_dir = value;
  else if (key == "audit_log") c.audit_log = value;
  else if (key == "floor_mhz") return number(c.floor_mhz, 0, kMaxMhz - 1);
  else if (key == "min_switch_interval_ms") return number(c.min_switch_interval_ms, 0, 60'000);
  else if (key == "max_clients") return number(c.max_clients, 1, 100'000);
  else if (key == "request_timeout_ms") return number(c.request_timeout_ms, 10, 600'000);
  else if (key == "audit_stderr") return number(c.audit_stderr, 0, 1);
  else if (key == "socket_mode") {
    unsigned m = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), m, 8);
    if (ec != std::errc() || end != value.data() + value.size() || m > 0777) {
      return fmt::format("socket_mode = {}: not an octal mode such as 0660", value);
    }
    c.socket_mode = m;
  } else {
    return fmt::format("unknown key \"{}\"", one_line(key, 60));
  }
  return "";
}

}  // namespace

ClockServiceConfig load_clock_service_config(const std::string& path, bool must_exist) {
  ClockServiceConfig c;
  std::ifstream in(path);
  if (!in) {
    if (!must_exist && errno == ENOENT) return c;
    throw InputError(path, fmt::format("cannot read the clock service's config: {}", std::strerror(errno)));
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t\r"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    line = trim(line);
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) throw InputError(path, fmt::format("line {}: not \"key = value\"", n));
    if (const std::string why = apply_config_line(c, trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
        !why.empty()) {
      throw InputError(path, fmt::format("line {}: {}", n, why));
    }
  }
  return c;
}

std::optional<ClockRequest> parse_clock_request(std::string_view line, std::string& error) {
  if (std::any_of(line.begin(), line.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20; })) {
    error = "a control character in the request";
    return std::nullopt;
  }
  const auto w = words(line);
  using V = ClockRequest::Verb;
  static const std::map<std::string_view, std::pair<V, std::size_t>> kVerbs = {
      {"set-sm", {V::kSetSm, 4}},     {"reset-sm", {V::kResetSm, 2}}, {"set-mem", {V::kSetMem, 4}},
      {"reset-mem", {V::kResetMem, 2}}, {"status", {V::kStatus, 1}}};
  const auto it = w.empty() ? kVerbs.end() : kVerbs.find(w[0]);
  if (it == kVerbs.end()) {
    error = fmt::format("unknown request \"{}\"", one_line(w.empty() ? std::string_view() : w[0], 40));
    return std::nullopt;
  }
  if (w.size() != it->second.second) {
    error = fmt::format("{} takes {} argument(s), not {}", it->first, it->second.second - 1, w.size() - 1);
    return std::nullopt;
  }
  ClockRequest r;
  r.verb = it->second.first;
  std::vector<unsigned> n;
  if (w.size() > 1 && is_gpu_uuid(w[1])) {
    r.gpu_uuid.assign(w[1]);
    n.push_back(0);  // the index: resolved by the service
  }
  for (std::size_t k = 1 + n.size(); k < w.size(); ++k) {
    const auto v = parse_number(w[k]);
    if (!v) {
      error = fmt::format("\"{}\" is not a number below {}", one_line(w[k], 40), kMaxMhz);
      return std::nullopt;
    }
    n.push_back(*v);
  }
  if (!n.empty()) r.gpu = n[0];
  if (n.size() == 3) {
    r.min_mhz = n[1];
    r.max_mhz = n[2];
    if (r.min_mhz > r.max_mhz) {
      error = fmt::format("MIN {} MHz is above MAX {} MHz", r.min_mhz, r.max_mhz);
      return std::nullopt;
    }
  }
  return r;
}

std::string permission_refusal(const ClockCaller& caller, unsigned gpu, const GpuUse& use) {
  if (caller.admin) return "";
  const auto has = [](const std::vector<uid_t>& v, auto pred) { return std::any_of(v.begin(), v.end(), pred); };
  const auto mine = [&](uid_t u) { return u == caller.uid; };
  const auto theirs = [&](uid_t u) { return u != caller.uid; };
  if (has(use.job_uids, mine)) return "";
  if (has(use.job_uids, theirs)) return fmt::format("GPU {} is assigned to another user's job", gpu);
  if (has(use.process_uids, theirs)) return fmt::format("GPU {} is used by another user's process", gpu);
  if (has(use.process_uids, mine)) return "";
  return fmt::format("GPU {} runs no process of uid {} and no job file gives it to uid {}", gpu, caller.uid,
                     caller.uid);
}

std::pair<unsigned, unsigned> clamp_clock_range(unsigned min_mhz, unsigned max_mhz, unsigned floor_mhz,
                                                const std::vector<unsigned>& supported) {
  const auto [lo_it, hi_it] = std::minmax_element(supported.begin(), supported.end());
  const unsigned hi = *hi_it, lo = std::min(hi, std::max(floor_mhz, *lo_it));
  return {std::clamp(min_mhz, lo, hi), std::clamp(max_mhz, lo, hi)};
}

std::string LeaseTable::take(unsigned gpu, int client, const ClockCaller& caller) {
  const auto it = leases_.find(gpu);
  if (it == leases_.end()) {
    leases_[gpu] = Lease{client, caller.uid, caller.pid, std::nullopt, std::nullopt};
    return "";
  }
  if (it->second.client == client) return "";
  return fmt::format("GPU {} is held by another client (uid {}, pid {})", gpu, it->second.uid, it->second.pid);
}

LeaseTable::Lease* LeaseTable::find(unsigned gpu) {
  const auto it = leases_.find(gpu);
  return it == leases_.end() ? nullptr : &it->second;
}

std::vector<std::pair<unsigned, LeaseTable::Lease>> LeaseTable::release(int client) {
  std::vector<std::pair<unsigned, Lease>> out;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.client == client) {
      out.emplace_back(it->first, it->second);
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::string LeaseTable::allow_switch(unsigned gpu, std::int64_t now_ns, std::int64_t interval_ns) {
  const auto it = last_switch_ns_.find(gpu);
  if (it != last_switch_ns_.end() && now_ns - it->second < interval_ns) {
    return fmt::format("GPU {}: a clock switch {:.3f} ms after the last one (the service allows one per {:.3f} ms)",
                       gpu, (now_ns - it->second) / 1e6, interval_ns / 1e6);
  }
  last_switch_ns_[gpu] = now_ns;
  return "";
}

std::string lease_record_text(const LeaseTable& table) {
  std::string text = "emo-leases/1\n";
  for (const auto& [gpu, l] : table.leases()) text += fmt::format("gpu {} uid {} pid {}\n", gpu, l.uid, l.pid);
  return text;
}

std::vector<unsigned> lease_record_gpus(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::vector<unsigned> gpus;
  if (!std::getline(in, line) || line != "emo-leases/1") return gpus;
  while (std::getline(in, line)) {
    const auto w = words(line);
    if (w.size() >= 2 && w[0] == "gpu") {
      if (const auto g = parse_number(w[1])) gpus.push_back(*g);
    }
  }
  return gpus;
}

// ---- the service ---------------------------------------------------------------------------------

struct ClockService::Impl {
  struct Client {
    int id = 0;
    int fd = -1;
    ClockCaller caller;
    std::string buffer;
    bool greeted = false;
    std::int64_t deadline_ns = 0;  ///< 0 = none (idle between requests)
  };

  ClockServiceConfig config;
  std::shared_ptr<Nvml> nvml;
  LeaseTable table;
  std::vector<Client> clients;
  int next_id = 1;
  int listen_fd = -1, signal_fd = -1, state_fd = -1, audit_fd = -1;
  gid_t admin_gid = static_cast<gid_t>(-1);
  std::map<unsigned, std::vector<unsigned>> sm_clocks, mem_clocks;  ///< Supported, per GPU (cached).
  std::map<std::string, unsigned> uuid_index;  ///< NVML UUID -> NVML index (cached; refreshed on a miss).

  void audit(const ClockCaller* who, const std::string& what);
  void write_lease_record();
  void reset_previous_leases();
  void open_socket();
  void accept_client();
  bool read_client(Client& c);  ///< false: close it
  bool handle_line(Client& c, const std::string& line);
  std::string perform(Client& c, const ClockRequest& r);
  std::optional<unsigned> index_of_uuid(const std::string& uuid);
  std::string apply(Client& c, const ClockRequest& r);
  GpuUse gpu_use(unsigned gpu);
  int open_jobs_dir();
  bool jobs_dir_refused = false;  ///< said once in the audit log
  void close_client(std::size_t i, const std::string& why);
  void reset_lease(unsigned gpu, const LeaseTable::Lease& l, const std::string& why);
  int serve();
};

void ClockService::Impl::audit(const ClockCaller* who, const std::string& what) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  const std::string line = fmt::format("emo serve: {} {}{}\n", when,
                                       who != nullptr ? fmt::format("uid {} pid {}: ", who->uid, who->pid) : "", what);
  if (config.audit_stderr) (void)!::write(STDERR_FILENO, line.data(), line.size());
  if (audit_fd >= 0) (void)!::write(audit_fd, line.data(), line.size());
}

void ClockService::Impl::write_lease_record() {
  const std::string text = lease_record_text(table);
  const std::string tmp = fmt::format(".{}.{}.tmp", kLeaseRecord, ::getpid());
  ::unlinkat(state_fd, tmp.c_str(), 0);
  const int fd = ::openat(state_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  // No fsync: the record must outlive the service (a SIGKILL leaves the page cache as it is), not
  // the machine (a reboot resets the clocks anyway); /run is a tmpfs. Under a busy disk an fsync per
  // lease would stall every client.
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (fd >= 0) ::close(fd);
  if (!ok || ::renameat(state_fd, tmp.c_str(), state_fd, kLeaseRecord) != 0) {
    audit(nullptr, fmt::format("cannot write the lease record in {}: {}", config.state_dir, std::strerror(errno)));
  }
}

void ClockService::Impl::reset_previous_leases() {
  for (const unsigned gpu : lease_record_gpus(read_owned_file(state_fd, kLeaseRecord))) {
    try {
      reset_locked_clocks(*nvml, gpu);
      audit(nullptr, fmt::format("reset GPU {} SM and memory clocks (leased when the previous service ended)", gpu));
    } catch (const std::exception& e) {
      audit(nullptr, fmt::format("cannot reset GPU {} leased by the previous service: {}", gpu, one_line(e.what())));
    }
  }
  write_lease_record();
}

void ClockService::Impl::open_socket() {
  const std::string& path = config.socket;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw InputError(path, "too long for a Unix socket path");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::exists(parent)) {
    std::filesystem::create_directories(parent);
    ::chmod(parent.c_str(), 0755);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw InputError(path, "exists and is not a socket: not replacing it");
    ::unlink(path.c_str());  // a previous service's
  }
  listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd < 0 || ::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::chmod(path.c_str(), config.socket_mode) != 0 || ::listen(listen_fd, 128) != 0) {
    throw InputError(path, fmt::format("cannot listen on this socket: {}", std::strerror(errno)));
  }
  if (!config.socket_group.empty()) {
    const group* g = ::getgrnam(config.socket_group.c_str());
    if (g == nullptr || ::chown(path.c_str(), static_cast<uid_t>(-1), g->gr_gid) != 0) {
      throw InputError(path, fmt::format("cannot give the socket to group \"{}\"", config.socket_group));
    }
  }
}

void ClockService::Impl::accept_client() {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  if (static_cast<int>(clients.size()) >= config.max_clients) {
    const std::string text = fmt::format("error too many clients (max_clients {})\n", config.max_clients);
    (void)!::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
    return;
  }
  Client c;
  c.id = next_id++;
  c.fd = fd;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    ::close(fd);
    return;
  }
  c.caller = ClockCaller{cred.uid, cred.gid, cred.pid, cred.uid == 0};
  if (!c.caller.admin && admin_gid != static_cast<gid_t>(-1)) {
    gid_t groups[256];
    socklen_t glen = sizeof groups;
    if (cred.gid == admin_gid) c.caller.admin = true;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0) {
      for (std::size_t k = 0; k < glen / sizeof(gid_t); ++k) c.caller.admin = c.caller.admin || groups[k] == admin_gid;
    }
  }
  c.deadline_ns = monotonic_ns() + std::int64_t{config.request_timeout_ms} * 1'000'000;
  clients.push_back(std::move(c));
}

GpuUse ClockService::Impl::gpu_use(unsigned gpu) {
  GpuUse use;
  for (const unsigned pid : nvml->compute_process_pids(gpu)) {
    struct stat st {};
    if (::stat(fmt::format("/proc/{}", pid).c_str(), &st) == 0) use.process_uids.push_back(st.st_uid);
  }
  const int dir = open_jobs_dir();
  if (dir < 0) return use;
  const std::string uuid = nvml->uuid(gpu);
  const int list = ::dup(dir);
  if (DIR* d = list >= 0 ? ::fdopendir(list) : nullptr) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::istringstream in(read_owned_file(dir, e->d_name, 4096));
      std::vector<uid_t> uids;
      bool names_gpu = false;
      for (std::string key, value; in >> key >> value;) {
        if (key == "uid") uids.push_back(static_cast<uid_t>(std::strtoul(value.c_str(), nullptr, 10)));
        if (key == "gpu" && value == uuid) names_gpu = true;
      }
      if (names_gpu) use.job_uids.insert(use.job_uids.end(), uids.begin(), uids.end());
    }
    ::closedir(d);
  }
  ::close(dir);
  return use;
}

int ClockService::Impl::open_jobs_dir() {
  try {
    const int fd = open_state_dir(config.jobs_dir, false);
    jobs_dir_refused = false;
    return fd;
  } catch (const InputError& e) {
    if (!jobs_dir_refused) audit(nullptr, fmt::format("ignoring the job files: {}", one_line(e.what())));
    jobs_dir_refused = true;
    return -1;
  }
}

bool ClockService::Impl::read_client(Client& c) {
  char buf[4096];
  const ssize_t n = ::read(c.fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  c.buffer.append(buf, static_cast<std::size_t>(n));
  std::size_t nl = 0;
  while ((nl = c.buffer.find('\n')) != std::string::npos) {
    if (nl + 1 > kMaxClockLine) break;
    const std::string line = c.buffer.substr(0, nl);
    c.buffer.erase(0, nl + 1);
    if (!handle_line(c, line)) return false;
  }
  if (c.buffer.size() >= kMaxClockLine) {
    const std::string text = fmt::format("error a request longer than {} bytes\n", kMaxClockLine);
    (void)!::send(c.fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    return false;
  }
  if (c.greeted) c.deadline_ns = c.buffer.empty() ? 0
                                 : c.deadline_ns != 0 ? c.deadline_ns
                                                      : monotonic_ns() + std::int64_t{config.request_timeout_ms} * 1'000'000;
  return true;
}

/// Answers one line; false when the connection is to be closed (the answer was "error ...").
bool ClockService::Impl::handle_line(Client& c, const std::string& line) {
  std::string answer;
  bool keep = true;
  if (!c.greeted) {
    keep = line == kClockProtocol;
    answer = keep ? fmt::format("ok {}", kClockProtocol)
                  : fmt::format("error unsupported protocol \"{}\" (this service speaks {})", one_line(line, 40),
                                kClockProtocol);
    c.greeted = keep;
    c.deadline_ns = 0;
  } else {
    std::string error;
    const auto r = parse_clock_request(line, error);
    keep = r.has_value();
    answer = keep ? perform(c, *r) : "error " + error;
  }
  answer += "\n";
  if (::send(c.fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != static_cast<ssize_t>(answer.size())) {
    return false;  // a client that does not read its answers is dropped
  }
  return keep;
}

std::optional<unsigned> ClockService::Impl::index_of_uuid(const std::string& uuid) {
  if (!uuid_index.contains(uuid)) {
    uuid_index.clear();
    for (unsigned i = 0, n = nvml->device_count(); i < n; ++i) {
      try {
        uuid_index[nvml->uuid(i)] = i;
      } catch (const NvmlError&) {  // a GPU that cannot say its UUID cannot be named by one
      }
    }
  }
  const auto it = uuid_index.find(uuid);
  return it == uuid_index.end() ? std::nullopt : std::optional<unsigned>(it->second);
}

std::string ClockService::Impl::perform(Client& c, const ClockRequest& asked) {
  using V = ClockRequest::Verb;
  ClockRequest r = asked;
  if (!r.gpu_uuid.empty() && r.verb != V::kStatus) {
    const auto index = index_of_uuid(r.gpu_uuid);
    if (!index) return fmt::format("refused {} {}: no such GPU on this node", static_cast<int>(NvmlStatus::kNotFound), r.gpu_uuid);
    r.gpu = *index;
  }
  if (r.verb == V::kStatus) {
    std::string text = fmt::format("ok {}", table.leases().size());
    for (const auto& [gpu, l] : table.leases()) {
      text += fmt::format("\nlease gpu={} uid={} pid={} sm={} mem={}", gpu, l.uid, l.pid, range_text(l.sm),
                          range_text(l.mem));
    }
    return text;
  }
  const std::string what = r.verb == V::kSetSm ? fmt::format("lock GPU {} SM {}-{} MHz", r.gpu, r.min_mhz, r.max_mhz)
                           : r.verb == V::kSetMem ? fmt::format("lock GPU {} memory {}-{} MHz", r.gpu, r.min_mhz, r.max_mhz)
                           : r.verb == V::kResetSm ? fmt::format("reset GPU {} SM", r.gpu)
                                                   : fmt::format("reset GPU {} memory", r.gpu);
  try {
    return apply(c, r);
  } catch (const NvmlError& e) {
    const std::string why = one_line(e.what(), 200);
    audit(&c.caller, fmt::format("{} failed: {}", what, why));
    return fmt::format("refused {} {}", e.code(), why);
  } catch (const std::exception& e) {
    audit(&c.caller, fmt::format("{} failed: {}", what, one_line(e.what(), 200)));
    return fmt::format("refused {} {}", static_cast<int>(NvmlStatus::kUnknown), one_line(e.what(), 200));
  }
}

std::string ClockService::Impl::apply(Client& c, const ClockRequest& r) {
  using V = ClockRequest::Verb;
  const auto refuse = [&](const std::string& why) {
    audit(&c.caller, fmt::format("refused GPU {}: {}", r.gpu, why));
    return fmt::format("refused {} {}", static_cast<int>(NvmlStatus::kNoPermission), why);
  };
  if (const unsigned n = nvml->device_count(); r.gpu >= n) {
    return fmt::format("refused {} GPU {}: no such GPU ({} visible to NVML)", static_cast<int>(NvmlStatus::kNotFound),
                       r.gpu, n);
  }
  if (table.find(r.gpu) == nullptr || table.find(r.gpu)->client != c.id) {
    const GpuUse use = c.caller.admin ? GpuUse{} : gpu_use(r.gpu);  // root needs no process list
    if (std::string why = permission_refusal(c.caller, r.gpu, use); !why.empty()) return refuse(why);
    if (std::string why = table.take(r.gpu, c.id, c.caller); !why.empty()) return refuse(why);
    write_lease_record();  // before the clock changes: a service killed now resets it at its restart
  }
  LeaseTable::Lease& lease = *table.find(r.gpu);
  const bool set = r.verb == V::kSetSm || r.verb == V::kSetMem;
  const auto interval_ns = static_cast<std::int64_t>(config.min_switch_interval_ms * 1e6);
  if (set) {
    if (std::string why = table.allow_switch(r.gpu, monotonic_ns(), interval_ns); !why.empty()) return refuse(why);
  }
  std::pair<unsigned, unsigned> range{r.min_mhz, r.max_mhz};
  if (r.verb == V::kSetSm) {
    auto& supported = sm_clocks[r.gpu];
    if (supported.empty()) {
      const auto mem = nvml->supported_memory_clocks_mhz(r.gpu);
      supported = nvml->supported_sm_clocks_mhz(r.gpu, mem.empty() ? 0 : *std::max_element(mem.begin(), mem.end()));
    }
    if (!supported.empty()) range = clamp_clock_range(r.min_mhz, r.max_mhz, config.floor_mhz, supported);
    nvml->set_locked_sm_clocks(r.gpu, range.first, range.second);
    lease.sm = range;
  } else if (r.verb == V::kSetMem) {
    auto& supported = mem_clocks[r.gpu];
    if (supported.empty()) supported = nvml->supported_memory_clocks_mhz(r.gpu);
    if (!supported.empty()) range = clamp_clock_range(r.min_mhz, r.max_mhz, 0, supported);
    nvml->set_locked_memory_clocks(r.gpu, range.first, range.second);
    lease.mem = range;
  } else if (r.verb == V::kResetSm) {
    nvml->reset_locked_sm_clocks(r.gpu);
    lease.sm.reset();
  } else {
    nvml->reset_locked_memory_clocks(r.gpu);
    lease.mem.reset();
  }
  if (set) {
    audit(&c.caller, fmt::format("lock GPU {} {} {}-{} MHz (asked {}-{})", r.gpu, r.verb == V::kSetSm ? "SM" : "memory",
                                 range.first, range.second, r.min_mhz, r.max_mhz));
    return fmt::format("ok {} {}", range.first, range.second);
  }
  audit(&c.caller, fmt::format("reset GPU {} {} (asked)", r.gpu, r.verb == V::kResetSm ? "SM" : "memory"));
  return "ok";
}

void ClockService::Impl::reset_lease(unsigned gpu, const LeaseTable::Lease& l, const std::string& why) {
  const ClockCaller who{l.uid, 0, l.pid, false};
  try {
    if (l.sm) nvml->reset_locked_sm_clocks(gpu);
    if (l.mem) nvml->reset_locked_memory_clocks(gpu);
    if (l.sm || l.mem) {
      audit(&who, fmt::format("reset GPU {} {}({})", gpu, l.sm && l.mem ? "SM and memory " : l.sm ? "SM " : "memory ",
                              why));
    }
  } catch (const std::exception& e) {
    audit(&who, fmt::format("cannot reset GPU {} ({}): {}", gpu, why, one_line(e.what())));
  }
}

void ClockService::Impl::close_client(std::size_t i, const std::string& why) {
  Client c = std::move(clients[i]);
  clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(i));
  ::close(c.fd);
  const auto released = table.release(c.id);
  for (const auto& [gpu, lease] : released) reset_lease(gpu, lease, why);
  if (!released.empty()) write_lease_record();
}

int ClockService::Impl::serve() {
  std::vector<pollfd> fds;
  while (true) {
    fds.assign({{signal_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}});
    std::int64_t next = 0;
    for (const Client& c : clients) {
      fds.push_back({c.fd, POLLIN, 0});
      if (c.deadline_ns != 0 && (next == 0 || c.deadline_ns < next)) next = c.deadline_ns;
    }
    const int timeout = next == 0 ? -1 : static_cast<int>(std::max<std::int64_t>(0, (next - monotonic_ns()) / 1'000'000 + 1));
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) throw std::runtime_error("poll failed");
    if (fds[0].revents & POLLIN) break;  // SIGTERM, SIGINT or SIGHUP
    const std::int64_t now = monotonic_ns();
    for (std::size_t k = clients.size(); k-- > 0;) {  // backwards: close_client erases
      const short ev = fds[k + 2].revents;
      if ((ev & (POLLIN | POLLHUP | POLLERR)) != 0 && !read_client(clients[k])) {
        close_client(k, "connection closed");
      } else if (clients[k].deadline_ns != 0 && now >= clients[k].deadline_ns) {
        const std::string text = fmt::format("error no complete request within {} ms\n", config.request_timeout_ms);
        (void)!::send(clients[k].fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        close_client(k, "request timed out");
      }
    }
    if (fds[1].revents & POLLIN) accept_client();
  }
  while (!clients.empty()) close_client(clients.size() - 1, "service stopping");
  ::unlink(config.socket.c_str());
  audit(nullptr, "stopped");
  return 0;
}

ClockService::ClockService(ClockServiceConfig config, std::shared_ptr<Nvml> nvml) : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  impl_->nvml = std::move(nvml);
  impl_->nvml->set_clock_route(ClockRoute::kNever);
}

ClockService::~ClockService() {
  for (const int fd : {impl_->listen_fd, impl_->signal_fd, impl_->state_fd, impl_->audit_fd}) {
    if (fd >= 0) ::close(fd);
  }
  for (const auto& c : impl_->clients) ::close(c.fd);
}

int ClockService::run() {
  Impl& m = *impl_;
  m.state_fd = open_state_dir(m.config.state_dir, true);
  if (!m.config.audit_log.empty()) {
    m.audit_fd = ::open(m.config.audit_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (m.audit_fd < 0) throw InputError(m.config.audit_log, fmt::format("cannot open the audit log: {}", std::strerror(errno)));
  }
  if (!m.config.admin_group.empty()) {
    const group* g = ::getgrnam(m.config.admin_group.c_str());
    if (g == nullptr) throw InputError(m.config.admin_group, "admin_group: no such group");
    m.admin_gid = g->gr_gid;
  }
  sigset_t set;
  sigemptyset(&set);
  for (const int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  m.signal_fd = ::signalfd(-1, &set, SFD_CLOEXEC);
  m.reset_previous_leases();
  m.open_socket();
  m.audit(nullptr, fmt::format("listening on {} (pid {})", m.config.socket, ::getpid()));
  return m.serve();
}

}  // namespace emo::runtime
