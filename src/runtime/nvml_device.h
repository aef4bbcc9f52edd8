// A real GPU behind NVML, implementing the same `Device` interface as the simulated device
// (runtime/sim_device.h), plus what only real hardware has: the memory-clock lock and a
// read-only status snapshot for `emo gpus`.
//
// Figures NVML does not report (idle and blocked power, switch latency, energy-counter period)
// come from the GPU catalog entry matching the NVML name (model/gpu_catalog.h), or documented
// defaults for a GPU the catalog does not know.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/gpu_catalog.h"
#include "runtime/device.h"
#include "runtime/nvml.h"

namespace emo::runtime {

/// What `emo gpus` shows for one GPU: a read-only snapshot.
struct GpuStatus {
  unsigned index = 0;
  std::string name;                  ///< NVML name, e.g. "NVIDIA A100-SXM4-80GB".
  std::string uuid;                  ///< nvmlDeviceGetUUID, e.g. "GPU-5a1c0e3b-…" (not remapped by CUDA_VISIBLE_DEVICES).
  std::string catalog_id;            ///< Catalog id ("A100-SXM4-80GB"), "" if unknown.
  unsigned sm_clock_mhz = 0;         ///< Current SM clock.
  unsigned memory_clock_mhz = 0;     ///< Current memory clock.
  std::vector<unsigned> sm_clocks_mhz;      ///< Supported SM clocks (at the highest memory clock), descending.
  std::vector<unsigned> memory_clocks_mhz;  ///< Supported memory clocks, descending.
  std::optional<double> power_w;     ///< Board power; absent where NVML does not support it.
  std::optional<double> energy_j;    ///< Total-energy counter; absent before Volta.
};

/// Snapshot of every GPU NVML sees, in NVML index order. Only reads. Throws NvmlError.
std::vector<GpuStatus> query_gpus(Nvml& nvml);

/// Defaults for a GPU missing from the catalog.
inline constexpr double kDefaultSwitchLatencyMs = 20;       ///< as the catalog's assumption
inline constexpr double kDefaultEnergyCounterPeriodMs = 20; ///< as the simulated device's

class NvmlDevice final : public Device {
 public:
  /// GPU `index` of `nvml`. Throws NvmlError when there is no such GPU.
  NvmlDevice(std::shared_ptr<Nvml> nvml, unsigned index);

  unsigned index() const noexcept { return index_; }
  /// The catalog entry of this GPU, or nullptr when the catalog does not know it.
  const model::GpuSpec* spec() const noexcept { return spec_; }

  std::string name() const override { return name_; }
  bool simulated() const override { return false; }
  std::vector<double> supported_sm_clocks_mhz() const override { return sm_clocks_mhz_; }
  double sm_clock_mhz() override;
  /// Locks min = max = `mhz` (nvmlDeviceSetGpuLockedClocks). Throws NvmlError for a clock
  /// the GPU does not list (±0.5 MHz), no permission, or an unsupported GPU.
  void lock_sm_clock(double mhz) override;
  /// nvmlDeviceResetGpuLockedClocks.
  void reset_sm_clock() override;
  double energy_counter_j() override;
  double energy_counter_period_ms() const override { return kDefaultEnergyCounterPeriodMs; }
  double power_w() override;
  /// Catalog idle power, W (0 when the GPU is not in the catalog).
  double idle_power_w() const override { return spec_ != nullptr ? spec_->idle_power_w : 0.0; }
  std::optional<double> blocked_power_w() const override {
    return spec_ != nullptr ? spec_->blocked_power_w : std::nullopt;
  }
  double switch_latency_ms() const override {
    return spec_ != nullptr && spec_->switch_latency_ms > 0 ? spec_->switch_latency_ms : kDefaultSwitchLatencyMs;
  }
  /// Locks `clock_mhz` (sleeping out the switch latency when it changes), reads the energy
  /// counter and the steady clock, calls `work.launch` `work.repetitions` times, reads both
  /// again. Throws std::invalid_argument when `work.launch` is empty or repetitions < 1.
  Measurement run(const Work& work, double clock_mhz) override;

  /// Locks the memory clock at `mhz` (one of the supported memory clocks).
  void lock_memory_clock(double mhz);
  /// nvmlDeviceResetMemoryLockedClocks.
  void reset_memory_clock();

 private:
  std::shared_ptr<Nvml> nvml_;
  unsigned index_;
  std::string name_;
  const model::GpuSpec* spec_ = nullptr;
  std::vector<double> sm_clocks_mhz_;
  std::vector<double> memory_clocks_mhz_;
  std::optional<double> locked_mhz_;
};

}  // namespace emo::runtime
