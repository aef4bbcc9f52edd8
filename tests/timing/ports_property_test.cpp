// Property of timing/ports.h over random graphs shaped like a rank's: reduced to its ports and
// timed by time_job, a rank gives what the plain longest path over its whole graph gives
// (timing::replay) — the makespan and every port's start, to the ns — however its passes stop
// where a hub's or another port's pass takes over (ports.h, "Passes that stop where another takes
// over"). The reference is independent of the reduction: replay walks every timepoint of the
// whole graph once, with no ports, hubs, lags or pruning.
//
// Each graph: a host thread (a chain of host nodes), two GPU streams (chains of GPU nodes),
// launches (a host node's start → a GPU node's start), synchronisations (a GPU node's end → a
// later host node's start or end: these make the hubs), random forward edges between any
// timepoints (none out of a port's start: below), random releases and durations; ports on random
// GPU nodes. The other participants of
// each collective are a second rank made by hand: a PortGraph whose port c is released at a random
// time (it arrives then) with no duration, so that a transfer may start after this rank arrives;
// in the whole graph that is a release of the port's node at that time.
#include "timing/ports.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "timing/hand_graph.h"
#include "timing/timing.h"

namespace emo::timing {
namespace {

struct RandomRank {
  DepGraph g;
  std::vector<std::uint32_t> port_node;
};

/// A random rank of `n` nodes (see the file comment). Timepoints are ordered S0 E0 S1 E1 ...; every
/// edge goes forward in that order, so it is also the topological order.
RandomRank random_rank(std::mt19937_64& rng, std::uint32_t n) {
  auto uniform = [&](TimeNs lo, TimeNs hi) { return std::uniform_int_distribution<TimeNs>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  RandomRank r;
  DepGraph& g = r.g;
  std::vector<std::tuple<std::uint32_t, std::uint32_t, TimeNs>> edges;  // (from tp, to tp, lag)
  std::vector<int> stream(n);  // -1: host; 0, 1: GPU streams
  std::int64_t last[3] = {-1, -1, -1};
  for (std::uint32_t i = 0; i < n; ++i) {
    stream[i] = chance(0.4) ? -1 : static_cast<int>(uniform(0, 1));
    g.op.push_back(i);
    g.gpu.push_back(stream[i] >= 0 ? 1 : 0);
    g.dur.push_back(uniform(1, 60));
    g.release.push_back(i == 0 || chance(0.1) ? uniform(0, 300) : kNo);
    g.rec_start.push_back(uniform(0, 300));
    g.rec_end.push_back(g.rec_start.back() + g.dur.back());
    std::int64_t& prev = last[stream[i] + 1];
    if (prev >= 0) edges.emplace_back(DepGraph::end_tp(static_cast<std::uint32_t>(prev)), DepGraph::start_tp(i), uniform(0, 5));
    prev = i;
    if (stream[i] >= 0 && last[0] >= 0 && chance(0.7)) {  // launched by the latest host node
      edges.emplace_back(DepGraph::start_tp(static_cast<std::uint32_t>(last[0])), DepGraph::start_tp(i), uniform(1, 10));
    }
    if (stream[i] < 0) {  // a synchronisation with an earlier GPU node
      for (std::uint32_t j = 0; j < i; ++j) {
        if (stream[j] >= 0 && chance(0.08)) edges.emplace_back(DepGraph::end_tp(j), chance(0.5) ? DepGraph::start_tp(i) : DepGraph::end_tp(i), uniform(0, 3));
      }
    }
    for (std::uint32_t j = 0; j < i; ++j) {  // anything else, forward
      if (chance(0.02)) edges.emplace_back(chance(0.5) ? DepGraph::start_tp(j) : DepGraph::end_tp(j), chance(0.5) ? DepGraph::start_tp(i) : DepGraph::end_tp(i), uniform(0, 40));
    }
    if (stream[i] >= 0 && chance(0.35)) r.port_node.push_back(i);
  }
  // Nothing waits on a collective's start but its own end (as in a rank's trace: its kernel is
  // launched and ordered, and others wait for its end): the reduction takes a port's start as the
  // rank's arrival, not the transfer's start.
  std::vector<char> port(n, 0);
  for (const std::uint32_t p : r.port_node) port[p] = 1;
  std::erase_if(edges, [&](const auto& e) { return !DepGraph::is_end(std::get<0>(e)) && port[DepGraph::node_of(std::get<0>(e))]; });
  g.window_start_ns = *std::min_element(g.rec_start.begin(), g.rec_start.end());
  for (const TimeNs rel : g.release) {
    if (rel != kNo) g.window_start_ns = std::min(g.window_start_ns, rel);
  }
  add_edges(g, edges);
  return r;
}

TEST(PortsProperty, TheReductionTimesARandomRankAsItsWholeGraph) {
  int checked = 0, later_peers = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    RandomRank r = random_rank(rng, static_cast<std::uint32_t>(std::uniform_int_distribution<int>(8, 70)(rng)));
    if (r.port_node.empty()) continue;
    const std::size_t k = r.port_node.size();
    // The peers' arrivals: none (this rank alone), or random ones.
    for (const bool peers : {false, true}) {
      std::vector<TimeNs> arrive(k, kNo);
      if (peers) {
        for (TimeNs& a : arrive) a = std::uniform_int_distribution<TimeNs>(0, 1500)(rng);
      }
      const PortGraph mine = reduce_to_ports(r.g, r.g.dur, r.port_node);
      PortGraph theirs;
      theirs.release_ns = arrive;
      theirs.end_release_ns.assign(k, kNo);
      theirs.dur_ns.assign(k, 0);
      theirs.window_start_ns = r.g.window_start_ns;
      std::vector<std::int64_t> instance(k);
      for (std::size_t p = 0; p < k; ++p) instance[p] = static_cast<std::int64_t>(p);
      const std::vector<RankPorts> ranks = {{&mine, instance, 0}, {&theirs, instance, 0}};
      const JobTiming jt = time_job(peers ? std::span<const RankPorts>(ranks) : std::span<const RankPorts>(ranks).first(1), k);

      DepGraph whole = r.g;  // the peers' arrivals as releases of the ports' nodes
      for (std::size_t p = 0; p < k; ++p) {
        if (arrive[p] == kNo) continue;
        const std::uint32_t n = r.port_node[p];
        TimeNs& rel = whole.release[n];
        // A start with no release and no in-edge starts at its recorded start (graph::replay_source_ns).
        const bool alone = whole.in_begin[DepGraph::start_tp(n)] == whole.in_begin[DepGraph::start_tp(n) + 1];
        rel = std::max(rel != kNo ? rel : alone ? whole.rec_start[n] : kNo, arrive[p]);
      }
      const Schedule s = replay(whole, whole.dur);
      EXPECT_EQ(jt.cycle_breaks, 0) << "seed " << seed;
      EXPECT_EQ(jt.makespan_ns, s.makespan_ns) << "seed " << seed << (peers ? " with peers" : " alone");
      for (std::size_t p = 0; p < k; ++p) {
        EXPECT_EQ(jt.transfer_start_ns[p], s.start(r.port_node[p])) << "seed " << seed << " port " << p << " node " << r.port_node[p] << (peers ? " with peers" : " alone") << " n " << r.g.nodes();
        later_peers += peers && arrive[p] > jt.arrival_ns[0][p];
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 400);
  EXPECT_GT(later_peers, 100) << "too few transfers waited for the peers to exercise the ports' ends";
}

}  // namespace
}  // namespace emo::timing
