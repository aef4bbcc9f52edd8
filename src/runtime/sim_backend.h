// The simulated device as an OptimizeBackend (runtime/backend.h): each pack replayed alone at each
// profiled clock (runtime::profile_work), the whole op graph replayed for an evaluation
// (runtime::run_on_sim; a policy's switches in closed loop, as `emo run` issues them:
// run_policy_closed_loop). Every figure it returns is simulated.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "runtime/backend.h"
#include "runtime/sim_device.h"
#include "runtime/sim_run.h"

namespace emo::runtime {

/// Pack `p` of `packing` as a unit of work for a device: each stream's ops back to back (the gaps
/// inside a pack are launch or dependency waits that the pack graph models; profiling measures
/// the work). Durations of at least 1 ns.
Work pack_work(const trace::Trace& t, const graph::DepGraph& g, const pack::Packing& packing, std::uint32_t p);

/// Pack clocks → per-node clocks of the op graph (0 for host nodes and ops in no pack).
std::vector<double> node_clocks(const graph::DepGraph& g, const pack::Packing& packing,
                                const std::vector<double>& pack_clock_mhz);

/// The clock requests of one iteration of `policy`: for each pack whose clock differs from the
/// previous one's, a switch `latency_ns` before it when its clock is higher, latency_ns / 4 when
/// lower (as `emo run` plans them: SwitchPlanner::lead_for); the iteration starts at its last pack's clock (steady
/// state), returned per device in `initial_clock_mhz`.
std::vector<ClockRequest> switch_requests(const policy::Policy& policy, TimeNs latency_ns,
                                          std::map<std::int32_t, double>& initial_clock_mhz);

/// `requests` (one iteration, any devices) as `emo run` issues them under a minimum switch
/// interval (SwitchPlanner's rule, runtime/policy_runtime.h): per device, a request due less than
/// `min_interval_ns` after the last one issued is held until that interval has passed, a newer
/// request replaces a held one, and a request for the clock already requested is dropped.
/// `initial_clock_mhz` is each device's clock before the first request. Returned in time order per
/// device (devices ascending). min_interval_ns ≤ 0: `requests` unchanged.
std::vector<ClockRequest> hold_to_interval(std::vector<ClockRequest> requests, TimeNs min_interval_ns,
                                           const std::map<std::int32_t, double>& initial_clock_mhz);

/// The clock requests of one iteration of `policy` as `emo run` issues them: switch_requests
/// (early by `latency_ns` up, a quarter of it down) held to the policy's minimum switch interval
/// (hold_to_interval). Each device's clock before its first request (its last pack's) into
/// `initial_clock_mhz`.
std::vector<ClockRequest> issued_requests(const policy::Policy& policy, TimeNs latency_ns,
                                          std::map<std::int32_t, double>& initial_clock_mhz);

/// Pack starts as `emo run` observes them in a simulated run: per GPU of `policy` (its order), per
/// pack, the start (ns from the window start) of the pack's first GPU op in `run`; INT64_MAX where
/// the pack ran no op. `packing` is the packing the policy was built on (each device's packs, in
/// time order, are that GPU's packs in the policy). Throws std::invalid_argument when a GPU's pack
/// count differs from the packing's.
std::vector<std::vector<TimeNs>> observed_pack_starts(const policy::Policy& policy, const pack::Packing& packing,
                                                      const SimRunResult& run);

/// The clock requests `emo run` issues in one iteration of `policy` when its packs start at
/// `observed_ns` (observed_pack_starts): per GPU, its SwitchPlanner (runtime/switch_planner.h:
/// re-anchored on each observed pack start, early by `latency_ns` up and a quarter of it down,
/// overtaken switches dropped, held to the policy's minimum switch interval, a late switch when a
/// pack is seen starting at another clock) fed the observations in time order, the switches it
/// issues in between taken at their times. The iteration starts at its last pack's clock, as in
/// steady state; where pack 0's clock differs, its switch is asked at its predicted start less the
/// lead (the previous iteration's planner predicts it from the period) — the same first request as
/// switch_requests — and the minimum interval counts from it (SwitchPlanner::issued_before; since
/// stop 47). Each device's clock before its first request into `initial_clock_mhz`.
/// Throws std::invalid_argument when `observed_ns` is not one list per GPU of the pack counts.
std::vector<ClockRequest> planner_requests(const policy::Policy& policy, TimeNs latency_ns,
                                           const std::vector<std::vector<TimeNs>>& observed_ns,
                                           std::map<std::int32_t, double>& initial_clock_mhz);

/// Replays of a graph with clock requests (run_on_sim's, or a caller's own replay of the same graph).
using RequestReplay = std::function<SimRunResult(const std::vector<ClockRequest>& requests,
                                                 const std::map<std::int32_t, double>& initial_clock_mhz)>;
/// The pack starts `emo run` observes in a replay (observed_pack_starts, or a caller's own units).
using StartObserver = std::function<std::vector<std::vector<TimeNs>>(const SimRunResult& run)>;

/// Replays at most for one policy run in closed loop (run_policy_closed_loop).
inline constexpr int kClosedLoopReplays = 4;

/// `policy` run as `emo run` applies it — closed loop: each GPU's switches re-planned from the pack
/// starts it observes (SwitchPlanner), not fixed in advance. A pack entered by a switch down runs
/// its head at the higher clock and ends early, so the packs after it can start before their
/// predicted starts; a switch asked at a fixed time would then land late, inside its pack, where
/// `emo run`, re-anchored on the early start, asks for it early. Replayed to a fixed point: first
/// with issued_requests (every pack at its predicted start), then with planner_requests from the
/// last replay's starts (`observe`), until the requests repeat (the replay is then a run of the
/// closed loop: each request depends only on starts before it) or kClosedLoopReplays replays were
/// made (the last is returned). The requests of the returned replay into `requests_out` and each
/// device's clock before them into `initial_out` (when given). Throws what `replay`, `observe` and
/// planner_requests throw.
SimRunResult run_policy_closed_loop(const policy::Policy& policy, TimeNs latency_ns, const RequestReplay& replay,
                                    const StartObserver& observe, std::vector<ClockRequest>* requests_out = nullptr,
                                    std::map<std::int32_t, double>* initial_out = nullptr);

/// The simulated device's ground truth of every pack of `packs` at each of `clocks_mhz`: per
/// pack, one (clock MHz, time s, energy J) point per clock, in the order of `clocks_mhz`. A pack
/// is the same unit of work that SimBackend::profile_packs measures (pack_work: its ops back to
/// back per stream), evaluated by SimDevice::true_run: noise-free (no run-to-run noise, no
/// energy-counter steps, no repetitions), time rounded to the ns. The true costs of
/// `emo optimize --true-optimum` (driver/true_optimum.h). Throws std::invalid_argument for a
/// clock the device does not support, and what true_run throws.
std::vector<std::vector<model::ClockPoint>> true_pack_points(const SimDevice& device, const trace::Trace& trace,
                                                             const pack::PackRun& packs,
                                                             const std::vector<double>& clocks_mhz);

class SimBackend final : public OptimizeBackend {
 public:
  /// A simulated `gpu`; `seed` draws the per-op variation, seed + 1 the evaluation noise.
  SimBackend(const model::GpuSpec& gpu, std::uint64_t seed);
  Device& device() override { return device_; }
  bool static_oracle() const override { return true; }
  int max_validation_runs() const override { return 4; }
  PackProfiles profile_packs(const trace::Trace& trace, const pack::PackRun& packs,
                             const std::vector<double>& clocks_mhz) override;
  PackProfiles profile_pack_clocks(const trace::Trace& trace, const pack::PackRun& packs,
                                   const std::vector<std::vector<double>>& clocks_mhz) override;
  RunMeasurement run_static(const trace::Trace& trace, const pack::PackRun& packs, double clock_mhz) override;
  RunMeasurement run_policy(const trace::Trace& trace, const pack::PackRun& packs, const policy::Policy& policy,
                            const std::vector<double>& pack_clock_mhz) override;

 private:
  SimDevice device_;
  SimRunOptions run_opts_;
};

}  // namespace emo::runtime
