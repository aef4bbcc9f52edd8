// The critical path of a job timed from its ranks' reductions, and a rank's timing given its
// ports' ends (timing/ports.h: job_critical_path, time_with_port_ends), on a hand-built job of
// three ranks whose every figure is worked out here:
//
//   Rank A (offset 0):     a1 [released 0, 100 ns] → PA (c0, 20 ns) → a2 (10 ns)
//   Rank B (offset 0):     b1 [released 0, 50 ns]  → PB0 (c0, 20 ns) → b2 (80 ns) → PB1 (c1, 10 ns)
//   Rank C (offset −1000): c1 [released 1000, 150 ns] → PC (c1, 10 ns) → c2 (90 ns)
//
// c0: A arrives 100, B 50: the transfer starts 100 (A is last) and ends 120. c1: B arrives
// 120 + 80 = 200, C 1150 − 1000 = 150: starts 200 (B is last), ends 210. A ends at 120 + 10 =
// 130, B at 210, C at 210 + 90 = 300: the job ends at 300, on C.
// Backtrack: C's end is c1's end + 90 (its lag PC → end): C holds [210, 300]. c1's transfer
// started at B's arrival, c0's end + 80 (B's lag PB0 → PB1): B holds [120, 210]. c0's transfer
// started at A's arrival, its release (a1's end, nothing before it): A holds [0, 120].
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "timing/hand_graph.h"
#include "timing/ports.h"

namespace emo::timing {
namespace {


/// A chain of GPU nodes with durations `dur` and releases `release` (kNo: none), each node's end
/// → the next one's start at lag 0.
DepGraph chain(const std::vector<TimeNs>& dur, const std::vector<TimeNs>& release) {
  std::vector<std::tuple<std::uint32_t, std::uint32_t, TimeNs>> edges;
  for (std::uint32_t i = 1; i < dur.size(); ++i) edges.emplace_back(E(i - 1), S(i), 0);
  return hand_graph(dur, release, edges);
}

struct Job {
  DepGraph a = chain({100, 20, 10}, {0, kNo, kNo});
  DepGraph b = chain({50, 20, 80, 10}, {0, kNo, kNo, kNo});
  DepGraph c = chain({150, 10, 90}, {1000, kNo, kNo});
  std::vector<std::uint32_t> ports_a{1}, ports_b{1, 3}, ports_c{1};
  PortGraph pa = reduce_to_ports(a, a.dur, ports_a);
  PortGraph pb = reduce_to_ports(b, b.dur, ports_b);
  PortGraph pc = reduce_to_ports(c, c.dur, ports_c);
  std::vector<std::int64_t> inst_a{0}, inst_b{0, 1}, inst_c{1};
  std::vector<RankPorts> ranks{{&pa, inst_a, 0}, {&pb, inst_b, 0}, {&pc, inst_c, -1000}};
  JobTiming jt = time_job(ranks, 2);
};

TEST(JobCriticalPath, TheTimingItBacktracksIsTheHandWorkedOne) {
  const Job j;
  EXPECT_EQ(j.jt.transfer_start_ns, (std::vector<TimeNs>{100, 200}));
  EXPECT_EQ(j.jt.end_ns, (std::vector<TimeNs>{120, 210}));
  EXPECT_EQ(j.jt.rank_end_ns, (std::vector<TimeNs>{130, 210, 300}));
  EXPECT_EQ(j.jt.makespan_ns, 300);
}

TEST(JobCriticalPath, FromTheLastRanksEndBackThroughEachCollectivesLastArrival) {
  const Job j;
  const std::vector<JobPathStretch> path = job_critical_path(j.ranks, 2, j.jt);
  ASSERT_EQ(path.size(), 3u);
  EXPECT_EQ(path[0].rank, 0u);  // A: from its start to c0's end (its arrival was the last)
  EXPECT_EQ(path[0].start_ns, 0);
  EXPECT_EQ(path[0].end_ns, 120);
  EXPECT_EQ(path[0].from_instance, -1);
  EXPECT_EQ(path[0].to_instance, 0);
  EXPECT_EQ(path[1].rank, 1u);  // B: c0's end, b2, its arrival at c1 (the last), c1's transfer
  EXPECT_EQ(path[1].start_ns, 120);
  EXPECT_EQ(path[1].end_ns, 210);
  EXPECT_EQ(path[1].from_instance, 0);
  EXPECT_EQ(path[1].to_instance, 1);
  EXPECT_EQ(path[2].rank, 2u);  // C: c1's end + c2 = the job's end
  EXPECT_EQ(path[2].start_ns, 210);
  EXPECT_EQ(path[2].end_ns, 300);
  EXPECT_EQ(path[2].from_instance, 1);
  EXPECT_EQ(path[2].to_instance, -1);
}

TEST(JobCriticalPath, AJobThatEndsWithACollectiveEndsOnItsLastArrival) {
  // A and B alone up to c0 (no a2, no b2/PB1): both end at c0's end, 120; B (index 0) ends the
  // job, with c0, whose last arrival is A: one stretch, on A, [0, 120] (none on B).
  const DepGraph a = chain({100, 20}, {0, kNo}), b = chain({50, 20}, {0, kNo});
  const std::vector<std::uint32_t> port{1};
  const PortGraph pa = reduce_to_ports(a, a.dur, port), pb = reduce_to_ports(b, b.dur, port);
  const std::vector<std::int64_t> inst{0};
  const std::vector<RankPorts> ranks{{&pb, inst, 0}, {&pa, inst, 0}};  // B first: the path crosses to A
  const JobTiming jt = time_job(ranks, 1);
  const std::vector<JobPathStretch> path = job_critical_path(ranks, 1, jt);
  ASSERT_EQ(path.size(), 1u);
  EXPECT_EQ(path[0].rank, 1u);
  EXPECT_EQ(path[0].start_ns, 0);
  EXPECT_EQ(path[0].end_ns, 120);
}

TEST(JobCriticalPath, ATimingOfOtherRanksThrows) {
  const Job j;
  JobTiming other = j.jt;
  other.rank_end_ns.pop_back();
  EXPECT_THROW(job_critical_path(j.ranks, 2, other), std::invalid_argument);
}

TEST(TimeWithPortEnds, EachRankReplayedWithItsPortsEndingWhenTheJobSaysArrivesWhenTheJobSays) {
  const Job j;
  // B with c0 ending at 120 and c1 at 210: b1 [0, 50], PB0 from 50, b2 [120, 200], PB1 from 200.
  const std::vector<TimeNs> ends_b{120, 210};
  const std::vector<TimeNs> tb = time_with_port_ends(j.b, j.b.dur, j.ports_b, ends_b);
  EXPECT_EQ(tb, (std::vector<TimeNs>{0, 50, 50, 120, 120, 200, 200, 210}));
  EXPECT_EQ(tb[S(3)], j.jt.arrival_ns[1][1]);
  // C on its own clock (offset −1000): c1 ends at 1210 there; c2 [1210, 1300].
  const std::vector<TimeNs> ends_c{1210};
  const std::vector<TimeNs> tc = time_with_port_ends(j.c, j.c.dur, j.ports_c, ends_c);
  EXPECT_EQ(tc, (std::vector<TimeNs>{1000, 1150, 1150, 1210, 1210, 1300}));
  EXPECT_EQ(tc[S(1)] - 1000, j.jt.arrival_ns[2][0]);
  const std::vector<TimeNs> one{1};
  EXPECT_THROW(time_with_port_ends(j.b, j.b.dur, j.ports_b, one), std::invalid_argument);
}

}  // namespace
}  // namespace emo::timing
