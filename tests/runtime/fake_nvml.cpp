// A recording stand-in for libnvidia-ml.so.1, loaded by EMO through EMO_NVML_LIBRARY in the tests
// (no GPU, no driver). It exports the NVML functions EMO declares (src/runtime/nvml.cpp) and
// appends one line per call to the file named by EMO_FAKE_NVML_LOG, written with a single
// write(2) on an O_APPEND descriptor so that a process killed mid-run still leaves every call
// it made on disk:
//   nvmlInit_v2
//   nvmlDeviceSetGpuLockedClocks 0 1200 1200
//   nvmlDeviceResetGpuLockedClocks 0
// Configuration (read at nvmlInit_v2):
//   EMO_FAKE_NVML_GPUS   comma-separated NVML names (default "NVIDIA A100-SXM4-80GB"); "" = none
//   EMO_FAKE_NVML_FAIL   "function=code,..." makes those functions return the code (e.g.
//                        nvmlDeviceSetGpuLockedClocks=4 for "no permission")
//   EMO_FAKE_NVML_POWER_W  constant board power (default 100 W); the energy counter is
//                        power × CLOCK_MONOTONIC time, in mJ
//   EMO_FAKE_NVML_POWER_CURVE  "STATIC,DYNAMIC,GAMMA": instead, each GPU's power depends on its
//                        SM clock f in effect (1410 MHz when not locked): STATIC + DYNAMIC ·
//                        (f / 1410)^GAMMA W, and its energy counter integrates that power over
//                        CLOCK_MONOTONIC time from nvmlInit_v2 on, changing at each lock/reset
//                        (in this process: the one that loaded the stand-in)
//   EMO_FAKE_NVML_STATE  a file STATE that holds GPU 0's SM clock in effect (MHz, one line), and
//                        STATE.I the clock of GPU I (every GPU, 0 included), each rewritten
//                        atomically at nvmlInit_v2 and at every SM lock and reset of its GPU: a
//                        fake workload reads its GPU's to run at the "locked" clock
//   EMO_FAKE_NVML_PROCS  a file of "INDEX PID" lines, read at every call of
//                        nvmlDeviceGetComputeRunningProcesses_v3: the compute processes on GPU INDEX
//   EMO_FAKE_NVML_ROOT_ONLY  "1": the four clock setters return 4 (no permission) unless the
//                        caller's effective uid is 0, as the driver does (the call is still logged)
// Identities: GPU i has the UUID "GPU-fake-0000-0000-0000-00000000000i" (i in decimal, 12 digits);
//   EMO_FAKE_NVML_UUIDS  "H0,H1,...": instead, GPU i has the UUID of the node's GPU Hi (the view
//                        of a process in a container or a device cgroup, whose NVML numbers the
//                        node's GPUs H0, H1, ... from 0)
// Supported clocks: memory 1593 MHz; SM 1410 down to 210 MHz in 15 MHz steps (an A100's).
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

namespace {

struct FakeGpu {
  std::string name;
  int uuid_number = 0;      // its UUID ends in this number (EMO_FAKE_NVML_UUIDS; default its index)
  unsigned locked_sm = 0;   // 0 = not locked
  unsigned locked_mem = 0;
  double energy_mj = 0;     // EMO_FAKE_NVML_POWER_CURVE: accumulated up to since_s
  double since_s = 0;
};

std::vector<FakeGpu> g_gpus;
std::map<std::string, int> g_fail;
double g_power_w = 100;
bool g_initialised = false;
FakeGpu g_handles[16];  // handles are pointers into this array (index = pointer - g_handles)

void log_call(const std::string& line) {
  const char* path = std::getenv("EMO_FAKE_NVML_LOG");
  if (path == nullptr || *path == '\0') return;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = line + "\n";
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

int failure(const char* fn) {
  const auto it = g_fail.find(fn);
  return it == g_fail.end() ? 0 : it->second;
}

/// Logs the call and returns the injected failure code (0 = proceed).
int enter(const char* fn, const std::string& args = "") {
  log_call(args.empty() ? std::string(fn) : std::string(fn) + " " + args);
  if (!g_initialised && std::strcmp(fn, "nvmlInit_v2") != 0) return 1;  // NVML_ERROR_UNINITIALIZED
  return failure(fn);
}

/// Setters under EMO_FAKE_NVML_ROOT_ONLY=1 for a caller that is not root: NVML_ERROR_NO_PERMISSION.
int setter_permission() {
  const char* v = std::getenv("EMO_FAKE_NVML_ROOT_ONLY");
  return v != nullptr && std::strcmp(v, "1") == 0 && ::geteuid() != 0 ? 4 : 0;
}

int index_of(void* handle) {
  auto* g = static_cast<FakeGpu*>(handle);
  const long i = g - g_handles;
  return (i >= 0 && static_cast<std::size_t>(i) < g_gpus.size()) ? static_cast<int>(i) : -1;
}

std::vector<unsigned> sm_clocks() {
  std::vector<unsigned> v;
  for (unsigned c = 1410; c >= 210; c -= 15) v.push_back(c);
  return v;
}

std::string to_s(long v) { return std::to_string(v); }

// EMO_FAKE_NVML_POWER_CURVE: power of each GPU as a function of its SM clock, integrated piecewise.
bool g_curve = false;
double g_static_w = 0, g_dynamic_w = 0, g_gamma = 1;

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

unsigned sm_clock_in_effect(std::size_t i) { return g_gpus[i].locked_sm != 0 ? g_gpus[i].locked_sm : 1410; }

double curve_power_w(std::size_t i) {
  const double x = sm_clock_in_effect(i) / 1410.0;
  return g_static_w + g_dynamic_w * std::pow(x, g_gamma);
}

/// Adds GPU i's energy up to now at the power in effect; call before its clock changes.
void accumulate(std::size_t i) {
  const double t = now_s();
  g_gpus[i].energy_mj += curve_power_w(i) * (t - g_gpus[i].since_s) * 1000;
  g_gpus[i].since_s = t;
}

/// Writes `mhz` to `path` atomically (a temporary file, renamed).
void write_clock_file(const std::string& path, unsigned mhz) {
  const std::string tmp = path + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%u\n", mhz);
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
  }
}

/// Writes GPU i's clock in effect to EMO_FAKE_NVML_STATE.i, and GPU 0's to EMO_FAKE_NVML_STATE.
void write_state(std::size_t i) {
  const char* path = std::getenv("EMO_FAKE_NVML_STATE");
  if (path == nullptr || *path == '\0' || i >= g_gpus.size()) return;
  if (i == 0) write_clock_file(path, sm_clock_in_effect(0));
  write_clock_file(std::string(path) + "." + std::to_string(i), sm_clock_in_effect(i));
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int nvmlInit_v2() {
  g_gpus.clear();
  g_fail.clear();
  const char* gpus = std::getenv("EMO_FAKE_NVML_GPUS");
  std::string list = gpus != nullptr ? gpus : "NVIDIA A100-SXM4-80GB";
  std::size_t pos = 0;
  while (!list.empty() && pos <= list.size() && g_gpus.size() < 16) {
    const std::size_t comma = list.find(',', pos);
    g_gpus.push_back({list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)});
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  const char* uuids = std::getenv("EMO_FAKE_NVML_UUIDS");
  for (std::size_t i = 0; i < g_gpus.size(); ++i) g_gpus[i].uuid_number = static_cast<int>(i);
  for (std::size_t i = 0, at = 0; uuids != nullptr && i < g_gpus.size() && uuids[at] != '\0'; ++i) {
    char* end = nullptr;
    g_gpus[i].uuid_number = static_cast<int>(std::strtol(uuids + at, &end, 10));
    at = static_cast<std::size_t>(end - uuids) + (*end == ',' ? 1 : 0);
  }
  if (const char* fail = std::getenv("EMO_FAKE_NVML_FAIL")) {
    std::string f = fail;
    std::size_t p = 0;
    while (p < f.size()) {
      std::size_t comma = f.find(',', p);
      if (comma == std::string::npos) comma = f.size();
      const std::string item = f.substr(p, comma - p);
      const std::size_t eq = item.find('=');
      if (eq != std::string::npos) g_fail[item.substr(0, eq)] = std::atoi(item.c_str() + eq + 1);
      p = comma + 1;
    }
  }
  if (const char* p = std::getenv("EMO_FAKE_NVML_POWER_W")) g_power_w = std::atof(p);
  g_curve = false;
  if (const char* c = std::getenv("EMO_FAKE_NVML_POWER_CURVE")) {
    g_curve = std::sscanf(c, "%lf,%lf,%lf", &g_static_w, &g_dynamic_w, &g_gamma) == 3;
    for (FakeGpu& g : g_gpus) {
      g.energy_mj = 1e6;  // a counter that started long ago
      g.since_s = now_s();
    }
  }
  const int rc = enter("nvmlInit_v2");
  g_initialised = rc == 0;
  for (std::size_t i = 0; g_initialised && i < g_gpus.size(); ++i) write_state(i);
  return rc;
}

__attribute__((visibility("default"))) int nvmlShutdown() {
  const int rc = enter("nvmlShutdown");
  g_initialised = false;
  return rc;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(int) { return "fake NVML error"; }

__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned* count) {
  if (int rc = enter("nvmlDeviceGetCount_v2")) return rc;
  *count = static_cast<unsigned>(g_gpus.size());
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** handle) {
  if (int rc = enter("nvmlDeviceGetHandleByIndex_v2", to_s(index))) return rc;
  if (index >= g_gpus.size()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *handle = &g_handles[index];
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetName(void* h, char* name, unsigned length) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceGetName", to_s(i))) return rc;
  if (i < 0) return 2;
  std::snprintf(name, length, "%s", g_gpus[i].name.c_str());
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetUUID(void* h, char* uuid, unsigned length) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceGetUUID", to_s(i))) return rc;
  if (i < 0) return 2;
  std::snprintf(uuid, length, "GPU-fake-0000-0000-0000-%012d", g_gpus[i].uuid_number);
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetSupportedMemoryClocks(void* h, unsigned* count,
                                                                              unsigned* clocks) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceGetSupportedMemoryClocks", to_s(i))) return rc;
  if (*count < 1) { *count = 1; return 7; }
  clocks[0] = 1593;
  *count = 1;
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetSupportedGraphicsClocks(void* h, unsigned mem,
                                                                                unsigned* count,
                                                                                unsigned* clocks) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceGetSupportedGraphicsClocks", to_s(i) + " " + to_s(mem))) return rc;
  if (mem != 1593) return 2;
  const auto v = sm_clocks();
  if (*count < v.size()) { *count = static_cast<unsigned>(v.size()); return 7; }
  std::memcpy(clocks, v.data(), v.size() * sizeof(unsigned));
  *count = static_cast<unsigned>(v.size());
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetClockInfo(void* h, int type, unsigned* mhz) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceGetClockInfo", to_s(i) + " " + to_s(type))) return rc;
  if (i < 0) return 2;
  if (type == 2) *mhz = g_gpus[i].locked_mem != 0 ? g_gpus[i].locked_mem : 1593;
  else *mhz = g_gpus[i].locked_sm != 0 ? g_gpus[i].locked_sm : 1410;
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(void* h, unsigned* mw) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceGetPowerUsage", to_s(i))) return rc;
  *mw = static_cast<unsigned>((g_curve && i >= 0 ? curve_power_w(static_cast<std::size_t>(i)) : g_power_w) * 1000);
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetTotalEnergyConsumption(void* h, unsigned long long* mj) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceGetTotalEnergyConsumption", to_s(i))) return rc;
  if (g_curve && i >= 0) {
    accumulate(static_cast<std::size_t>(i));
    *mj = static_cast<unsigned long long>(g_gpus[static_cast<std::size_t>(i)].energy_mj);
    return 0;
  }
  *mj = static_cast<unsigned long long>(g_power_w * now_s() * 1000);
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceSetGpuLockedClocks(void* h, unsigned lo, unsigned hi) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceSetGpuLockedClocks", to_s(i) + " " + to_s(lo) + " " + to_s(hi))) return rc;
  if (int rc = setter_permission()) return rc;
  if (i < 0) return 2;
  if (g_curve) accumulate(static_cast<std::size_t>(i));
  g_gpus[i].locked_sm = hi;
  write_state(static_cast<std::size_t>(i));
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceResetGpuLockedClocks(void* h) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceResetGpuLockedClocks", to_s(i))) return rc;
  if (int rc = setter_permission()) return rc;
  if (i < 0) return 2;
  if (g_curve) accumulate(static_cast<std::size_t>(i));
  g_gpus[i].locked_sm = 0;
  write_state(static_cast<std::size_t>(i));
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceSetMemoryLockedClocks(void* h, unsigned lo, unsigned hi) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceSetMemoryLockedClocks", to_s(i) + " " + to_s(lo) + " " + to_s(hi))) return rc;
  if (int rc = setter_permission()) return rc;
  if (i < 0) return 2;
  g_gpus[i].locked_mem = hi;
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceResetMemoryLockedClocks(void* h) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceResetMemoryLockedClocks", to_s(i))) return rc;
  if (int rc = setter_permission()) return rc;
  if (i < 0) return 2;
  g_gpus[i].locked_mem = 0;
  return 0;
}

/// nvmlProcessInfo_t (nvml.h, the v2 layout that nvmlDeviceGetComputeRunningProcesses_v3 fills).
struct FakeProcessInfo {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};

__attribute__((visibility("default"))) int nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned* count,
                                                                                   FakeProcessInfo* infos) {
  const int i = index_of(h);
  if (int rc = enter("nvmlDeviceGetComputeRunningProcesses_v3", to_s(i))) return rc;
  if (i < 0 || count == nullptr) return 2;
  std::vector<unsigned> pids;
  const char* path = std::getenv("EMO_FAKE_NVML_PROCS");
  if (FILE* f = path != nullptr && *path != '\0' ? std::fopen(path, "r") : nullptr) {
    int gpu = 0;
    unsigned pid = 0;
    while (std::fscanf(f, "%d %u", &gpu, &pid) == 2) {
      if (gpu == i) pids.push_back(pid);
    }
    std::fclose(f);
  }
  const unsigned room = *count;
  *count = static_cast<unsigned>(pids.size());
  if (room < pids.size()) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  for (std::size_t k = 0; k < pids.size(); ++k) infos[k] = FakeProcessInfo{pids[k], 0, 0xFFFFFFFFu, 0xFFFFFFFFu};
  return 0;
}

}  // extern "C"
