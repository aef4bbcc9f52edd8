// When to switch one GPU's SM clock, from observed pack starts (docs/runtime.md, "`emo run`:
// applying a policy"). Pure: no clocks, no I/O; `emo run` (policy_runtime.h) feeds it pack starts
// and applies the switches it returns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "policy/policy.h"
#include "runtime/progress_protocol.h"

namespace emo::runtime {

/// Why a switch is issued.
enum class SwitchReason : std::uint8_t {
  kEarly,    ///< switch_latency before the predicted start of its pack
  kLate,     ///< its pack was seen starting at another clock
  kDefault,  ///< the default clock after the last pack of the iteration
};
std::string_view switch_reason_name(SwitchReason r) noexcept;  ///< "early", "late", "default"

/// A clock change to issue at `t_ns`.
struct Switch {
  std::int64_t t_ns = 0;
  std::int32_t device = 0;
  std::int32_t pack = -1;      ///< Pack it is for; -1 for the default clock after the last pack.
  std::int64_t iteration = 0;
  double clock_mhz = 0;
  SwitchReason reason = SwitchReason::kEarly;
  bool deferred = false;       ///< Held back by the minimum switch interval (t_ns is when it was released).
};

/// Decides when to switch one GPU's clock, from observed pack starts. Pure: no clocks, no I/O.
///
/// On observing pack k of iteration i at t: the iteration's anchor is a = t − anchor_k, where
/// anchor_k is the predicted offset of the op the start is observed by (PackClock::
/// anchor_offset_ns(): offset_k itself, or a graph launch's or moved start's earlier or later
/// offset); pack j>k (j≥k when anchor_k < offset_k: the pack has not begun, its own switch is
/// planned) is predicted at a + offset_j and gets a switch at a + offset_j − lead — and at
/// a₀ + offset_j − lead, a₀ the anchor of the iteration's first observation: a switch up at the
/// earlier of the two, a switch down at the later (since stop 46: a pack held by another rank's
/// transfer does not follow the drift of the pack before it, and a switch that lands late never
/// delays work; re-anchored on an early start alone, a switch down landed in the tail of the pack
/// before and slowed it); the default clock follows at a + offset_last + duration_last − lead
/// (the same rule); once two iterations have been seen, pack 0
/// of the next one is predicted one observed iteration period later. Each observation replaces
/// the plan. Example (lead 2 ms; packs at 0/10/20 ms with clocks 1410/1200/1410; default 1410):
/// observe(pack 0 at 100 ms) plans {108 ms → 1200 (pack 1), 118 ms → 1410 (pack 2)}; the
/// default-clock switch equals pack 2's clock and is skipped when due. With pack 1 inside a CUDA
/// graph whose launch starts at 4 ms (anchor_offset_ns 4 ms): observing pack 1 (its graph launch)
/// at 105 ms anchors the iteration at 101 ms and plans {109 ms → 1200 (pack 1), 119 ms → 1410}.
///
/// Minimum interval (`min_interval_ns` > 0, the policy's min_switch_interval_ms): a switch that
/// would come sooner than the interval after the previous one issued on this GPU is *deferred*
/// to previous + interval; a switch that falls due while one is held replaces it (the held one
/// is dropped and counted in dropped(): only the newest clock matters), and a held switch to the
/// clock already requested is dropped as redundant. Example (lead 2 ms, interval 15 ms, packs at
/// 0/10/20/30 ms at 1200/990/1410/1100 MHz): pack 0 seen at 100 ms → 1200 at 100 (late); 990
/// due at 108 is held and issued at 115; 1410 due at 118 is held, replaced by 1100 due at 128,
/// which is issued at 130; the default 1410 due at 138 is issued at 145.
class SwitchPlanner {
 public:
  /// `gpu` from the policy; `lead_ns` = switch latency; `current_clock_mhz` = the clock in force
  /// (0 = unknown: the first switch is never skipped); `min_interval_ns` as above (0 = none).
  SwitchPlanner(policy::GpuPolicy gpu, std::int64_t lead_ns, double current_clock_mhz = 0,
                std::int64_t min_interval_ns = 0);

  /// Records an observed pack start and replans. Returns a late switch for that pack when the
  /// clock requested last is not its clock (issue it now), else nothing (also when the minimum
  /// interval holds it back: due() releases it; and when a replanned switch is already due at
  /// the observation, which supersedes it at once — counted in skipped()). Unknown pack indices
  /// are ignored.
  std::optional<Switch> observe(const PackStarted& p);
  /// Planned switches with t_ns ≤ now_ns, in time order, removed from the plan. Those to the
  /// clock requested last are dropped (counted in skipped()); the others become the new
  /// requested clock, unless the minimum interval holds them back (above).
  std::vector<Switch> due(std::int64_t now_ns);
  /// When the next planned or held switch is due, or nullopt when none is.
  std::optional<std::int64_t> next_due_ns() const;
  /// Records a switch to `clock_mhz` issued outside the planner at `t_ns` (the simulated
  /// device's steady-state switch for pack 0, which the previous iteration would have issued:
  /// runtime::planner_requests): it becomes the clock requested last, and the minimum interval
  /// counts from it as from one the planner issued.
  void issued_before(std::int64_t t_ns, double clock_mhz) noexcept;

  double requested_clock_mhz() const noexcept { return requested_mhz_; }
  std::int64_t skipped() const noexcept { return skipped_; }
  std::int64_t deferred() const noexcept { return deferred_; }  ///< Switches issued late by the interval.
  std::int64_t dropped() const noexcept { return dropped_; }    ///< Held switches replaced or made redundant.
  const policy::GpuPolicy& gpu() const noexcept { return gpu_; }

 private:
  /// How early a switch from `from_mhz` to `to_mhz` is planned before its pack (switch_timing.h;
  /// `down_lead_ns`: the pack's PackClock::down_lead_ns, -1 for the default clock).
  std::int64_t lead_for(double from_mhz, double to_mhz, std::int64_t down_lead_ns) const noexcept;
  /// Issues `s` at `now_ns` if the interval allows (returns it), else holds it.
  std::optional<Switch> issue_or_hold(Switch s, std::int64_t now_ns);

  policy::GpuPolicy gpu_;
  std::int64_t lead_ns_;
  double requested_mhz_;
  std::int64_t min_interval_ns_;
  std::vector<Switch> plan_;                 ///< Sorted by t_ns.
  std::map<std::int64_t, std::int64_t> iteration_anchor_ns_;  ///< iteration -> anchor
  std::map<std::int64_t, std::int64_t> first_anchor_ns_;      ///< iteration -> its first observation's anchor
  std::optional<Switch> held_;               ///< Held back by the minimum interval.
  std::optional<std::int64_t> last_issued_ns_;
  std::int64_t skipped_ = 0, deferred_ = 0, dropped_ = 0;
};

}  // namespace emo::runtime
