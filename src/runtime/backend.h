// Where `emo optimize` measures: an OptimizeBackend profiles the packs of a trace at a few clocks
// and evaluates whole schedules. Two exist: the simulated device (runtime/sim_backend.h, built in)
// and a real GPU running the workload itself (driver/workload_backend.h, `--device nvml`).
// Backends return measurements; what to profile, which schedules to run and what the results
// mean is the driver's business (driver/optimize.h).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/progress.h"
#include "model/clock_model.h"
#include "pack/pack_run.h"
#include "policy/policy.h"
#include "runtime/device.h"
#include "runtime/run_breakdown.h"
#include "trace/trace.h"

namespace emo::runtime {

/// Measured (clock MHz, time s, energy J) points of every pack, and what measuring cost.
struct PackProfiles {
  std::vector<std::vector<model::ClockPoint>> points;  ///< Per pack: one point per profiled clock.
  std::int64_t runs = 0;            ///< Device runs, repetitions included (a real GPU: workload runs).
  double device_s = 0;              ///< Device time spent measuring, s.
  std::int64_t packs_at_run_power = 0;  ///< Pack points whose energy fell back to the run's mean power.
};

/// One evaluated schedule: one iteration (the trace's window) on the device.
struct RunMeasurement {
  TimeNs time_ns = 0;                    ///< Makespan, ns.
  double energy_j = 0;                   ///< Energy of every GPU over the makespan, J.
  double clock_mhz = 0;                  ///< The clock of a static run; 0 for a policy run.
  std::int64_t clock_switches = 0;       ///< Clock changes the policy asks for per iteration (policy runs:
                                         ///< runtime::issued_requests; on the simulated device the closed
                                         ///< loop may issue a few more or fewer, sim_backend.h).
  std::int64_t ops_at_other_clock = 0;   ///< GPU ops that ran before their pack's clock took effect
                                         ///< (simulated device only; 0 on a real GPU).
  PackCosts pack_costs;                  ///< Per pack of the run (simulated device only; packs empty
                                         ///< on a real GPU: not measured).
  PowerSeries power;                     ///< Power over the iteration (simulated device only; empty
                                         ///< on a real GPU: not measured).
  std::map<std::int32_t, double> gpu_energy_j;  ///< Per device (the trace's device; a linked job's rank
                                         ///< position): J over the makespan, summing to energy_j
                                         ///< (simulated device only; empty on a real GPU: not measured).
};

class OptimizeBackend {
 public:
  virtual ~OptimizeBackend() = default;
  /// The device: supported clocks, idle power, switch latency; simulated() labels every figure.
  virtual Device& device() = 0;
  /// Measures every pack of `packs` at each of `clocks_mhz`. Throws emo::InputError when a pack
  /// cannot be measured, and what the device throws.
  virtual PackProfiles profile_packs(const trace::Trace& trace, const pack::PackRun& packs,
                                     const std::vector<double>& clocks_mhz) = 0;
  /// Measures pack p at each clock of `clocks_mhz[p]` (one list per pack of `packs`, empty: not
  /// measured) — the refinement profiles of docs/optimize.md ("profile where you decide"). Returns
  /// per pack the points in the order asked (empty where nothing was asked) and the cost. Throws
  /// std::invalid_argument when clocks_mhz.size() != the number of packs, and what profile_packs throws.
  virtual PackProfiles profile_pack_clocks(const trace::Trace& trace, const pack::PackRun& packs,
                                           const std::vector<std::vector<double>>& clocks_mhz) = 0;
  /// One iteration with every pack at `clock_mhz` (one of the device's clocks).
  virtual RunMeasurement run_static(const trace::Trace& trace, const pack::PackRun& packs, double clock_mhz) = 0;
  /// One iteration under `policy`, whose packs run at `pack_clock_mhz` (per pack of `packs`), with
  /// its clock switches issued one switch latency early.
  virtual RunMeasurement run_policy(const trace::Trace& trace, const pack::PackRun& packs,
                                    const policy::Policy& policy, const std::vector<double>& pack_clock_mhz) = 0;
  /// True: the best static clock is searched on the device over every option clock (an oracle,
  /// affordable when simulated). False: only the static clock the models predict best is run.
  virtual bool static_oracle() const = 0;
  /// Policy runs at most (≥ 1): the driver re-plans with a tighter model target while a run
  /// misses the target, up to this many runs.
  virtual int max_validation_runs() const = 0;
  /// Runs of the workload so far (a real GPU); 0 for the simulated device.
  virtual std::int64_t workload_runs() const { return 0; }
  /// The GPU in outputs, e.g. "GPU 0 (NVIDIA H200)"; "" for the simulated device.
  virtual std::string label() const { return ""; }
  /// Where the measuring calls report their units (null: nowhere; not owned): the driver starts
  /// each stage, the backend calls Progress::expect with the units a call will take and steps
  /// once per unit done — a pack measured on the simulated device, a workload run on a real GPU,
  /// and one per run_static / run_policy.
  void set_progress(Progress* progress) { progress_ = progress; }

 protected:
  /// Progress::expect(n) on the progress set, if any.
  void expect_units(std::int64_t n) const {
    if (progress_ != nullptr) progress_->expect(n);
  }
  /// Progress::step() on the progress set, if any.
  void unit_done() const {
    if (progress_ != nullptr) progress_->step();
  }

 private:
  Progress* progress_ = nullptr;
};

/// Clock changes per iteration of `policy`: one per change of clock between consecutive packs of
/// a GPU, the iteration starting at its last pack's clock (steady state) — the number of
/// runtime::switch_requests (runtime/sim_backend.h).
std::int64_t switches_per_iteration(const policy::Policy& policy);

}  // namespace emo::runtime
