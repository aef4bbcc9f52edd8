// Property tests of packing and contraction on random traces: every GPU op in exactly one
// pack, packs in time order per device, the pack graph replaying the recording exactly, and
// the pack graph's makespan against the op graph's at uniform and per-pack factors.
#include "pack/pack_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/hand_trace.h"
#include "graph/independent_replay.h"
#include "pack/random_trace.h"
#include "pack/packer.h"
#include "pack/test_rng.h"
#include "timing/analysis.h"

namespace emo::testing {
namespace {

struct Checked {
  double uniform_error = 0;
  double per_pack_error = 0;
  std::size_t packs = 0;
  std::size_t ops = 0;
  std::int64_t cycle_edges = 0;
};

/// The contraction error recomputed here, not by pack::check_contraction: the op graph replayed
/// by replay_by_hand with each GPU op's duration scaled by its pack's factor, against the pack
/// graph's makespan at the same factors, uniform and per pack.
void expect_contraction_by_hand(const DepGraph& g, const pack::Packing& p, const pack::PackGraph& pg, std::uint64_t seed) {
  const std::vector<TimeNs> recorded = replay_by_hand(g, g.dur);  // replay error 0: every GPU op ends as recorded
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (g.gpu[n]) {
      ASSERT_EQ(recorded[DepGraph::end_tp(n)], g.rec_end[n]) << "seed " << seed << " node " << n;
    }
  }
  for (const std::vector<double>& f : factor_cases(p.packs.size(), 4, seed)) {
    const TimeNs op = makespan_by_hand(g, replay_by_hand(g, durations_at(g, p.pack_of, f)));
    ASSERT_EQ(pg.evaluate_factors(f).makespan_ns, op) << "seed " << seed << ", factors " << ::testing::PrintToString(f);
  }
}

Checked check(std::uint64_t seed, int threads, int devices, int streams, int steps, TimeNs min_pack) {
  const trace::Trace t = random_trace(seed, threads, devices, streams, steps);
  const timing::Analysis a = timing::analyze(t, graph::Window{}, {});
  const DepGraph& g = a.graph;
  expect_exact_replay(g);
  const pack::Packing p = pack::pack_timeline(t, g, a.schedule, a.node_slack, {min_pack});
  // Partition: every GPU op once; per device, packs in time order.
  std::vector<int> seen(g.nodes(), 0);
  for (std::uint32_t k = 0; k < p.packs.size(); ++k) {
    for (const std::uint32_t n : p.ops_of(k)) ++seen[n];
    if (k > 0 && p.packs[k - 1].device == p.packs[k].device) {
      EXPECT_LE(p.packs[k - 1].end_ns, p.packs[k].start_ns) << "seed " << seed;
    }
    EXPECT_EQ(p.packs[k].forced_short, p.packs[k].span_ns < min_pack);
  }
  for (std::uint32_t n = 0; n < g.nodes(); ++n) EXPECT_EQ(seen[n], g.gpu[n] ? 1 : 0);
  const pack::PackGraph pg = pack::contract(g, p);
  // At the recorded durations the pack graph reproduces the recording.
  const timing::Schedule s = timing::replay(pg.g, pg.g.dur);
  EXPECT_EQ(s.makespan_ns, a.schedule.makespan_ns) << "seed " << seed;
  for (std::uint32_t k = 0; k < p.packs.size(); ++k) {
    EXPECT_EQ(s.start(k), p.packs[k].start_ns) << "seed " << seed << " pack " << k;
    EXPECT_EQ(s.end(k), p.packs[k].end_ns) << "seed " << seed << " pack " << k;
  }
  expect_contraction_by_hand(g, p, pg, seed);
  pack::ContractionOptions o;
  o.seed = seed;
  o.per_pack_cases = 6;
  const pack::ContractionReport rep = pack::check_contraction(g, p, pg, o);
  EXPECT_EQ(rep.uniform[0].error, 0.0) << "seed " << seed;  // x1 is the recording
  return {rep.uniform_error, rep.per_pack_error, p.packs.size(), p.nodes.size(), pg.cycle_edges};
}

/// From 1 ns (a pack at every boundary) to 1 s (one pack per device, host syncs inside it).
TimeNs min_pack_of(std::uint64_t seed) {
  constexpr TimeNs kChoices[] = {1, 300, 2000, 1'000'000'000};
  return kChoices[seed % 4];
}

// One CPU thread, one stream per GPU: packs are paced by one CPU chain and split at its syncs,
// and the contraction is exact at every factor (uniform and per pack), with min_pack from
// 1 ns (every boundary) to 2 µs (merged packs).
TEST(PackGraphProperty, OneThreadOneStreamTracesContractExactly) {
  std::size_t packs = 0, ops = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const Checked c = check(seed, 1, 1, 1, 60, min_pack_of(seed));
    EXPECT_EQ(c.uniform_error, 0.0) << "seed " << seed;
    EXPECT_EQ(c.per_pack_error, 0.0) << "seed " << seed;
    packs += c.packs;
    ops += c.ops;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_LT(packs, ops);  // packing merges
}

// Every shape (1-2 threads, 1-2 GPUs, 1-3 streams, min_pack 1 ns to 2 µs): a partition of the
// GPU ops, the pack graph reproduces the recording, and the contraction is exact at every
// uniform and per-pack factor: several CPU threads, cross-stream event waits, host syncs in
// the middle of a pack and a CPU that syncs one GPU before launching on another all enter or
// leave a pack through port edges (pack_graph.h), which follow the pack's factor.
TEST(PackGraphProperty, EveryShapeContractsExactly) {
  for (std::uint64_t seed = 1; seed <= 600; ++seed) {
    const int threads = 1 + static_cast<int>(seed % 2);
    const int devices = 1 + static_cast<int>((seed / 2) % 2);
    const int streams = 1 + static_cast<int>((seed / 4) % 3);
    const Checked c = check(seed, threads, devices, streams, 80, min_pack_of(seed));
    EXPECT_EQ(c.uniform_error, 0.0) << "seed " << seed;
    EXPECT_EQ(c.per_pack_error, 0.0) << "seed " << seed;
    EXPECT_EQ(c.cycle_edges, 0) << "seed " << seed;
    if (::testing::Test::HasFailure()) break;
  }
}

// One pack of 15,000 GPU ops with a host sync (an exit port) every few launches, on 1-3 streams
// from 1-2 threads: exact, and the pack graph stays linear in size (port edges between exit
// ports instead of one per entry and exit: a first version had 30 M port edges here).
TEST(PackGraphProperty, LongPacksWithManyExitsStayLinear) {
  for (int streams = 1; streams <= 3; ++streams) {
    for (int threads = 1; threads <= 2; ++threads) {
      SCOPED_TRACE(::testing::Message() << streams << " streams, " << threads << " threads");
      const trace::Trace t = random_trace(7, threads, 1, streams, 20000);
      const timing::Analysis a = timing::analyze(t, graph::Window{}, {});
      const pack::Packing p = pack::pack_timeline(t, a.graph, a.schedule, a.node_slack, {1'000'000'000});
      ASSERT_EQ(p.packs.size(), 1u);
      const pack::PackGraph pg = pack::contract(a.graph, p);
      const auto exits = std::count(pg.port_kind.begin(), pg.port_kind.end(), pack::PortKind::kExit);
      EXPECT_GT(exits, 3000);
      EXPECT_LT(pg.port_edges(), a.graph.edges());
      pack::ContractionOptions o;
      o.per_pack_cases = 0;
      const pack::ContractionReport rep = pack::check_contraction(a.graph, p, pg, o);
      EXPECT_EQ(rep.uniform_error, 0.0);
    }
  }
}

}  // namespace
}  // namespace emo::testing

#include "pack/plan_evaluator.h"

namespace emo::testing {
namespace {

// The incremental evaluator agrees with a full PackGraph::evaluate, to the ns, for every pack
// slowed to every factor from a random plan, and after applying a sequence of such moves.
TEST(PlanEvaluator, AgreesWithFullEvaluation) {
  for (std::uint64_t seed = 1; seed <= 120; ++seed) {
    const int threads = 1 + static_cast<int>(seed % 2);
    const int devices = 1 + static_cast<int>((seed / 2) % 2);
    const int streams = 1 + static_cast<int>((seed / 4) % 3);
    const trace::Trace t = random_trace(seed, threads, devices, streams, 80);
    const timing::Analysis a = timing::analyze(t, graph::Window{}, {});
    const pack::Packing p = pack::pack_timeline(t, a.graph, a.schedule, a.node_slack, {min_pack_of(seed)});
    const pack::PackGraph pg = pack::contract(a.graph, p);
    const std::uint32_t P = pg.packs;
    const std::vector<double> levels{1.0, 1.1, 1.3, 2.0};
    Rng r{seed};
    std::vector<int> level(P);
    for (int& l : level) l = static_cast<int>(r.next() % 2);
    auto factors = [&] {
      std::vector<double> f(P);
      for (std::uint32_t i = 0; i < P; ++i) f[i] = levels[level[i]];
      return f;
    };
    pack::PlanEvaluator ev(pg, pg.pack_times(factors()));
    EXPECT_EQ(ev.makespan_ns(), pg.evaluate_factors(factors()).makespan_ns);
    for (int step = 0; step < 6; ++step) {
      for (std::uint32_t i = 0; i < P; ++i) {
        for (int l = level[i] + 1; l < 4; ++l) {
          std::vector<double> f = factors();
          f[i] = levels[l];
          EXPECT_EQ(ev.try_slower(i, pg.pack_time(i, levels[l])), pg.evaluate_factors(f).makespan_ns)
              << "seed " << seed << " pack " << i;
        }
      }
      const auto i = static_cast<std::uint32_t>(r.next() % P);
      if (level[i] == 3) continue;
      ++level[i];
      ev.apply_slower(i, pg.pack_time(i, levels[level[i]]));
      const timing::Schedule full = pg.evaluate_factors(factors());
      EXPECT_EQ(ev.makespan_ns(), full.makespan_ns) << "seed " << seed;
      EXPECT_EQ(ev.schedule().time, full.time) << "seed " << seed;
    }
    EXPECT_THROW(ev.try_slower(0, pg.pack_time(0, 0.5)), std::invalid_argument);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace emo::testing
