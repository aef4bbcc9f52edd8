// When `emo run` asks for a clock change, relative to the pack it is for (issue 26: the target
// holds). One rule, used by the runtime's SwitchPlanner (policy_runtime.h) and by the simulated
// device's evaluation of a policy (sim_backend.h: the SwitchPlanner itself, fed the replay's pack
// starts — closed loop, as `emo run` — since stop 46), so that what EMO measures is what it applies.
//
// A change takes effect one switch latency after it is asked for (DESIGN.md §3; the latency is the
// GPU catalog's switch_latency_ms). A switch *up* is asked for one latency before its pack: it
// takes effect by the pack's start, and the pack before ends at the higher clock — never later. A
// switch *down* is asked for a quarter of a latency before its pack (kDownLeadDivisor): it takes
// effect three quarters of a latency into the pack, whose head runs at the higher clock — never
// slower. (Not at the pack's start itself: where a change takes effect at once — the tests' NVML
// stand-in — a request at the predicted start would race the pack's first op.) So a switch that
// takes effect late never delays work; it costs some energy instead.
//
// Where the pack before has the slack for it, a switch down is asked for earlier (the policy's
// down_lead_ns, up to one latency: it then takes effect at its pack's start). The policy builder
// gives such a lead only where a switch that takes just the default lead (the rule above's own
// assumption) could not delay the iteration (driver::early_down_leads): the pack before's tail then
// runs at the lower clock, within its slack.
//
// A switch down followed within three quarters of a latency by a switch up would be asked for after
// it and take effect after it, holding the low clock through the next pack: such a switch down is
// overtaken, and dropped (the short pack it was for runs at the higher clock).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace emo::runtime {

/// A switch down is asked for this × the switch latency before its pack (file comment).
inline constexpr std::int64_t kDownLeadDivisor = 4;

/// How early (ns) a switch from `from_mhz` to `to_mhz` is asked for before its pack starts:
/// `latency_ns` up; down, the pack's `down_lead_ns` (policy::PackClock, capped at latency_ns) where
/// the policy gives one (≥ 0), else latency_ns / 4 (file comment).
inline std::int64_t switch_lead_ns(double from_mhz, double to_mhz, std::int64_t latency_ns,
                                   std::int64_t down_lead_ns = -1) noexcept {
  if (to_mhz > from_mhz) return latency_ns;
  return down_lead_ns >= 0 ? std::min(down_lead_ns, latency_ns) : latency_ns / kDownLeadDivisor;
}

/// Removes from `switches` (in pack order; `time_of(s)` the time it is asked for) every switch that
/// a later one is asked for no later than (file comment). What is left is strictly increasing in
/// time. O(n).
template <typename T, typename TimeOf>
void drop_overtaken(std::vector<T>& switches, TimeOf time_of) {
  std::vector<T> kept;
  std::int64_t next = std::numeric_limits<std::int64_t>::max();
  for (auto it = switches.rbegin(); it != switches.rend(); ++it) {
    if (time_of(*it) >= next) continue;
    next = time_of(*it);
    kept.push_back(std::move(*it));
  }
  switches.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
}

}  // namespace emo::runtime
