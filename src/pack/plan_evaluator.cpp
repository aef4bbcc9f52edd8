#include "pack/plan_evaluator.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace emo::pack {

using graph::DepGraph;
using graph::kDroppedLag;

namespace {

/// slot_base_ of a dropped edge: low enough that no weight lifts it to the plan's end.
constexpr TimeNs kNoSlot = INT64_MIN / 4;

/// Weight of changed-edge slot `s` (0: the duration edge, then the port edges) under `t`.
TimeNs slot_weight(const PackTime& t, std::uint32_t s) { return s == 0 ? t.dur_ns : t.port_lags_ns[s - 1]; }

}  // namespace

PlanEvaluator::PlanEvaluator(const PackGraph& pg, std::vector<PackTime> times)
    : pg_(pg), times_(std::move(times)), schedule_(pg.evaluate(times_)) {
  // last_node: the highest node ending at the end (apply_slower keeps it so incrementally).
  for (std::uint32_t n = 0; n < pg_.g.nodes(); ++n) {
    if (schedule_.time[DepGraph::end_tp(n)] == schedule_.end_ns) schedule_.last_node = n;
  }
  build_rank_graph();
  find_feedback();
  compute_tails();
  compute_slot_base();
  scratch_.assign(time_.size(), INT64_MIN);
  pending_.assign(time_.size() / 64 + 1, 0);
  source_cache_.resize(pg_.packs);
}

void PlanEvaluator::build_rank_graph() {
  const DepGraph& g = pg_.g;
  const std::size_t R = g.topo.size();
  std::vector<std::uint32_t> rank(R), slot_of_edge(g.edges(), UINT32_MAX);
  for (std::uint32_t r = 0; r < R; ++r) rank[g.topo[r]] = r;
  slot_begin_.assign(pg_.packs + 1, 0);
  for (std::uint32_t p = 0; p < pg_.packs; ++p) {
    slot_begin_[p + 1] = slot_begin_[p] + 1 + (pg_.pe_begin[p + 1] - pg_.pe_begin[p]);
    for (std::uint32_t k = pg_.pe_begin[p]; k < pg_.pe_begin[p + 1]; ++k) {
      slot_of_edge[pg_.pe_edge[k]] = slot_begin_[p] + 1 + (k - pg_.pe_begin[p]);
    }
  }
  slot_from_.assign(slot_begin_.back(), 0);
  slot_to_.assign(slot_begin_.back(), 0);
  slot_edge_.assign(slot_begin_.back(), UINT32_MAX);
  auto add_edge = [&](std::uint32_t from, std::uint32_t to, TimeNs lag, std::uint32_t slot) {
    if (slot != UINT32_MAX) slot_from_[slot] = from, slot_to_[slot] = to, slot_edge_[slot] = in_from_.size();
    in_from_.push_back(from), in_lag_.push_back(lag), in_slot_.push_back(slot);
  };
  in_begin_.assign(1, 0);
  for (std::uint32_t r = 0; r < R; ++r) {
    const std::uint32_t tp = g.topo[r], n = DepGraph::node_of(tp);
    if (DepGraph::is_end(tp)) {
      const bool pack = n < pg_.packs;
      add_edge(rank[tp - 1], r, pack ? times_[n].dur_ns : g.dur[n], pack ? slot_begin_[n] : UINT32_MAX);
    }
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_lag[k] == kDroppedLag) continue;
      const std::uint32_t s = slot_of_edge[k];
      std::uint32_t p = 0;
      if (s != UINT32_MAX) p = static_cast<std::uint32_t>(std::upper_bound(slot_begin_.begin(), slot_begin_.end(), s) - slot_begin_.begin()) - 1;
      add_edge(rank[g.in_from[k]], r, s == UINT32_MAX ? g.in_lag[k] : slot_weight(times_[p], s - slot_begin_[p]), s);
    }
    in_begin_.push_back(static_cast<std::uint32_t>(in_from_.size()));
    floor_.push_back(DepGraph::is_end(tp) ? INT64_MIN : g.release[n]);
    fallback_.push_back(g.rec_start[n]);
    time_.push_back(schedule_.time[tp]);
  }
  out_begin_.assign(R + 1, 0);
  for (const std::uint32_t from : in_from_) ++out_begin_[from + 1];
  for (std::size_t r = 0; r < R; ++r) out_begin_[r + 1] += out_begin_[r];
  out_to_.resize(in_from_.size());
  out_edge_.resize(in_from_.size());
  std::vector<std::uint32_t> fill(out_begin_.begin(), out_begin_.end() - 1);
  for (std::uint32_t r = 0; r < R; ++r) {
    for (std::uint32_t k = in_begin_[r]; k < in_begin_[r + 1]; ++k) {
      out_to_[fill[in_from_[k]]] = r;
      out_edge_[fill[in_from_[k]]++] = k;
    }
  }
}

void PlanEvaluator::find_feedback() {
  fb_first_.assign(pg_.packs, 0);
  fb_last_.assign(pg_.packs, UINT32_MAX);
  reach_begin_.assign(pg_.packs + 1, 0);
  for (std::uint32_t p = 0; p < pg_.packs; ++p) {
    reach_begin_[p + 1] = reach_begin_[p];
    // A changed edge's source can move only if it follows one of the pack's changed targets.
    std::uint32_t first = UINT32_MAX, last = 0;
    for (std::uint32_t s = slot_begin_[p]; s < slot_begin_[p + 1]; ++s) {
      if (slot_edge_[s] == UINT32_MAX) continue;
      first = std::min(first, slot_to_[s]);
      last = std::max(last, slot_from_[s]);
    }
    if (last < first) continue;
    fb_first_[p] = first;
    fb_last_[p] = last;
    const std::size_t base = reaches_.size();
    reaches_.resize(base + last - first + 1, 0);
    reach_begin_[p + 1] = reaches_.size();
    for (std::uint32_t s = slot_begin_[p]; s < slot_begin_[p + 1]; ++s) {
      if (slot_edge_[s] != UINT32_MAX && slot_from_[s] >= first) reaches_[base + slot_from_[s] - first] = 1;
    }
    // Backward over the ranks: a rank reaches a source if one of its successors does.
    for (std::uint32_t r = last + 1; r-- > first;) {
      for (std::uint32_t o = out_begin_[r]; o < out_begin_[r + 1] && !reaches_[base + r - first]; ++o) {
        if (out_to_[o] <= last && reaches_[base + out_to_[o] - first]) reaches_[base + r - first] = 1;
      }
    }
  }
}

void PlanEvaluator::compute_tails() {
  tail_.assign(time_.size(), 0);
  for (std::uint32_t r = static_cast<std::uint32_t>(time_.size()); r-- > 0;) {
    for (std::uint32_t k = in_begin_[r]; k < in_begin_[r + 1]; ++k) {
      TimeNs& d = tail_[in_from_[k]];
      d = std::max(d, in_lag_[k] + tail_[r]);
    }
  }
}

std::vector<TimeNs> PlanEvaluator::latest() const {
  std::vector<TimeNs> by_tp(tail_.size());
  for (std::uint32_t r = 0; r < tail_.size(); ++r) by_tp[pg_.g.topo[r]] = schedule_.end_ns - tail_[r];
  return by_tp;
}

void PlanEvaluator::check_shape(std::uint32_t p, const PackTime& t) const {
  if (p >= pg_.packs) throw std::invalid_argument(fmt::format("pack {} of {}", p, pg_.packs));
  const PackTime& old = times_[p];
  if (t.port_lags_ns.size() != old.port_lags_ns.size()) {
    throw std::invalid_argument(fmt::format("pack {}: {} port lags for {} port edges", p, t.port_lags_ns.size(),
                                            old.port_lags_ns.size()));
  }
}

void PlanEvaluator::check_slower(std::uint32_t p, const PackTime& t) const {
  check_shape(p, t);
  if (!is_slower(p, t)) throw std::invalid_argument(fmt::format("pack {}: the new timing is faster somewhere", p));
}

void PlanEvaluator::propagate(std::uint32_t p, const PackTime& t) const {
  const std::uint32_t sb = slot_begin_[p], se = slot_begin_[p + 1];
  auto time_of = [&](std::uint32_t r) { return scratch_[r] != INT64_MIN ? scratch_[r] : time_[r]; };
  auto lag_of = [&](std::uint32_t k) {
    const std::uint32_t s = in_slot_[k];
    return s >= sb && s < se ? slot_weight(t, s - sb) : in_lag_[k];
  };
  // Visited in increasing rank until the rise dies out; only ranks that reach a source of p's
  // changed edges.
  const std::uint32_t first = fb_first_[p], last = fb_last_[p];
  const std::uint8_t* reach = reaches_.data() + reach_begin_[p];
  visit_changed<true>(
      p, [&](std::uint32_t r) { return r >= first && r <= last && reach[r - first]; },
      [&](std::uint32_t r) {
        TimeNs v = floor_[r];
        for (std::uint32_t k = in_begin_[r]; k < in_begin_[r + 1]; ++k) v = std::max(v, time_of(in_from_[k]) + lag_of(k));
        if (v == INT64_MIN) v = fallback_[r];
        if (v <= time_of(r)) return false;  // did not move (it can only rise)
        if (scratch_[r] == INT64_MIN) touched_.push_back(r);
        scratch_[r] = v;
        return true;
      });
}

bool PlanEvaluator::is_slower(std::uint32_t p, const PackTime& t) const { return no_faster(t, times_.at(p)); }

void PlanEvaluator::clear_scratch() const {
  for (const std::uint32_t r : touched_) scratch_[r] = INT64_MIN;
  touched_.clear();
}

void PlanEvaluator::compute_slot_base() {
  slot_base_.resize(slot_edge_.size());
  for (std::size_t s = 0; s < slot_edge_.size(); ++s) {
    slot_base_[s] = slot_edge_[s] == UINT32_MAX ? kNoSlot : time_[slot_from_[s]] + tail_[slot_to_[s]];
  }
}

TimeNs PlanEvaluator::rise_at_old_times(std::uint32_t p, const PackTime& t) const {
  const TimeNs* base = slot_base_.data() + slot_begin_[p];
  TimeNs end = std::max(schedule_.end_ns, base[0] + t.dur_ns);
  for (std::size_t i = 0; i < t.port_lags_ns.size(); ++i) end = std::max(end, base[i + 1] + t.port_lags_ns[i]);
  return end - schedule_.end_ns;
}

const std::vector<std::pair<std::uint32_t, TimeNs>>& PlanEvaluator::moved_sources(std::uint32_t p,
                                                                                const PackTime& t) const {
  std::vector<SourceTimes>& cached = source_cache_[p];
  for (const SourceTimes& c : cached) {
    if (c.t.dur_ns == t.dur_ns && c.t.port_lags_ns == t.port_lags_ns) return c.moved;
  }
  if (cached.size() >= kSourceCacheSize) cached.erase(cached.begin());
  SourceTimes& c = cached.emplace_back(SourceTimes{t, {}});
  propagate(p, t);
  for (std::uint32_t s = slot_begin_[p]; s < slot_begin_[p + 1]; ++s) {
    if (slot_edge_[s] != UINT32_MAX && scratch_[slot_from_[s]] != INT64_MIN) c.moved.emplace_back(s, scratch_[slot_from_[s]]);
  }
  clear_scratch();
  return c.moved;
}

TimeNs PlanEvaluator::try_slower(std::uint32_t p, const PackTime& t, TimeNs limit_ns) const {
  check_slower(p, t);
  return try_checked(p, t, limit_ns);
}

std::optional<TimeNs> PlanEvaluator::try_if_slower(std::uint32_t p, const PackTime& t, TimeNs limit_ns) const {
  check_shape(p, t);
  if (!is_slower(p, t)) return std::nullopt;
  return try_checked(p, t, limit_ns);
}

TimeNs PlanEvaluator::try_checked(std::uint32_t p, const PackTime& t, TimeNs limit_ns) const {
  // The rise with every source at its old time E: exact when no source can move, else a lower
  // bound (sources only rise), enough to say that the makespan passes the limit.
  const TimeNs low = rise_at_old_times(p, t);
  if (fb_last_[p] == UINT32_MAX || schedule_.makespan_ns + low > limit_ns) return schedule_.makespan_ns + low;
  TimeNs exact = low;
  for (const auto& [s, e] : moved_sources(p, t)) {
    exact = std::max(exact, e + slot_weight(t, s - slot_begin_[p]) + tail_[slot_to_[s]] - schedule_.end_ns);
  }
  return schedule_.makespan_ns + exact;
}

void PlanEvaluator::apply_slower(std::uint32_t p, PackTime t) {
  check_slower(p, t);
  const DepGraph& g = pg_.g;
  std::uint32_t first = UINT32_MAX;
  for (std::uint32_t s = slot_begin_[p]; s < slot_begin_[p + 1]; ++s) {
    if (slot_edge_[s] == UINT32_MAX) continue;
    in_lag_[slot_edge_[s]] = slot_weight(t, s - slot_begin_[p]);
    first = std::min(first, slot_to_[s]);
  }
  times_[p] = std::move(t);
  const auto every_rank = [](std::uint32_t) { return true; };
  // Earliest times: from the changed edges' targets forward, through the ranks that moved only
  // (a rank's time changes only when an in-edge's lag or its source's time did).
  const TimeNs old_end = schedule_.end_ns;
  std::uint32_t last_moved_end = 0;
  bool end_moved = false;
  visit_changed<true>(p, every_rank, [&](std::uint32_t r) {
    TimeNs v = floor_[r];
    for (std::uint32_t k = in_begin_[r]; k < in_begin_[r + 1]; ++k) v = std::max(v, time_[in_from_[k]] + in_lag_[k]);
    if (v == INT64_MIN) v = fallback_[r];
    if (v == time_[r]) return false;
    time_[r] = v;
    const std::uint32_t tp = g.topo[r];
    schedule_.time[tp] = v;
    if (DepGraph::is_end(tp)) {
      schedule_.end_ns = std::max(schedule_.end_ns, v);
      if (!end_moved || DepGraph::node_of(tp) > last_moved_end) last_moved_end = DepGraph::node_of(tp);
      end_moved = true;
    }
    return true;
  });
  schedule_.makespan_ns = schedule_.end_ns - g.window_start_ns;
  // last_node: the highest node ending at the end. A node now at a later end moved; at the same
  // end, the old last node is still there (times only rise), and a moved one may be higher.
  if (end_moved) {
    std::uint32_t last = schedule_.end_ns == old_end ? schedule_.last_node : 0;
    bool found = schedule_.end_ns == old_end;
    for (std::uint32_t n = found ? last + 1 : 0; n <= last_moved_end; ++n) {
      if (schedule_.time[DepGraph::end_tp(n)] == schedule_.end_ns) last = n, found = true;
    }
    if (found) schedule_.last_node = last;
  }
  // Tails: from the changed edges' sources backward, through the ranks whose tail grew.
  visit_changed<false>(p, every_rank, [&](std::uint32_t r) {
    TimeNs d = 0;
    for (std::uint32_t o = out_begin_[r]; o < out_begin_[r + 1]; ++o) d = std::max(d, in_lag_[out_edge_[o]] + tail_[out_to_[o]]);
    if (d == tail_[r]) return false;
    tail_[r] = d;
    return true;
  });
  compute_slot_base();
  // The cached source times of packs whose sources all come before the first change still hold.
  for (std::uint32_t q = 0; q < pg_.packs; ++q) {
    if (fb_last_[q] != UINT32_MAX && fb_last_[q] >= first) source_cache_[q].clear();
  }
}

template <bool kForward, typename Keep, typename Visit>
void PlanEvaluator::visit_changed(std::uint32_t p, Keep&& keep, Visit&& visit) const {
  // Pending ranks in a bitset, taken lowest first (forward) or highest first (backward): every
  // edge goes forward in rank, so a rank is visited after every pending one it depends on.
  std::size_t pending = 0, word = kForward ? SIZE_MAX : 0;
  auto mark = [&](std::uint32_t r) {
    if (!keep(r)) return;
    std::uint64_t& w = pending_[r >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (r & 63);
    if (w & bit) return;
    w |= bit, ++pending;
    word = kForward ? std::min<std::size_t>(word, r >> 6) : std::max<std::size_t>(word, r >> 6);
  };
  for (std::uint32_t s = slot_begin_[p]; s < slot_begin_[p + 1]; ++s) {
    if (slot_edge_[s] != UINT32_MAX) mark(kForward ? slot_to_[s] : slot_from_[s]);
  }
  for (; pending > 0; kForward ? ++word : --word) {
    while (pending_[word] != 0) {
      const int bit = kForward ? std::countr_zero(pending_[word]) : 63 - std::countl_zero(pending_[word]);
      const auto r = static_cast<std::uint32_t>(word * 64 + static_cast<std::size_t>(bit));
      pending_[word] &= ~(std::uint64_t{1} << bit);
      --pending;
      if (!visit(r)) continue;
      if constexpr (kForward) {
        for (std::uint32_t o = out_begin_[r]; o < out_begin_[r + 1]; ++o) mark(out_to_[o]);
      } else {
        for (std::uint32_t k = in_begin_[r]; k < in_begin_[r + 1]; ++k) mark(in_from_[k]);
      }
    }
  }
}

}  // namespace emo::pack
