// A simulated GPU that stands in for hardware on machines without one (docs/design.md, "Devices without a
// GPU"). Every figure it produces is simulated and must be labelled so.
//
// Ground truth of one op at SM clock f (x = f / f_max of the GPU, t_ref = the op's traced
// duration, taken to be at f_max):
//   time    t(f) = t_ref · τ_c(x; β_op)                 (model/ground_truth.h, class c of the op)
//   power   P(f) = max(P_idle, level_op · P_limit · π_c(x))
// with β_op ~ N(β_c, sd) and level_op ~ N(level_c, sd) drawn deterministically from
// (seed, op name): the same kernel name always gets the same truth for one seed. Communication
// ops draw the GPU's blocked power at f_max (catalog; 1.39 × idle where not measured — the ratio
// Perseus measured on A100, 83.64 W / 60 W).
// A unit of work runs its ops stream by stream: each op starts after its stream predecessor,
// keeping the traced gap between them (gaps are launch or dependency waits, not clock-scaled);
// streams are independent. Its energy = P_idle · span + Σ_ops (P_op(f) − P_idle) · t_op(f)
// (board static power once, each concurrent op's power above idle added).
// Each run's time and energy get multiplicative log-normal noise (sd from the Perseus sweep,
// GroundTruth::noise), and energy is read from a counter that advances every
// `energy_counter_period_ms` in steps of `energy_counter_resolution_j`: a run shorter than one
// period may read 0 J or a whole period's energy, as on hardware.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/gpu_catalog.h"
#include "model/ground_truth.h"
#include "runtime/device.h"

namespace emo::runtime {

struct SimDeviceOptions {
  std::uint64_t seed = 1;        ///< Seeds per-op variation and run-to-run noise.
  bool noise = true;             ///< Run-to-run noise on time and energy.
  bool per_op_variation = true;  ///< Draw β and power level per op (else the class values).
  /// Energy counter update period, ms. Assumption: NVML reads board power at ~50 Hz on
  /// Ampere/Hopper; to be measured on the H200 (issue 9).
  double energy_counter_period_ms = 20;
  /// Energy counter resolution, J (NVML reports mJ).
  double energy_counter_resolution_j = 1e-3;
  model::GroundTruth ground_truth = model::builtin_ground_truth();
};

/// The ground truth of one op on a simulated device.
struct OpTruth {
  model::OpClass cls = model::OpClass::kMixed;
  double beta = 0;             ///< Drawn β of the time curve.
  double power_at_max_w = 0;   ///< P(f_max), W.
};

/// Noise-free time and energy of a unit of work.
struct TrueRun {
  std::int64_t time_ns = 0;
  double energy_j = 0;
};

class SimDevice final : public Device {
 public:
  /// Simulates `gpu` (a catalog entry). Throws std::invalid_argument when it lists no clocks.
  explicit SimDevice(const model::GpuSpec& gpu, SimDeviceOptions options = {});

  std::string name() const override { return gpu_.id + " (simulated)"; }
  bool simulated() const override { return true; }
  std::vector<double> supported_sm_clocks_mhz() const override { return gpu_.sm_clocks_mhz; }
  double sm_clock_mhz() override { return clock_mhz_; }
  /// Throws std::invalid_argument when `mhz` is not a supported clock (±0.5 MHz).
  void lock_sm_clock(double mhz) override;
  void reset_sm_clock() override;
  double energy_counter_j() override { return counter_j_; }
  double energy_counter_period_ms() const override { return options_.energy_counter_period_ms; }
  double power_w() override { return gpu_.idle_power_w; }
  double idle_power_w() const override { return gpu_.idle_power_w; }
  std::optional<double> blocked_power_w() const override { return blocked_power_; }
  double switch_latency_ms() const override { return gpu_.switch_latency_ms; }
  /// Throws std::invalid_argument for an unsupported clock, repetitions < 1, no ops, or an op
  /// with a non-positive duration.
  Measurement run(const Work& work, double clock_mhz) override;

  /// Lets `ns` pass with nothing running (at idle power, or blocked power when `blocked`).
  void idle(std::int64_t ns, bool blocked = false);
  /// Virtual time since the device was created, ns.
  std::int64_t now_ns() const { return now_ns_; }
  /// True energy since creation (what the counter approximates), J.
  double true_energy_j() const { return energy_j_; }

  /// Ground truth of `op` (deterministic for a seed and the op's name and kind). A kernel's is
  /// computed once per name and remembered (classifying the name is most of a simulated run's
  /// cost), so the const members of one SimDevice are not to be called from several threads
  /// at once.
  OpTruth truth(const WorkOp& op) const;
  /// Noise-free time of `op` at `clock_mhz`, ns (fractional).
  double true_time_ns(const WorkOp& op, double clock_mhz) const;
  /// The same for an op of truth `t` (from truth()) and traced duration `duration_ns` (ns).
  double true_time_ns(const OpTruth& t, std::int64_t duration_ns, double clock_mhz) const;
  /// Noise-free average power of `op` at `clock_mhz`, W.
  double true_power_w(const WorkOp& op, double clock_mhz) const;
  /// The same for an op of truth `t` (from truth()).
  double true_power_w(const OpTruth& t, double clock_mhz) const;
  /// Noise-free time and energy of `work` at `clock_mhz` (one repetition).
  TrueRun true_run(const Work& work, double clock_mhz) const;

  const model::GpuSpec& gpu() const { return gpu_; }
  const SimDeviceOptions& options() const { return options_; }

 private:
  /// std::hash of a name, so that kernel_truth_ is looked up by std::string_view.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };

  void check_clock(double mhz) const;
  void advance(std::int64_t ns, double power_w);

  model::GpuSpec gpu_;
  SimDeviceOptions options_;
  double blocked_power_;
  double clock_mhz_;
  std::int64_t now_ns_ = 0;
  double energy_j_ = 0;
  double counter_j_ = 0;
  std::int64_t next_update_ns_;
  std::mt19937_64 rng_;
  mutable std::unordered_map<std::string, OpTruth, NameHash, std::equal_to<>> kernel_truth_;  // by name
};

}  // namespace emo::runtime
