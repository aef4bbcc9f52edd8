// The graph kernel (graph/algorithms.h) on hand-built graphs whose answers are worked out by hand
// in the comments: topological orders (stack and queue), the cycle policy, the longest-path
// replay with positive, zero and negative lags, releases and dropped edges, and the longest paths
// to kept timepoints (KeptPaths: by hand, and against the replay on random graphs).
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "graph/algorithms.h"
#include "graph/dep_graph.h"

namespace emo::graph {
namespace {

/// Out-edges of a small graph as lists, and its in-degrees.
struct Lists {
  std::vector<std::vector<int>> out;
  std::vector<int> indegree() const {
    std::vector<int> d(out.size(), 0);
    for (const auto& o : out) {
      for (int w : o) ++d[w];
    }
    return d;
  }
  auto visitor() const {
    return [this](int v, auto&& visit) {
      for (int w : out[v]) visit(w);
    };
  }
};

// a=0 -> b=1, a -> c=2, b -> d=3, c -> d.
const Lists kDiamond{{{1, 2}, {3}, {3}, {}}};

TEST(TopologicalOrder, DiamondAsAStackGoesDepthFirst) {
  // Ready [a]; a makes b then c ready: [b, c]; c (last in) first, then b, whose edge frees d.
  const auto order = topological_order<int>(kDiamond.indegree(), ReadyOrder::kLastInFirstOut,
                                            kDiamond.visitor(), ThrowOnCycle{});
  EXPECT_EQ(order, (std::vector<int>{0, 2, 1, 3}));
}

TEST(TopologicalOrder, DiamondAsAQueueGoesBreadthFirst) {
  const auto order = topological_order<int>(kDiamond.indegree(), ReadyOrder::kFirstInFirstOut,
                                            kDiamond.visitor(), ThrowOnCycle{});
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(TopologicalOrder, SourcesStartInAscendingOrderAndParallelEdgesCountOnce) {
  // 2 -> 0 twice, 1 isolated. Queue: [1, 2] (ascending), then 0 once both edges are done.
  const Lists g{{{}, {}, {0, 0}}};
  EXPECT_EQ(topological_order<int>(g.indegree(), ReadyOrder::kFirstInFirstOut, g.visitor(), ThrowOnCycle{}),
            (std::vector<int>{1, 2, 0}));
}

TEST(TopologicalOrder, ACycleWithoutABreakerThrowsTheBlockedVertices) {
  // 0 -> 1 -> 2 -> 1 (cycle 1, 2), 2 -> 3 (behind it). Only 0 is ordered.
  const Lists g{{{1}, {2}, {1, 3}, {}}};
  try {
    topological_order<int>(g.indegree(), ReadyOrder::kLastInFirstOut, g.visitor(), ThrowOnCycle{});
    FAIL() << "no CycleError";
  } catch (const CycleError& e) {
    EXPECT_EQ(e.blocked(), (std::vector<std::size_t>{1, 2, 3}));
    EXPECT_STREQ(e.what(), "the graph has a cycle (3 vertices on or behind one)");
  }
  EXPECT_THROW(topological_order<int>(g.indegree(), ReadyOrder::kFirstInFirstOut, g.visitor(), ThrowOnCycle{}),
               std::invalid_argument);
}

TEST(TopologicalOrder, ABreakerThatDropsAnEdgeOfTheCycleLetsTheSortFinish) {
  // Same graph; the breaker drops 2 -> 1 (vertex 1 then waits for 0 -> 1 only, already done).
  Lists g{{{1}, {2}, {1, 3}, {}}};
  int calls = 0;
  const auto order = topological_order<int>(
      g.indegree(), ReadyOrder::kLastInFirstOut, g.visitor(), [&](TopoState<int>& s) {
        ++calls;
        EXPECT_TRUE(s.done(0));
        EXPECT_EQ(s.pending(1), 1);  // 2 -> 1
        EXPECT_EQ(s.pending(2), 1);  // 1 -> 2
        g.out[2] = {3};              // the visitor must not visit the dropped edge
        s.drop_edge_into(1);
      });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(TopologicalOrder, ABreakerThatMakesNothingReadyStillThrows) {
  const Lists g{{{1}, {0}}};
  int calls = 0;
  EXPECT_THROW(topological_order<int>(g.indegree(), ReadyOrder::kLastInFirstOut, g.visitor(),
                                      [&](TopoState<int>&) { ++calls; }),
               CycleError);
  EXPECT_EQ(calls, 1);
}

/// A DepGraph by hand: node i has duration dur[i] and recorded start rec[i] (end rec + dur);
/// edges (from timepoint, to timepoint, lag); `release[i]` (INT64_MIN: none). g.topo is filled
/// by timepoint_order with a breaker that drops nothing.
struct Edge {
  std::uint32_t from, to;
  TimeNs lag;
};
DepGraph hand_graph(const std::vector<TimeNs>& dur, const std::vector<TimeNs>& rec,
                    const std::vector<TimeNs>& release, const std::vector<Edge>& edges) {
  DepGraph g;
  for (std::size_t i = 0; i < dur.size(); ++i) {
    g.op.push_back(static_cast<std::uint32_t>(i));
    g.dur.push_back(dur[i]);
    g.rec_start.push_back(rec[i]);
    g.rec_end.push_back(rec[i] + dur[i]);
    g.gpu.push_back(1);
    g.release.push_back(release[i]);
  }
  const std::size_t tps = 2 * dur.size();
  g.in_begin.assign(tps + 1, 0);
  for (const Edge& e : edges) ++g.in_begin[e.to + 1];
  for (std::size_t t = 0; t < tps; ++t) g.in_begin[t + 1] += g.in_begin[t];
  g.in_from.resize(edges.size());
  g.in_lag.resize(edges.size());
  g.in_type.assign(edges.size(), EdgeType::kStreamOrder);
  g.in_inferred.assign(edges.size(), 0);
  std::vector<std::uint32_t> fill(g.in_begin.begin(), g.in_begin.end() - 1);
  for (const Edge& e : edges) {
    const std::uint32_t k = fill[e.to]++;
    g.in_from[k] = e.from;
    g.in_lag[k] = e.lag;
  }
  g.window_start_ns = 0;
  g.topo = timepoint_order(g, [](TimepointCycle&) {});
  return g;
}

constexpr TimeNs kNoRelease = INT64_MIN;
constexpr std::uint32_t S(std::uint32_t n) { return DepGraph::start_tp(n); }
constexpr std::uint32_t E(std::uint32_t n) { return DepGraph::end_tp(n); }

std::vector<TimeNs> replay(const DepGraph& g, const std::vector<TimeNs>& dur, ReplayEnd* end = nullptr) {
  std::vector<TimeNs> time(2 * g.nodes(), 0);
  const ReplayEnd r = longest_path(
      g, [&](std::uint32_t n) { return dur[n]; }, [&](std::uint32_t k) { return g.in_lag[k]; }, time);
  if (end != nullptr) *end = r;
  return time;
}

// Diamond a=0 (10 ns, released at 0) -> b=1 (5 ns, lag 0) and -> c=2 (20 ns, lag 2); b -> d=3
// (1 ns, lag 0), c -> d with lag -3 (a recorded negative lag, clock skew):
//   a [0, 10]; b [10, 15]; c [12, 32]; d starts at max(15 + 0, 32 - 3) = 29, ends 30.
//   The window ends at 32 with c.
const std::vector<TimeNs> kDur{10, 5, 20, 1};
DepGraph diamond() {
  return hand_graph(kDur, {0, 10, 12, 29}, {0, kNoRelease, kNoRelease, kNoRelease},
                    {{E(0), S(1), 0}, {E(0), S(2), 2}, {E(1), S(3), 0}, {E(2), S(3), -3}});
}

TEST(TimepointOrder, StartsBeforeEndsAndEveryEdgeForward) {
  const DepGraph g = diamond();
  ASSERT_EQ(g.topo.size(), 8u);
  std::vector<std::size_t> pos(8);
  for (std::size_t i = 0; i < 8; ++i) pos[g.topo[i]] = i;
  for (std::uint32_t n = 0; n < 4; ++n) EXPECT_LT(pos[S(n)], pos[E(n)]);
  for (std::uint32_t t = 0; t < 8; ++t) {
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) EXPECT_LT(pos[g.in_from[k]], pos[t]);
  }
  // Stack order: S(a) is the only source; then E(a), which frees S(b) and S(c) (targets ascending),
  // so S(c) goes first, E(c), then S(b), E(b), and S(d) once both edges are in.
  EXPECT_EQ(g.topo, (std::vector<std::uint32_t>{S(0), E(0), S(2), E(2), S(1), E(1), S(3), E(3)}));
}

TEST(LongestPath, DiamondWithLagsAndANegativeLag) {
  const DepGraph g = diamond();
  ReplayEnd end;
  const auto t = replay(g, kDur, &end);
  EXPECT_EQ(t, (std::vector<TimeNs>{0, 10, 10, 15, 12, 32, 29, 30}));
  EXPECT_EQ(end.end_ns, 32);
  EXPECT_EQ(end.last_node, 2u);
}

TEST(LongestPath, WhatIfDurationsMoveTheLongerBranch) {
  // b at 30 ns: b [10, 40], d starts at max(40, 29) = 40, ends 41, the last node.
  const DepGraph g = diamond();
  ReplayEnd end;
  const auto t = replay(g, {10, 30, 20, 1}, &end);
  EXPECT_EQ(t[S(3)], 40);
  EXPECT_EQ(t[E(3)], 41);
  EXPECT_EQ(end.end_ns, 41);
  EXPECT_EQ(end.last_node, 3u);
}

TEST(LongestPath, ReleasesEdgesIntoEndsAndDroppedEdges) {
  // x=0 released at 100 (2 ns); y=1 (3 ns) released at 50 but after x with lag 10: starts 112;
  // z=2 (1 ns) waits at its end for y's end (a host sync): E(z) = max(S(z) + 1, E(y) + 0) = 115;
  // z's start has only a dropped edge and no release: it keeps its recorded start, 7.
  DepGraph g = hand_graph({2, 3, 1}, {100, 112, 7}, {100, 50, kNoRelease},
                          {{E(0), S(1), 10}, {E(1), E(2), 0}, {E(0), S(2), 0}});
  for (std::uint32_t k = g.in_begin[S(2)]; k < g.in_begin[S(2) + 1]; ++k) g.in_lag[k] = kDroppedLag;
  ReplayEnd end;
  const auto t = replay(g, g.dur, &end);
  EXPECT_EQ(t, (std::vector<TimeNs>{100, 102, 112, 115, 7, 115}));
  EXPECT_EQ(end.end_ns, 115);
  EXPECT_EQ(end.last_node, 2u);  // ties go to the later node in topological order
}

TEST(LongestPath, AnEmptyGraphEndsAtTheWindowStart) {
  DepGraph g = hand_graph({}, {}, {}, {});
  g.window_start_ns = 77;
  ReplayEnd end;
  EXPECT_TRUE(replay(g, {}, &end).empty());
  EXPECT_EQ(end.end_ns, 77);
  EXPECT_EQ(end.last_node, 0u);
}

TEST(TimepointOrder, ACycleGoesToTheBreakerWhichCutsEdges) {
  // p=0 (4 ns) and q=1 (6 ns) wait for each other's start (an equal-time cycle):
  // S(q) -> S(p) is edge 0, S(p) -> S(q) edge 1. Without a breaker that cuts, CycleError.
  const std::vector<TimeNs> dur{4, 6};
  const std::vector<Edge> cycle{{S(1), S(0), 0}, {S(0), S(1), 0}};
  EXPECT_THROW(hand_graph(dur, {0, 0}, {kNoRelease, kNoRelease}, cycle), CycleError);

  DepGraph g = hand_graph(dur, {0, 0}, {kNoRelease, kNoRelease}, {});
  g.in_begin = {0, 1, 1, 2, 2};
  g.in_from = {S(1), S(0)};
  g.in_lag = {0, 0};
  g.in_type.assign(2, EdgeType::kStreamOrder);
  g.in_inferred.assign(2, 0);
  int calls = 0;
  g.topo = timepoint_order(g, [&](TimepointCycle& c) {
    ++calls;
    EXPECT_EQ(c.pending(S(0)), 1u);
    EXPECT_EQ(c.pending(E(0)), 1u);  // its own start
    EXPECT_FALSE(c.done(S(1)));
    g.in_lag[0] = kDroppedLag;  // the caller records the cut
    c.cut(0, S(0));
  });
  EXPECT_EQ(calls, 1);
  // S(p) is ready: it frees E(p), then S(q) (edge 1); the stack takes S(q) and E(q) (the cut
  // edge 0 out of S(q) is not visited), then E(p).
  EXPECT_EQ(g.topo, (std::vector<std::uint32_t>{S(0), S(1), E(1), E(0)}));
  // The replay ignores the cut edge: p keeps its recorded start (no release), q follows it.
  EXPECT_EQ(replay(g, dur), (std::vector<TimeNs>{0, 4, 0, 6}));
}

// --- KeptPaths: longest paths to kept timepoints ------------------------------------------------

/// Every live edge at its lag and every node's duration: the replay's own relations.
TimepointArcs all_arcs(const DepGraph& g) {
  return timepoint_arcs(g, [&](std::uint32_t k) { return g.in_lag[k]; }, [&](std::uint32_t n) { return g.dur[n]; });
}

/// (timepoint, ns) of each reach() of one pass, and its returned tail.
std::pair<std::vector<std::pair<std::uint32_t, TimeNs>>, TimeNs> run_pass(KeptPaths& kp, std::uint32_t src) {
  std::vector<std::pair<std::uint32_t, TimeNs>> got;
  const TimeNs tail = kp.pass(src, 0, [&](std::uint32_t tp, TimeNs v) { got.emplace_back(tp, v); });
  return {got, tail};
}

using Reached = std::vector<std::pair<std::uint32_t, TimeNs>>;

TEST(KeptPaths, StopAtAKeptTimepoint) {
  // The diamond (above) with S(d) kept: from the sources S(d) is reached at max(15, 32 - 3) = 29
  // and the pass stops there, so E(d) is never reached; the latest end reached that is not kept
  // is E(c) = 32.
  const DepGraph g = diamond();
  std::vector<std::uint8_t> kept(8, 0);
  kept[S(3)] = 1;
  KeptPaths kp(g, all_arcs(g), kept, AtKept::kStop);
  auto [got, tail] = run_pass(kp, KeptPaths::kSources);
  EXPECT_EQ(got, (Reached{{S(3), 29}}));
  EXPECT_EQ(tail, 32);
  // From E(a) at 0: S(b) 0, E(b) 5, S(c) 2, E(c) 22, S(d) max(5, 22 - 3) = 19 (kept); tail 22.
  std::tie(got, tail) = run_pass(kp, E(0));
  EXPECT_EQ(got, (Reached{{S(3), 19}}));
  EXPECT_EQ(tail, 22);
  // A second pass from the same source gives the same answer (the pass leaves no state behind).
  std::tie(got, tail) = run_pass(kp, E(0));
  EXPECT_EQ(got, (Reached{{S(3), 19}}));
}

TEST(KeptPaths, PassThroughAKeptTimepointAndSkipDroppedArcs) {
  // The same from E(a), going on through S(d): E(d) = 19 + 1 = 20 is reached; the tail is E(c) 22.
  // With c's duration left out (as a port's), E(c) is reached only through its in-edges: none,
  // so S(d) = 5 and E(d) = 6; the tail is then max(E(b) = 5, E(d) = 6) = 6.
  const DepGraph g = diamond();
  std::vector<std::uint8_t> kept(8, 0);
  kept[S(3)] = 1;
  KeptPaths kp(g, all_arcs(g), kept, AtKept::kPass);
  auto [got, tail] = run_pass(kp, E(0));
  EXPECT_EQ(got, (Reached{{S(3), 19}}));
  EXPECT_EQ(tail, 22);
  KeptPaths no_c(g, timepoint_arcs(g, [&](std::uint32_t k) { return g.in_lag[k]; },
                                   [&](std::uint32_t n) { return n == 2 ? INT64_MIN : g.dur[n]; }),
                 kept, AtKept::kPass);
  std::tie(got, tail) = run_pass(no_c, E(0));
  EXPECT_EQ(got, (Reached{{S(3), 5}}));
  EXPECT_EQ(tail, 6);
}

TEST(KeptPaths, FromTheSourcesItIsTheReplayOnRandomGraphs) {
  // Passing through every kept timepoint with the replay's own arcs, a pass from the sources is
  // longest_path: each kept timepoint is reached at its replay time, and the tail is the latest
  // replayed end that is not kept. Random DAGs (edges from lower to higher nodes, some into ends,
  // lags -5..20, a third of the nodes released, some edges dropped), half the timepoints kept.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    const std::uint32_t n = 1 + static_cast<std::uint32_t>(rng() % 40);
    std::vector<TimeNs> dur(n), rec(n), release(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      dur[i] = static_cast<TimeNs>(rng() % 50);
      rec[i] = static_cast<TimeNs>(rng() % 1000);
      release[i] = rng() % 3 == 0 ? static_cast<TimeNs>(rng() % 100) : kNoRelease;
    }
    std::vector<Edge> edges;
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t j = i + 1; j < n; ++j) {
        if (rng() % 4 == 0) edges.push_back({E(i), rng() % 5 == 0 ? E(j) : S(j), static_cast<TimeNs>(rng() % 26) - 5});
      }
    }
    DepGraph g = hand_graph(dur, rec, release, edges);
    for (auto& l : g.in_lag) {
      if (rng() % 10 == 0) l = kDroppedLag;
    }
    const std::vector<TimeNs> t = replay(g, dur);
    std::vector<std::uint8_t> kept(2 * n);
    for (auto& k : kept) k = rng() % 2;
    KeptPaths kp(g, all_arcs(g), kept, AtKept::kPass);
    const auto [got, tail] = run_pass(kp, KeptPaths::kSources);
    Reached want;
    TimeNs want_tail = INT64_MIN;
    for (const std::uint32_t tp : g.topo) {
      if (kept[tp]) want.emplace_back(tp, t[tp]);
      else if (DepGraph::is_end(tp)) want_tail = std::max(want_tail, t[tp]);
    }
    ASSERT_EQ(got, want) << "round " << round;
    ASSERT_EQ(tail, want_tail) << "round " << round;
  }
}

TEST(ReplaySource, ReleaseElseRecordedStartWhenEveryEdgeIsDropped) {
  // As LongestPath.ReleasesEdgesIntoEndsAndDroppedEdges: x released at 100; y released at 50
  // (with an edge: still its release); z's start has only a dropped edge: its recording, 7; ends none.
  DepGraph g = hand_graph({2, 3, 1}, {100, 112, 7}, {100, 50, kNoRelease},
                          {{E(0), S(1), 10}, {E(1), E(2), 0}, {E(0), S(2), 0}});
  for (std::uint32_t k = g.in_begin[S(2)]; k < g.in_begin[S(2) + 1]; ++k) g.in_lag[k] = kDroppedLag;
  EXPECT_EQ(replay_source_ns(g, S(0)), 100);
  EXPECT_EQ(replay_source_ns(g, S(1)), 50);
  EXPECT_EQ(replay_source_ns(g, S(2)), 7);
  EXPECT_EQ(replay_source_ns(g, E(2)), INT64_MIN);
  g.in_lag[g.in_begin[S(2)]] = 0;  // the edge live again: z has no source of its own
  EXPECT_EQ(replay_source_ns(g, S(2)), INT64_MIN);
}

}  // namespace
}  // namespace emo::graph
