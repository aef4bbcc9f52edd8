#include "runtime/switch_planner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/switch_timing.h"

namespace emo::runtime {

std::string_view switch_reason_name(SwitchReason r) noexcept {
  switch (r) {
    case SwitchReason::kEarly: return "early";
    case SwitchReason::kLate: return "late";
    case SwitchReason::kDefault: return "default";
  }
  return "?";
}

SwitchPlanner::SwitchPlanner(policy::GpuPolicy gpu, std::int64_t lead_ns, double current_clock_mhz,
                             std::int64_t min_interval_ns)
    : gpu_(std::move(gpu)),
      lead_ns_(std::max<std::int64_t>(0, lead_ns)),
      requested_mhz_(current_clock_mhz),
      min_interval_ns_(std::max<std::int64_t>(0, min_interval_ns)) {}

std::int64_t SwitchPlanner::lead_for(double from_mhz, double to_mhz, std::int64_t down_lead_ns) const noexcept {
  return switch_lead_ns(from_mhz, to_mhz, lead_ns_, down_lead_ns);
}

std::optional<Switch> SwitchPlanner::issue_or_hold(Switch s, std::int64_t now_ns) {
  const std::int64_t earliest = last_issued_ns_ ? *last_issued_ns_ + min_interval_ns_ : now_ns;
  if (min_interval_ns_ > 0 && now_ns < earliest) {
    if (held_) ++dropped_;  // replaced: only the newest clock matters
    held_ = s;
    return std::nullopt;
  }
  if (std::abs(s.clock_mhz - requested_mhz_) <= 0.5) {  // redundant (a held one counts as dropped)
    ++(s.deferred ? dropped_ : skipped_);
    return std::nullopt;
  }
  if (s.deferred) {
    ++deferred_;
    s.t_ns = earliest;
  }
  requested_mhz_ = s.clock_mhz;
  last_issued_ns_ = s.deferred ? earliest : now_ns;
  return s;
}

std::optional<Switch> SwitchPlanner::observe(const PackStarted& p) {
  const auto& packs = gpu_.packs;
  if (p.pack < 0 || static_cast<std::size_t>(p.pack) >= packs.size()) return std::nullopt;
  const auto k = static_cast<std::size_t>(p.pack);
  // An observation is of the op the start is observed by (its anchor): the pack's own first op,
  // or a graph launch / moved start at anchor_offset_ns. Seen at or after the pack's start, the
  // pack has begun (a late switch if needed); seen before it, the pack's own switch is planned.
  const std::int64_t anchor_offset = packs[k].anchor_offset_ns();
  const bool begun = anchor_offset >= packs[k].start_offset_ns;
  if (held_) {  // an observed start supersedes a held switch: the replan below recreates what is still due
    held_.reset();
    ++dropped_;
  }
  const std::int64_t anchor = p.t_ns - anchor_offset;
  iteration_anchor_ns_[p.iteration] = anchor;
  while (iteration_anchor_ns_.size() > 2) iteration_anchor_ns_.erase(iteration_anchor_ns_.begin());
  const std::int64_t first_anchor = first_anchor_ns_.try_emplace(p.iteration, anchor).first->second;
  while (first_anchor_ns_.size() > 2) first_anchor_ns_.erase(first_anchor_ns_.begin());
  // A switch planned from both anchors, this one and the iteration's first: up at the earlier
  // time, down at the later — a switch that lands late never delays work (switch_timing.h), and
  // neither anchor knows whether the pack it is for follows the last pack's drift (a pack held
  // by another rank's transfer does not).
  auto at = [&](std::int64_t offset, double from_mhz, double to_mhz, std::int64_t down_lead_ns) {
    const std::int64_t lead = lead_for(from_mhz, to_mhz, down_lead_ns);
    const std::int64_t now = anchor + offset - lead, first = first_anchor + offset - lead;
    return to_mhz > from_mhz ? std::min(now, first) : std::max(now, first);
  };

  plan_.clear();
  // The clock before pack j: the previous pack's, or for pack 0 the default (else the last pack's).
  const double before_first = gpu_.default_clock_mhz > 0 ? gpu_.default_clock_mhz : packs.back().clock_mhz;
  auto before = [&](std::size_t j) { return j > 0 ? packs[j - 1].clock_mhz : before_first; };
  for (std::size_t j = begun ? k + 1 : k; j < packs.size(); ++j) {
    plan_.push_back({at(packs[j].start_offset_ns, before(j), packs[j].clock_mhz, packs[j].down_lead_ns), gpu_.device, packs[j].index,
                     p.iteration, packs[j].clock_mhz, SwitchReason::kEarly});
  }
  if (gpu_.default_clock_mhz > 0) {
    const auto& last = packs.back();
    plan_.push_back({at(last.start_offset_ns + last.duration_ns, last.clock_mhz, gpu_.default_clock_mhz, -1), gpu_.device,
                     -1, p.iteration, gpu_.default_clock_mhz, SwitchReason::kDefault});
  }
  const auto prev = iteration_anchor_ns_.find(p.iteration - 1);
  if (prev != iteration_anchor_ns_.end() && anchor > prev->second) {
    const std::int64_t period = anchor - prev->second;
    plan_.push_back({anchor + period + packs.front().start_offset_ns -
                         lead_for(before_first, packs.front().clock_mhz, packs.front().down_lead_ns),
                     gpu_.device, packs.front().index, p.iteration + 1, packs.front().clock_mhz, SwitchReason::kEarly});
  }
  // In pack order: a switch asked for no earlier than a later one is overtaken (switch_timing.h);
  // so is the default clock when it would land after the next iteration's first switch.
  drop_overtaken(plan_, [](const Switch& s) { return s.t_ns; });
  std::stable_sort(plan_.begin(), plan_.end(), [](const Switch& a, const Switch& b) { return a.t_ns < b.t_ns; });

  if (begun && std::abs(requested_mhz_ - packs[k].clock_mhz) > 0.5) {
    // A replanned switch already due (a later pack's, overdue from this anchor) supersedes the
    // late one at once: due() issues it now, so the late switch would be a wasted request.
    if (!plan_.empty() && plan_.front().t_ns <= p.t_ns) {
      ++skipped_;
      return std::nullopt;
    }
    return issue_or_hold(
        Switch{p.t_ns, gpu_.device, packs[k].index, p.iteration, packs[k].clock_mhz, SwitchReason::kLate}, p.t_ns);
  }
  return std::nullopt;
}

std::vector<Switch> SwitchPlanner::due(std::int64_t now_ns) {
  std::vector<Switch> out;
  // Releases the held switch if its time has come by `t` (events are taken in time order).
  auto release_by = [&](std::int64_t t) {
    if (!held_ || !last_issued_ns_ || t < *last_issued_ns_ + min_interval_ns_) return;
    Switch h = *held_;
    held_.reset();
    h.deferred = true;
    if (auto s = issue_or_hold(h, *last_issued_ns_ + min_interval_ns_)) out.push_back(*s);
  };
  std::size_t i = 0;
  for (; i < plan_.size() && plan_[i].t_ns <= now_ns; ++i) {
    release_by(plan_[i].t_ns);
    if (std::abs(plan_[i].clock_mhz - requested_mhz_) <= 0.5 && !held_) {
      ++skipped_;
      continue;
    }
    if (auto s = issue_or_hold(plan_[i], plan_[i].t_ns)) out.push_back(*s);
  }
  plan_.erase(plan_.begin(), plan_.begin() + static_cast<std::ptrdiff_t>(i));
  release_by(now_ns);
  return out;
}

void SwitchPlanner::issued_before(std::int64_t t_ns, double clock_mhz) noexcept {
  requested_mhz_ = clock_mhz;
  last_issued_ns_ = last_issued_ns_ ? std::max(*last_issued_ns_, t_ns) : t_ns;
}

std::optional<std::int64_t> SwitchPlanner::next_due_ns() const {
  std::optional<std::int64_t> t;
  if (!plan_.empty()) t = plan_.front().t_ns;
  if (held_ && last_issued_ns_) t = std::min(t.value_or(INT64_MAX), *last_issued_ns_ + min_interval_ns_);
  return t;
}

}  // namespace emo::runtime
