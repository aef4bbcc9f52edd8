#include "runtime/nvml_device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace emo::runtime {
namespace {

/// The value of `f()`, or nullopt when NVML says the query is not supported on this GPU.
template <typename F>
auto unless_unsupported(F&& f) -> std::optional<decltype(f())> {
  try {
    return f();
  } catch (const NvmlError& e) {
    if (e.code() == static_cast<int>(NvmlStatus::kNotSupported)) return std::nullopt;
    throw;
  }
}

std::vector<double> descending(const std::vector<unsigned>& v) {
  std::vector<double> out(v.begin(), v.end());
  std::sort(out.begin(), out.end(), std::greater<>());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// The supported clock within 0.5 MHz of `mhz`, or nullopt.
std::optional<double> supported(const std::vector<double>& clocks, double mhz) {
  for (double c : clocks) {
    if (std::abs(c - mhz) <= 0.5) return c;
  }
  return std::nullopt;
}

}  // namespace

std::vector<GpuStatus> query_gpus(Nvml& nvml) {
  std::vector<GpuStatus> out;
  const unsigned n = nvml.device_count();
  for (unsigned i = 0; i < n; ++i) {
    GpuStatus s;
    s.index = i;
    s.name = nvml.name(i);
    s.uuid = nvml.uuid(i);
    if (const auto* spec = model::GpuCatalog::builtin().find(s.name)) s.catalog_id = spec->id;
    s.sm_clock_mhz = nvml.clock_mhz(i, NvmlClock::kSm);
    s.memory_clock_mhz = nvml.clock_mhz(i, NvmlClock::kMemory);
    s.memory_clocks_mhz = unless_unsupported([&] { return nvml.supported_memory_clocks_mhz(i); }).value_or(
        std::vector<unsigned>{});
    std::sort(s.memory_clocks_mhz.begin(), s.memory_clocks_mhz.end(), std::greater<>());
    if (!s.memory_clocks_mhz.empty()) {
      s.sm_clocks_mhz = unless_unsupported([&] {
                          return nvml.supported_sm_clocks_mhz(i, s.memory_clocks_mhz.front());
                        }).value_or(std::vector<unsigned>{});
      std::sort(s.sm_clocks_mhz.begin(), s.sm_clocks_mhz.end(), std::greater<>());
    }
    s.power_w = unless_unsupported([&] { return nvml.power_mw(i) / 1000.0; });
    s.energy_j = unless_unsupported([&] { return static_cast<double>(nvml.total_energy_mj(i)) / 1000.0; });
    out.push_back(std::move(s));
  }
  return out;
}

NvmlDevice::NvmlDevice(std::shared_ptr<Nvml> nvml, unsigned index) : nvml_(std::move(nvml)), index_(index) {
  const unsigned n = nvml_->device_count();
  if (index_ >= n) {
    throw NvmlError(fmt::format("GPU {}", index_), fmt::format("no such GPU ({} visible to NVML)", n),
                    static_cast<int>(NvmlStatus::kNotFound));
  }
  name_ = nvml_->name(index_);
  spec_ = model::GpuCatalog::builtin().find(name_);
  memory_clocks_mhz_ = descending(nvml_->supported_memory_clocks_mhz(index_));
  if (!memory_clocks_mhz_.empty()) {
    sm_clocks_mhz_ = descending(
        nvml_->supported_sm_clocks_mhz(index_, static_cast<unsigned>(memory_clocks_mhz_.front())));
  }
}

double NvmlDevice::sm_clock_mhz() { return nvml_->clock_mhz(index_, NvmlClock::kSm); }

void NvmlDevice::lock_sm_clock(double mhz) {
  const auto clock = supported(sm_clocks_mhz_, mhz);
  if (!clock) {
    throw NvmlError(fmt::format("GPU {} ({})", index_, name_),
                    fmt::format("{} MHz is not a supported SM clock ({}-{} MHz)", mhz,
                                sm_clocks_mhz_.empty() ? 0 : sm_clocks_mhz_.back(),
                                sm_clocks_mhz_.empty() ? 0 : sm_clocks_mhz_.front()),
                    static_cast<int>(NvmlStatus::kInvalidArgument));
  }
  const auto c = static_cast<unsigned>(std::lround(*clock));
  nvml_->set_locked_sm_clocks(index_, c, c);
  locked_mhz_ = *clock;
}

void NvmlDevice::reset_sm_clock() {
  nvml_->reset_locked_sm_clocks(index_);
  locked_mhz_.reset();
}

double NvmlDevice::energy_counter_j() { return static_cast<double>(nvml_->total_energy_mj(index_)) / 1000.0; }

double NvmlDevice::power_w() { return nvml_->power_mw(index_) / 1000.0; }

Measurement NvmlDevice::run(const Work& work, double clock_mhz) {
  if (!work.launch) throw std::invalid_argument(work.label + ": no launch function for a real GPU");
  if (work.repetitions < 1) throw std::invalid_argument(work.label + ": repetitions must be at least 1");
  if (!locked_mhz_ || std::abs(*locked_mhz_ - clock_mhz) > 0.5) {
    lock_sm_clock(clock_mhz);
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(switch_latency_ms()));
  }
  const double e0 = energy_counter_j();
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < work.repetitions; ++r) work.launch();
  const auto t1 = std::chrono::steady_clock::now();
  const double e1 = energy_counter_j();
  Measurement m;
  m.clock_mhz = *locked_mhz_;
  m.repetitions = work.repetitions;
  m.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count() / work.repetitions;
  m.energy_j = (e1 - e0) / work.repetitions;
  m.simulated = false;
  return m;
}

void NvmlDevice::lock_memory_clock(double mhz) {
  const auto clock = supported(memory_clocks_mhz_, mhz);
  if (!clock) {
    throw NvmlError(fmt::format("GPU {} ({})", index_, name_),
                    fmt::format("{} MHz is not a supported memory clock", mhz),
                    static_cast<int>(NvmlStatus::kInvalidArgument));
  }
  const auto c = static_cast<unsigned>(std::lround(*clock));
  nvml_->set_locked_memory_clocks(index_, c, c);
}

void NvmlDevice::reset_memory_clock() { nvml_->reset_locked_memory_clocks(index_); }

}  // namespace emo::runtime
