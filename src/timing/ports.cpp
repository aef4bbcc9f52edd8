#include "timing/ports.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "graph/algorithms.h"

namespace emo::timing {
namespace {

using graph::DepGraph;
constexpr TimeNs kNoTime = INT64_MIN;

TimeNs plus(TimeNs t, TimeNs lag) { return t == kNoTime ? kNoTime : t + lag; }

/// Kept timepoints of reduce_to_ports: every port's start and end.
std::vector<std::uint8_t> port_timepoints(const DepGraph& g, std::span<const std::uint32_t> port_node) {
  std::vector<std::uint8_t> kept(2 * g.nodes(), 0);
  for (const std::uint32_t n : port_node) {
    if (n < g.nodes()) kept[DepGraph::start_tp(n)] = kept[DepGraph::end_tp(n)] = 1;
  }
  return kept;
}

/// The forward passes of reduce_to_ports over one graph: graph::KeptPaths through every edge and
/// every node's duration but a port's (its end is the job's), reporting at port timepoints and
/// going on through them.
class Reducer {
 public:
  Reducer(const DepGraph& g, std::span<const TimeNs> dur, std::span<const std::uint32_t> port_node)
      : g_(g), dur_(dur), port_node_(port_node), port_of_(g.nodes(), kNone32), pos_(2 * g.nodes()),
        paths_(g, arcs(g, dur, port_node), port_timepoints(g, port_node), graph::AtKept::kPass) {
    for (std::uint32_t p = 0; p < port_node.size(); ++p) {
      const std::uint32_t n = port_node[p];
      if (n >= g.nodes() || port_of_[n] != kNone32) throw std::invalid_argument("reduce_to_ports: a port outside the graph, or twice");
      port_of_[n] = p;
    }
    for (std::uint32_t i = 0; i < g.topo.size(); ++i) pos_[g.topo[i]] = i;
  }

  PortGraph run() {
    const std::size_t k = port_node_.size();
    PortGraph out;
    out.window_start_ns = g_.window_start_ns;
    out.dur_ns.resize(k);
    for (std::size_t p = 0; p < k; ++p) out.dur_ns[p] = dur_[port_node_[p]];
    // From each port's end, latest first, so that the lags of the ports after it are final when
    // its own are pruned against them.
    std::vector<std::uint32_t> by_start(k);
    std::iota(by_start.begin(), by_start.end(), 0);
    std::sort(by_start.begin(), by_start.end(), [&](auto a, auto b) { return pos_[start_tp(a)] < pos_[start_tp(b)]; });
    kept_.assign(k, {});
    kept_end_.assign(k, kNoTime);
    // Every source of a pass (ports' ends and hubs), latest first: a pass reaches only later
    // timepoints, so the sources it may compose or be covered by are done.
    std::vector<std::uint32_t> hub_tp = hubs();
    hub_.assign(hub_tp.size(), {});
    seen_.assign(k + hub_tp.size(), {});
    std::vector<std::uint32_t> order(k + hub_tp.size());
    std::iota(order.begin(), order.end(), 0);
    auto tp_of = [&](std::uint32_t i) { return i < k ? end_tp(i) : hub_tp[i - k]; };
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return pos_[tp_of(a)] > pos_[tp_of(b)]; });
    for (const std::uint32_t i : order) {
      const TimeNs to_end = pass_from(tp_of(i), i);
      if (i >= k) {
        hub_[i - k] = covered(to_end);
        continue;
      }
      for (std::size_t p = 0; p < k; ++p) {
        if (p != i && at_end_[p] != kNoTime) out.lags.push_back({i, static_cast<std::uint32_t>(p), at_end_[p], true});
      }
      prune(i, at_start_, to_end, by_start);
    }
    // The rank's own sources: releases (and recorded starts where every constraint was dropped),
    // last, so that their pass too stops where a hub's or a port's takes over.
    out.end_release_ns_rank = pass_from(graph::KeptPaths::kSources, kNone32);
    out.release_ns = at_start_;
    out.end_release_ns = at_end_;
    for (std::uint32_t q = 0; q < k; ++q) {
      for (const auto& [p, lag] : kept_[q]) out.lags.push_back({q, p, lag, false});
      if (kept_end_[q] != kNoTime) out.lags.push_back({q, kRankEnd, kept_end_[q], false});
    }
    std::sort(out.lags.begin(), out.lags.end(), [](const PortLag& a, const PortLag& b) {
      return a.from != b.from ? a.from < b.from : (a.to != b.to ? a.to < b.to : a.into_end < b.into_end);
    });
    return out;
  }

 private:
  static constexpr std::uint32_t kNone32 = UINT32_MAX;

  /// Every live edge at its lag; S → E of every node but a port at its duration `dur`.
  static graph::TimepointArcs arcs(const DepGraph& g, std::span<const TimeNs> dur, std::span<const std::uint32_t> port_node) {
    if (dur.size() != g.nodes()) throw std::invalid_argument("reduce_to_ports: one duration per graph node needed");
    std::vector<std::uint8_t> port(g.nodes(), 0);
    for (const std::uint32_t n : port_node) {
      if (n < g.nodes()) port[n] = 1;
    }
    return graph::timepoint_arcs(g, [&](std::uint32_t k) { return g.in_lag[k]; },
                                 [&](std::uint32_t n) { return port[n] ? INT64_MIN : dur[n]; });
  }

  std::uint32_t start_tp(std::uint32_t p) const { return DepGraph::start_tp(port_node_[p]); }
  std::uint32_t end_tp(std::uint32_t p) const { return DepGraph::end_tp(port_node_[p]); }

  /// A pass from `src_tp` (a port's end, a hub, or kSources: the rank's own sources, on its own
  /// clock), to each port's start and end (at_start_/at_end_; kNoTime: not reached) and to the
  /// end of a node that is not a port (returned; kNoTime: none), that leaves out what a later source's pass
  /// already covers (ports.h, "Passes that stop where another takes over"): a timepoint x reached
  /// at v is dropped when a hub h this pass reached at d, whose own pass reached x at v_h, gives
  /// d + v_h ≥ v (every path through x is as long through h), or a port m whose start it reached
  /// at d gives d + dur(m) + v_m ≥ v (the chain through m bounds it: E(m) ≥ S(m) + dur(m)). The
  /// hubs reached are then composed in: at_start_/at_end_/the returned tail take d + what h's pass
  /// found. Records the pass's (position, value) in seen_[self], ascending, for earlier sources
  /// (self kNone32: not recorded).
  TimeNs pass_from(std::uint32_t src_tp, std::uint32_t self) {
    at_start_.assign(port_node_.size(), kNoTime);
    at_end_.assign(port_node_.size(), kNoTime);
    std::vector<Seen> scratch;
    std::vector<Seen>& seen = self == kNone32 ? scratch : seen_[self];
    via_.clear();
    hubs_reached_.clear();
    TimeNs tail = paths_.pass(
        src_tp, 0,
        [&](std::uint32_t tp, TimeNs v) { (DepGraph::is_end(tp) ? at_end_ : at_start_)[port_of_[DepGraph::node_of(tp)]] = v; },
        [&](std::size_t pos, std::uint32_t tp, TimeNs v) {
          if (dominated(pos, v)) return false;
          seen.push_back({static_cast<std::uint32_t>(pos), v});
          const std::uint32_t n = DepGraph::node_of(tp);
          if (!DepGraph::is_end(tp) && port_of_[n] != kNone32) add_via(port_of_[n], v + dur_[n], pos);
          if (const std::uint32_t h = hub_of_tp_[tp]; h != kNone32) {
            hubs_reached_.push_back({h, v});
            add_via(static_cast<std::uint32_t>(port_node_.size()) + h, v, pos);
          }
          return true;
        });
    for (const auto& [h, d] : hubs_reached_) {
      const Covered& c = hub_[h];
      for (const auto& [p, ns] : c.start) at_start_[p] = std::max(at_start_[p], d + ns);
      for (const auto& [p, ns] : c.end) at_end_[p] = std::max(at_end_[p], d + ns);
      if (c.tail != kNoTime) tail = std::max(tail, d + c.tail);
    }
    return tail;
  }

  /// True when a source of via_ covers timepoint position `pos` reached at `v`; drops the sources
  /// whose passes have nothing left past `pos`.
  bool dominated(std::size_t pos, TimeNs v) {
    bool out = false;
    for (Via& c : via_) {
      const std::vector<Seen>& s = seen_[c.source];
      while (c.at < s.size() && s[c.at].pos < pos) ++c.at;
      if (c.at < s.size() && s[c.at].pos == pos && v <= c.base + s[c.at].ns) out = true;
    }
    std::erase_if(via_, [&](const Via& c) { return c.at >= seen_[c.source].size(); });
    return out;
  }

  /// Checks the rest of the current pass against `source`'s pass (done before: it starts later),
  /// at `base` + its values, from position `pos` on; at most kVia at a time (the one with the
  /// least of its pass left makes room).
  void add_via(std::uint32_t source, TimeNs base, std::size_t pos) {
    const std::vector<Seen>& s = seen_[source];
    if (s.empty()) return;
    const auto at = std::lower_bound(s.begin(), s.end(), pos, [](const Seen& a, std::size_t b) { return a.pos < b; });
    if (at == s.end()) return;
    if (via_.size() == kVia) {
      via_.erase(std::min_element(via_.begin(), via_.end(), [&](const Via& a, const Via& b) {
        return seen_[a.source].size() - a.at < seen_[b.source].size() - b.at;
      }));
    }
    via_.push_back({source, base, static_cast<std::size_t>(at - s.begin())});
  }

  /// Keeps the lags from q (`direct`: to each port's start; `to_end`: to the rank's end) that no
  /// chain through other ports implies (file comment of ports.h).
  void prune(std::uint32_t q, const std::vector<TimeNs>& direct, TimeNs to_end, const std::vector<std::uint32_t>& by_start) {
    const std::size_t k = direct.size();
    chain_.assign(k, kNoTime);
    TimeNs end_bound = kNoTime;
    for (const std::uint32_t m : by_start) {
      if (pos_[start_tp(m)] <= pos_[end_tp(q)] || m == q) continue;
      const TimeNs arrive = std::max(direct[m], chain_[m]);
      if (direct[m] != kNoTime && direct[m] > chain_[m]) kept_[q].push_back({m, direct[m]});
      if (arrive == kNoTime) continue;
      const TimeNs e = arrive + dur_[port_node_[m]];
      end_bound = std::max(end_bound, e);
      for (const auto& [p, lag] : kept_[m]) chain_[p] = std::max(chain_[p], e + lag);
      if (kept_end_[m] != kNoTime) end_bound = std::max(end_bound, e + kept_end_[m]);
    }
    if (to_end != kNoTime && to_end > end_bound) kept_end_[q] = to_end;
  }

  const DepGraph& g_;
  std::span<const TimeNs> dur_;
  std::span<const std::uint32_t> port_node_;
  std::vector<std::uint32_t> port_of_;
  std::vector<std::uint32_t> pos_;
  graph::KeptPaths paths_;
  std::vector<TimeNs> at_start_, at_end_;  // per port: the last pass's longest path to its start, end
  std::vector<std::vector<std::pair<std::uint32_t, TimeNs>>> kept_;  // per port: (to, lag)
  std::vector<TimeNs> kept_end_;
  std::vector<TimeNs> chain_;

  /// A timepoint a pass from a port's end visited: its topological position and longest path.
  struct Seen {
    std::uint32_t pos = 0;
    TimeNs ns = 0;
  };
  /// A source (port p: p; hub h: ports + h) whose pass bounds the current one from here on:
  /// `base` + its pass's value (a port: the path to its start + its duration; a hub: the path to
  /// it), and where the current pass stands in seen_[source].
  struct Via {
    std::uint32_t source = 0;
    TimeNs base = 0;
    std::size_t at = 0;
  };
  /// Sources a pass checks a timepoint against at a time (more only costs time, never changes
  /// the lags kept).
  static constexpr std::size_t kVia = 4;
  /// What a hub's pass found, composed: (port, longest path) to ports' starts and ends reached,
  /// and to the end of a node that is not a port (kNoTime: none).
  struct Covered {
    std::vector<std::pair<std::uint32_t, TimeNs>> start, end;
    TimeNs tail = kNoTime;
  };

  /// at_start_/at_end_ and `tail` as a Covered (only what was reached).
  Covered covered(TimeNs tail) const {
    Covered c;
    for (std::uint32_t p = 0; p < at_start_.size(); ++p) {
      if (at_start_[p] != kNoTime) c.start.push_back({p, at_start_[p]});
      if (at_end_[p] != kNoTime) c.end.push_back({p, at_end_[p]});
    }
    c.tail = tail;
    return c;
  }

  /// Hubs: the ends of host nodes with an edge from a GPU node's timepoint (a synchronisation:
  /// every later host node, and the work it launches, is reached through it, so one pass from
  /// it serves every earlier source that reaches it). Fills hub_of_tp_; returns their timepoints.
  std::vector<std::uint32_t> hubs() {
    hub_of_tp_.assign(2 * g_.nodes(), kNone32);
    std::vector<std::uint32_t> out;
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
      if (g_.gpu[n]) continue;
      bool sync = false;
      for (const std::uint32_t tp : {DepGraph::start_tp(n), DepGraph::end_tp(n)}) {
        for (std::uint32_t e = g_.in_begin[tp]; e < g_.in_begin[tp + 1]; ++e) {
          sync = sync || (g_.in_lag[e] != graph::kDroppedLag && g_.gpu[DepGraph::node_of(g_.in_from[e])]);
        }
      }
      if (!sync) continue;
      hub_of_tp_[DepGraph::end_tp(n)] = static_cast<std::uint32_t>(out.size());
      out.push_back(DepGraph::end_tp(n));
    }
    return out;
  }

  std::vector<std::vector<Seen>> seen_;  // per source: its pass, ascending position
  std::vector<Via> via_;
  std::vector<std::uint32_t> hub_of_tp_;  // per timepoint: its hub, or kNone32
  std::vector<Covered> hub_;              // per hub: what its pass found
  std::vector<std::pair<std::uint32_t, TimeNs>> hubs_reached_;  // the current pass's (hub, path)
};

/// One participant of an instance: rank r's port p.
struct Participant {
  std::uint32_t rank = 0;
  std::uint32_t port = 0;
};

class JobTimer {
 public:
  JobTimer(std::span<const RankPorts> ranks, std::size_t instances)
      : r_(ranks), parts_(instances), in_(ranks.size()), pending_(instances, 0), succ_(instances), done_(instances, 0) {
    for (std::uint32_t r = 0; r < ranks.size(); ++r) {
      const PortGraph& pg = *ranks[r].graph;
      const std::size_t k = pg.release_ns.size();
      if (ranks[r].instance.size() != k || pg.dur_ns.size() != k || pg.end_release_ns.size() != k) {
        throw std::invalid_argument("time_job: a rank's ports and instances differ in number");
      }
      for (std::uint32_t p = 0; p < k; ++p) {
        const std::int64_t c = ranks[r].instance[p];
        if (c < 0 || static_cast<std::size_t>(c) >= instances) throw std::invalid_argument("time_job: an instance id out of range");
        parts_[static_cast<std::size_t>(c)].push_back({r, p});
      }
      in_[r].resize(k);
      for (const PortLag& l : pg.lags) {
        if (l.from >= k || (l.to != kRankEnd && l.to >= k)) throw std::invalid_argument("time_job: a lag names no port");
        if (l.to == kRankEnd) continue;
        in_[r][l.to].push_back(&l);
        const auto a = static_cast<std::size_t>(ranks[r].instance[l.from]);
        const auto b = static_cast<std::size_t>(ranks[r].instance[l.to]);
        ++pending_[b];
        succ_[a].push_back(b);
      }
    }
  }

  JobTiming run() {
    JobTiming out;
    const std::size_t n = parts_.size();
    out.transfer_start_ns.assign(n, kNoTime);
    out.end_ns.assign(n, kNoTime);
    out.arrival_ns.resize(r_.size());
    for (std::size_t r = 0; r < r_.size(); ++r) out.arrival_ns[r].assign(r_[r].instance.size(), kNoTime);
    // Instances in topological order, first-in first-out (graph::topological_order); each is
    // timed when it is taken, before its successors wait for one predecessor less. A cycle
    // (ranks disagreeing on the order): the blocked instance with the earliest arrival known
    // from the finished ones is taken next.
    graph::topological_order<std::size_t>(
        std::move(pending_), graph::ReadyOrder::kFirstInFirstOut,
        [&](std::size_t c, auto&& visit) {
          time_instance(c, out);
          for (const std::size_t s : succ_[c]) visit(s);
        },
        [&](graph::TopoState<std::size_t>& s) {
          s.force(earliest_blocked(out));
          ++out.cycle_breaks;
        });
    finish(out);
    return out;
  }

 private:
  /// Rank r's arrival at port p from the finished instances (job clock).
  TimeNs arrival(std::uint32_t r, std::uint32_t p, const JobTiming& out) const {
    TimeNs a = plus(r_[r].graph->release_ns[p], r_[r].offset_ns);
    for (const PortLag* l : in_[r][p]) {
      const auto q = static_cast<std::size_t>(r_[r].instance[l->from]);
      if (!l->into_end && done_[q]) a = std::max(a, out.end_ns[q] + l->lag_ns);
    }
    return a;
  }

  void time_instance(std::size_t c, JobTiming& out) {
    TimeNs start = kNoTime, dur = 0, end = kNoTime;
    for (const Participant& x : parts_[c]) {
      const TimeNs a = arrival(x.rank, x.port, out);
      out.arrival_ns[x.rank][x.port] = a;
      start = std::max(start, a);
      dur = std::max(dur, r_[x.rank].graph->dur_ns[x.port]);
      end = std::max(end, plus(r_[x.rank].graph->end_release_ns[x.port], r_[x.rank].offset_ns));
      for (const PortLag* l : in_[x.rank][x.port]) {
        const auto q = static_cast<std::size_t>(r_[x.rank].instance[l->from]);
        if (l->into_end && done_[q]) end = std::max(end, out.end_ns[q] + l->lag_ns);
      }
    }
    if (start == kNoTime) start = end == kNoTime ? 0 : end - dur;  // nothing constrains it: a lone port
    out.transfer_start_ns[c] = start;
    out.end_ns[c] = std::max(end, start + dur);
    done_[c] = 1;
  }

  /// A cycle: the blocked instance whose participants arrive earliest from what is finished.
  std::size_t earliest_blocked(const JobTiming& out) const {
    std::size_t best = SIZE_MAX;
    TimeNs best_t = INT64_MAX;
    for (std::size_t c = 0; c < parts_.size(); ++c) {
      if (done_[c]) continue;
      TimeNs t = kNoTime;
      for (const Participant& x : parts_[c]) t = std::max(t, arrival(x.rank, x.port, out));
      if (best == SIZE_MAX || t < best_t) best = c, best_t = t;
    }
    return best;
  }

  void finish(JobTiming& out) const {
    out.rank_end_ns.assign(r_.size(), kNoTime);
    out.wait_ns.assign(r_.size(), 0);
    TimeNs start = INT64_MAX, end = kNoTime;
    for (std::uint32_t r = 0; r < r_.size(); ++r) {
      const PortGraph& pg = *r_[r].graph;
      const TimeNs off = r_[r].offset_ns;
      TimeNs e = plus(pg.end_release_ns_rank, off);
      for (std::uint32_t p = 0; p < pg.release_ns.size(); ++p) {
        const auto c = static_cast<std::size_t>(r_[r].instance[p]);
        e = std::max(e, out.end_ns[c]);
        // An arrival left unknown (a port timed before its predecessor, in a broken cycle) adds no wait.
        if (out.arrival_ns[r][p] != kNoTime) out.wait_ns[r] += std::max<TimeNs>(0, out.transfer_start_ns[c] - out.arrival_ns[r][p]);
      }
      for (const PortLag& l : pg.lags) {
        if (l.to == kRankEnd) e = std::max(e, out.end_ns[static_cast<std::size_t>(r_[r].instance[l.from])] + l.lag_ns);
      }
      out.rank_end_ns[r] = e;
      start = std::min(start, pg.window_start_ns + off);
      end = std::max(end, e);
    }
    out.start_ns = r_.empty() ? 0 : start;
    out.makespan_ns = r_.empty() || end == kNoTime ? 0 : end - start;
  }

  std::span<const RankPorts> r_;
  std::vector<std::vector<Participant>> parts_;
  std::vector<std::vector<std::vector<const PortLag*>>> in_;  // per rank, per port: lags into it
  std::vector<std::size_t> pending_;
  std::vector<std::vector<std::size_t>> succ_;
  std::vector<char> done_;
};

}  // namespace

PortGraph reduce_to_ports(const DepGraph& g, std::span<const TimeNs> dur, std::span<const std::uint32_t> port_node) {
  return Reducer(g, dur, port_node).run();
}

JobTiming time_job(std::span<const RankPorts> ranks, std::size_t instances) {
  return JobTimer(ranks, instances).run();
}

}  // namespace emo::timing
