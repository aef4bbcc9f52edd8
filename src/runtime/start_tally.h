// Which pack starts `emo run` saw, per policy section and iteration (issue 32): so that a policy
// that switched nothing cannot look like one that worked (docs/runtime.md, "Seen / expected").
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "runtime/policy_runtime.h"

namespace emo::runtime {

/// "3/3 in iterations 0-4, 0/3 in iteration 5": runs of equal counts of `seen` (per iteration,
/// StartTally::seen) out of `expected`; "none seen of 3 per iteration" when `seen` is empty.
std::string seen_summary(const std::vector<std::int64_t>& seen, std::int64_t expected);

/// Warning text (without "emo run: warning: ") for policy section `section` whose iterations saw
/// `seen` pack starts (StartTally::seen): when some iteration saw none, or none was seen at all
/// (`seen` empty); "" otherwise. seen_warning(0, {3, 0, 2}) names 1 of 3 iterations: (1).
std::string seen_warning(std::int32_t section, const std::vector<std::int64_t>& seen);

/// Counts the pack starts seen per section and iteration. One observation covers every pack of
/// its section observed by the same op (same observed_by, stream, ordinal and name or graph
/// identity: the packs of one graph launch, or a start moved onto another pack's op), since the
/// tracer reports the lowest of them and the planner plans the rest from that anchor.
/// Example: packs 0 (copy), 1 and 2 (graph launch 0, indices 2 and 5); observing pack 0 and
/// pack 1 in iteration 0 gives seen(0) == {3} of expected 3.
class StartTally {
 public:
  explicit StartTally(const policy::Policy& p);

  /// Records an observation (unknown sections or pack indices are ignored).
  void record(const PackStarted& p);

  /// Section `device`'s packs seen in iterations 0..last seen (0 for an iteration with none);
  /// empty when none was seen at all.
  std::vector<std::int64_t> seen(std::int32_t device) const;
  /// Packs per iteration in section `device` (0 for an unknown section).
  std::int64_t expected(std::int32_t device) const;
  /// Sections in policy order.
  const std::vector<std::int32_t>& sections() const noexcept { return order_; }


 private:
  std::vector<std::int32_t> order_;
  std::map<std::int32_t, std::vector<std::vector<std::int32_t>>> covers_;  ///< device -> pack -> packs it covers
  std::map<std::int32_t, std::map<std::int64_t, std::set<std::int32_t>>> seen_;  ///< device -> iteration -> packs
};

}  // namespace emo::runtime
