// The critical path of a job timed from its ranks' reductions, and a rank's timing given its
// ports' ends (timing/ports.h: job_critical_path, time_with_port_ends).
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "timing/ports.h"

namespace emo::timing {
namespace {

constexpr TimeNs kNoTime = INT64_MIN;

TimeNs plus(TimeNs t, TimeNs lag) { return t == kNoTime ? kNoTime : t + lag; }

/// The backtrack of job_critical_path: the path is built from the job's end backwards.
class PathBack {
 public:
  PathBack(std::span<const RankPorts> ranks, std::size_t instances, const JobTiming& jt)
      : r_(ranks), jt_(jt), parts_(instances), seen_(instances, 0) {
    if (jt.end_ns.size() != instances || jt.transfer_start_ns.size() != instances || jt.rank_end_ns.size() != ranks.size() ||
        jt.arrival_ns.size() != ranks.size()) {
      throw std::invalid_argument("job_critical_path: the timing is not that of these ranks");
    }
    for (std::uint32_t r = 0; r < ranks.size(); ++r) {
      if (ranks[r].instance.size() != ranks[r].graph->release_ns.size() || jt.arrival_ns[r].size() != ranks[r].instance.size())
        throw std::invalid_argument("job_critical_path: a rank's ports and instances differ in number");
      for (std::uint32_t p = 0; p < ranks[r].instance.size(); ++p) {
        const std::int64_t c = ranks[r].instance[p];
        if (c < 0 || static_cast<std::size_t>(c) >= instances) throw std::invalid_argument("job_critical_path: an instance id out of range");
        parts_[static_cast<std::size_t>(c)].push_back({r, p});
      }
    }
  }

  std::vector<JobPathStretch> run() {
    if (r_.empty()) return {};
    std::uint32_t last = 0;
    for (std::uint32_t r = 1; r < r_.size(); ++r) {
      if (jt_.rank_end_ns[r] > jt_.rank_end_ns[last]) last = r;
    }
    rank_end(last);
    std::reverse(out_.begin(), out_.end());
    return merged();
  }

 private:
  struct Part {
    std::uint32_t rank, port;
  };

  TimeNs off(std::uint32_t r) const { return r_[r].offset_ns; }
  std::size_t inst(std::uint32_t r, std::uint32_t p) const { return static_cast<std::size_t>(r_[r].instance[p]); }
  TimeNs window_start(std::uint32_t r) const { return r_[r].graph->window_start_ns + off(r); }

  /// Step 1: what bounds rank r's end (the job's end).
  void rank_end(std::uint32_t r) {
    const TimeNs e = jt_.rank_end_ns[r];
    const PortGraph& pg = *r_[r].graph;
    for (std::uint32_t p = 0; p < pg.release_ns.size(); ++p) {
      if (jt_.end_ns[inst(r, p)] == e) return instance(inst(r, p), r);
    }
    for (const PortLag& l : pg.lags) {
      if (l.to == kRankEnd && plus(jt_.end_ns[inst(r, l.from)], l.lag_ns) == e) {
        add(r, jt_.end_ns[inst(r, l.from)], e, static_cast<std::int64_t>(inst(r, l.from)), -1);
        return instance(inst(r, l.from), r);
      }
    }
    add(r, window_start(r), e, -1, -1);
  }

  /// Step 2: what set instance c's end; `on`: the rank the path is on.
  void instance(std::size_t c, std::uint32_t on) {
    if (seen_[c]) return;
    seen_[c] = 1;
    const TimeNs end = jt_.end_ns[c], start = jt_.transfer_start_ns[c];
    TimeNs dur = 0;
    for (const Part& x : parts_[c]) dur = std::max(dur, r_[x.rank].graph->dur_ns[x.port]);
    if (start != kNoTime && start + dur == end) {
      const Part* lastp = nullptr;
      for (const Part& x : parts_[c]) {
        if (jt_.arrival_ns[x.rank][x.port] != start) continue;
        if (lastp == nullptr || (x.rank == on && lastp->rank != on)) lastp = &x;
      }
      if (lastp != nullptr) return arrival(*lastp, c);
    }
    for (const Part& x : parts_[c]) {  // the end is a participant's own constraint on it
      for (const PortLag& l : r_[x.rank].graph->lags) {
        if (l.into_end && l.to == x.port && plus(jt_.end_ns[inst(x.rank, l.from)], l.lag_ns) == end) {
          add(x.rank, jt_.end_ns[inst(x.rank, l.from)], end, static_cast<std::int64_t>(inst(x.rank, l.from)), static_cast<std::int64_t>(c));
          return instance(inst(x.rank, l.from), x.rank);
        }
      }
      if (plus(r_[x.rank].graph->end_release_ns[x.port], off(x.rank)) == end) {
        return add(x.rank, window_start(x.rank), end, -1, static_cast<std::int64_t>(c));
      }
    }
  }

  /// The last participant x of instance c: what bounds its arrival.
  void arrival(const Part& x, std::size_t c) {
    const TimeNs a = jt_.arrival_ns[x.rank][x.port], end = jt_.end_ns[c];
    for (const PortLag& l : r_[x.rank].graph->lags) {
      if (l.into_end || l.to != x.port) continue;
      const std::size_t q = inst(x.rank, l.from);
      if (plus(jt_.end_ns[q], l.lag_ns) == a) {
        add(x.rank, jt_.end_ns[q], end, static_cast<std::int64_t>(q), static_cast<std::int64_t>(c));
        return instance(q, x.rank);
      }
    }
    add(x.rank, std::min(window_start(x.rank), end), end, -1, static_cast<std::int64_t>(c));
  }

  void add(std::uint32_t r, TimeNs start, TimeNs end, std::int64_t from, std::int64_t to) {
    out_.push_back({r, std::min(start, end), end, from, to});
  }

  /// Consecutive stretches on one rank as one.
  std::vector<JobPathStretch> merged() const {
    std::vector<JobPathStretch> m;
    for (const JobPathStretch& s : out_) {
      if (!m.empty() && m.back().rank == s.rank) {
        m.back().end_ns = std::max(m.back().end_ns, s.end_ns);
        m.back().to_instance = s.to_instance;
        continue;
      }
      m.push_back(s);
    }
    return m;
  }

  std::span<const RankPorts> r_;
  const JobTiming& jt_;
  std::vector<std::vector<Part>> parts_;
  std::vector<char> seen_;
  std::vector<JobPathStretch> out_;  // from the job's end backwards
};

}  // namespace

std::vector<JobPathStretch> job_critical_path(std::span<const RankPorts> ranks, std::size_t instances, const JobTiming& jt) {
  return PathBack(ranks, instances, jt).run();
}

std::vector<TimeNs> time_with_port_ends(const graph::DepGraph& g, std::span<const TimeNs> dur,
                                        std::span<const std::uint32_t> port_node, std::span<const TimeNs> port_end_ns) {
  using graph::DepGraph;
  if (dur.size() != g.nodes() || port_end_ns.size() != port_node.size()) {
    throw std::invalid_argument("time_with_port_ends: one duration per node and one end per port needed");
  }
  std::vector<TimeNs> fixed(g.nodes(), kNoTime);
  std::vector<char> port(g.nodes(), 0);
  for (std::size_t p = 0; p < port_node.size(); ++p) {
    if (port_node[p] >= g.nodes()) throw std::invalid_argument("time_with_port_ends: a port outside the graph");
    port[port_node[p]] = 1;
    fixed[port_node[p]] = port_end_ns[p];
  }
  std::vector<TimeNs> time(2 * g.nodes(), 0);
  for (const std::uint32_t tp : g.topo) {
    const std::uint32_t n = DepGraph::node_of(tp);
    const bool end = DepGraph::is_end(tp);
    if (end && port[n] && fixed[n] != kNoTime) {
      time[tp] = fixed[n];
      continue;
    }
    TimeNs v = end ? time[DepGraph::start_tp(n)] + dur[n] : g.release[n];
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_lag[k] == graph::kDroppedLag) continue;
      v = std::max(v, time[g.in_from[k]] + g.in_lag[k]);
    }
    if (v == kNoTime) v = g.rec_start[n];  // every constraint dropped: keep the recording (graph::replay_source_ns)
    time[tp] = v;
  }
  return time;
}

}  // namespace emo::timing
