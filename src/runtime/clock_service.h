// The clock service (`emo serve`; docs/runtime.md, "The clock service"): a small root process
// that alone makes NVML's clock setter calls, for clients that may not (a user's job on a shared
// cluster). Clients connect to its Unix socket and speak emo-clock/1 (runtime/clock_client.h).
//
// Who may do what (permission_refusal): root and members of the configured admin group act on any
// GPU; anyone else only on a GPU that is theirs: a job file (jobs_dir/<jobid>, written by a
// scheduler's prolog: "uid U" and "gpu GPU-UUID" lines, trusted only in a root-owned directory
// that no group or other may write) gives it to their uid, or NVML's compute-process list shows a
// process of their uid on it and none of another uid's. A GPU assigned to another uid's job, or
// running another uid's process, is refused with a one-line reason.
//
// Leases (LeaseTable): the first request on a GPU makes it the connection's until the connection
// closes for any reason; then the service at once resets what that connection locked. Another
// connection's request on a held GPU is refused. Locks on one GPU closer together than the
// configured minimum switch interval are refused. The held GPUs are kept in a lease record
// (state_dir/leases) so that a service killed mid-lease resets them when it starts again.
// Clocks asked for are clamped to [max(floor, the GPU's lowest), the GPU's highest].
// One audit line per lock, reset and refusal (who, GPU, clock, why), on stderr and the audit log.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/clock_client.h"
#include "runtime/nvml.h"

namespace emo::runtime {

/// The service's settings (a "key = value" file, '#' comments; defaults are these values; the
/// shipped file is packaging/emo-serve.conf).
struct ClockServiceConfig {
  std::string socket = kDefaultClockSocket;  ///< Unix socket path (its directory made 0755 if missing).
  unsigned socket_mode = 0666;               ///< Socket file mode (octal in the file), e.g. 0660 with a group.
  std::string socket_group;                  ///< Group owning the socket; "" = root's.
  std::string admin_group;                   ///< Members may act on any GPU; "" = root only.
  std::string jobs_dir = "/run/emo/jobs";    ///< Scheduler job files (see above).
  std::string state_dir = "/run/emo/state";  ///< The lease record; created 0700.
  std::string audit_log;                     ///< Audit lines are appended here too; "" = stderr only.
  bool audit_stderr = true;                  ///< Audit lines on stderr too (journald under systemd); 0 = not.
  unsigned floor_mhz = 0;                    ///< Lowest SM clock granted, MHz (0 = the GPU's lowest).
  double min_switch_interval_ms = 1;         ///< Per GPU: a lock closer than this after the last is refused.
  int max_clients = 256;                     ///< Connections beyond this get "error" and are closed.
  int request_timeout_ms = 5000;             ///< A started line (or the version line) must end within this.
};

/// Reads the config file `path`. A missing file gives the defaults unless `must_exist`. Throws
/// emo::InputError("PATH", "line N: ...") for an unknown key, a bad value, or an unreadable file.
ClockServiceConfig load_clock_service_config(const std::string& path, bool must_exist);

/// One request of emo-clock/1 (runtime/clock_client.h).
struct ClockRequest {
  enum class Verb { kSetSm, kResetSm, kSetMem, kResetMem, kStatus };
  Verb verb = Verb::kStatus;
  unsigned gpu = 0;      ///< NVML index (the service's), resolved from gpu_uuid when one is given.
  std::string gpu_uuid;  ///< The GPU as the request named it by UUID ("GPU-…"), "" when by index.
  unsigned min_mhz = 0;  ///< set-*: the range asked for, MHz.
  unsigned max_mhz = 0;
};

/// Parses one request line (without "\n"). Returns the request, or the one-line reason it is
/// malformed in `error` (unknown verb, wrong arity, a number that is not a decimal in [0, 10^6),
/// a GPU that is neither such a number nor a UUID — "GPU-" then at most 80 letters, digits and
/// '-' —, MIN > MAX, a control character). parse_clock_request("set-sm GPU-ab12 990 990", e)
/// == {kSetSm, gpu 0, gpu_uuid "GPU-ab12", 990, 990}.
std::optional<ClockRequest> parse_clock_request(std::string_view line, std::string& error);

/// Who is asking: SO_PEERCRED's uid, gid, pid; `admin` = root or a member of the admin group.
struct ClockCaller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  bool admin = false;
};

/// What the service knows of who uses a GPU.
struct GpuUse {
  std::vector<uid_t> process_uids;  ///< Owners of the compute processes NVML lists on it.
  std::vector<uid_t> job_uids;      ///< Uids that trusted job files give it to.
};

/// "" when `caller` may change GPU `gpu`'s clocks, else the one-line reason, e.g.
/// "GPU 1 is used by another user's process" (rules in the file comment).
std::string permission_refusal(const ClockCaller& caller, unsigned gpu, const GpuUse& use);

/// [min_mhz, max_mhz] clamped to [max(floor_mhz, lowest supported), highest supported];
/// `supported` non-empty (any order).
std::pair<unsigned, unsigned> clamp_clock_range(unsigned min_mhz, unsigned max_mhz, unsigned floor_mhz,
                                                const std::vector<unsigned>& supported);

/// Which connection holds which GPU, and when each GPU's clock last changed. Pure bookkeeping.
class LeaseTable {
 public:
  struct Lease {
    int client = -1;  ///< Connection id.
    uid_t uid = 0;
    pid_t pid = 0;
    std::optional<std::pair<unsigned, unsigned>> sm, mem;  ///< Locked ranges, MHz; none = not locked.
  };
  /// "" when connection `client` holds GPU `gpu` or has now taken it; else the refusal
  /// "GPU 1 is held by another client (uid U, pid P)".
  std::string take(unsigned gpu, int client, const ClockCaller& caller);
  /// The lease of `gpu`, or nullptr.
  Lease* find(unsigned gpu);
  /// Ends every lease of `client`; returns them by GPU (the caller resets what they locked).
  std::vector<std::pair<unsigned, Lease>> release(int client);
  const std::map<unsigned, Lease>& leases() const noexcept { return leases_; }
  /// "" when a lock of `gpu` at `now_ns` is at least `interval_ns` after its last one, else the
  /// refusal naming both; a lock let through is recorded.
  std::string allow_switch(unsigned gpu, std::int64_t now_ns, std::int64_t interval_ns);

 private:
  std::map<unsigned, Lease> leases_;
  std::map<unsigned, std::int64_t> last_switch_ns_;
};

/// The lease record: "emo-leases/1\n" then "gpu I uid U pid P\n" per lease.
std::string lease_record_text(const LeaseTable& table);
/// The GPUs a lease record names (malformed lines skipped).
std::vector<unsigned> lease_record_gpus(const std::string& text);

/// The service. Single-threaded: one poll loop over the socket, the clients and its signals.
class ClockService {
 public:
  /// `nvml` is used with ClockRoute::kNever (this process makes the calls itself).
  ClockService(ClockServiceConfig config, std::shared_ptr<Nvml> nvml);
  ~ClockService();
  ClockService(const ClockService&) = delete;
  ClockService& operator=(const ClockService&) = delete;
  /// Resets every GPU the previous lease record names, listens, serves until SIGTERM, SIGINT or
  /// SIGHUP (then resets every leased GPU and removes the socket). Returns 0. Throws
  /// emo::InputError when the state directory is refused or the socket cannot be made.
  int run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace emo::runtime
