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
    // The rank's own sources: releases (and recorded starts where every constraint was dropped).
    out.end_release_ns_rank = pass(graph::KeptPaths::kSources);
    out.release_ns = at_start_;
    out.end_release_ns = at_end_;
    // From each port's end, latest first, so that the lags of the ports after it are final when
    // its own are pruned against them.
    std::vector<std::uint32_t> by_end(k), by_start(k);
    std::iota(by_end.begin(), by_end.end(), 0);
    by_start = by_end;
    std::sort(by_end.begin(), by_end.end(), [&](auto a, auto b) { return pos_[end_tp(a)] > pos_[end_tp(b)]; });
    std::sort(by_start.begin(), by_start.end(), [&](auto a, auto b) { return pos_[start_tp(a)] < pos_[start_tp(b)]; });
    kept_.assign(k, {});
    kept_end_.assign(k, kNoTime);
    for (const std::uint32_t q : by_end) {
      const TimeNs to_end = pass(end_tp(q));
      for (std::size_t p = 0; p < k; ++p) {
        if (p != q && at_end_[p] != kNoTime) out.lags.push_back({q, static_cast<std::uint32_t>(p), at_end_[p], true});
      }
      prune(q, at_start_, to_end, by_start);
    }
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

  /// One pass from `src` (a port's end, or kSources: the rank's own sources, on its own clock):
  /// at_start_/at_end_ receive the longest path to each port's start and end (kNoTime: not
  /// reached). Returns the longest path to the end of a node that is not a port (kNoTime: none).
  TimeNs pass(std::uint32_t src) {
    at_start_.assign(port_node_.size(), kNoTime);
    at_end_.assign(port_node_.size(), kNoTime);
    return paths_.pass(src, 0, [&](std::uint32_t tp, TimeNs v) {
      (DepGraph::is_end(tp) ? at_end_ : at_start_)[port_of_[DepGraph::node_of(tp)]] = v;
    });
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
