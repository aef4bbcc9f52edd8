// Running a whole traced iteration on the simulated device: the op graph replayed with every GPU
// op's ground-truth duration at the clock its GPU runs at, with run-to-run noise and the clock-
// switch latency applied. This is how `emo optimize` evaluates the baseline, the best static
// clock and EMO's policy on a machine without a GPU. Every figure is simulated.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "graph/dep_graph.h"
#include "runtime/run_breakdown.h"
#include "runtime/sim_device.h"
#include "trace/trace.h"

namespace emo::runtime {

/// A clock request on one GPU: the runtime asks for `clock_mhz` at `request_ns` (relative to the
/// window start); the clock takes effect `switch_latency_ms` later (SimDevice's GPU).
struct ClockRequest {
  std::int32_t device = 0;
  TimeNs request_ns = 0;
  double clock_mhz = 0;
  bool operator==(const ClockRequest&) const = default;
};

struct SimRunOptions {
  bool noise = true;          ///< Per-op log-normal time noise (GroundTruth::noise.time_sd).
  std::uint64_t seed = 1;     ///< Noise seed (independent of the device's own seed).
  int max_passes = 4;         ///< Fixed-point passes for clocks that depend on start times.
  /// With requests: the clock in effect on a device at the window start, before its first request
  /// takes effect (default: the GPU's max clock). A policy's first switch of an iteration is
  /// requested before the iteration starts (a negative request_ns).
  std::map<std::int32_t, double> initial_clock_mhz = {};
};

struct SimRunResult {
  TimeNs makespan_ns = 0;
  double energy_j = 0;                        ///< All GPUs: idle power over the makespan + ops' power above idle.
  std::map<std::int32_t, double> gpu_energy_j;  ///< Per device.
  std::int64_t clock_changes = 0;             ///< Requests that changed a GPU's clock.
  std::int64_t ops_at_other_clock = 0;        ///< GPU ops that ran (partly) before their pack's clock took effect.
  int passes = 0;
  bool simulated = true;
  /// Every GPU node as it ran (node order): start relative to the window start, duration, power
  /// above idle; pack = kNoRunPack (the caller knows the packs). For runtime::pack_costs and
  /// runtime::power_series.
  std::vector<RunOp> ops;
};

/// Replays `g` (built from `trace`) on `device`'s ground truth. Each GPU node n runs at
/// `node_clock_mhz[n]` (size g.nodes(); ignored for host nodes) — or, when `requests` is non-empty,
/// at the clock in effect on its device when it starts (the latest request whose request time +
/// switch latency ≤ its start; before any, SimRunOptions::initial_clock_mhz). Start times and
/// clocks are iterated to a fixed point (at most `max_passes` replays; a node's duration
/// recomputed only where its clock changed, each distinct ground truth's time ratio once per
/// clock). Energy per device = P_idle · makespan + Σ_ops (P_op(f) − P_idle) · t_op(f). Throws
/// std::invalid_argument on a size mismatch or a clock the device does not support.
SimRunResult run_on_sim(const trace::Trace& trace, const graph::DepGraph& g, const SimDevice& device,
                        std::span<const double> node_clock_mhz, const std::vector<ClockRequest>& requests = {},
                        const SimRunOptions& options = {});

/// The GPU ops of one graph run at static clocks on the simulated device, without the replay: at
/// one clock for every GPU op and no request, an op's time and power depend on that clock alone,
/// so each GPU node's duration and power above idle are run_on_sim's for the same `device`,
/// `options.seed` and clock, to the bit; the ground truths (one per op kind and name) and the
/// noise are drawn once for every clock asked, and each distinct truth's time ratio and power
/// evaluated once per clock. What the decomposed solve's static clocks need of a rank (each run is
/// then reduced to the rank's collective ports: job::ThreadRankWorker::statics), at a fraction of
/// run_on_sim's cost. `trace`, `g` and `device` must outlive it.
class StaticSimRuns {
 public:
  StaticSimRuns(const trace::Trace& trace, const graph::DepGraph& g, const SimDevice& device,
                const SimRunOptions& options = {});
  /// Every GPU node of the graph at `clock_mhz`: `dur` (resized to g.nodes(); host nodes keep
  /// g.dur) as run_on_sim's replay uses it; returns Σ over GPU nodes, in node order, of
  /// (P_op(f) − P_idle) · t_op(f) · 1e-9 (J), as a sum over run_on_sim's ops. Throws
  /// std::invalid_argument when the device does not support the clock.
  double run(double clock_mhz, std::vector<TimeNs>& dur) const;

 private:
  const graph::DepGraph& g_;
  const SimDevice& device_;
  std::vector<OpTruth> truth_;       ///< Each distinct truth (one per op kind and name).
  std::vector<std::uint32_t> key_;   ///< Per node (GPU nodes only): its index into truth_.
  std::vector<double> noise_;        ///< Per node: the time noise factor.
};

}  // namespace emo::runtime
