// Stage 5 of `emo optimize`: a clock policy (policy/policy.h, docs/policy.md) from a plan — per
// pack its predicted start, end, clock and energy — and the packs of a trace.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "model/gpu_catalog.h"
#include "pack/pack_run.h"
#include "policy/policy.h"
#include "trace/trace.h"

namespace emo::driver {

/// One pack's part of a plan: predicted start and end (ns, the window's time base), clock (MHz)
/// and energy (J).
struct PackPlan {
  TimeNs start_ns = 0, end_ns = 0;
  double clock_mhz = 0, energy_j = 0;
  TimeNs down_lead_ns = -1;  ///< policy::PackClock::down_lead_ns (-1: the default lead).
};

/// What the policy header says about the plan (all predicted by the pack models).
struct PolicyHeader {
  double max_slowdown = 0;              ///< Fraction over the baseline.
  TimeNs latency_target_ns = 0;
  TimeNs baseline_time_ns = 0;          ///< Every GPU at its max clock.
  double baseline_energy_j = 0;
  TimeNs predicted_time_ns = 0;         ///< With this policy.
  double predicted_energy_j = 0;
  bool simulated = false;
};

/// The policy of `plan` (one entry per pack of `packs`, in pack id order) on `gpu`. Each pack
/// start records how `emo run` will observe it (policy::PackStart, docs/policy.md): by the call
/// that enqueued its first op — kernel launch, async copy, async memset, or the graph launch it
/// is inside (then anchored at the launch's predicted start, with its index in the launch) — as
/// classified by tracer::watch_kind_of_api and numbered as the tracer counts calls; a first op
/// whose call the tracer does not follow (a synchronous copy, an unknown call) is moved to the
/// nearest observable op on its GPU (the pack itself is unchanged); with none, observed_by is
/// "none" (emo run refuses the policy). Per GPU the packs are sorted by predicted start. `ids`, when given,
/// receives per GPU the pack id of each policy pack (policy index order). Throws
/// std::invalid_argument when plan.size() != the number of packs.
policy::Policy make_policy(const trace::Trace& trace, const pack::PackRun& packs, const std::vector<PackPlan>& plan,
                           const model::GpuSpec& gpu, const PolicyHeader& header,
                           std::map<std::int32_t, std::vector<std::uint32_t>>* ids = nullptr);

/// make_policy for many plans of one packing (the search evaluates tens per trace): the window's
/// observable calls — which call enqueued each GPU op and how the tracer numbers it, O(ops log ops)
/// to find — found once, at construction, instead of once per plan. `trace` and `packs` are
/// borrowed and must outlive the builder. make(...) == make_policy(trace, packs, ...).
class PolicyBuilder {
 public:
  PolicyBuilder(const trace::Trace& trace, const pack::PackRun& packs);
  ~PolicyBuilder();
  PolicyBuilder(const PolicyBuilder&) = delete;
  PolicyBuilder& operator=(const PolicyBuilder&) = delete;
  /// As make_policy, on the builder's trace and packs.
  policy::Policy make(const std::vector<PackPlan>& plan, const model::GpuSpec& gpu, const PolicyHeader& header,
                      std::map<std::int32_t, std::vector<std::uint32_t>>* ids = nullptr) const;
  /// The packs the builder was made for.
  const pack::PackRun& packs() const noexcept { return packs_; }

 private:
  struct Calls;  // the window's observable calls (policy_builder.cpp)
  const trace::Trace& trace_;
  const pack::PackRun& packs_;
  std::unique_ptr<const Calls> calls_;
};

/// A policy with every pack at one clock, and the pack id (index into packs.packing.packs) of
/// each policy pack, per GPU in policy index order.
struct StaticPolicy {
  policy::Policy policy;
  std::map<std::int32_t, std::vector<std::uint32_t>> pack_ids;
};

/// Every pack of `packs` and the default clock at `clock_mhz`; starts and durations as recorded.
/// Run through the policy runtime with the clock locked from the start, it switches nothing: what
/// `--device nvml` profiles and evaluates static clocks with.
StaticPolicy static_policy(const trace::Trace& trace, const pack::PackRun& packs, const model::GpuSpec& gpu,
                           double clock_mhz);

}  // namespace emo::driver
