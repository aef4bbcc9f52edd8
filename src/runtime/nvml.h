// NVML, loaded at run time (docs/design.md §6): dlopen("libnvidia-ml.so.1") with EMO's own declarations
// of the few functions it uses, so that building EMO needs neither the driver nor nvml.h.
//
// The library path can be overridden with the environment variable EMO_NVML_LIBRARY; the tests
// point it at a recording stand-in (tests/runtime/fake_nvml.cpp) that logs every call.
//
// Every failing call throws NvmlError whose one-line message names the GPU, the NVML function
// and what to do about it:
//   "GPU 0 (NVIDIA A100-SXM4-80GB): nvmlDeviceSetGpuLockedClocks: no permission: changing clocks
//    needs root or CAP_SYS_ADMIN"
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace emo::runtime {

/// NVML return codes EMO distinguishes (nvmlReturn_t values).
enum class NvmlStatus : int {
  kSuccess = 0,
  kUninitialized = 1,
  kInvalidArgument = 2,
  kNotSupported = 3,
  kNoPermission = 4,
  kNotFound = 6,
  kInsufficientSize = 7,
  kDriverNotLoaded = 9,
  kLibraryNotFound = 12,
  kFunctionNotFound = 13,
  kGpuIsLost = 15,
  kLibRmVersionMismatch = 18,
  kUnknown = 999,
};

/// An NVML failure (or NVML missing). A subclass of InputError so that the CLI reports it as
/// one line, "emo: error: ...", with exit code 2: the machine, not EMO, is what needs fixing.
class NvmlError : public emo::InputError {
 public:
  /// `where` names the GPU ("GPU 0 (NVIDIA H200)") or "NVML"; `problem` the function and reason.
  NvmlError(std::string where, std::string problem, int code)
      : InputError(std::move(where), std::move(problem)), code_(code) {}
  /// The nvmlReturn_t value, or -1 when the library could not be loaded.
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// The reason for an NVML return code in words, with the remedy where there is one:
/// 4 → "no permission: changing clocks needs root or CAP_SYS_ADMIN",
/// 9 → "the NVIDIA driver is not loaded", 3 → "not supported on this GPU".
std::string nvml_reason(int code);

/// Whether clock setters go to the clock service (runtime/clock_client.h): kAuto = when NVML
/// answers "no permission" and the service's socket exists; kAlways (`--via-service`); kNever.
enum class ClockRoute { kAuto, kAlways, kNever };

class ClockServiceClient;

/// Which clock domain a query is about (nvmlClockType_t).
enum class NvmlClock : int { kGraphics = 0, kSm = 1, kMemory = 2 };

/// The NVML library, loaded and initialised; shut down and unloaded on destruction. One object
/// is shared (std::shared_ptr) by the devices that use it. Not thread-safe beyond what NVML is.
class Nvml {
 public:
  /// Opaque device handle (nvmlDevice_t).
  using Handle = void*;

  /// Loads `library` (default: $EMO_NVML_LIBRARY, else "libnvidia-ml.so.1") and calls nvmlInit.
  /// Throws NvmlError: the library cannot be loaded ("no NVIDIA driver installed?"), lacks a
  /// function, or nvmlInit fails (driver not loaded, version mismatch, ...).
  static std::shared_ptr<Nvml> open(const std::string& library = "");
  /// The path open() would load: `library` if given, else $EMO_NVML_LIBRARY, else the default.
  static std::string library_path(const std::string& library = "");

  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  const std::string& path() const noexcept { return path_; }
  /// Number of GPUs NVML sees.
  unsigned device_count();
  /// Handle of GPU `index` (NVML order = CUDA order with CUDA_DEVICE_ORDER=PCI_BUS_ID).
  Handle handle(unsigned index);
  /// Product name, e.g. "NVIDIA A100-SXM4-80GB".
  std::string name(unsigned index);
  /// The GPU's UUID as NVML prints it ("GPU-5a1c0e3b-…"): the identity a process reports
  /// (docs/runtime.md, "Many GPUs, many processes"), whatever CUDA_VISIBLE_DEVICES says.
  std::string uuid(unsigned index);
  /// Supported memory clocks, MHz, as NVML lists them (descending).
  std::vector<unsigned> supported_memory_clocks_mhz(unsigned index);
  /// Supported graphics (SM) clocks at memory clock `memory_mhz`, MHz, descending.
  std::vector<unsigned> supported_sm_clocks_mhz(unsigned index, unsigned memory_mhz);
  /// Current clock of a domain, MHz.
  unsigned clock_mhz(unsigned index, NvmlClock clock);
  /// Current board power, mW.
  unsigned power_mw(unsigned index);
  /// Total energy since the driver loaded, mJ (Volta and newer).
  std::uint64_t total_energy_mj(unsigned index);
  /// PIDs of the compute processes running on GPU `index`
  /// (nvmlDeviceGetComputeRunningProcesses_v3; the clock service's "is it the caller's GPU").
  /// Throws NvmlError (kFunctionNotFound when the driver lacks the call).
  std::vector<unsigned> compute_process_pids(unsigned index);

  // The four clock setters need root or CAP_SYS_ADMIN. Where the clock route (set at open() from
  // $EMO_CLOCK_SERVICE, runtime/clock_client.h) is kAlways, or kAuto and NVML answers "no
  // permission" while the clock service's socket exists, the call and every later one go to the
  // clock service (`emo serve`) instead, which makes the same NVML call or refuses with a
  // one-line reason (thrown as NvmlError; code kNoPermission for a refusal).

  /// Locks the SM clock within [min_mhz, max_mhz].
  void set_locked_sm_clocks(unsigned index, unsigned min_mhz, unsigned max_mhz);
  /// Unlocks the SM clock (default boost behaviour).
  void reset_locked_sm_clocks(unsigned index);
  /// Locks the memory clock within [min_mhz, max_mhz] (Ampere and newer; root).
  void set_locked_memory_clocks(unsigned index, unsigned min_mhz, unsigned max_mhz);
  /// Unlocks the memory clock.
  void reset_locked_memory_clocks(unsigned index);

  /// Where the setters go from now on (the clock service itself uses kNever).
  void set_clock_route(ClockRoute route) noexcept { route_ = route; }

  struct Api;  ///< The resolved function pointers (nvml.cpp).

 private:
  Nvml();
  /// A setter: `call` through NVML, or `request` (clock protocol, "set-sm INDEX MIN MAX") through
  /// the clock service, where it is sent with the GPU's UUID in place of INDEX.
  void write_clocks(unsigned index, const std::string& request, int (*call)(Api&, Handle, unsigned, unsigned),
                    unsigned min_mhz, unsigned max_mhz, const char* function);
  /// Throws NvmlError for GPU `index` when `rc` is not success.
  void check(int rc, unsigned index, const char* function);

  std::string path_;
  void* lib_ = nullptr;
  std::unique_ptr<Api> api_;
  std::vector<std::string> names_;  ///< Cached product names, for messages.
  ClockRoute route_ = ClockRoute::kAuto;
  std::unique_ptr<ClockServiceClient> service_;  ///< Connected on the first routed setter.
  std::map<unsigned, std::string> service_uuids_;  ///< UUIDs of the GPUs asked of the service, by index.
};

}  // namespace emo::runtime
