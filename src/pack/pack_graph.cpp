#include "pack/pack_graph.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "graph/algorithms.h"

namespace emo::pack {
namespace {

using graph::DepGraph;
using graph::EdgeType;
using graph::kDroppedLag;

/// Recorded time of a timepoint of `g`.
TimeNs rec(const DepGraph& g, std::uint32_t tp) {
  const std::uint32_t n = DepGraph::node_of(tp);
  return DepGraph::is_end(tp) ? g.rec_end[n] : g.rec_start[n];
}

/// Of the edges walk[first ..] of a cycle ((timepoint, edge into it); UINT32_MAX: a node's own
/// start -> end), the one to drop: preferably one into a GPU node's start that another
/// constraint (or its release) keeps tight at the recorded times. Returns (its target, edge).
std::pair<std::uint32_t, std::uint32_t> cycle_edge_to_drop(
    const DepGraph& g, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& walk, std::size_t first) {
  std::pair<std::uint32_t, std::uint32_t> pick{UINT32_MAX, UINT32_MAX};
  int best = -1;
  for (std::size_t i = first; i < walk.size(); ++i) {
    const auto [to, k] = walk[i];
    if (k == UINT32_MAX) continue;
    int score = 0;
    if (!DepGraph::is_end(to) && g.gpu[DepGraph::node_of(to)]) {
      score = 1;
      for (std::uint32_t j = g.in_begin[to]; j < g.in_begin[to + 1]; ++j) {
        if (j != k && g.in_lag[j] != kDroppedLag && rec(g, g.in_from[j]) + g.in_lag[j] == rec(g, to)) score = 2;
      }
      if (g.release[DepGraph::node_of(to)] == rec(g, to)) score = 2;
    }
    if (score > best) {
      best = score;
      pick = {to, k};
    }
  }
  return pick;
}

/// g.topo (graph/algorithms.h, timepoint_order). Every edge of the pack graph stands for a path
/// of the (acyclic) op graph, so no cycle is expected. Cycle policy, should one appear (a bug, or
/// an op graph whose edges contradict each other): find one by walking blocking edges backwards
/// from the first blocked timepoint and drop one of its edges (lag kDroppedLag) rather than
/// looping: preferably one into a pack start that keeps another constraint tight at the recorded
/// times (the replay stays exact). Returns how many edges were dropped.
std::int64_t topological_order(DepGraph& g) {
  const std::size_t tps = 2 * g.nodes();
  std::vector<std::uint32_t> seen(tps, 0), pos(tps, 0);
  std::uint32_t generation = 0;
  std::int64_t dropped = 0;
  g.topo = graph::timepoint_order(g, [&](graph::TimepointCycle& c) {
    ++generation;
    std::uint32_t t = 0;
    while (c.done(t) || c.pending(t) == 0) ++t;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> walk;  // (timepoint, edge into it)
    while (seen[t] != generation) {
      seen[t] = generation;
      pos[t] = static_cast<std::uint32_t>(walk.size());
      std::uint32_t via = UINT32_MAX, src = UINT32_MAX;
      if (DepGraph::is_end(t) && !c.done(t - 1)) {
        src = t - 1;  // its own start
      } else {
        for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) {
          if (!c.done(g.in_from[k]) && g.in_lag[k] != kDroppedLag) {
            via = k;
            src = g.in_from[k];
            break;
          }
        }
      }
      walk.push_back({t, via});
      t = src;
    }
    const auto [to, pick] = cycle_edge_to_drop(g, walk, pos[t]);
    g.in_lag[pick] = kDroppedLag;
    ++dropped;
    c.cut(pick, to);
  });
  return dropped;
}

constexpr std::uint32_t kEnd = UINT32_MAX;  // target: the pack's end

/// dist[m - lo] = L_f(m -> target) for members m in [lo, hi): the longest internal path at
/// factor f from m to `target` (a member < hi, or kEnd: any op end in [lo, hi)), or INT64_MIN
/// where m does not reach it. One backward pass in reverse topological order. With
/// `stop_at_exits` (an exit port target's lags) the paths stop at other exit ports (pg.m_exit):
/// their distance is set but not propagated, so dist is the longest path that meets no other
/// exit port on the way (the target's *region*; pg.t_lo[t] is its lowest member).
void longest_to(const PackGraph& pg, std::uint32_t lo, std::uint32_t hi, std::uint32_t target, double factor,
                bool stop_at_exits, std::vector<TimeNs>& dist) {
  dist.assign(hi - lo, INT64_MIN);
  if (target == kEnd) {
    for (std::uint32_t m = lo; m < hi; ++m) {
      if (pg.m_start[m] >= 0) dist[m - lo] = 0;
    }
  } else {
    dist[target - lo] = 0;
  }
  for (std::uint32_t m = hi; m-- > lo;) {
    const TimeNs d = dist[m - lo];
    if (d == INT64_MIN) continue;
    if (stop_at_exits && m != target && pg.m_exit[m]) continue;
    if (pg.m_start[m] >= 0) {
      const auto sm = static_cast<std::uint32_t>(pg.m_start[m]);
      if (sm >= lo) dist[sm - lo] = std::max(dist[sm - lo], d + scale_ns(pg.m_dur[m], factor));
    }
    for (std::uint32_t k = pg.m_in_begin[m]; k < pg.m_in_begin[m + 1]; ++k) {
      if (pg.m_in_from[k] < lo) continue;
      TimeNs& df = dist[pg.m_in_from[k] - lo];
      df = std::max(df, d + pg.m_in_lag[k]);
    }
  }
}

/// The region pass of exit port member x at factor 1 for contraction: like longest_to(..., x,
/// ...) over the pack's members from b, but in O(region) time: dist (indexed m - b, all
/// INT64_MIN on entry) is filled for the region and the touched members are listed (the caller
/// resets them). Returns the region's lowest member.
std::uint32_t region_to(const PackGraph& pg, std::uint32_t b, std::uint32_t x, std::vector<TimeNs>& dist,
                        std::vector<std::uint32_t>& touched) {
  auto set = [&](std::uint32_t m, TimeNs v) {
    TimeNs& d = dist[m - b];
    if (d == INT64_MIN) touched.push_back(m);
    d = std::max(d, v);
  };
  set(x, 0);
  std::uint32_t lowest = x;
  for (std::uint32_t m = x + 1; m-- > b && m >= lowest;) {
    const TimeNs d = dist[m - b];
    if (d == INT64_MIN || (m != x && pg.m_exit[m])) continue;
    if (pg.m_start[m] >= 0) {
      const auto sm = static_cast<std::uint32_t>(pg.m_start[m]);
      set(sm, d + pg.m_dur[m]);
      lowest = std::min(lowest, sm);
    }
    for (std::uint32_t k = pg.m_in_begin[m]; k < pg.m_in_begin[m + 1]; ++k) {
      set(pg.m_in_from[k], d + pg.m_in_lag[k]);
      lowest = std::min(lowest, pg.m_in_from[k]);
    }
  }
  return lowest;
}

/// The member range [lo, hi) of target t of pack p: hi is past the target (the pack's end for
/// kEnd), lo its t_lo.
std::pair<std::uint32_t, std::uint32_t> target_range(const PackGraph& pg, std::uint32_t p, std::uint32_t t) {
  const std::uint32_t m = pg.t_member[t];
  return {pg.t_lo[t], m == kEnd ? pg.m_begin[p + 1] : m + 1};
}

class Contractor {
 public:
  Contractor(const DepGraph& g, const Packing& p) : g_(g), p_(p) {}

  PackGraph run() {
    if (p_.pack_of.size() != g_.nodes()) {
      throw std::invalid_argument("contract: the packing is not of this graph");
    }
    P_ = static_cast<std::uint32_t>(p_.packs.size());
    pg_.packs = P_;
    build_models();
    find_ports();
    number_nodes();
    fill_nodes();
    map_edges();
    pg_.cycle_edges = topological_order(pg_.g);
    pg_.g.stats.cycle_edges = pg_.cycle_edges;
    return std::move(pg_);
  }

 private:
  /// Members (op timepoints) of every pack in topological order, and their internal edges.
  void build_models() {
    pg_.m_begin.assign(P_ + 1, 0);
    for (std::uint32_t pk = 0; pk < P_; ++pk) pg_.m_begin[pk + 1] = pg_.m_begin[pk] + 2 * p_.packs[pk].count;
    const std::size_t members = pg_.m_begin[P_];
    pg_.m_tp.resize(members);
    member_of_.assign(2 * g_.nodes(), UINT32_MAX);
    std::vector<std::uint32_t> fill(pg_.m_begin.begin(), pg_.m_begin.end() - 1);
    for (const std::uint32_t tp : g_.topo) {
      const std::uint32_t n = DepGraph::node_of(tp);
      const std::uint32_t pk = p_.pack_of[n];
      if (pk == kNoPack) {
        if (g_.gpu[n]) throw std::invalid_argument("contract: a GPU op is in no pack");
        continue;
      }
      if (fill[pk] >= pg_.m_begin[pk + 1]) throw std::invalid_argument("contract: the packing is not of this graph");
      const std::uint32_t m = fill[pk]++;
      pg_.m_tp[m] = tp;
      member_of_[tp] = m;
    }
    pg_.m_first.assign(P_, 0);
    for (std::uint32_t pk = 0; pk < P_; ++pk) {
      if (fill[pk] != pg_.m_begin[pk + 1]) throw std::invalid_argument("contract: the packing is not of this graph");
      // The first op: the earliest recorded start, the first in topological order among equals
      // (so no member binds it).
      std::uint32_t first = pg_.m_begin[pk];
      for (std::uint32_t m = first; m < pg_.m_begin[pk + 1]; ++m) {
        if (!DepGraph::is_end(pg_.m_tp[m]) && rec(g_, pg_.m_tp[m]) < rec(g_, pg_.m_tp[first])) first = m;
      }
      pg_.m_first[pk] = first;
    }
    pg_.m_start.assign(members, -1);
    pg_.m_dur.assign(members, 0);
    pg_.m_in_begin.assign(members + 1, 0);
    for (std::uint32_t m = 0; m < members; ++m) {
      const std::uint32_t tp = pg_.m_tp[m];
      const std::uint32_t n = DepGraph::node_of(tp);
      const std::uint32_t pk = p_.pack_of[n];
      if (DepGraph::is_end(tp)) {
        pg_.m_start[m] = static_cast<std::int32_t>(member_of_[tp - 1]);
        pg_.m_dur[m] = g_.dur[n];
      }
      for (std::uint32_t k = g_.in_begin[tp]; k < g_.in_begin[tp + 1]; ++k) {
        if (g_.in_lag[k] == kDroppedLag) continue;
        const std::uint32_t from = g_.in_from[k];
        if (p_.pack_of[DepGraph::node_of(from)] != pk) continue;
        pg_.m_in_from.push_back(member_of_[from]);
        pg_.m_in_lag.push_back(g_.in_lag[k]);
      }
      pg_.m_in_begin[m + 1] = static_cast<std::uint32_t>(pg_.m_in_from.size());
    }
  }

  /// The pinned time of a member start that is not the pack's first, or INT64_MIN: its release,
  /// or its recorded start when every constraint into it was dropped (graph::replay_source_ns).
  TimeNs pinned(std::uint32_t m) const { return graph::replay_source_ns(g_, pg_.m_tp[m]); }

  /// Exits (members with an edge leaving the pack): the pack's end when every op end reaches
  /// them, else exit ports; releases of members other than the first: release ports. Fills the
  /// targets (the end, then the exit ports in topological order) and each one's pass range.
  void find_ports() {
    std::vector<std::uint8_t> leaves(pg_.m_tp.size(), 0);
    for (std::uint32_t to = 0; to < 2 * g_.nodes(); ++to) {
      const std::uint32_t tpk = p_.pack_of[DepGraph::node_of(to)];
      for (std::uint32_t k = g_.in_begin[to]; k < g_.in_begin[to + 1]; ++k) {
        if (g_.in_lag[k] == kDroppedLag) continue;
        const std::uint32_t from = g_.in_from[k];
        const std::uint32_t fpk = p_.pack_of[DepGraph::node_of(from)];
        if (fpk != kNoPack && fpk != tpk) leaves[member_of_[from]] = 1;
      }
    }
    pg_.t_begin.assign(P_ + 1, 0);
    final_.assign(pg_.m_tp.size(), 0);
    pg_.m_exit.assign(pg_.m_tp.size(), 0);
    std::vector<TimeNs> d;
    for (std::uint32_t pk = 0; pk < P_; ++pk) {
      const std::uint32_t b = pg_.m_begin[pk], e = pg_.m_begin[pk + 1];
      TimeNs end_rec = INT64_MIN;
      std::uint32_t ends = 0;
      for (std::uint32_t m = b; m < e; ++m) {
        if (pg_.m_start[m] >= 0) end_rec = std::max(end_rec, rec(g_, pg_.m_tp[m])), ++ends;
      }
      pg_.t_member.push_back(kEnd);
      pg_.t_lo.push_back(b);
      for (std::uint32_t m = b; m < e; ++m) {
        if (!leaves[m]) continue;
        if (DepGraph::is_end(pg_.m_tp[m]) && rec(g_, pg_.m_tp[m]) == end_rec) {
          longest_to(pg_, b, m + 1, m, 1.0, /*stop_at_exits=*/false, d);  // every path
          std::uint32_t reach = 0;
          for (std::uint32_t j = b; j <= m; ++j) reach += pg_.m_start[j] >= 0 && d[j - b] != INT64_MIN;
          if (reach == ends) {
            final_[m] = 1;  // always the pack's end
            continue;
          }
        }
        pg_.port_pack.push_back(pk);
        pg_.port_member.push_back(m);
        pg_.port_kind.push_back(PortKind::kExit);
        port_of_exit_.emplace(m, static_cast<std::uint32_t>(pg_.port_pack.size() - 1));
        pg_.t_member.push_back(m);
        pg_.t_lo.push_back(b);  // narrowed to its region by emit_ports
        pg_.m_exit[m] = 1;
      }
      pg_.t_begin[pk + 1] = static_cast<std::uint32_t>(pg_.t_member.size());
      for (std::uint32_t m = b; m < e; ++m) {
        if (m == pg_.m_first[pk]) continue;
        const TimeNs r = pinned(m);
        if (r == INT64_MIN) continue;
        pg_.port_pack.push_back(pk);
        pg_.port_member.push_back(m);
        pg_.port_kind.push_back(PortKind::kRelease);
        release_.push_back(r);
      }
    }
  }

  void number_nodes() {
    pg_node_.assign(g_.nodes(), 0);
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
      if (p_.pack_of[n] != kNoPack) {
        pg_node_[n] = p_.pack_of[n];
      } else {
        pg_node_[n] = P_ + static_cast<std::uint32_t>(pg_.host_node.size());
        pg_.host_node.push_back(n);
      }
    }
    port_base_ = P_ + static_cast<std::uint32_t>(pg_.host_node.size());
  }

  void fill_nodes() {
    graph::DepGraph& q = pg_.g;
    const std::size_t nodes = port_base_ + pg_.port_pack.size();
    q.op.resize(nodes);
    q.dur.assign(nodes, 0);
    q.rec_start.resize(nodes);
    q.rec_end.resize(nodes);
    q.gpu.assign(nodes, 0);
    q.release.assign(nodes, INT64_MIN);
    std::vector<TimeNs> d;
    for (std::uint32_t pk = 0; pk < P_; ++pk) {
      const std::uint32_t b = pg_.m_begin[pk];
      const std::uint32_t first = DepGraph::node_of(pg_.m_tp[pg_.m_first[pk]]);
      q.op[pk] = g_.op[first];
      q.rec_start[pk] = g_.rec_start[first];
      q.rec_end[pk] = INT64_MIN;
      for (std::uint32_t m = b; m < pg_.m_begin[pk + 1]; ++m) {
        if (pg_.m_start[m] >= 0) q.rec_end[pk] = std::max(q.rec_end[pk], rec(g_, pg_.m_tp[m]));
      }
      longest_to(pg_, b, pg_.m_begin[pk + 1], kEnd, 1.0, false, d);
      q.dur[pk] = d[pg_.m_first[pk] - b];  // L_1(first op's start -> end)
      q.gpu[pk] = 1;
      q.release[pk] = g_.release[first];
    }
    for (std::uint32_t h = 0; h < pg_.host_node.size(); ++h) {
      const std::uint32_t n = pg_.host_node[h];
      const std::uint32_t v = P_ + h;
      q.op[v] = g_.op[n];
      q.dur[v] = g_.dur[n];
      q.rec_start[v] = g_.rec_start[n];
      q.rec_end[v] = g_.rec_end[n];
      q.release[v] = g_.release[n];
    }
    std::size_t r = 0;
    for (std::uint32_t i = 0; i < pg_.port_pack.size(); ++i) {
      const std::uint32_t v = port_base_ + i;
      const std::uint32_t tp = pg_.m_tp[pg_.port_member[i]];
      q.op[v] = g_.op[DepGraph::node_of(tp)];
      const TimeNs t = pg_.port_kind[i] == PortKind::kRelease ? release_[r++] : rec(g_, tp);
      q.rec_start[v] = q.rec_end[v] = t;
      if (pg_.port_kind[i] == PortKind::kRelease) q.release[v] = t;
    }
    q.window = g_.window;
    q.window_start_ns = g_.window_start_ns;
  }

  /// Pack-graph timepoint an op-graph timepoint leaves from: itself (host), its pack's end (an
  /// exit that is always the end) or its exit port's end.
  std::uint32_t source_tp(std::uint32_t tp) const {
    const std::uint32_t n = DepGraph::node_of(tp);
    const std::uint32_t pk = p_.pack_of[n];
    if (pk == kNoPack) return 2 * pg_node_[n] + (DepGraph::is_end(tp) ? 1u : 0u);
    const std::uint32_t m = member_of_[tp];
    if (final_[m]) return DepGraph::end_tp(pk);
    return DepGraph::end_tp(port_base_ + port_of_exit_.at(m));
  }

  /// Timepoint of a target of pack pk (global target index t).
  std::uint32_t target_tp(std::uint32_t pk, std::uint32_t t) const {
    if (t == pg_.t_begin[pk]) return DepGraph::end_tp(pk);
    return DepGraph::start_tp(port_base_ + port_of_exit_.at(pg_.t_member[t]));
  }

  struct Raw {
    std::uint32_t from;
    std::uint32_t to;
    TimeNs lag;
    EdgeType type;
    std::uint8_t inferred;
    std::uint32_t port;  // index into ports_, or UINT32_MAX
  };
  struct Port {
    std::uint32_t pack, entry, target;
    TimeNs base;
  };

  struct Entry {
    std::uint32_t from;    // pack-graph timepoint
    std::uint32_t member;  // where it enters
    TimeNs lag;
    EdgeType type;
    std::uint8_t inferred;
    bool to_end;           // also enters the pack's end (all but the pack's own start)
  };

  /// Port edges of pack pk. The end: one per entry (not the pack's start, whose path is the
  /// node's duration). An exit port x: one per entry in x's region (members with a path to x
  /// that meets no other exit port), lag = that longest path, and one from each other exit port
  /// y on the region's border, lag = the longest path y -> x in the region. Exact: a path from
  /// any source to x either stays in the region, or passes a last other exit port y, whose own
  /// port carries the path up to y. On a stream with a host sync after every op this gives
  /// O(entries + exits) port edges instead of O(entries x exits).
  void emit_ports(std::vector<Raw>& raw, std::uint32_t pk, std::vector<Entry>& entries) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.member < b.member; });
    const std::uint32_t b = pg_.m_begin[pk];
    std::vector<TimeNs> d(pg_.m_begin[pk + 1] - b, INT64_MIN);
    std::vector<std::uint32_t> touched;
    for (std::uint32_t t = pg_.t_begin[pk]; t < pg_.t_begin[pk + 1]; ++t) {
      const bool end = t == pg_.t_begin[pk];
      const std::uint32_t x = pg_.t_member[t];
      const std::uint32_t hi = end ? pg_.m_begin[pk + 1] : x + 1;
      const std::uint32_t tp = target_tp(pk, t);
      for (const std::uint32_t m : touched) d[m - b] = INT64_MIN;
      touched.clear();
      std::uint32_t lo = b;
      if (end) {
        longest_to(pg_, b, hi, kEnd, 1.0, false, d);
        for (std::uint32_t m = b; m < hi; ++m) touched.push_back(m);
      } else {
        lo = region_to(pg_, b, x, d, touched);
      }
      pg_.t_lo[t] = lo;
      auto add = [&](std::uint32_t from, std::uint32_t member, TimeNs lag, EdgeType type, std::uint8_t inferred) {
        const TimeNs L = d[member - b];
        if (L == INT64_MIN || from == tp) return;
        ports_.push_back({pk, member, t, lag});
        raw.push_back({from, tp, lag + L, type, inferred, static_cast<std::uint32_t>(ports_.size() - 1)});
      };
      auto it = std::lower_bound(entries.begin(), entries.end(), lo,
                                 [](const Entry& e, std::uint32_t m) { return e.member < m; });
      for (; it != entries.end() && it->member < hi; ++it) {
        if (end && !it->to_end) continue;
        if (!end && it->member != x && pg_.m_exit[it->member]) continue;  // through that port
        add(it->from, it->member, it->lag, it->type, it->inferred);
      }
      if (end) continue;
      for (std::uint32_t m = lo; m < x; ++m) {
        if (pg_.m_exit[m]) add(DepGraph::end_tp(port_base_ + port_of_exit_.at(m)), m, 0, EdgeType::kStreamOrder, 0);
      }
    }
  }

  /// Every edge of the op graph that crosses a pack boundary, as a pack-graph edge (`raw`) or a
  /// port edge (emit_ports), then the pack graph's in-edge lists.
  void map_edges() {
    std::vector<Raw> raw;
    raw.reserve(g_.edges() + pg_.port_pack.size());
    collect_edges(raw);
    build_in_edges(raw, order_port_edges());
  }

  /// The crossing edges: into a non-pack node or a pack's first op as fixed edges, into a later
  /// member through port entries (with the pack's start and its release ports).
  void collect_edges(std::vector<Raw>& raw) {
    std::vector<std::vector<Entry>> entries(P_);
    for (std::uint32_t to = 0; to < 2 * g_.nodes(); ++to) {
      const std::uint32_t tn = DepGraph::node_of(to);
      const std::uint32_t tpk = p_.pack_of[tn];
      for (std::uint32_t k = g_.in_begin[to]; k < g_.in_begin[to + 1]; ++k) {
        if (g_.in_lag[k] == kDroppedLag) continue;
        const std::uint32_t from = g_.in_from[k];
        if (tpk != kNoPack && p_.pack_of[DepGraph::node_of(from)] == tpk) continue;  // internal
        const std::uint32_t src = source_tp(from);
        if (tpk == kNoPack) {
          raw.push_back({src, 2 * pg_node_[tn] + (DepGraph::is_end(to) ? 1u : 0u), g_.in_lag[k], g_.in_type[k],
                         g_.in_inferred[k], UINT32_MAX});
        } else if (member_of_[to] == pg_.m_first[tpk]) {
          raw.push_back({src, DepGraph::start_tp(tpk), g_.in_lag[k], g_.in_type[k], g_.in_inferred[k], UINT32_MAX});
        } else {
          entries[tpk].push_back({src, member_of_[to], g_.in_lag[k], g_.in_type[k], g_.in_inferred[k], true});
        }
      }
    }
    // The pack's start enters at its first op (to its exit ports; its duration covers the end);
    // release ports enter at their op.
    for (std::uint32_t pk = 0; pk < P_; ++pk) {
      entries[pk].push_back({DepGraph::start_tp(pk), pg_.m_first[pk], 0, EdgeType::kStreamOrder, 0, false});
    }
    for (std::uint32_t i = 0; i < pg_.port_pack.size(); ++i) {
      if (pg_.port_kind[i] != PortKind::kRelease) continue;
      entries[pg_.port_pack[i]].push_back(
          {DepGraph::end_tp(port_base_ + i), pg_.port_member[i], 0, EdgeType::kStreamOrder, 0, true});
    }
    for (std::uint32_t pk = 0; pk < P_; ++pk) emit_ports(raw, pk, entries[pk]);
  }

  /// The port edges' tables (pe_entry, pe_target, pe_base, pe_begin), grouped by pack; returns
  /// each generated port's final index.
  std::vector<std::uint32_t> order_port_edges() {
    // Port edges are generated grouped by pack, then target: that is their final order.
    std::vector<std::uint32_t> order(ports_.size());
    std::iota(order.begin(), order.end(), 0u);
    std::vector<std::uint32_t> final_index(ports_.size());
    pg_.pe_begin.assign(P_ + 1, 0);
    for (std::uint32_t i = 0; i < order.size(); ++i) {
      const Port& pt = ports_[order[i]];
      final_index[order[i]] = i;
      pg_.pe_entry.push_back(pt.entry);
      pg_.pe_target.push_back(pt.target);
      pg_.pe_base.push_back(pt.base);
      ++pg_.pe_begin[pt.pack + 1];
    }
    for (std::uint32_t pk = 0; pk < P_; ++pk) pg_.pe_begin[pk + 1] += pg_.pe_begin[pk];
    pg_.pe_edge.assign(ports_.size(), UINT32_MAX);
    return final_index;
  }

  /// The pack graph's in-edge lists from `raw`: counting sort by target; parallel fixed edges keep
  /// the largest lag, port edges stay (pe_edge, edge_port link them); edge statistics.
  void build_in_edges(const std::vector<Raw>& raw, const std::vector<std::uint32_t>& final_index) {
    graph::DepGraph& q = pg_.g;
    const std::size_t tps = 2 * q.nodes();
    std::vector<std::uint32_t> begin(tps + 1, 0);
    for (const Raw& e : raw) ++begin[e.to + 1];
    for (std::size_t t = 0; t < tps; ++t) begin[t + 1] += begin[t];
    std::vector<std::uint32_t> by_target(raw.size());
    {
      std::vector<std::uint32_t> fill(begin.begin(), begin.end() - 1);
      for (std::uint32_t i = 0; i < raw.size(); ++i) by_target[fill[raw[i].to]++] = i;
    }
    std::vector<std::uint32_t> slot(tps, UINT32_MAX);  // fixed edge index of (from -> current target)
    q.in_begin.assign(tps + 1, 0);
    for (std::uint32_t t = 0; t < tps; ++t) {
      const auto first = static_cast<std::uint32_t>(q.in_from.size());
      for (std::uint32_t i = begin[t]; i < begin[t + 1]; ++i) {
        const Raw& e = raw[by_target[i]];
        if (e.port == UINT32_MAX) {
          const std::uint32_t s = slot[e.from];
          if (s != UINT32_MAX && s >= first) {
            if (e.lag > q.in_lag[s]) {
              q.in_lag[s] = e.lag;
              q.in_type[s] = e.type;
              q.in_inferred[s] = e.inferred;
            }
            continue;
          }
          slot[e.from] = static_cast<std::uint32_t>(q.in_from.size());
        } else {
          pg_.pe_edge[final_index[e.port]] = static_cast<std::uint32_t>(q.in_from.size());
        }
        q.in_from.push_back(e.from);
        q.in_lag.push_back(e.lag);
        q.in_type.push_back(e.type);
        q.in_inferred.push_back(e.inferred);
      }
      q.in_begin[t + 1] = static_cast<std::uint32_t>(q.in_from.size());
    }
    pg_.edge_port.assign(q.edges(), UINT32_MAX);
    for (std::uint32_t i = 0; i < pg_.pe_edge.size(); ++i) pg_.edge_port[pg_.pe_edge[i]] = i;
    for (std::size_t k = 0; k < q.in_type.size(); ++k) {
      ++q.stats.edges[static_cast<int>(q.in_type[k])];
      if (q.in_inferred[k]) ++q.stats.inferred_edges[static_cast<int>(q.in_type[k])];
    }
  }

  const DepGraph& g_;
  const Packing& p_;
  PackGraph pg_;
  std::uint32_t P_ = 0;
  std::uint32_t port_base_ = 0;
  std::vector<std::uint32_t> pg_node_;
  std::vector<std::uint32_t> member_of_;
  std::vector<std::uint8_t> final_;
  std::unordered_map<std::uint32_t, std::uint32_t> port_of_exit_;  // member -> port index
  std::vector<TimeNs> release_;                                    // per release port, in order
  std::vector<Port> ports_;
};

/// splitmix64: a small, well-mixed deterministic generator for the per-pack cases.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double relative_error(TimeNs approx, TimeNs exact) {
  if (exact == 0) return approx == 0 ? 0.0 : 1.0;
  return std::abs(static_cast<double>(approx - exact)) / static_cast<double>(exact);
}

void check_factors(std::span<const double> factors, std::size_t packs) {
  if (factors.size() != packs) {
    throw std::invalid_argument(
        fmt::format("{} factors for {} packs", factors.size(), packs));
  }
  for (const double f : factors) {
    if (!std::isfinite(f) || f <= 0) throw std::invalid_argument(fmt::format("bad factor {}", f));
  }
}

}  // namespace

TimeNs scale_ns(TimeNs dur_ns, double factor) noexcept {
  return static_cast<TimeNs>(std::llround(static_cast<double>(dur_ns) * factor));
}

PackTime PackGraph::pack_time(std::uint32_t pack, double factor) const {
  PackTime out;
  out.port_lags_ns.resize(pe_begin[pack + 1] - pe_begin[pack]);
  if (m_begin[pack] == m_begin[pack + 1]) return out;
  std::vector<TimeNs> dist;
  std::uint32_t k = pe_begin[pack];
  for (std::uint32_t t = t_begin[pack]; t < t_begin[pack + 1]; ++t) {
    const bool end = t == t_begin[pack];
    if (!end && (k == pe_begin[pack + 1] || pe_target[k] != t)) continue;  // nothing enters it
    const auto [lo, hi] = target_range(*this, pack, t);
    longest_to(*this, lo, hi, t_member[t], factor, /*stop_at_exits=*/!end, dist);
    if (end) out.dur_ns = dist[m_first[pack] - lo];
    for (; k < pe_begin[pack + 1] && pe_target[k] == t; ++k) {
      out.port_lags_ns[k - pe_begin[pack]] = pe_base[k] + dist[pe_entry[k] - lo];
    }
  }
  return out;
}

bool no_faster(const PackTime& t, const PackTime& from) noexcept {
  if (t.port_lags_ns.size() != from.port_lags_ns.size() || t.dur_ns < from.dur_ns) return false;
  bool faster = false;  // no early exit: branch-free
  for (std::size_t i = 0; i < t.port_lags_ns.size(); ++i) faster |= t.port_lags_ns[i] < from.port_lags_ns[i];
  return !faster;
}

std::vector<PackTime> PackGraph::pack_times(std::span<const double> factors) const {
  check_factors(factors, packs);
  std::vector<PackTime> out(packs);
  for (std::uint32_t p = 0; p < packs; ++p) out[p] = pack_time(p, factors[p]);
  return out;
}

namespace {

/// Pack p's timing of `times`: a PackTime or a pointer to one.
const PackTime& time_of(std::span<const PackTime> times, std::uint32_t p) { return times[p]; }
const PackTime& time_of(std::span<const PackTime* const> times, std::uint32_t p) { return *times[p]; }

template <typename Times>
void check_times(const PackGraph& pg, Times times) {
  if (times.size() != pg.packs) {
    throw std::invalid_argument(fmt::format("{} pack times for {} packs", times.size(), pg.packs));
  }
  for (std::uint32_t p = 0; p < pg.packs; ++p) {
    const std::size_t lags = time_of(times, p).port_lags_ns.size();
    if (lags != pg.pe_begin[p + 1] - pg.pe_begin[p]) {
      throw std::invalid_argument(
          fmt::format("pack {}: {} port lags for {} port edges", p, lags, pg.pe_begin[p + 1] - pg.pe_begin[p]));
    }
  }
}

/// Every edge's lag under `times`: g's lags with the port edges' replaced. O(E).
template <typename Times>
std::vector<TimeNs> lags_at(const PackGraph& pg, Times times) {
  std::vector<TimeNs> lag = pg.g.in_lag;
  for (std::uint32_t p = 0; p < pg.packs; ++p) {
    const std::vector<TimeNs>& l = time_of(times, p).port_lags_ns;
    for (std::uint32_t k = pg.pe_begin[p]; k < pg.pe_begin[p + 1]; ++k) lag[pg.pe_edge[k]] = l[k - pg.pe_begin[p]];
  }
  return lag;
}

/// PackGraph::evaluate of either form of `times`.
template <typename Times>
timing::Schedule evaluate_at(const PackGraph& pg, Times times) {
  check_times(pg, times);
  // timing::replay, with the packs' durations and port-edge lags taken from `times`.
  const std::vector<TimeNs> lag = lags_at(pg, times);
  return timing::replay_with(
      pg.g, [&](std::uint32_t n) { return n < pg.packs ? time_of(times, n).dur_ns : pg.g.dur[n]; },
      [&](std::uint32_t k) { return lag[k]; });
}

}  // namespace

timing::Schedule PackGraph::evaluate(std::span<const PackTime> times) const { return evaluate_at(*this, times); }

timing::Schedule PackGraph::evaluate(std::span<const PackTime* const> times) const { return evaluate_at(*this, times); }

timing::Schedule PackGraph::evaluate_factors(std::span<const double> factors) const {
  return evaluate(pack_times(factors));
}

graph::DepGraph PackGraph::graph_at(std::span<const PackTime> times) const {
  check_times(*this, times);
  graph::DepGraph out = g;
  for (std::uint32_t p = 0; p < packs; ++p) out.dur[p] = times[p].dur_ns;
  out.in_lag = lags_at(*this, times);
  return out;
}

std::size_t PackGraph::memory_bytes() const noexcept {
  auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  return g.memory_bytes() + bytes(host_node) + bytes(port_pack) + bytes(port_member) + bytes(port_kind) +
         bytes(m_begin) + bytes(m_first) + bytes(m_tp) + bytes(m_start) + bytes(m_dur) + bytes(m_in_begin) + bytes(m_in_from) +
         bytes(m_in_lag) + bytes(m_exit) + bytes(t_begin) + bytes(t_member) + bytes(t_lo) + bytes(pe_begin) + bytes(pe_edge) + bytes(pe_entry) +
         bytes(pe_target) + bytes(pe_base) + bytes(edge_port);
}

std::vector<TimeNs> pack_slack(const PackGraph& pg, const graph::DepGraph& at, const timing::Schedule& s) {
  if (at.nodes() != pg.g.nodes() || s.time.size() != 2 * pg.g.nodes())
    throw std::invalid_argument("pack_slack: the graph or schedule is not of the pack graph");
  const std::vector<TimeNs> latest = timing::latest_times(at, s, at.dur);
  auto slack_of = [&](std::uint32_t node) {
    const std::uint32_t tp = graph::DepGraph::end_tp(node);
    return std::max<TimeNs>(0, latest[tp] - s.time[tp]);
  };
  std::vector<TimeNs> out(pg.packs);
  for (std::uint32_t p = 0; p < pg.packs; ++p) out[p] = slack_of(p);
  const auto first_port = static_cast<std::uint32_t>(pg.packs + pg.host_node.size());
  for (std::uint32_t i = 0; i < pg.port_pack.size(); ++i) {
    if (pg.port_kind[i] != PortKind::kExit) continue;
    TimeNs& o = out[pg.port_pack[i]];
    o = std::min(o, slack_of(first_port + i));
  }
  return out;
}

PackGraph contract(const graph::DepGraph& g, const Packing& packing) {
  return Contractor(g, packing).run();
}

std::vector<TimeNs> scaled_op_durations(const graph::DepGraph& g, const Packing& packing,
                                        std::span<const double> factors) {
  check_factors(factors, packing.packs.size());
  std::vector<TimeNs> dur = g.dur;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    const std::uint32_t p = packing.pack_of[n];
    if (p != kNoPack) dur[n] = scale_ns(dur[n], factors[p]);
  }
  return dur;
}

ContractionReport check_contraction(const graph::DepGraph& g, const Packing& packing,
                                    const PackGraph& pg, const ContractionOptions& options) {
  ContractionReport r;
  const std::size_t P = packing.packs.size();
  auto run_case = [&](std::string label, const std::vector<double>& f) {
    ContractionCase c;
    c.label = std::move(label);
    c.op_makespan_ns = timing::replay(g, scaled_op_durations(g, packing, f)).makespan_ns;
    c.pack_makespan_ns = pg.evaluate_factors(f).makespan_ns;
    c.error = relative_error(c.pack_makespan_ns, c.op_makespan_ns);
    return c;
  };
  for (const double f : options.uniform_factors) {
    r.uniform.push_back(run_case(fmt::format("x{}", f), std::vector<double>(P, f)));
    r.uniform_error = std::max(r.uniform_error, r.uniform.back().error);
  }
  std::uint64_t state = options.seed;
  const auto& choices = options.per_pack_factors;
  for (int c = 0; c < options.per_pack_cases && !choices.empty(); ++c) {
    std::vector<double> f(P);
    for (double& x : f) x = choices[next_random(state) % choices.size()];
    r.per_pack.push_back(run_case(fmt::format("per-pack #{}", c + 1), f));
    r.per_pack_error = std::max(r.per_pack_error, r.per_pack.back().error);
  }
  r.contraction_error = std::max(r.uniform_error, r.per_pack_error);
  return r;
}

}  // namespace emo::pack
