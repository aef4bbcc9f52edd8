// The one graph kernel of EMO: a topological order (Kahn's algorithm) with a stated cycle policy,
// the longest-path replay over (durations, lags) of a dependency graph's timepoints, and the
// longest paths to kept timepoints that every reduction of a graph is built from.
//
// Users: the op graph (graph/dep_graph.cpp) and the pack graph (pack/pack_graph.cpp) order their
// timepoints with timepoint_order(); the optimiser's problem (opt/problem.cpp) orders its nodes
// with topological_order(), and so does a job's timing from its ranks' ports (timing/ports.cpp,
// its own cycle breaker); timing::replay and PackGraph::evaluate are longest_path(); the rank's
// reduction to its ports (timing/ports.cpp), the pack problem (opt/pack_problem.cpp) and the
// exact pack MILP's reduced graph (opt/exact_pack_milp.cpp) are KeptPaths passes. The replay's
// rules (a start's release, else its recorded start when every constraint is dropped; dropped
// edges ignored) are longest_path's and replay_source_ns's, here only.
//
// Example (a diamond a→b, a→c, b→d, c→d; out-edges in CSR form, ready vertices last-in first-out):
//   begin = {0, 2, 3, 4, 4}, to = {1, 2, 3, 3}, pending = {0, 1, 1, 2}
//   topological_order<int>(pending, kLastInFirstOut, visit-to, ThrowOnCycle{}) = {0, 2, 1, 3}
//   (first-in first-out: {0, 1, 2, 3}).
//
// Cycle policy. When vertices remain but none is ready, every remaining vertex lies on a cycle or
// behind one. The kernel then calls the caller's cycle breaker with a TopoState: the breaker may
// drop edges (drop_edge_into) or force a vertex ready (force), recording what it dropped in its
// own data. If it made no vertex ready, the kernel throws CycleError listing the remaining
// vertices. ThrowOnCycle is the breaker that drops nothing (the optimiser: a cycle is the caller's
// error). The op graph forces its earliest-recorded blocked timepoint and drops its blocking
// edges; the pack graph drops one edge of a cycle it finds (their .cpp files say which).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graph/dep_graph.h"

namespace emo::graph {

/// The graph has a cycle and the caller's breaker dropped nothing. `blocked()`: the vertices
/// left out of the order (on a cycle or behind one), ascending. what(): "the graph has a cycle
/// (N vertices on or behind one)".
class CycleError : public std::invalid_argument {
 public:
  explicit CycleError(std::vector<std::size_t> blocked)
      : std::invalid_argument("the graph has a cycle (" + std::to_string(blocked.size()) +
                              " vertices on or behind one)"),
        blocked_(std::move(blocked)) {}
  const std::vector<std::size_t>& blocked() const noexcept { return blocked_; }

 private:
  std::vector<std::size_t> blocked_;
};

/// Which ready vertex Kahn's algorithm takes next. Both give a topological order; they differ
/// among vertices that are ready together.
enum class ReadyOrder : std::uint8_t {
  kLastInFirstOut,   ///< A stack (depth first): the op and pack graphs.
  kFirstInFirstOut,  ///< A queue (breadth first): the optimiser's problem.
};

/// What a cycle breaker sees of a running topological sort over vertices 0 .. n-1 of index type
/// `I`, and what it may change. Only the kernel constructs it.
template <class I>
class TopoState {
 public:
  /// True once v is in the order.
  bool done(I v) const { return state_[v] == kDone; }
  /// In-edges of v not yet satisfied (their sources not done, not dropped); 0 once v is ready.
  I pending(I v) const { return state_[v] == kWaiting ? pending_[v] : I{0}; }
  /// The caller dropped one pending edge into v: v waits for one edge less (ready at 0). The
  /// caller's out-edge visitor must no longer visit that edge.
  void drop_edge_into(I v) { decrement(v); }
  /// v becomes ready now whatever it still waits for (the caller dropped its pending edges);
  /// edges into v visited later are ignored. No-op when v is ready or done.
  void force(I v) {
    if (state_[v] == kWaiting) push(v);
  }

 private:
  template <class J, class ForEachOut, class BreakCycle>
  friend std::vector<J> topological_order(std::vector<J>, ReadyOrder, ForEachOut&&, BreakCycle&&);
  enum : std::uint8_t { kWaiting, kReady, kDone };

  TopoState(std::vector<I> pending, ReadyOrder order)
      : pending_(std::move(pending)), state_(pending_.size(), kWaiting), lifo_(order == ReadyOrder::kLastInFirstOut) {
    ready_.reserve(pending_.size());
  }
  void push(I v) {
    state_[v] = kReady;
    ready_.push_back(v);
  }
  void decrement(I v) {
    if (state_[v] == kWaiting && --pending_[v] == 0) push(v);
  }
  bool has_ready() const { return head_ < ready_.size(); }
  I pop() {
    if (lifo_) {
      const I v = ready_.back();
      ready_.pop_back();
      return v;
    }
    return ready_[head_++];
  }

  std::vector<I> pending_;
  std::vector<std::uint8_t> state_;
  std::vector<I> ready_;
  std::size_t head_ = 0;  // first unread entry of ready_ (first-in first-out only)
  bool lifo_;
};

/// The cycle breaker that drops nothing: topological_order throws CycleError on a cycle.
struct ThrowOnCycle {
  template <class I>
  void operator()(TopoState<I>&) const noexcept {}
};

/// Kahn's algorithm over vertices 0 .. n-1 (n = pending.size()). `pending[v]`: the number of
/// edges into v. `for_each_out(v, visit)` calls visit(w) once per edge v → w still in the graph
/// (parallel edges once each, as counted in `pending`). Vertices with no pending edge start
/// ready in ascending order; ready vertices are taken in `order`. Cycle policy: see the file
/// comment — `break_cycle(TopoState<I>&)` is called whenever vertices remain and none is ready.
/// Returns every vertex once, each after the sources of its (not dropped) in-edges.
/// O(V + E) plus the breaker's work. Throws CycleError when the breaker makes no vertex ready.
template <class I, class ForEachOut, class BreakCycle>
std::vector<I> topological_order(std::vector<I> pending, ReadyOrder order, ForEachOut&& for_each_out,
                                 BreakCycle&& break_cycle) {
  const std::size_t n = pending.size();
  TopoState<I> s(std::move(pending), order);
  for (std::size_t v = 0; v < n; ++v) {
    if (s.pending_[v] == 0) s.push(static_cast<I>(v));
  }
  std::vector<I> out;
  out.reserve(n);
  while (out.size() < n) {
    while (s.has_ready()) {
      const I v = s.pop();
      s.state_[v] = TopoState<I>::kDone;
      out.push_back(v);
      for_each_out(v, [&s](I w) { s.decrement(w); });
    }
    if (out.size() == n) break;
    break_cycle(s);
    if (!s.has_ready()) {
      std::vector<std::size_t> blocked;
      for (std::size_t v = 0; v < n; ++v) {
        if (!s.done(static_cast<I>(v))) blocked.push_back(v);
      }
      throw CycleError(std::move(blocked));
    }
  }
  return out;
}

/// What a timepoint-order cycle breaker may do (see timepoint_order).
class TimepointCycle {
 public:
  /// True once timepoint tp is in the order.
  bool done(std::uint32_t tp) const { return s_.done(tp); }
  /// Pending constraints of tp: its in-edges from timepoints not done (and not cut), plus, for an
  /// end, its own start while that is not done.
  std::uint32_t pending(std::uint32_t tp) const { return s_.pending(tp); }
  /// Edge k (an in-CSR index of g, into timepoint `to`) no longer orders anything: `to` waits
  /// for one constraint less. The caller marks the edge dropped in g (lag kDroppedLag).
  void cut(std::uint32_t k, std::uint32_t to) {
    cut_[k] = 1;
    s_.drop_edge_into(to);
  }

 private:
  template <class BreakCycle>
  friend std::vector<std::uint32_t> timepoint_order(const DepGraph&, BreakCycle&&);
  TimepointCycle(TopoState<std::uint32_t>& s, std::vector<std::uint8_t>& cut) : s_(s), cut_(cut) {}
  TopoState<std::uint32_t>& s_;
  std::vector<std::uint8_t>& cut_;
};

/// A topological order of g's timepoints: each node's start S before its end E, and every edge
/// forward (g.topo's contract). Edges count whatever their lag (an edge the gap rule dropped still
/// orders its timepoints); ready timepoints are taken last-in first-out, out-edges in order of
/// their target. Cycle policy: `break_cycle(TimepointCycle&)` is called whenever timepoints
/// remain and none is ready; it cuts edges (TimepointCycle::cut) and records them in g itself.
/// O(V + E) plus the breaker's work. Throws CycleError when the breaker makes none ready.
template <class BreakCycle>
std::vector<std::uint32_t> timepoint_order(const DepGraph& g, BreakCycle&& break_cycle) {
  const std::uint32_t tps = static_cast<std::uint32_t>(2 * g.nodes());
  std::vector<std::uint32_t> pending(tps, 0);
  std::vector<std::uint32_t> out_begin(std::size_t{tps} + 1, 0);
  for (std::uint32_t t = 0; t < tps; ++t) {
    pending[t] = g.in_begin[t + 1] - g.in_begin[t] + (DepGraph::is_end(t) ? 1 : 0);
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) ++out_begin[g.in_from[k] + 1];
  }
  for (std::uint32_t t = 0; t < tps; ++t) out_begin[t + 1] += out_begin[t];
  std::vector<std::uint32_t> out_edge(g.edges()), target(g.edges());  // per out-edge: in-CSR index
  std::vector<std::uint32_t> fill(out_begin.begin(), out_begin.end() - 1);
  for (std::uint32_t t = 0; t < tps; ++t) {
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) {
      out_edge[fill[g.in_from[k]]++] = k;
      target[k] = t;
    }
  }
  std::vector<std::uint8_t> cut(g.edges(), 0);
  auto for_each_out = [&](std::uint32_t t, auto&& visit) {
    if (!DepGraph::is_end(t)) visit(t + 1);  // S -> E of the same node
    for (std::uint32_t o = out_begin[t]; o < out_begin[t + 1]; ++o) {
      if (!cut[out_edge[o]]) visit(target[out_edge[o]]);
    }
  };
  return topological_order<std::uint32_t>(std::move(pending), ReadyOrder::kLastInFirstOut, for_each_out,
                                          [&](TopoState<std::uint32_t>& s) {
                                            TimepointCycle c(s, cut);
                                            break_cycle(c);
                                          });
}

/// The replay's own value of timepoint `tp` before its in-edges, ns (graph::longest_path's rule,
/// stated once for every pass that follows it: timing/ports.cpp, opt/pack_problem.cpp,
/// opt/exact_pack_milp.cpp): a start takes its node's release; a start without one whose every
/// in-edge is dropped (kDroppedLag) keeps its recorded start; anything else (an end, a start with a
/// live in-edge) has none: INT64_MIN. O(in-degree of tp).
inline TimeNs replay_source_ns(const DepGraph& g, std::uint32_t tp) {
  if (DepGraph::is_end(tp)) return INT64_MIN;
  const std::uint32_t n = DepGraph::node_of(tp);
  if (g.release[n] != INT64_MIN) return g.release[n];
  for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
    if (g.in_lag[k] != kDroppedLag) return INT64_MIN;
  }
  return g.rec_start[n];
}

/// Where a replay ends: the latest end of any node (`end_ns`, at least the window's start) and a
/// node that ends there (the last such in topological order; 0 when none ends after the start).
struct ReplayEnd {
  TimeNs end_ns = 0;
  std::uint32_t last_node = 0;
};

/// The longest-path replay of g (a what-if forward pass): in g.topo order, each start timepoint
/// is max(release, max over its in-edges of time(from) + lag), each end max(time(start) + dur,
/// max over its in-edges of time(from) + lag); edges with lag kDroppedLag are ignored, and a
/// start with neither a release nor an edge keeps its recorded start. `dur_of(node)` and
/// `lag_of(in-CSR edge index)` return ns (TimeNs); lags may be negative. `time` (size 2 × nodes)
/// receives every timepoint's time in ns. O(V + E); the callables are inlined.
template <class DurOf, class LagOf>
ReplayEnd longest_path(const DepGraph& g, DurOf&& dur_of, LagOf&& lag_of, std::span<TimeNs> time) {
  ReplayEnd r{g.window_start_ns, 0};
  for (const std::uint32_t tp : g.topo) {
    const std::uint32_t n = DepGraph::node_of(tp);
    const bool end = DepGraph::is_end(tp);
    TimeNs v = end ? time[DepGraph::start_tp(n)] + dur_of(n) : g.release[n];  // INT64_MIN: none
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_lag[k] == kDroppedLag) continue;
      v = std::max(v, time[g.in_from[k]] + lag_of(k));
    }
    if (v == INT64_MIN) v = g.rec_start[n];  // every constraint dropped: keep the recording (replay_source_ns)
    time[tp] = v;
    if (end && v >= r.end_ns) {
      r.end_ns = v;
      r.last_node = n;
    }
  }
  return r;
}

/// Out-arcs over g's timepoints (CSR: arcs of timepoint t are begin[t] .. begin[t+1]), each a
/// constraint time(to) >= time(from) + lag (ns): what a KeptPaths pass follows.
struct TimepointArcs {
  std::vector<std::uint32_t> begin;  ///< Size 2 × nodes + 1.
  std::vector<std::uint32_t> to;
  std::vector<TimeNs> lag;
};

/// The arcs of g a pass follows: in-edge k (not dropped) at lag_of(k), skipped when lag_of
/// returns kDroppedLag; S → E of node n at dur_of(n), none when dur_of returns INT64_MIN.
/// O(V + E).
template <class LagOf, class DurOf>
TimepointArcs timepoint_arcs(const DepGraph& g, LagOf&& lag_of, DurOf&& dur_of) {
  const std::uint32_t tps = static_cast<std::uint32_t>(2 * g.nodes());
  TimepointArcs a;
  a.begin.assign(std::size_t{tps} + 1, 0);
  auto each = [&](auto&& arc) {
    for (std::uint32_t t = 0; t < tps; ++t) {
      for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) {
        if (g.in_lag[k] == kDroppedLag) continue;
        if (const TimeNs l = lag_of(k); l != kDroppedLag) arc(g.in_from[k], t, l);
      }
    }
    for (std::uint32_t n = 0; n < g.nodes(); ++n) {
      if (const TimeNs d = dur_of(n); d != INT64_MIN) arc(DepGraph::start_tp(n), DepGraph::end_tp(n), d);
    }
  };
  each([&](std::uint32_t from, std::uint32_t, TimeNs) { ++a.begin[from + 1]; });
  for (std::uint32_t t = 0; t < tps; ++t) a.begin[t + 1] += a.begin[t];
  a.to.resize(a.begin[tps]);
  a.lag.resize(a.begin[tps]);
  std::vector<std::uint32_t> fill(a.begin.begin(), a.begin.end() - 1);
  each([&](std::uint32_t from, std::uint32_t to, TimeNs l) {
    a.to[fill[from]] = to;
    a.lag[fill[from]++] = l;
  });
  return a;
}

/// What a pass does at a kept timepoint it reaches: stop there (the reduction composes paths
/// through it itself), or report it and go on through it.
enum class AtKept : std::uint8_t { kStop, kPass };

/// Longest paths through g's timepoints to its kept ones, one source at a time: the reductions
/// of a graph (a rank to its ports, the pack graph to its packs) are built from these passes.
/// A pass visits the timepoints it reaches in g.topo order, so every value is final when read;
/// it follows `arcs` (timepoint_arcs) and, from kSources, starts at the replay's own sources
/// (replay_source_ns), so that its paths are those longest_path takes. O(V + E) memory; a pass
/// costs O(arcs it follows + span of topological positions it reaches / 64).
class KeptPaths {
 public:
  /// The source of a pass that starts at the replay's own sources rather than at a timepoint.
  static constexpr std::uint32_t kSources = UINT32_MAX;

  /// `kept`: one flag per timepoint (size 2 × nodes). Throws std::invalid_argument on a size mismatch.
  KeptPaths(const DepGraph& g, TimepointArcs arcs, std::vector<std::uint8_t> kept, AtKept at_kept)
      : g_(g), arcs_(std::move(arcs)), kept_(std::move(kept)), stop_(at_kept == AtKept::kStop),
        pos_(2 * g.nodes()), dist_(2 * g.nodes(), INT64_MIN), bits_((2 * g.nodes() + 63) / 64, 0) {
    if (kept_.size() != 2 * g.nodes() || arcs_.begin.size() != 2 * g.nodes() + 1)
      throw std::invalid_argument("KeptPaths: one kept flag and one arc list per timepoint needed");
    for (std::uint32_t i = 0; i < g.topo.size(); ++i) pos_[g.topo[i]] = i;
  }

  /// One pass from `src` (a timepoint, at 0) or from kSources (each start at its
  /// replay_source_ns − origin_ns). Calls reach(tp, ns) once per kept timepoint reached other
  /// than src, in topological order, with the longest path to it. Returns the longest path to an
  /// end timepoint reached that is neither kept nor src (INT64_MIN: none).
  template <class Reach>
  TimeNs pass(std::uint32_t src, TimeNs origin_ns, Reach&& reach) {
    return pass(src, origin_ns, std::forward<Reach>(reach), [](std::size_t, std::uint32_t, TimeNs) { return true; });
  }

  /// The same, asking `go_on(position, tp, ns)` at each timepoint reached other than src, in
  /// topological order (position: its index in g.topo, ascending), before anything else is done
  /// with it: false leaves it out of the pass — not reported, not in the returned tail, and its
  /// arcs not followed (a caller that knows every path through it is implied another way).
  template <class Reach, class GoOn>
  TimeNs pass(std::uint32_t src, TimeNs origin_ns, Reach&& reach, GoOn&& go_on) {
    std::size_t lo = SIZE_MAX, hi = 0;
    auto mark = [&](std::uint32_t tp, TimeNs v) {
      if (dist_[tp] == INT64_MIN) {
        const std::uint32_t p = pos_[tp];
        bits_[p / 64] |= std::uint64_t{1} << (p % 64);
        lo = std::min<std::size_t>(lo, p), hi = std::max<std::size_t>(hi, p);
      }
      dist_[tp] = std::max(dist_[tp], v);
    };
    if (src == kSources) {
      for (std::uint32_t tp = 0; tp < dist_.size(); ++tp) {
        if (const TimeNs r = replay_source_ns(g_, tp); r != INT64_MIN) mark(tp, r - origin_ns);
      }
    } else {
      mark(src, 0);
    }
    TimeNs tail = INT64_MIN;
    for (std::size_t w = lo / 64; lo != SIZE_MAX && w <= hi / 64; ++w) {  // arcs go forward: hi only grows past w
      while (bits_[w] != 0) {
        const std::size_t p = w * 64 + static_cast<std::size_t>(std::countr_zero(bits_[w]));
        bits_[w] &= bits_[w] - 1;
        const std::uint32_t tp = g_.topo[p];
        const TimeNs v = dist_[tp];
        dist_[tp] = INT64_MIN;  // read once: leave the pass's state clean for the next one
        if (tp != src && !go_on(p, tp, v)) continue;
        if (tp != src && kept_[tp]) {
          reach(tp, v);
          if (stop_) continue;
        } else if (tp != src && DepGraph::is_end(tp)) {
          tail = std::max(tail, v);
        }
        for (std::uint32_t k = arcs_.begin[tp]; k < arcs_.begin[tp + 1]; ++k) mark(arcs_.to[k], v + arcs_.lag[k]);
      }
    }
    return tail;
  }

 private:
  const DepGraph& g_;
  TimepointArcs arcs_;
  std::vector<std::uint8_t> kept_;
  bool stop_;
  std::vector<std::uint32_t> pos_;   // per timepoint: its position in g.topo
  std::vector<TimeNs> dist_;         // per timepoint: the longest path so far (INT64_MIN: not reached)
  std::vector<std::uint64_t> bits_;  // per topological position: reached and not yet visited
};

}  // namespace emo::graph
