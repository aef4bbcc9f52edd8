// PlanEvaluator on pack graphs built by hand: the exact rise formula of try_slower (absorbed
// slack, a rise through the duration edge, a rise through a port edge, and a pack whose exit
// feeds its own later entry through a host sync), worked out by hand; and on random small pack
// graphs, try_slower and apply_slower against a full PackGraph::evaluate.
#include "pack/plan_evaluator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

#include "pack/test_rng.h"

namespace emo::testing {
namespace {

using graph::DepGraph;

/// One edge of a hand-built pack graph: timepoint `from` -> timepoint `to`, and the pack whose
/// port edge it is (-1: a fixed edge).
struct HandEdge {
  std::uint32_t from, to;
  TimeNs lag;
  int port_of = -1;
};

/// A pack graph with `durs.size()` nodes (the first `packs` are packs), the given releases
/// (INT64_MIN: none) and edges; the topological order is Kahn's (lowest timepoint first).
/// Port edges are numbered per pack in the order given. Only what PackGraph::evaluate and
/// PlanEvaluator read is filled in.
pack::PackGraph hand_pack_graph(std::uint32_t packs, const std::vector<TimeNs>& durs,
                                const std::vector<TimeNs>& release, const std::vector<HandEdge>& edges) {
  pack::PackGraph pg;
  pg.packs = packs;
  DepGraph& g = pg.g;
  const auto n = static_cast<std::uint32_t>(durs.size()), tps = 2 * n;
  g.op.assign(n, 0);
  g.dur = durs;
  g.rec_start.assign(n, 0);
  g.rec_end = durs;
  g.gpu.assign(n, 0);
  g.release = release;
  std::vector<std::size_t> order(edges.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return edges[a].to < edges[b].to; });
  g.in_begin.assign(tps + 1, 0);
  pg.pe_begin.assign(packs + 1, 0);
  for (const HandEdge& e : edges) {
    ++g.in_begin[e.to + 1];
    if (e.port_of >= 0) ++pg.pe_begin[e.port_of + 1];
  }
  for (std::uint32_t t = 0; t < tps; ++t) g.in_begin[t + 1] += g.in_begin[t];
  for (std::uint32_t p = 0; p < packs; ++p) pg.pe_begin[p + 1] += pg.pe_begin[p];
  pg.pe_edge.assign(pg.pe_begin[packs], 0);
  pg.edge_port.assign(edges.size(), UINT32_MAX);
  std::vector<std::uint32_t> port_fill(pg.pe_begin.begin(), pg.pe_begin.end() - 1), port_of_edge(edges.size());
  for (std::size_t j = 0; j < edges.size(); ++j)
    if (edges[j].port_of >= 0) port_of_edge[j] = port_fill[edges[j].port_of]++;
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const HandEdge& e = edges[order[i]];
    g.in_from.push_back(e.from);
    g.in_lag.push_back(e.lag);
    if (e.port_of >= 0) {
      pg.pe_edge[port_of_edge[order[i]]] = static_cast<std::uint32_t>(i);
      pg.edge_port[i] = port_of_edge[order[i]];
    }
  }
  g.in_type.assign(edges.size(), graph::EdgeType::kStreamOrder);
  g.in_inferred.assign(edges.size(), 0);
  std::vector<std::uint32_t> indegree(tps, 0);
  std::vector<std::vector<std::uint32_t>> out(tps);
  for (std::uint32_t v = 0; v < n; ++v) out[2 * v].push_back(2 * v + 1), ++indegree[2 * v + 1];
  for (const HandEdge& e : edges) out[e.from].push_back(e.to), ++indegree[e.to];
  std::vector<std::uint32_t> ready;
  for (std::uint32_t t = 0; t < tps; ++t)
    if (indegree[t] == 0) ready.push_back(t);
  while (!ready.empty()) {
    const auto it = std::min_element(ready.begin(), ready.end());
    const std::uint32_t t = *it;
    ready.erase(it);
    g.topo.push_back(t);
    for (const std::uint32_t v : out[t])
      if (--indegree[v] == 0) ready.push_back(v);
  }
  return pg;
}

// Pack A (node 0, 10 ns, released at 0) has an exit port X (node 3) 3 ns after its start; a host
// call H (node 2, 2 ns) syncs on X (lag 1) and A's work after it ends 4 ns after H returns (a
// port edge into E_A). Pack B (node 1, 50 ns, released at 0) runs beside it. Timepoint t of node
// n: 2n (start), 2n + 1 (end).
//   E: S_A 0, X 3, H 4..6, E_A max(0 + 10, 6 + 4) = 10, B 0..50: makespan 50.
//   L: E_A 50, E_B 50, S_B 0, E_H 46, S_H 44, X 43, S_A min(50 - 10, 43 - 3) = 40.
pack::PackGraph exit_feeds_entry() {
  const TimeNs none = INT64_MIN;
  return hand_pack_graph(2, {10, 50, 2, 0}, {0, 0, none, none},
                         {{0, 6, 3, 0},     // S_A -> X (port edge of A: the exit's lag)
                          {5, 1, 4, 0},     // E_H -> E_A (port edge of A: the entry's lag)
                          {7, 4, 1, -1}});  // X -> S_H (the host sync)
}

pack::PackTime pack_time(TimeNs dur, std::vector<TimeNs> lags) { return pack::PackTime{dur, std::move(lags)}; }

TEST(PlanEvaluator, RiseWorkedOutByHand) {
  const pack::PackGraph pg = exit_feeds_entry();
  pack::PlanEvaluator ev(pg, {pack_time(10, {3, 4}), pack_time(50, {})});
  ASSERT_EQ(ev.makespan_ns(), 50);
  EXPECT_EQ(ev.latest(), (std::vector<TimeNs>{40, 50, 0, 50, 44, 46, 43, 43}));
  // A 10 ns longer: E_A 20 <= L(E_A) 50, absorbed.
  EXPECT_EQ(ev.try_slower(0, pack_time(20, {3, 4})), 50);
  // A 60 ns: E_A 60, 10 past L(E_A).
  EXPECT_EQ(ev.try_slower(0, pack_time(60, {3, 4})), 60);
  // The exit 50 ns after A's start: X 50 is 7 past L(X) 43; H 51..53, E_A 57.
  EXPECT_EQ(ev.try_slower(0, pack_time(10, {50, 4})), 57);
  // Both port lags longer: H moves to 51..53 first, so E_A = 53 + 10 = 63 (E(H) + 10 - L(E_A)
  // would say 6 + 10 - 50 < 0: the moved source matters).
  EXPECT_EQ(ev.try_slower(0, pack_time(10, {50, 10})), 63);
  // B 5 ns longer: 55.
  EXPECT_EQ(ev.try_slower(1, pack_time(55, {})), 55);
  // With a limit of 55, the lower bound from the old source times (57, above) already passes
  // it: returned without propagating. With a limit of 63 the makespan is needed: 63.
  EXPECT_EQ(ev.try_slower(0, pack_time(10, {50, 10}), 55), 57);
  EXPECT_EQ(ev.try_slower(0, pack_time(10, {50, 10}), 63), 63);

  ev.apply_slower(0, pack_time(10, {50, 10}));
  EXPECT_EQ(ev.makespan_ns(), 63);
  EXPECT_EQ(ev.schedule().time, (std::vector<TimeNs>{0, 63, 0, 50, 51, 53, 50, 50}));
  // L after the move: E_A 63, E_B 63, S_B 13, E_H 53, S_H 51, X 50, S_A min(63 - 10, 50 - 50) = 0.
  EXPECT_EQ(ev.latest(), (std::vector<TimeNs>{0, 63, 13, 63, 51, 53, 50, 50}));
  // B now has 13 ns of slack: 60 ns is absorbed, 70 ns ends at 70.
  EXPECT_EQ(ev.try_slower(1, pack_time(60, {})), 63);
  EXPECT_EQ(ev.try_slower(1, pack_time(70, {})), 70);
}

TEST(PlanEvaluator, RefusesFasterOrMisshapenTimings) {
  const pack::PackGraph pg = exit_feeds_entry();
  pack::PlanEvaluator ev(pg, {pack_time(10, {3, 4}), pack_time(50, {})});
  EXPECT_THROW(ev.try_slower(0, pack_time(9, {3, 4})), std::invalid_argument);
  EXPECT_THROW(ev.try_slower(0, pack_time(10, {2, 4})), std::invalid_argument);
  EXPECT_THROW(ev.try_slower(0, pack_time(10, {3})), std::invalid_argument);
  EXPECT_THROW(ev.try_slower(2, pack_time(10, {})), std::invalid_argument);
  EXPECT_THROW(ev.apply_slower(0, pack_time(10, {3, 3})), std::invalid_argument);
  // try_if_slower: a faster timing is no error there (nullopt), a misshapen one still is.
  EXPECT_FALSE(ev.try_if_slower(0, pack_time(9, {3, 4})).has_value());
  EXPECT_FALSE(ev.try_if_slower(0, pack_time(10, {2, 4})).has_value());
  EXPECT_EQ(ev.try_if_slower(0, pack_time(20, {3, 4})), std::optional<TimeNs>(50));  // RiseWorkedOutByHand's first
  EXPECT_THROW(ev.try_if_slower(0, pack_time(10, {3})), std::invalid_argument);
  EXPECT_THROW(ev.try_if_slower(2, pack_time(10, {})), std::invalid_argument);
}


/// A random DAG of `nodes` nodes (the first `packs` packs): timepoints laid out in a random
/// order with each node's start before its end, edges only forward in it, some of them port
/// edges of a random pack (so packs often feed themselves), a few dropped, some negative lags,
/// releases on some nodes.
pack::PackGraph random_pack_graph(Rng& r, std::uint32_t packs, std::uint32_t nodes) {
  std::vector<std::uint32_t> slots;
  for (std::uint32_t n = 0; n < nodes; ++n) slots.insert(slots.end(), {n, n});
  for (std::size_t i = slots.size(); i > 1; --i) std::swap(slots[i - 1], slots[r.next() % i]);
  std::vector<std::uint32_t> layout;  // timepoints in order
  std::vector<std::uint8_t> seen(nodes, 0);
  for (const std::uint32_t n : slots) layout.push_back(seen[n]++ ? DepGraph::end_tp(n) : DepGraph::start_tp(n));
  std::vector<TimeNs> durs(nodes), release(nodes, INT64_MIN);
  for (std::uint32_t n = 0; n < nodes; ++n) {
    durs[n] = r.in(0, 30);
    if (r.chance(30)) release[n] = r.in(0, 40);
  }
  std::vector<HandEdge> edges;
  for (std::size_t a = 0; a < layout.size(); ++a) {
    for (std::size_t b = a + 1; b < layout.size(); ++b) {
      if ((layout[b] == layout[a] + 1 && DepGraph::is_end(layout[b])) || !r.chance(18)) continue;
      const int port = r.chance(45) ? static_cast<int>(r.next() % packs) : -1;
      const TimeNs lag = r.chance(4) ? graph::kDroppedLag : r.in(-5, 25);
      edges.push_back({layout[a], layout[b], lag, port});
    }
  }
  return hand_pack_graph(packs, durs, release, edges);
}

/// A random timing of pack p, or (with `from`) a random one no faster than `from`.
pack::PackTime random_time(Rng& r, const pack::PackGraph& pg, std::uint32_t p, const pack::PackTime* from) {
  pack::PackTime t;
  const std::uint32_t ports = pg.pe_begin[p + 1] - pg.pe_begin[p];
  auto grow = [&] { return r.chance(40) ? 0 : r.in(0, 40); };
  t.dur_ns = from ? from->dur_ns + grow() : r.in(0, 30);
  for (std::uint32_t i = 0; i < ports; ++i) t.port_lags_ns.push_back(from ? from->port_lags_ns[i] + grow() : r.in(-5, 25));
  return t;
}

/// Checks every timing of `tried[p]` still no faster than pack p's (try_slower remembers a
/// self-feeding pack's source times per timing: asked again after other moves, the answers
/// must follow them) against PackGraph::evaluate, with and without a limit.
void expect_tries_agree(const pack::PackGraph& pg, const pack::PlanEvaluator& ev, std::vector<pack::PackTime> times,
                        const std::vector<std::vector<pack::PackTime>>& tried, Rng& r, std::uint64_t seed) {
  for (std::uint32_t p = 0; p < pg.packs; ++p) {
    for (const pack::PackTime& t : tried[p]) {
      // No faster anywhere than the pack's timing now, compared here element by element.
      bool slower = t.dur_ns >= times[p].dur_ns;
      for (std::size_t i = 0; i < t.port_lags_ns.size(); ++i) slower &= t.port_lags_ns[i] >= times[p].port_lags_ns[i];
      ASSERT_EQ(ev.is_slower(p, t), slower) << "seed " << seed << " pack " << p;
      if (!slower) {
        ASSERT_FALSE(ev.try_if_slower(p, t).has_value()) << "seed " << seed << " pack " << p;
        continue;
      }
      std::vector<pack::PackTime> what_if = times;
      what_if[p] = t;
      const TimeNs full = pg.evaluate(what_if).makespan_ns;
      ASSERT_EQ(ev.try_slower(p, t), full) << "seed " << seed << " pack " << p;
      ASSERT_EQ(ev.try_if_slower(p, t), std::optional<TimeNs>(full)) << "seed " << seed << " pack " << p;
      const TimeNs limit = ev.makespan_ns() + r.in(0, 20);
      const TimeNs limited = ev.try_slower(p, t, limit);
      ASSERT_TRUE(full <= limit ? limited == full : limited > limit) << "seed " << seed << " pack " << p;
      const std::optional<TimeNs> limited_if = ev.try_if_slower(p, t, limit);
      ASSERT_TRUE(limited_if && (full <= limit ? *limited_if == full : *limited_if > limit))
          << "seed " << seed << " pack " << p;
    }
  }
}

// On random small pack graphs, every try_slower is PackGraph::evaluate's makespan (with and
// without a limit, and for timings tried before the last moves: they read the tails that
// apply_slower updates), and after each apply_slower the schedule is evaluate's, to the ns, its
// last node the highest ending at the end.
TEST(PlanEvaluator, AgreesWithFullEvaluationOnRandomPackGraphs) {
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    Rng r{seed};
    const auto packs = static_cast<std::uint32_t>(1 + r.next() % 4);
    const pack::PackGraph pg = random_pack_graph(r, packs, packs + static_cast<std::uint32_t>(r.next() % 9));
    std::vector<pack::PackTime> times;
    for (std::uint32_t p = 0; p < packs; ++p) times.push_back(random_time(r, pg, p, nullptr));
    pack::PlanEvaluator ev(pg, times);
    ASSERT_EQ(ev.makespan_ns(), pg.evaluate(times).makespan_ns) << "seed " << seed;
    std::vector<std::vector<pack::PackTime>> tried(packs);
    for (int step = 0; step < 8; ++step) {
      for (std::uint32_t p = 0; p < packs; ++p) {
        if (tried[p].size() == 4) tried[p].erase(tried[p].begin());
        tried[p].push_back(random_time(r, pg, p, &times[p]));
      }
      expect_tries_agree(pg, ev, times, tried, r, seed);
      if (::testing::Test::HasFatalFailure()) return;
      const auto p = static_cast<std::uint32_t>(r.next() % packs);
      times[p] = tried[p][r.next() % tried[p].size()];
      if (!ev.is_slower(p, times[p])) times[p] = ev.times()[p];
      ev.apply_slower(p, times[p]);
      const timing::Schedule full = pg.evaluate(times);
      ASSERT_EQ(ev.makespan_ns(), full.makespan_ns) << "seed " << seed << " step " << step;
      ASSERT_EQ(ev.schedule().time, full.time) << "seed " << seed << " step " << step;
      std::vector<const pack::PackTime*> by_pointer;  // the overload that reads the timings in place
      for (const pack::PackTime& t : times) by_pointer.push_back(&t);
      const timing::Schedule pointed = pg.evaluate(std::span<const pack::PackTime* const>(by_pointer));
      ASSERT_EQ(pointed.time, full.time) << "seed " << seed << " step " << step;
      ASSERT_EQ(pointed.makespan_ns, full.makespan_ns) << "seed " << seed << " step " << step;
      std::uint32_t last = 0;  // the highest node ending at the end, by scan
      for (std::uint32_t n = 0; n < pg.g.nodes(); ++n) {
        if (full.time[graph::DepGraph::end_tp(n)] == full.end_ns) last = n;
      }
      ASSERT_EQ(ev.schedule().last_node, last) << "seed " << seed << " step " << step;
    }
  }
}

}  // namespace
}  // namespace emo::testing
