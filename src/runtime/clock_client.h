// The client's end of the clock service (`emo serve`, runtime/clock_service.h; docs/runtime.md,
// "The clock service"): a user without permission to change clocks asks the service, over its
// Unix socket, to make the NVML setter call for them.
//
// Wire protocol emo-clock/1 (both directions: lines of at most kMaxClockLine bytes, "\n" ended):
//   client: emo-clock/1                  first line: the version; the service answers
//                                        "ok emo-clock/1" or "error ..." and closes
//   client: set-sm GPU MIN MAX           nvmlDeviceSetGpuLockedClocks (MHz)   → "ok MIN MAX" as applied
//   client: reset-sm GPU                 nvmlDeviceResetGpuLockedClocks       → "ok"
//   client: set-mem GPU MIN MAX          nvmlDeviceSetMemoryLockedClocks      → "ok MIN MAX"
//   client: reset-mem GPU                nvmlDeviceResetMemoryLockedClocks    → "ok"
//   client: status                       → "ok N", then N lines "lease gpu=I uid=U pid=P sm=... mem=..."
// A request not done is answered "refused CODE REASON" (CODE: the NVML status, 4 for a refusal
// of the service's own rules) and the connection stays open; a malformed, oversized or too slow
// request is answered "error REASON" and the connection is closed. GPU is the GPU's UUID as NVML
// prints it ("GPU-5a1c…"; what EMO's clients send: a job in a container or a device cgroup sees
// its GPUs renumbered from 0, the service sees the node's NVML indices) or the service's NVML index.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/nvml.h"

namespace emo::runtime {

/// The protocol version, the first line a client sends.
inline constexpr std::string_view kClockProtocol = "emo-clock/1";
/// Longest line either side may send, bytes, "\n" included.
inline constexpr std::size_t kMaxClockLine = 256;
/// Where `emo serve` listens unless configured otherwise.
inline constexpr const char* kDefaultClockSocket = "/run/emo/emo.sock";

/// The route from $EMO_CLOCK_SERVICE: "always" (what --via-service sets), "never", else kAuto.
ClockRoute clock_route();
/// $EMO_CLOCK_SOCKET, else kDefaultClockSocket.
std::string clock_service_socket();
/// Whether a Unix socket exists at clock_service_socket() (lstat; it may still refuse).
bool clock_service_available();

/// One connection to the clock service: connected and version-checked on construction; the
/// service holds this client's GPUs (its lease) until the object is destroyed (the connection
/// closes), then resets the clocks it locked. Not copyable.
class ClockServiceClient {
 public:
  /// Connects to `socket_path` and exchanges the version lines (each read waits up to 10 s).
  /// Throws NvmlError("clock service", "cannot connect to PATH: REASON ...", kNoPermission).
  explicit ClockServiceClient(const std::string& socket_path);
  ~ClockServiceClient();
  ClockServiceClient(const ClockServiceClient&) = delete;
  ClockServiceClient& operator=(const ClockServiceClient&) = delete;

  /// Sends `request` (one protocol line without "\n") about GPU `gpu`; returns the text after
  /// "ok" ("990 990", or ""). Throws NvmlError("GPU I", "clock service: REASON", CODE) for a
  /// "refused CODE REASON" answer, and NvmlError("clock service", ...) when the service answers
  /// "error", closes or does not answer.
  std::string call(unsigned gpu, const std::string& request);
  /// The service's leases ("status"), one line each.
  std::vector<std::string> status();

 private:
  std::string exchange(const std::string& line);
  std::string read_line();

  std::string path_;
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace emo::runtime
