#include "runtime/nvml.h"

#include "runtime/clock_client.h"

#include <dlfcn.h>

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace emo::runtime {

// EMO's own declarations of the NVML functions it uses (nvml.h, NVML API version 11+). Every
// function returns nvmlReturn_t (an int); nvmlDevice_t is an opaque pointer.
struct Nvml::Api {
  using Device = void*;
  int (*init)();                                                      // nvmlInit_v2
  int (*shutdown)();                                                  // nvmlShutdown
  const char* (*error_string)(int);                                   // nvmlErrorString
  int (*get_count)(unsigned*);                                        // nvmlDeviceGetCount_v2
  int (*get_handle)(unsigned, Device*);                               // nvmlDeviceGetHandleByIndex_v2
  int (*get_name)(Device, char*, unsigned);                           // nvmlDeviceGetName
  int (*supported_memory_clocks)(Device, unsigned*, unsigned*);       // nvmlDeviceGetSupportedMemoryClocks
  int (*supported_graphics_clocks)(Device, unsigned, unsigned*, unsigned*);  // ...GraphicsClocks
  int (*clock_info)(Device, int, unsigned*);                          // nvmlDeviceGetClockInfo
  int (*power_usage)(Device, unsigned*);                              // nvmlDeviceGetPowerUsage (mW)
  int (*total_energy)(Device, unsigned long long*);                   // ...TotalEnergyConsumption (mJ)
  int (*set_gpu_locked)(Device, unsigned, unsigned);                  // nvmlDeviceSetGpuLockedClocks
  int (*reset_gpu_locked)(Device);                                    // nvmlDeviceResetGpuLockedClocks
  int (*set_mem_locked)(Device, unsigned, unsigned);                  // nvmlDeviceSetMemoryLockedClocks
  int (*reset_mem_locked)(Device);                                    // nvmlDeviceResetMemoryLockedClocks
  int (*get_uuid)(Device, char*, unsigned);                           // nvmlDeviceGetUUID
  int (*compute_processes)(Device, unsigned*, void*);  // nvmlDeviceGetComputeRunningProcesses_v3 (optional)
};

namespace {

constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";
constexpr unsigned kNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kMaxClocks = 512;

template <typename F>
void resolve(void* lib, const char* symbol, F& out, const std::string& path) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  if (out == nullptr) {
    throw NvmlError("NVML", fmt::format("{} has no {} (driver too old for EMO?)", path, symbol),
                    static_cast<int>(NvmlStatus::kFunctionNotFound));
  }
}

}  // namespace

std::string nvml_reason(int code) {
  switch (static_cast<NvmlStatus>(code)) {
    case NvmlStatus::kSuccess: return "success";
    case NvmlStatus::kUninitialized: return "NVML is not initialised";
    case NvmlStatus::kInvalidArgument: return "invalid argument (unsupported clock?)";
    case NvmlStatus::kNotSupported: return "not supported on this GPU";
    case NvmlStatus::kNoPermission:
      return "no permission: changing clocks needs root or CAP_SYS_ADMIN";
    case NvmlStatus::kNotFound: return "GPU not found";
    case NvmlStatus::kInsufficientSize: return "buffer too small";
    case NvmlStatus::kDriverNotLoaded: return "the NVIDIA driver is not loaded";
    case NvmlStatus::kLibraryNotFound: return "NVML library not found";
    case NvmlStatus::kFunctionNotFound: return "function not found in this NVML";
    case NvmlStatus::kGpuIsLost: return "the GPU has fallen off the bus or is otherwise lost";
    case NvmlStatus::kLibRmVersionMismatch:
      return "NVML library and kernel driver versions differ (reload the driver)";
    default: return fmt::format("NVML error {}", code);
  }
}

std::string Nvml::library_path(const std::string& library) {
  if (!library.empty()) return library;
  const char* env = std::getenv("EMO_NVML_LIBRARY");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kDefaultLibrary);
}

std::shared_ptr<Nvml> Nvml::open(const std::string& library) {
  std::shared_ptr<Nvml> nvml(new Nvml());
  nvml->path_ = library_path(library);
  nvml->lib_ = dlopen(nvml->path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (nvml->lib_ == nullptr) {
    const char* why = dlerror();
    throw NvmlError("NVML", fmt::format("cannot load {} ({}): no NVIDIA driver installed on this machine?",
                                        nvml->path_, why != nullptr ? why : "unknown reason"),
                    -1);
  }
  auto api = std::make_unique<Api>();
  const std::string& p = nvml->path_;
  resolve(nvml->lib_, "nvmlInit_v2", api->init, p);
  resolve(nvml->lib_, "nvmlShutdown", api->shutdown, p);
  resolve(nvml->lib_, "nvmlErrorString", api->error_string, p);
  resolve(nvml->lib_, "nvmlDeviceGetCount_v2", api->get_count, p);
  resolve(nvml->lib_, "nvmlDeviceGetHandleByIndex_v2", api->get_handle, p);
  resolve(nvml->lib_, "nvmlDeviceGetName", api->get_name, p);
  resolve(nvml->lib_, "nvmlDeviceGetSupportedMemoryClocks", api->supported_memory_clocks, p);
  resolve(nvml->lib_, "nvmlDeviceGetSupportedGraphicsClocks", api->supported_graphics_clocks, p);
  resolve(nvml->lib_, "nvmlDeviceGetClockInfo", api->clock_info, p);
  resolve(nvml->lib_, "nvmlDeviceGetPowerUsage", api->power_usage, p);
  resolve(nvml->lib_, "nvmlDeviceGetTotalEnergyConsumption", api->total_energy, p);
  resolve(nvml->lib_, "nvmlDeviceSetGpuLockedClocks", api->set_gpu_locked, p);
  resolve(nvml->lib_, "nvmlDeviceResetGpuLockedClocks", api->reset_gpu_locked, p);
  resolve(nvml->lib_, "nvmlDeviceSetMemoryLockedClocks", api->set_mem_locked, p);
  resolve(nvml->lib_, "nvmlDeviceResetMemoryLockedClocks", api->reset_mem_locked, p);
  resolve(nvml->lib_, "nvmlDeviceGetUUID", api->get_uuid, p);
  api->compute_processes =  // only the clock service needs it (runtime/clock_service.h)
      reinterpret_cast<int (*)(Api::Device, unsigned*, void*)>(dlsym(nvml->lib_, "nvmlDeviceGetComputeRunningProcesses_v3"));
  const int rc = api->init();
  if (rc != 0) {
    throw NvmlError("NVML", fmt::format("nvmlInit failed: {}", nvml_reason(rc)), rc);
  }
  nvml->api_ = std::move(api);
  nvml->route_ = clock_route();
  return nvml;
}

Nvml::~Nvml() {
  if (api_) api_->shutdown();
  // The library stays loaded: NVML registers atexit handlers in some driver versions, and
  // unloading it under them would crash at exit.
}

void Nvml::check(int rc, unsigned index, const char* function) {
  if (rc == 0) return;
  std::string where = fmt::format("GPU {}", index);
  std::string gpu_name = index < names_.size() ? names_[index] : std::string();
  if (gpu_name.empty()) {  // name the GPU in the message if NVML can still say it
    Handle h = nullptr;
    char buf[kNameBufferSize] = {};
    if (api_->get_handle(index, &h) == 0 && api_->get_name(h, buf, kNameBufferSize) == 0) gpu_name = buf;
  }
  if (!gpu_name.empty()) where += " (" + gpu_name + ")";
  throw NvmlError(where, fmt::format("{}: {}", function, nvml_reason(rc)), rc);
}

unsigned Nvml::device_count() {
  unsigned n = 0;
  const int rc = api_->get_count(&n);
  if (rc != 0) throw NvmlError("NVML", fmt::format("nvmlDeviceGetCount: {}", nvml_reason(rc)), rc);
  return n;
}

Nvml::Handle Nvml::handle(unsigned index) {
  Handle h = nullptr;
  const int rc = api_->get_handle(index, &h);
  if (rc != 0) {
    throw NvmlError(fmt::format("GPU {}", index),
                    fmt::format("nvmlDeviceGetHandleByIndex: {} ({} GPUs visible)", nvml_reason(rc),
                                device_count()),
                    rc);
  }
  return h;
}

std::string Nvml::name(unsigned index) {
  if (index < names_.size() && !names_[index].empty()) return names_[index];
  char buf[kNameBufferSize] = {};
  check(api_->get_name(handle(index), buf, kNameBufferSize), index, "nvmlDeviceGetName");
  if (names_.size() <= index) names_.resize(index + 1);
  names_[index] = buf;
  return names_[index];
}

std::string Nvml::uuid(unsigned index) {
  char buf[kUuidBufferSize] = {};
  check(api_->get_uuid(handle(index), buf, kUuidBufferSize), index, "nvmlDeviceGetUUID");
  return buf;
}

std::vector<unsigned> Nvml::supported_memory_clocks_mhz(unsigned index) {
  std::vector<unsigned> clocks(kMaxClocks);
  unsigned n = kMaxClocks;
  check(api_->supported_memory_clocks(handle(index), &n, clocks.data()), index,
        "nvmlDeviceGetSupportedMemoryClocks");
  clocks.resize(std::min(n, kMaxClocks));
  return clocks;
}

std::vector<unsigned> Nvml::supported_sm_clocks_mhz(unsigned index, unsigned memory_mhz) {
  std::vector<unsigned> clocks(kMaxClocks);
  unsigned n = kMaxClocks;
  check(api_->supported_graphics_clocks(handle(index), memory_mhz, &n, clocks.data()), index,
        "nvmlDeviceGetSupportedGraphicsClocks");
  clocks.resize(std::min(n, kMaxClocks));
  return clocks;
}

unsigned Nvml::clock_mhz(unsigned index, NvmlClock clock) {
  unsigned mhz = 0;
  check(api_->clock_info(handle(index), static_cast<int>(clock), &mhz), index, "nvmlDeviceGetClockInfo");
  return mhz;
}

unsigned Nvml::power_mw(unsigned index) {
  unsigned mw = 0;
  check(api_->power_usage(handle(index), &mw), index, "nvmlDeviceGetPowerUsage");
  return mw;
}

std::uint64_t Nvml::total_energy_mj(unsigned index) {
  unsigned long long mj = 0;
  check(api_->total_energy(handle(index), &mj), index, "nvmlDeviceGetTotalEnergyConsumption");
  return mj;
}

std::vector<unsigned> Nvml::compute_process_pids(unsigned index) {
  if (api_->compute_processes == nullptr) {
    throw NvmlError("NVML", fmt::format("{} has no nvmlDeviceGetComputeRunningProcesses_v3 (driver too old?)", path_),
                    static_cast<int>(NvmlStatus::kFunctionNotFound));
  }
  struct ProcessInfo {  // nvmlProcessInfo_t as the _v3 call fills it
    unsigned pid;
    unsigned long long used_gpu_memory;
    unsigned gpu_instance_id;
    unsigned compute_instance_id;
  };
  std::vector<ProcessInfo> infos(64);
  for (int attempt = 0; attempt < 4; ++attempt) {  // the list can grow between the calls
    unsigned n = static_cast<unsigned>(infos.size());
    const int rc = api_->compute_processes(handle(index), &n, infos.data());
    if (rc == static_cast<int>(NvmlStatus::kInsufficientSize) && n > infos.size()) {
      infos.resize(n + 16);
      continue;
    }
    check(rc, index, "nvmlDeviceGetComputeRunningProcesses");
    std::vector<unsigned> pids;
    for (unsigned k = 0; k < n && k < infos.size(); ++k) pids.push_back(infos[k].pid);
    return pids;
  }
  check(static_cast<int>(NvmlStatus::kInsufficientSize), index, "nvmlDeviceGetComputeRunningProcesses");
  return {};
}

Nvml::Nvml() = default;

void Nvml::write_clocks(unsigned index, const std::string& request, int (*call)(Api&, Handle, unsigned, unsigned),
                        unsigned min_mhz, unsigned max_mhz, const char* function) {
  if (!service_ && route_ != ClockRoute::kAlways) {
    const int rc = call(*api_, handle(index), min_mhz, max_mhz);
    if (rc != static_cast<int>(NvmlStatus::kNoPermission) || route_ == ClockRoute::kNever ||
        !clock_service_available()) {
      check(rc, index, function);
      return;
    }
  }
  if (!service_) service_ = std::make_unique<ClockServiceClient>(clock_service_socket());
  // The service's NVML may number the GPUs otherwise (this process in a container or a device
  // cgroup): the request names the GPU by its UUID ("set-sm 0 …" → "set-sm GPU-… …").
  auto& uuid = service_uuids_[index];
  if (uuid.empty()) uuid = this->uuid(index);
  const std::size_t verb_end = request.find(' '), gpu_end = request.find(' ', verb_end + 1);
  service_->call(index, request.substr(0, verb_end + 1) + uuid +
                            (gpu_end == std::string::npos ? std::string() : request.substr(gpu_end)));
}

void Nvml::set_locked_sm_clocks(unsigned index, unsigned min_mhz, unsigned max_mhz) {
  write_clocks(index, fmt::format("set-sm {} {} {}", index, min_mhz, max_mhz),
               [](Api& a, Handle h, unsigned lo, unsigned hi) { return a.set_gpu_locked(h, lo, hi); }, min_mhz,
               max_mhz, "nvmlDeviceSetGpuLockedClocks");
}

void Nvml::reset_locked_sm_clocks(unsigned index) {
  write_clocks(index, fmt::format("reset-sm {}", index),
               [](Api& a, Handle h, unsigned, unsigned) { return a.reset_gpu_locked(h); }, 0, 0,
               "nvmlDeviceResetGpuLockedClocks");
}

void Nvml::set_locked_memory_clocks(unsigned index, unsigned min_mhz, unsigned max_mhz) {
  write_clocks(index, fmt::format("set-mem {} {} {}", index, min_mhz, max_mhz),
               [](Api& a, Handle h, unsigned lo, unsigned hi) { return a.set_mem_locked(h, lo, hi); }, min_mhz,
               max_mhz, "nvmlDeviceSetMemoryLockedClocks");
}

void Nvml::reset_locked_memory_clocks(unsigned index) {
  write_clocks(index, fmt::format("reset-mem {}", index),
               [](Api& a, Handle h, unsigned, unsigned) { return a.reset_mem_locked(h); }, 0, 0,
               "nvmlDeviceResetMemoryLockedClocks");
}

}  // namespace emo::runtime
