#include "pack/plan_evaluator.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace emo::pack {

using graph::DepGraph;
using graph::kDroppedLag;

PlanEvaluator::PlanEvaluator(const PackGraph& pg, std::vector<PackTime> times)
    : pg_(pg), times_(std::move(times)), schedule_(pg.evaluate(times_)) {
  const DepGraph& g = pg_.g;
  const std::size_t tps = 2 * g.nodes();
  lag_ = g.in_lag;
  for (std::uint32_t p = 0; p < pg_.packs; ++p) {
    for (std::uint32_t k = pg_.pe_begin[p]; k < pg_.pe_begin[p + 1]; ++k) {
      lag_[pg_.pe_edge[k]] = times_[p].port_lags_ns[k - pg_.pe_begin[p]];
    }
  }
  rank_.assign(tps, 0);
  for (std::uint32_t i = 0; i < g.topo.size(); ++i) rank_[g.topo[i]] = i;
  out_begin_.assign(tps + 1, 0);
  edge_to_.resize(g.edges());
  for (std::uint32_t t = 0; t < tps; ++t) {
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) {
      ++out_begin_[g.in_from[k] + 1];
      edge_to_[k] = t;
    }
  }
  for (std::size_t t = 0; t < tps; ++t) out_begin_[t + 1] += out_begin_[t];
  out_edge_.resize(g.edges());
  std::vector<std::uint32_t> fill(out_begin_.begin(), out_begin_.end() - 1);
  for (std::uint32_t t = 0; t < tps; ++t) {
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) out_edge_[fill[g.in_from[k]]++] = k;
  }
  scratch_.assign(tps, INT64_MIN);
  queued_.assign(tps, 0);
}

TimeNs PlanEvaluator::propagate(std::uint32_t p, const PackTime& t, TimeNs limit_ns) const {
  if (p >= pg_.packs) throw std::invalid_argument(fmt::format("pack {} of {}", p, pg_.packs));
  const PackTime& old = times_[p];
  if (t.port_lags_ns.size() != old.port_lags_ns.size()) {
    throw std::invalid_argument(fmt::format("pack {}: {} port lags for {} port edges", p, t.port_lags_ns.size(),
                                            old.port_lags_ns.size()));
  }
  if (!is_slower(p, t)) throw std::invalid_argument(fmt::format("pack {}: the new timing is faster somewhere", p));

  const DepGraph& g = pg_.g;
  const std::uint32_t base = pg_.pe_begin[p];
  auto time_of = [&](std::uint32_t tp) { return scratch_[tp] != INT64_MIN ? scratch_[tp] : schedule_.time[tp]; };
  auto lag_of = [&](std::uint32_t k) {
    const std::uint32_t port = pg_.edge_port[k];
    if (port != UINT32_MAX && port >= base && port < pg_.pe_begin[p + 1]) return t.port_lags_ns[port - base];
    return lag_[k];
  };
  auto dur_of = [&](std::uint32_t n) { return n == p ? t.dur_ns : (n < pg_.packs ? times_[n].dur_ns : g.dur[n]); };
  // Sweep the topological order from the first affected rank, processing only marked
  // timepoints, until none is pending (the rise died out) or the makespan passed the limit.
  std::size_t pending = 0;
  std::uint32_t first = UINT32_MAX;
  auto mark = [&](std::uint32_t tp) {
    const std::uint32_t r = rank_[tp];
    if (queued_[r]) return;
    queued_[r] = 1;
    marked_.push_back(r);
    ++pending;
    first = std::min(first, r);
  };
  mark(DepGraph::end_tp(p));
  for (std::uint32_t k = base; k < pg_.pe_begin[p + 1]; ++k) mark(edge_to_[pg_.pe_edge[k]]);
  TimeNs end = schedule_.end_ns;
  const TimeNs stop = limit_ns == INT64_MAX ? INT64_MAX : limit_ns + g.window_start_ns;
  for (std::uint32_t r = first; pending > 0 && r < g.topo.size() && end <= stop; ++r) {
    if (!queued_[r]) continue;
    queued_[r] = 0;
    --pending;
    const std::uint32_t tp = g.topo[r];
    const std::uint32_t n = DepGraph::node_of(tp);
    TimeNs v = DepGraph::is_end(tp) ? time_of(tp - 1) + dur_of(n) : g.release[n];
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_lag[k] == kDroppedLag) continue;
      v = std::max(v, time_of(g.in_from[k]) + lag_of(k));
    }
    if (v == INT64_MIN) v = g.rec_start[n];
    if (v <= time_of(tp)) continue;  // did not move (it can only rise)
    if (scratch_[tp] == INT64_MIN) touched_.push_back(tp);
    scratch_[tp] = v;
    if (DepGraph::is_end(tp)) end = std::max(end, v);
    if (!DepGraph::is_end(tp)) mark(tp + 1);
    for (std::uint32_t o = out_begin_[tp]; o < out_begin_[tp + 1]; ++o) mark(edge_to_[out_edge_[o]]);
  }
  for (const std::uint32_t r : marked_) queued_[r] = 0;
  marked_.clear();
  return end - g.window_start_ns;
}

bool PlanEvaluator::is_slower(std::uint32_t p, const PackTime& t) const {
  const PackTime& old = times_.at(p);
  if (t.port_lags_ns.size() != old.port_lags_ns.size() || t.dur_ns < old.dur_ns) return false;
  for (std::size_t i = 0; i < t.port_lags_ns.size(); ++i) {
    if (t.port_lags_ns[i] < old.port_lags_ns[i]) return false;
  }
  return true;
}

void PlanEvaluator::clear_scratch() const {
  for (const std::uint32_t tp : touched_) scratch_[tp] = INT64_MIN;
  touched_.clear();
}

TimeNs PlanEvaluator::try_slower(std::uint32_t p, const PackTime& t, TimeNs limit_ns) const {
  const TimeNs m = propagate(p, t, limit_ns);
  clear_scratch();
  return m;
}

void PlanEvaluator::apply_slower(std::uint32_t p, PackTime t) {
  const TimeNs m = propagate(p, t, INT64_MAX);
  for (const std::uint32_t tp : touched_) schedule_.time[tp] = scratch_[tp];
  clear_scratch();
  schedule_.end_ns = std::max(schedule_.end_ns, m + pg_.g.window_start_ns);
  schedule_.makespan_ns = schedule_.end_ns - pg_.g.window_start_ns;
  for (std::uint32_t k = pg_.pe_begin[p]; k < pg_.pe_begin[p + 1]; ++k) lag_[pg_.pe_edge[k]] = t.port_lags_ns[k - pg_.pe_begin[p]];
  times_[p] = std::move(t);
  // last_node is not tracked incrementally: find it again (O(V)).
  for (std::uint32_t n = 0; n < pg_.g.nodes(); ++n) {
    if (schedule_.time[DepGraph::end_tp(n)] == schedule_.end_ns) schedule_.last_node = n;
  }
}

}  // namespace emo::pack
