// The `Device` interface: what EMO needs from a GPU to profile work at a few SM clocks, apply a
// clock policy and measure energy (docs/design.md §6). Implemented by the simulated device
// (runtime/sim_device.h) and by the NVML device of a real GPU, so profiling and policy evaluation
// run the same code on both.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"
#include "trace/trace.h"

namespace emo::runtime {

/// One GPU op of a unit of work, as traced at the reference clock (the GPU's maximum SM clock).
struct WorkOp {
  std::string name;                            ///< Kernel name (the simulated device classifies by it).
  trace::OpKind kind = trace::OpKind::kKernel;  ///< kernel, memcpy or memset.
  std::int32_t stream = 0;                     ///< Stream id; ops on one stream run in start order.
  std::int64_t start_ns = 0;     ///< Start relative to the work's start, ns, at the reference clock.
  std::int64_t duration_ns = 0;  ///< Duration at the reference clock, ns (> 0).
};

/// A unit of work to run at one clock: a pack, or any list of ops.
struct Work {
  std::string label;              ///< For logs and errors, e.g. "gpu0 pack 3".
  std::vector<WorkOp> ops;        ///< What the simulated device runs.
  std::function<void()> launch;   ///< What a real device runs: launches the work once and waits for it.
  int repetitions = 1;            ///< Back-to-back runs; a Measurement is their mean (≥ 1).
};

/// The result of running a Work at one clock: means per repetition.
struct Measurement {
  double clock_mhz = 0;     ///< SM clock the work ran at, MHz.
  std::int64_t time_ns = 0; ///< Wall time per repetition, ns.
  double energy_j = 0;      ///< Energy per repetition from the device's energy counter, J.
  int repetitions = 1;
  bool simulated = false;   ///< True when a simulated device produced it (say so in every output).
  double power_w() const { return time_ns > 0 ? energy_j / ns_to_s(time_ns) : 0.0; }
};

/// A GPU whose SM clock EMO can read and lock, whose energy it can measure, and on which it can
/// run a unit of work. Errors (unsupported clock, no permission, no driver) throw
/// std::runtime_error (or a subclass) with a one-line message naming the GPU.
class Device {
 public:
  virtual ~Device() = default;
  /// GPU model, e.g. "A100-SXM4-80GB"; a simulated device adds " (simulated)".
  virtual std::string name() const = 0;
  virtual bool simulated() const = 0;
  /// Supported SM clocks, MHz, descending.
  virtual std::vector<double> supported_sm_clocks_mhz() const = 0;
  /// Current SM clock, MHz.
  virtual double sm_clock_mhz() = 0;
  /// Locks the SM clock at `mhz` (one of the supported clocks). Takes effect after the switch
  /// latency.
  virtual void lock_sm_clock(double mhz) = 0;
  /// Restores the default clock behaviour (unlocked, the GPU's own boost).
  virtual void reset_sm_clock() = 0;
  /// Total energy counter, J (NVML: mJ since the driver loaded). Monotone; advances in steps.
  virtual double energy_counter_j() = 0;
  /// How often the energy counter advances, ms.
  virtual double energy_counter_period_ms() const = 0;
  /// Current board power, W.
  virtual double power_w() = 0;
  /// Power with nothing running, W.
  virtual double idle_power_w() const = 0;
  /// Power while blocked in communication (spinning on a collective), W; absent if unknown.
  virtual std::optional<double> blocked_power_w() const = 0;
  /// Time from a clock-lock request to the new clock, ms.
  virtual double switch_latency_ms() const = 0;
  /// Locks `clock_mhz` (waiting out the switch latency if it changes), runs `work`
  /// `work.repetitions` times back to back, and returns the mean time and energy per run.
  virtual Measurement run(const Work& work, double clock_mhz) = 0;
};

/// Repetitions needed for a run of `time_s` to span at least `periods` energy-counter periods
/// (so that the counter's steps cost at most ~1/periods of the energy); ≥ 1.
int repetitions_for(double time_s, const Device& device, int periods = 10);

}  // namespace emo::runtime
