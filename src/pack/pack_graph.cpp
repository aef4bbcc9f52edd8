#include "pack/pack_graph.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace emo::pack {
namespace {

using graph::DepGraph;
using graph::EdgeType;
using graph::kDroppedLag;

constexpr std::uint8_t kHeldToStart = 1;
constexpr std::uint8_t kHeldToAnchor = 2;

struct RawEdge {
  std::uint32_t from;
  std::uint32_t to;
  TimeNs lag;
  EdgeType type;
  std::uint8_t inferred;
};

/// Recorded time of a timepoint of `g`.
TimeNs rec(const DepGraph& g, std::uint32_t tp) {
  const std::uint32_t n = DepGraph::node_of(tp);
  return DepGraph::is_end(tp) ? g.rec_end[n] : g.rec_start[n];
}

/// Kahn's algorithm over the timepoints of `g` (with each node's start -> end). A cycle that
/// contraction closed is broken by forcing the earliest (recorded) unfinished timepoint and
/// dropping its still-blocking incoming edges; returns how many were dropped.
std::int64_t topological_order(DepGraph& g) {
  const std::size_t tps = 2 * g.nodes();
  std::vector<std::uint32_t> indeg(tps, 0);
  std::vector<std::uint32_t> out_begin(tps + 1, 0);
  for (std::uint32_t t = 0; t < tps; ++t) {
    indeg[t] = g.in_begin[t + 1] - g.in_begin[t] + (DepGraph::is_end(t) ? 1 : 0);
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) ++out_begin[g.in_from[k] + 1];
  }
  for (std::size_t t = 0; t < tps; ++t) out_begin[t + 1] += out_begin[t];
  std::vector<std::uint32_t> out_edge(g.edges());  // in-CSR index of each out-edge
  std::vector<std::uint32_t> fill(out_begin.begin(), out_begin.end() - 1);
  std::vector<std::uint32_t> target(g.edges());
  for (std::uint32_t t = 0; t < tps; ++t) {
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) {
      out_edge[fill[g.in_from[k]]++] = k;
      target[k] = t;
    }
  }
  g.topo.clear();
  g.topo.reserve(tps);
  std::vector<std::uint32_t> ready;
  for (std::uint32_t t = 0; t < tps; ++t) {
    if (indeg[t] == 0) ready.push_back(t);
  }
  std::vector<std::uint8_t> done(tps, 0);
  std::vector<std::uint32_t> seen(tps, 0), pos(tps, 0);
  std::uint32_t generation = 0;
  std::int64_t dropped = 0;
  while (g.topo.size() < tps) {
    while (!ready.empty()) {
      const std::uint32_t t = ready.back();
      ready.pop_back();
      g.topo.push_back(t);
      done[t] = 1;
      if (!DepGraph::is_end(t) && --indeg[t + 1] == 0) ready.push_back(t + 1);
      for (std::uint32_t o = out_begin[t]; o < out_begin[t + 1]; ++o) {
        const std::uint32_t k = out_edge[o];
        if (g.in_lag[k] == kDroppedLag) continue;  // already taken off its target's count
        if (--indeg[target[k]] == 0) ready.push_back(target[k]);
      }
    }
    if (g.topo.size() == tps) break;
    // A cycle closed by contraction: a host call waits for an op in the middle of an island
    // (which cannot be split) and then launches a later op of the same island, so the path
    // leaves the pack and re-enters it. Find one cycle by walking blocking edges backwards from
    // a blocked timepoint, and drop one of its edges: preferably one into a pack start that
    // keeps another constraint tight at the recorded times (the replay stays exact).
    ++generation;
    std::uint32_t t = 0;
    while (done[t] || indeg[t] == 0) ++t;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> walk;  // (timepoint, edge into it)
    while (seen[t] != generation) {
      seen[t] = generation;
      pos[t] = static_cast<std::uint32_t>(walk.size());
      std::uint32_t via = UINT32_MAX, src = UINT32_MAX;
      if (DepGraph::is_end(t) && !done[t - 1]) {
        src = t - 1;  // its own start
      } else {
        for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) {
          if (!done[g.in_from[k]] && g.in_lag[k] != kDroppedLag) {
            via = k;
            src = g.in_from[k];
            break;
          }
        }
      }
      walk.push_back({t, via});
      t = src;
    }
    std::uint32_t pick = UINT32_MAX;
    int best = -1;
    for (std::size_t i = pos[t]; i < walk.size(); ++i) {
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
        pick = k;
      }
    }
    const std::uint32_t to = target[pick];
    g.in_lag[pick] = kDroppedLag;
    ++dropped;
    if (--indeg[to] == 0) ready.push_back(to);
  }
  return dropped;
}

class Contractor {
 public:
  Contractor(const DepGraph& g, const Packing& p) : g_(g), p_(p) {}

  PackGraph run() {
    if (p_.pack_of.size() != g_.nodes()) {
      throw std::invalid_argument("contract: the packing is not of this graph");
    }
    number_nodes();
    fill_nodes();
    map_edges();
    build_models();
    add_anchor_edges();
    pg_.g.dur.resize(pg_.g.nodes());
    for (std::uint32_t pk = 0; pk < P_; ++pk) pg_.g.dur[pk] = pg_.pack_time(pk, 1.0).dur_ns;
    pg_.cycle_edges = topological_order(pg_.g);
    pg_.g.stats.cycle_edges = pg_.cycle_edges;
    return std::move(pg_);
  }

 private:
  void number_nodes() {
    P_ = static_cast<std::uint32_t>(p_.packs.size());
    pg_.packs = P_;
    pg_node_.assign(g_.nodes(), 0);
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
      if (p_.pack_of[n] != kNoPack) {
        pg_node_[n] = p_.pack_of[n];
      } else {
        if (g_.gpu[n]) throw std::invalid_argument("contract: a GPU op is in no pack");
        pg_node_[n] = P_ + static_cast<std::uint32_t>(pg_.host_node.size());
        pg_.host_node.push_back(n);
      }
    }
  }

  void fill_nodes() {
    graph::DepGraph& q = pg_.g;
    const std::size_t nodes = P_ + pg_.host_node.size();
    q.op.resize(nodes);
    q.dur.resize(nodes);
    q.rec_start.resize(nodes);
    q.rec_end.resize(nodes);
    q.gpu.resize(nodes);
    q.release.assign(nodes, INT64_MIN);
    for (std::uint32_t pk = 0; pk < P_; ++pk) {
      const Pack& pack = p_.packs[pk];
      q.op[pk] = g_.op[p_.nodes[pack.first]];
      q.rec_start[pk] = pack.start_ns;
      q.rec_end[pk] = pack.end_ns;
      q.dur[pk] = pack.end_ns - pack.start_ns;
      q.gpu[pk] = 1;
      for (const std::uint32_t n : p_.ops_of(pk)) {
        if (g_.release[n] != INT64_MIN) {
          q.release[pk] = std::max(q.release[pk], g_.release[n] - (g_.rec_start[n] - pack.start_ns));
        }
      }
    }
    for (std::uint32_t h = 0; h < pg_.host_node.size(); ++h) {
      const std::uint32_t n = pg_.host_node[h];
      const std::uint32_t v = P_ + h;
      q.op[v] = g_.op[n];
      q.dur[v] = g_.dur[n];
      q.rec_start[v] = g_.rec_start[n];
      q.rec_end[v] = g_.rec_end[n];
      q.gpu[v] = 0;
      q.release[v] = g_.release[n];
    }
    q.window = g_.window;
    q.window_start_ns = g_.window_start_ns;
  }

  std::uint32_t pg_tp(std::uint32_t tp) const {
    return 2 * pg_node_[DepGraph::node_of(tp)] + (DepGraph::is_end(tp) ? 1u : 0u);
  }

  /// Recorded offset of an op-graph timepoint from the pack timepoint it maps to.
  TimeNs adj(std::uint32_t tp) const {
    const std::uint32_t n = DepGraph::node_of(tp);
    const std::uint32_t pk = p_.pack_of[n];
    if (pk == kNoPack) return 0;
    return DepGraph::is_end(tp) ? g_.rec_end[n] - p_.packs[pk].end_ns
                                : g_.rec_start[n] - p_.packs[pk].start_ns;
  }

  void map_edges() {
    std::vector<RawEdge> raw;
    raw.reserve(g_.edges());
    for (std::uint32_t to = 0; to < 2 * g_.nodes(); ++to) {
      const std::uint32_t tpk = p_.pack_of[DepGraph::node_of(to)];
      for (std::uint32_t k = g_.in_begin[to]; k < g_.in_begin[to + 1]; ++k) {
        if (g_.in_lag[k] == kDroppedLag) continue;
        const std::uint32_t from = g_.in_from[k];
        if (tpk != kNoPack && p_.pack_of[DepGraph::node_of(from)] == tpk) continue;  // internal
        raw.push_back({pg_tp(from), pg_tp(to), g_.in_lag[k] + adj(from) - adj(to), g_.in_type[k],
                       g_.in_inferred[k]});
      }
    }
    // Counting sort by target; parallel edges keep the largest lag.
    graph::DepGraph& q = pg_.g;
    const std::size_t tps = 2 * q.nodes();
    std::vector<std::uint32_t> begin(tps + 1, 0);
    for (const RawEdge& e : raw) ++begin[e.to + 1];
    for (std::size_t t = 0; t < tps; ++t) begin[t + 1] += begin[t];
    std::vector<std::uint32_t> order(raw.size());
    {
      std::vector<std::uint32_t> fill(begin.begin(), begin.end() - 1);
      for (std::uint32_t i = 0; i < raw.size(); ++i) order[fill[raw[i].to]++] = i;
    }
    std::vector<std::uint32_t> slot(tps, UINT32_MAX);  // edge index of (from -> current target)
    q.in_begin.assign(tps + 1, 0);
    for (std::uint32_t t = 0; t < tps; ++t) {
      const auto first = static_cast<std::uint32_t>(q.in_from.size());
      for (std::uint32_t i = begin[t]; i < begin[t + 1]; ++i) {
        const RawEdge& e = raw[order[i]];
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
        q.in_from.push_back(e.from);
        q.in_lag.push_back(e.lag);
        q.in_type.push_back(e.type);
        q.in_inferred.push_back(e.inferred);
      }
      q.in_begin[t + 1] = static_cast<std::uint32_t>(q.in_from.size());
    }
    for (std::size_t k = 0; k < q.in_type.size(); ++k) {
      ++q.stats.edges[static_cast<int>(q.in_type[k])];
      if (q.in_inferred[k]) ++q.stats.inferred_edges[static_cast<int>(q.in_type[k])];
    }
  }

  void build_models() {
    pg_.m_begin.assign(P_ + 1, 0);
    for (std::uint32_t pk = 0; pk < P_; ++pk) pg_.m_begin[pk + 1] = pg_.m_begin[pk] + 2 * p_.packs[pk].count;
    const std::size_t members = pg_.m_begin[P_];
    pg_.m_tp.resize(members);
    std::vector<std::uint32_t> member_of(2 * g_.nodes(), UINT32_MAX);
    {
      std::vector<std::uint32_t> fill(pg_.m_begin.begin(), pg_.m_begin.end() - 1);
      for (const std::uint32_t tp : g_.topo) {
        const std::uint32_t pk = p_.pack_of[DepGraph::node_of(tp)];
        if (pk == kNoPack) continue;
        const std::uint32_t m = fill[pk]++;
        pg_.m_tp[m] = tp;
        member_of[tp] = m;
      }
    }
    pg_.m_start.assign(members, -1);
    pg_.m_dur.assign(members, 0);
    pg_.m_anchor.assign(members, INT64_MIN);
    pg_.m_anchor_kind.assign(members, 0);
    pg_.m_in_begin.assign(members + 1, 0);
    pg_.m_anchored_ops.assign(P_, 0);
    std::vector<TimeNs> t(members, 0);  // offsets at factor 1, to find the anchors
    for (std::uint32_t pk = 0; pk < P_; ++pk) {
      const TimeNs start = p_.packs[pk].start_ns;
      const bool has_anchor = p_.anchor_tp[pk] != UINT32_MAX;
      for (std::uint32_t m = pg_.m_begin[pk]; m < pg_.m_begin[pk + 1]; ++m) {
        const std::uint32_t tp = pg_.m_tp[m];
        const std::uint32_t n = DepGraph::node_of(tp);
        TimeNs v = INT64_MIN;
        if (DepGraph::is_end(tp)) {
          pg_.m_start[m] = static_cast<std::int32_t>(member_of[tp - 1]);
          pg_.m_dur[m] = g_.dur[n];
          v = t[member_of[tp - 1]] + g_.dur[n];
        }
        for (std::uint32_t k = g_.in_begin[tp]; k < g_.in_begin[tp + 1]; ++k) {
          if (g_.in_lag[k] == kDroppedLag) continue;
          const std::uint32_t from = g_.in_from[k];
          if (p_.pack_of[DepGraph::node_of(from)] != pk) continue;
          pg_.m_in_from.push_back(member_of[from]);
          pg_.m_in_lag.push_back(g_.in_lag[k]);
          v = std::max(v, t[member_of[from]] + g_.in_lag[k]);
        }
        pg_.m_in_begin[m + 1] = static_cast<std::uint32_t>(pg_.m_in_from.size());
        const TimeNs offset = rec(g_, tp) - start;
        if (v < offset) {
          // An outside dependency holds it: to the anchor if it follows it, else (and always
          // at offset 0, where the pack's start carries every constraint) to the start.
          pg_.m_anchor[m] = offset;
          const bool follows = has_anchor && !DepGraph::is_end(tp) && p_.follows_anchor[n] != 0;
          pg_.m_anchor_kind[m] = static_cast<std::uint8_t>((follows ? kHeldToAnchor : 0) |
                                                           (!follows || offset == 0 ? kHeldToStart : 0));
          if (!DepGraph::is_end(tp) && offset > 0) ++pg_.m_anchored_ops[pk];
          v = offset;
        }
        t[m] = v;
      }
    }
  }

  /// Per pack with an anchor: the edge anchor -> E(pack), lag = the lag of the anchor's edge
  /// into the earliest op (mapped) + anchored_ns at factor 1. Added after the CSR is built:
  /// each goes at the end of its target's group.
  void add_anchor_edges() {
    graph::DepGraph& q = pg_.g;
    pg_.anchor_edge.assign(P_, UINT32_MAX);
    pg_.anchor_base_lag.assign(P_, 0);
    std::vector<RawEdge> extra;
    for (std::uint32_t pk = 0; pk < P_; ++pk) {
      const std::uint32_t a = p_.anchor_tp[pk];
      if (a == UINT32_MAX) continue;
      const PackTime pt = pg_.pack_time(pk, 1.0);
      if (pt.anchored_ns == kNoAnchoredPart) continue;
      const std::uint32_t first = p_.nodes[p_.packs[pk].first];
      TimeNs lag0 = INT64_MIN;
      const std::uint32_t s = DepGraph::start_tp(first);
      for (std::uint32_t k = g_.in_begin[s]; k < g_.in_begin[s + 1]; ++k) {
        if (g_.in_from[k] == a && g_.in_lag[k] != kDroppedLag) lag0 = std::max(lag0, g_.in_lag[k]);
      }
      if (lag0 == INT64_MIN) continue;
      pg_.anchor_base_lag[pk] = lag0 + adj(a);  // the earliest op is at offset 0
      extra.push_back({pg_tp(a), 2 * pk + 1, pg_.anchor_base_lag[pk] + pt.anchored_ns,
                       EdgeType::kLaunch, 0});
    }
    if (extra.empty()) return;
    // Rebuild the CSR with the extra edges appended to their targets' groups.
    const std::size_t tps = 2 * q.nodes();
    std::vector<std::uint32_t> add(tps, 0);
    for (const RawEdge& e : extra) ++add[e.to];
    std::vector<std::uint32_t> in_begin(tps + 1, 0);
    for (std::size_t t = 0; t < tps; ++t) in_begin[t + 1] = in_begin[t] + (q.in_begin[t + 1] - q.in_begin[t]) + add[t];
    const std::size_t m = in_begin[tps];
    std::vector<std::uint32_t> from(m);
    std::vector<TimeNs> lag(m);
    std::vector<EdgeType> type(m);
    std::vector<std::uint8_t> inferred(m);
    for (std::size_t t = 0; t < tps; ++t) {
      std::uint32_t o = in_begin[t];
      for (std::uint32_t k = q.in_begin[t]; k < q.in_begin[t + 1]; ++k, ++o) {
        from[o] = q.in_from[k];
        lag[o] = q.in_lag[k];
        type[o] = q.in_type[k];
        inferred[o] = q.in_inferred[k];
      }
    }
    std::vector<std::uint32_t> fill(tps);
    for (std::size_t t = 0; t < tps; ++t) fill[t] = in_begin[t] + (q.in_begin[t + 1] - q.in_begin[t]);
    for (const RawEdge& e : extra) {
      const std::uint32_t o = fill[e.to]++;
      from[o] = e.from;
      lag[o] = e.lag;
      type[o] = e.type;
      inferred[o] = 0;
      pg_.anchor_edge[DepGraph::node_of(e.to)] = o;
      ++q.stats.edges[static_cast<int>(e.type)];
    }
    q.in_begin = std::move(in_begin);
    q.in_from = std::move(from);
    q.in_lag = std::move(lag);
    q.in_type = std::move(type);
    q.in_inferred = std::move(inferred);
  }

  const DepGraph& g_;
  const Packing& p_;
  PackGraph pg_;
  std::uint32_t P_ = 0;
  std::vector<std::uint32_t> pg_node_;
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
  // Two max-plus replays in one pass: from the pack's start (ops held to it, at their offsets)
  // and from its anchor (ops that follow it). INT64_MIN is "not reached".
  const std::uint32_t b = m_begin[pack];
  const std::uint32_t e = m_begin[pack + 1];
  std::vector<TimeNs> ts(e - b), ta(e - b);
  PackTime out{INT64_MIN, INT64_MIN};
  auto later = [](TimeNs v, TimeNs from, TimeNs lag) {
    return from == INT64_MIN ? v : std::max(v, from + lag);
  };
  for (std::uint32_t m = b; m < e; ++m) {
    TimeNs vs = (m_anchor_kind[m] & kHeldToStart) ? m_anchor[m] : INT64_MIN;
    TimeNs va = (m_anchor_kind[m] & kHeldToAnchor) ? m_anchor[m] : INT64_MIN;
    if (m_start[m] >= 0) {
      const std::uint32_t sm = static_cast<std::uint32_t>(m_start[m]) - b;
      const TimeNs d = scale_ns(m_dur[m], factor);
      vs = later(vs, ts[sm], d);
      va = later(va, ta[sm], d);
    }
    for (std::uint32_t k = m_in_begin[m]; k < m_in_begin[m + 1]; ++k) {
      vs = later(vs, ts[m_in_from[k] - b], m_in_lag[k]);
      va = later(va, ta[m_in_from[k] - b], m_in_lag[k]);
    }
    ts[m - b] = vs;
    ta[m - b] = va;
    if (m_start[m] >= 0) {
      out.dur_ns = std::max(out.dur_ns, vs);
      out.anchored_ns = std::max(out.anchored_ns, va);
    }
  }
  if (out.dur_ns == INT64_MIN) out.dur_ns = 0;
  return out;
}

std::vector<PackTime> PackGraph::pack_times(std::span<const double> factors) const {
  check_factors(factors, packs);
  std::vector<PackTime> out(packs);
  for (std::uint32_t p = 0; p < packs; ++p) out[p] = pack_time(p, factors[p]);
  return out;
}

timing::Schedule PackGraph::evaluate(std::span<const PackTime> times) const {
  if (times.size() != packs) {
    throw std::invalid_argument(fmt::format("{} pack times for {} packs", times.size(), packs));
  }
  // timing::replay, with the packs' durations and anchor-edge lags taken from `times`.
  timing::Schedule s;
  s.time.assign(2 * g.nodes(), 0);
  s.end_ns = g.window_start_ns;
  for (const std::uint32_t tp : g.topo) {
    const std::uint32_t n = DepGraph::node_of(tp);
    const bool is_pack = n < packs;
    TimeNs v;
    if (DepGraph::is_end(tp)) {
      v = s.time[DepGraph::start_tp(n)] + (is_pack ? times[n].dur_ns : g.dur[n]);
    } else {
      v = g.release[n];
    }
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_lag[k] == kDroppedLag) continue;
      TimeNs lag = g.in_lag[k];
      if (is_pack && k == anchor_edge[n]) {
        if (times[n].anchored_ns == kNoAnchoredPart) continue;
        lag = anchor_base_lag[n] + times[n].anchored_ns;
      }
      v = std::max(v, s.time[g.in_from[k]] + lag);
    }
    if (v == INT64_MIN) v = g.rec_start[n];
    s.time[tp] = v;
    if (DepGraph::is_end(tp) && v >= s.end_ns) {
      s.end_ns = v;
      s.last_node = n;
    }
  }
  s.makespan_ns = g.nodes() == 0 ? 0 : s.end_ns - g.window_start_ns;
  return s;
}

timing::Schedule PackGraph::evaluate_factors(std::span<const double> factors) const {
  return evaluate(pack_times(factors));
}

std::size_t PackGraph::memory_bytes() const noexcept {
  return g.memory_bytes() + host_node.capacity() * 4 + m_begin.capacity() * 4 +
         m_tp.capacity() * 4 + m_start.capacity() * 4 + m_dur.capacity() * 8 +
         m_anchor.capacity() * 8 + m_anchor_kind.capacity() + anchor_edge.capacity() * 4 +
         anchor_base_lag.capacity() * 8 + m_in_begin.capacity() * 4 + m_in_from.capacity() * 4 +
         m_in_lag.capacity() * 8 + m_anchored_ops.capacity() * 4;
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
