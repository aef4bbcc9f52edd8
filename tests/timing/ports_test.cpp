// A rank's graph reduced to its collective ports, and a job timed from its ranks' reductions
// (timing/ports.h), on hand-built graphs whose every figure is worked out below. The equivalence
// with the full replay of a linked job's graph is checked on a generated job in
// tests/support/job_link_test.cpp.
//
// Rank A (its own clock is the job's):         Rank B (its clock 1000 ns ahead: offset −1000):
//   a1 [released 0, 100 ns] → P1 (c0, 20 ns)     b1 [released 1000, 150 ns] → Q1 (c0, 30 ns)
//   P1 end +5 → a2 (50 ns) → P2 (c1, 10 ns)      Q1 end +2 → Q2 (c1, 10 ns) → b2 (40 ns)
//   a3 [released 0, 200 ns], alone
//
// By hand: c0: A arrives 100, B 1150 − 1000 = 150; the transfer starts 150 and ends after the
// longer duration, 30: 180. c1: A arrives 180 + 5 + 50 = 235, B 180 + 2 = 182: starts 235, ends
// 245. A ends at max(200, 245, a2's end 235) = 245; B at 245 + 40 = 285: the makespan is 285 from
// the job's start 0. A waits 150 − 100 = 50 before c0; B waits 235 − 182 = 53 before c1.
// A's lag P1 → its end (a2 ends 55 after P1) is implied by P1 → P2 (55) + P2's 10 ns: pruned.
#include "timing/ports.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "timing/hand_graph.h"

namespace emo::timing {
namespace {


DepGraph rank_a() {
  return hand_graph({100, 20, 50, 10, 200}, {0, kNo, kNo, kNo, 0}, {{E(0), S(1), 0}, {E(1), S(2), 5}, {E(2), S(3), 0}});
}

DepGraph rank_b() {
  return hand_graph({150, 30, 10, 40}, {1000, kNo, kNo, kNo}, {{E(0), S(1), 0}, {E(1), S(2), 2}, {E(2), S(3), 0}});
}

TEST(Ports, ARankReducesToItsReleasesAndTheLagsNoChainImplies) {
  const DepGraph a = rank_a();
  const std::vector<std::uint32_t> ports_a = {1, 3};
  const PortGraph pa = reduce_to_ports(a, a.dur, ports_a);
  EXPECT_EQ(pa.release_ns, (std::vector<TimeNs>{100, kNo}));
  EXPECT_EQ(pa.end_release_ns, (std::vector<TimeNs>{kNo, kNo}));
  EXPECT_EQ(pa.dur_ns, (std::vector<TimeNs>{20, 10}));
  EXPECT_EQ(pa.end_release_ns_rank, 200);  // a3; a1 ends at 100
  ASSERT_EQ(pa.lags.size(), 1u);           // P1 → P2 55; P1 → end 55 is implied (pruned)
  EXPECT_EQ(pa.lags[0].from, 0u);
  EXPECT_EQ(pa.lags[0].to, 1u);
  EXPECT_EQ(pa.lags[0].lag_ns, 55);

  const DepGraph b = rank_b();
  const std::vector<std::uint32_t> ports_b = {1, 2};
  const PortGraph pb = reduce_to_ports(b, b.dur, ports_b);
  EXPECT_EQ(pb.release_ns, (std::vector<TimeNs>{1150, kNo}));
  EXPECT_EQ(pb.end_release_ns_rank, 1150);
  ASSERT_EQ(pb.lags.size(), 2u);
  EXPECT_EQ(pb.lags[0].to, 1u);
  EXPECT_EQ(pb.lags[0].lag_ns, 2);
  EXPECT_EQ(pb.lags[1].from, 1u);
  EXPECT_EQ(pb.lags[1].to, kRankEnd);
  EXPECT_EQ(pb.lags[1].lag_ns, 40);
}

TEST(Ports, TheJobTimedFromItsRanksReductionsMatchesTheHandWorkedFigures) {
  const DepGraph a = rank_a(), b = rank_b();
  const std::vector<std::uint32_t> ports_a = {1, 3}, ports_b = {1, 2};
  const PortGraph pa = reduce_to_ports(a, a.dur, ports_a), pb = reduce_to_ports(b, b.dur, ports_b);
  const std::vector<std::int64_t> inst = {0, 1};
  const std::vector<RankPorts> ranks = {{&pa, inst, 0}, {&pb, inst, -1000}};
  const JobTiming jt = time_job(ranks, 2);
  EXPECT_EQ(jt.transfer_start_ns, (std::vector<TimeNs>{150, 235}));
  EXPECT_EQ(jt.end_ns, (std::vector<TimeNs>{180, 245}));
  EXPECT_EQ(jt.arrival_ns[0], (std::vector<TimeNs>{100, 235}));
  EXPECT_EQ(jt.arrival_ns[1], (std::vector<TimeNs>{150, 182}));
  EXPECT_EQ(jt.rank_end_ns, (std::vector<TimeNs>{245, 285}));
  EXPECT_EQ(jt.start_ns, 0);
  EXPECT_EQ(jt.makespan_ns, 285);
  EXPECT_EQ(jt.wait_ns, (std::vector<TimeNs>{50, 53}));
  EXPECT_EQ(jt.cycle_breaks, 0);

  // b1 40 ns longer (its own run): B arrives at c0 at 190, c1 moves by 40 for both.
  std::vector<TimeNs> slower = b.dur;
  slower[0] += 40;
  const PortGraph pb2 = reduce_to_ports(b, slower, ports_b);
  const std::vector<RankPorts> ranks2 = {{&pa, inst, 0}, {&pb2, inst, -1000}};
  const JobTiming jt2 = time_job(ranks2, 2);
  EXPECT_EQ(jt2.transfer_start_ns, (std::vector<TimeNs>{190, 275}));
  EXPECT_EQ(jt2.makespan_ns, 325);
}

TEST(Ports, ACycleAcrossRanksIsBrokenAtTheEarliestArrivalAndCounted) {
  // A: x [0, 10) → P1 (c0, 5) → P2 (c1, 5); B: y [0, 20) → Q1 (c1, 5) → Q2 (c0, 5): the ranks
  // disagree on the order. c0 is timed first from what is known (A arrives at 10; B's arrival
  // needs c1): 10 → 15; then c1: A at 15, B at 20: 20 → 25. Makespan 25, one break.
  const DepGraph a = hand_graph({10, 5, 5}, {0, kNo, kNo}, {{E(0), S(1), 0}, {E(1), S(2), 0}});
  const DepGraph b = hand_graph({20, 5, 5}, {0, kNo, kNo}, {{E(0), S(1), 0}, {E(1), S(2), 0}});
  const std::vector<std::uint32_t> ports = {1, 2};
  const PortGraph pa = reduce_to_ports(a, a.dur, ports), pb = reduce_to_ports(b, b.dur, ports);
  const std::vector<std::int64_t> ia = {0, 1}, ib = {1, 0};
  const std::vector<RankPorts> ranks = {{&pa, ia, 0}, {&pb, ib, 0}};
  const JobTiming jt = time_job(ranks, 2);
  EXPECT_EQ(jt.cycle_breaks, 1);
  EXPECT_EQ(jt.transfer_start_ns, (std::vector<TimeNs>{10, 20}));
  EXPECT_EQ(jt.makespan_ns, 25);
  // B's arrival at c0 is unknown (its predecessor c1 came later): no wait counted for it; A waits
  // 20 − 15 = 5 before c1, B 0 before c1.
  EXPECT_EQ(jt.wait_ns, (std::vector<TimeNs>{5, 0}));
}

TEST(Ports, BadArgumentsThrow) {
  const DepGraph a = rank_a();
  const std::vector<std::uint32_t> twice = {1, 1}, outside = {9};
  EXPECT_THROW(reduce_to_ports(a, a.dur, twice), std::invalid_argument);
  EXPECT_THROW(reduce_to_ports(a, a.dur, outside), std::invalid_argument);
  const std::vector<TimeNs> short_dur = {1};
  const std::vector<std::uint32_t> one = {1};
  EXPECT_THROW(reduce_to_ports(a, short_dur, one), std::invalid_argument);
  const PortGraph pa = reduce_to_ports(a, a.dur, std::vector<std::uint32_t>{1, 3});
  const std::vector<std::int64_t> bad = {0, 5};
  const std::vector<RankPorts> ranks = {{&pa, bad, 0}};
  EXPECT_THROW(time_job(ranks, 2), std::invalid_argument);
}

}  // namespace
}  // namespace emo::timing
