// `emo optimize`: a trace in, a clock policy and its savings out (DESIGN §1–§6 end to end).
//
//   graph + slack (timing::analyze) → packs and pack graph (pack::run_pack)
//   → profile each pack on the device at K clocks (runtime::profile_work) → fit pack models
//   → options per pack at every trusted clock → opt::build_pack_problem → FastSolver at the
//   deadline (1 + max_slowdown) × the all-max-clock makespan, and the frontier
//   → exact re-evaluation on the pack graph (deadline tightened while it overshoots)
//   → policy (policy.h) → evaluation on the device: baseline (max clock), best static clock,
//   EMO's policy with its clock switches issued `switch_latency` early.
// On the simulated device every time and energy of the evaluation is simulated (ground truth +
// noise + switch latency), and says so. Profiling and evaluation go through an OptimizeBackend:
// the simulated device (the default) or a real GPU running the workload itself
// (policy/workload_backend.h, `emo optimize --device nvml`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "graph/dep_graph.h"
#include "model/clock_model.h"
#include "model/gpu_catalog.h"
#include "pack/report.h"
#include "policy/html_report.h"
#include "policy/policy.h"
#include "runtime/sim_device.h"
#include "trace/trace.h"

namespace emo::policy {

struct OptimizeOptions {
  double max_slowdown = 0.05;          ///< Latency target: baseline makespan × (1 + this). ≥ 0.
  int profile_clocks = 3;              ///< K clocks per pack (runtime::profiling_clocks).
  std::optional<trace::TimeNs> min_pack_ns;  ///< Default: the catalog's switch latency.
  std::uint64_t seed = 1;              ///< Simulated device and evaluation noise.
  int frontier_points = 24;            ///< Points of the predicted frontier (≥ 2).
};

/// One evaluated schedule (time and energy of one iteration window).
struct Evaluated {
  trace::TimeNs time_ns = 0;
  double energy_j = 0;
  double clock_mhz = 0;  ///< For the static schedules.
};

/// Everything `emo optimize` computes for one trace.
struct OptimizeResult {
  std::string trace_path;
  std::string gpu;                          ///< Catalog id.
  bool simulated = true;
  pack::PackRun packs;                      ///< Analysis, packing, pack graph, exactness.
  std::vector<double> profiled_clocks_mhz;  ///< The K clocks.
  std::vector<double> option_clocks_mhz;    ///< Clocks offered to the optimiser (trusted range).
  std::int64_t profiled_runs = 0;           ///< Pack-clock runs including repetitions.
  std::int64_t pack_clock_profiles = 0;     ///< packs × K.
  std::int64_t every_clock_profiles = 0;    ///< packs × supported clocks (what profiling every clock costs).
  double profiling_device_s = 0;            ///< Device time spent profiling.
  double profiling_iterations = 0;          ///< profiling_device_s / baseline iteration time.
  std::vector<double> pack_clock_mhz;       ///< Chosen clock per pack.
  trace::TimeNs target_ns = 0;              ///< Latency target (predicted baseline × (1 + max_slowdown)).
  Evaluated predicted_baseline, predicted_emo;  ///< From the models and the pack graph.
  std::vector<ReportPoint> frontier;        ///< Predicted (time s, energy J), ascending time.
  int deadline_repairs = 0;                 ///< Re-solves after an exact re-evaluation overshot.
  int polish_moves = 0;                     ///< Exact local-search moves after the fast solver.
  int greedy_wins = 0;                      ///< Solves where the exact local search from f_max beat the solver's plan.
  int probe_runs = 0;                       ///< Lowest-clock probe runs (0 or 1; counted in validation_runs).
  bool probe_kept = false;                  ///< The probe's plan measured cheaper within the target and was kept.
  int validation_runs = 0;                  ///< Policy runs on the device (re-optimised while one missed the target).
  std::int64_t negative_lags = 0;           ///< From the problem reduction.
  Evaluated baseline, static_best, emo;     ///< Evaluated on the device (simulated: ground truth).
  std::int64_t clock_switches = 0;          ///< Clock changes over the window in EMO's evaluation.
  std::int64_t ops_at_other_clock = 0;      ///< GPU ops that ran before their pack's clock took effect.
  std::vector<model::ClockModel> pack_models;  ///< Fitted model per pack.
  // On a real GPU (--device nvml) only:
  std::string device_label;                 ///< e.g. "GPU 0 (NVIDIA H200)"; "" on the simulated device.
  std::int64_t workload_runs = 0;           ///< Runs of the workload: profiling and evaluation.
  std::vector<std::vector<model::ClockPoint>> pack_points;  ///< Measured (clock, time, energy) per pack.
  std::int64_t packs_at_run_power = 0;      ///< Packs whose energy fell back to the run's mean power.
  Policy policy;
  double savings() const { return baseline.energy_j > 0 ? 1 - emo.energy_j / baseline.energy_j : 0; }
  double slowdown() const {
    return baseline.time_ns > 0 ? static_cast<double>(emo.time_ns) / static_cast<double>(baseline.time_ns) - 1 : 0;
  }
};

/// Where optimize() profiles the packs and evaluates schedules: the simulated device (built in,
/// the default) or a real GPU on which the workload itself runs (policy/workload_backend.h).
/// The pipeline between the two steps (models, problem, solver, policy) is the same.
class OptimizeBackend {
 public:
  virtual ~OptimizeBackend() = default;
  /// The device: supported clocks, idle power, switch latency; simulated() labels every figure.
  virtual runtime::Device& device() = 0;
  /// Measures every pack of `r.packs` at `r.profiled_clocks_mhz` and returns one fitted model
  /// per pack. Adds its cost to r.profiled_runs and r.profiling_device_s (s of device time);
  /// a real GPU also fills r.workload_runs, r.pack_points and r.packs_at_run_power. Throws
  /// emo::InputError when a pack cannot be measured.
  virtual std::vector<model::ClockModel> profile_packs(const trace::Trace& trace, OptimizeResult& r) = 0;
  /// One evaluated schedule with every pack at `clock_mhz` (one of the device's clocks).
  virtual Evaluated run_static(const trace::Trace& trace, OptimizeResult& r, double clock_mhz) = 0;
  /// Runs `r.policy` (per pack `r.pack_clock_mhz`) with its switches; fills r.emo,
  /// r.clock_switches and r.ops_at_other_clock.
  virtual void run_policy(const trace::Trace& trace, OptimizeResult& r) = 0;
  /// True: the best static clock is searched on the device over every option clock (an oracle,
  /// affordable when simulated). False: only the static clock the models predict best within
  /// the target is run.
  virtual bool static_oracle() const = 0;
  /// Policy runs at most: optimize() re-optimises with a tighter model target while a run misses
  /// the target, up to this many runs (≥ 1).
  virtual int max_validation_runs() const = 0;
};

/// Runs the whole pipeline for `trace` in `window` on `gpu`, with a simulated device. Throws
/// emo::InputError for an impossible request (no GPU ops in the window, max_slowdown < 0 or
/// not finite, profile_clocks < 2 or more than the GPU's clocks).
OptimizeResult optimize(const trace::Trace& trace, const graph::Window& window, const model::GpuSpec& gpu,
                        const OptimizeOptions& options);

/// The same pipeline with packs profiled and schedules evaluated on `backend` (options.seed is
/// the simulated backend's business). Throws what optimize() above throws, and what the
/// backend throws.
OptimizeResult optimize(const trace::Trace& trace, const graph::Window& window, const model::GpuSpec& gpu,
                        const OptimizeOptions& options, OptimizeBackend& backend);

/// A policy with every pack of `r.packs` at one clock, and the pack id (index into
/// r.packs.packing.packs) of each policy pack, per GPU in policy index order.
struct StaticPolicy {
  Policy policy;
  std::map<std::int32_t, std::vector<std::uint32_t>> pack_ids;
};

/// Every pack of `r.packs` (analysed, packed) and the default clock at `clock_mhz`; starts and
/// durations as recorded. Run through the policy runtime with the clock locked from the start,
/// it switches nothing: what `--device nvml` profiles and evaluates static clocks with.
StaticPolicy static_policy(const trace::Trace& trace, const OptimizeResult& r, const model::GpuSpec& gpu,
                           double clock_mhz);

/// The `emo optimize --json` object of one trace: baseline {time_ns, energy_j}, static_best
/// {clock_mhz, time_ns, energy_j}, emo {time_ns, energy_j, predicted_time_ns,
/// predicted_energy_j}, savings, slowdown (fractions vs the baseline), static_savings, packs,
/// profiled_runs, simulated, plus profiling, target and frontier details.
nlohmann::json to_json(const OptimizeResult& r);

/// The text table (baseline, best static clock, EMO), labelled simulated where it is.
std::string to_text(const OptimizeResult& r);

/// The HTML report's content for `r`.
HtmlReport to_report(const trace::Trace& trace, const OptimizeResult& r);

}  // namespace emo::policy
