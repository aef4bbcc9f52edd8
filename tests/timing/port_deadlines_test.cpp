// Latest transfer starts and the decomposed solve's float pins (timing/port_deadlines.h) on a
// hand-built job of three ranks reduced to their ports; every figure is worked out below.
//
//   instance 0: ranks 0 and 1     instance 1: ranks 0 and 1     instance 2: ranks 1 and 2
//   every transfer T = 10 ns; no clock offsets; every rank's window starts at 0.
//   Rank 0 (heavy):  P0 released 0;  P0 end +100 → P1;  P1 end +100 → its end.
//   Rank 1 (light):  Q0 released 0;  Q0 end +20 → Q2;   Q2 end +20 → Q1;  Q1 end +20 → its end.
//   Rank 2:          R2 released 0;  R2 end +10 → its end.
//
// Forward (time_job): c0 starts 0, ends 10. c2: rank 1 arrives 10 + 20 = 30, rank 2 at 0: starts
// 30, ends 40. c1: rank 0 arrives 10 + 100 = 110, rank 1 40 + 20 = 60: starts 110, ends 120. Ends:
// rank 0 220, rank 1 140, rank 2 50; M0 = 220. c0 and c1 are on the critical path (rank 0).
//
// Latest starts, deadline 220: LE1 = min(220, 220 − 100, 220 − 20) = 120, LS1 = 110; LE2 =
// min(220, LS1 − 20, 220 − 10) = 90, LS2 = 80; LE0 = min(220, LS1 − 100, LS2 − 20) = 10, LS0 = 0.
// Deadline 240: LE1 = min(240, 140, 220) = 140, LS1 = 130; LE2 = min(240, 110, 230) = 110,
// LS2 = 100; LE0 = min(240, 30, 80) = 30, LS0 = 20.
//
// Float pins with the budget M0 (no stretch): c0 and c1 critical → their earliest starts 0 and
// 110. c2: A = 30, B = 220 − LS2 = 140: P = 30 × 220 / 170 = 38.8 → 38 (its earliest start 30, its
// latest 80: the path's float shared in proportion to the work before and after c2). Its
// predecessor needs ≥ 0 + 10 + 20 = 30; c1 needs ≥ 38 + 10 + 20 = 68 and ≥ 0 + 10 + 100 = 110.
#include "timing/port_deadlines.h"

#include <gtest/gtest.h>

#include <vector>

namespace emo::timing {
namespace {

constexpr TimeNs kNo = INT64_MIN;

struct HandJob {
  std::vector<PortGraph> graphs;
  std::vector<std::vector<std::int64_t>> instance;
  std::vector<RankPorts> ranks() const {
    std::vector<RankPorts> out;
    for (std::size_t r = 0; r < graphs.size(); ++r) out.push_back({&graphs[r], instance[r], 0});
    return out;
  }
};

PortGraph ports(std::vector<TimeNs> release, std::vector<PortLag> lags) {
  PortGraph g;
  g.dur_ns.assign(release.size(), 10);
  g.end_release_ns.assign(release.size(), kNo);
  g.release_ns = std::move(release);
  g.lags = std::move(lags);
  return g;
}

HandJob three_ranks() {
  HandJob j;
  j.graphs.push_back(ports({0, kNo}, {{0, 1, 100}, {1, kRankEnd, 100}}));                   // P0 P1
  j.graphs.push_back(ports({0, kNo, kNo}, {{0, 1, 20}, {1, 2, 20}, {2, kRankEnd, 20}}));   // Q0 Q2 Q1
  j.graphs.push_back(ports({0}, {{0, kRankEnd, 10}}));                                      // R2
  j.instance = {{0, 1}, {0, 2, 1}, {2}};
  return j;
}

TEST(PortDeadlines, ForwardTimingOfTheHandJob) {  // the premise, by hand (file comment)
  const HandJob j = three_ranks();
  const auto r = j.ranks();
  const JobTiming jt = time_job(r, 3);
  EXPECT_EQ(jt.transfer_start_ns, (std::vector<TimeNs>{0, 110, 30}));
  EXPECT_EQ(jt.makespan_ns, 220);
}

TEST(PortDeadlines, LatestTransferStartsWorkedByHand) {
  const HandJob j = three_ranks();
  const auto r = j.ranks();
  EXPECT_EQ(latest_transfer_starts(r, 3, 220).value(), (std::vector<TimeNs>{0, 110, 80}));
  EXPECT_EQ(latest_transfer_starts(r, 3, 240).value(), (std::vector<TimeNs>{20, 130, 100}));
}

TEST(PortDeadlines, StretchedLagsAreRoundedUp) {
  // Deadline 240 with the lags × 1.05 (ceil): rank 0's 100 → 105, rank 1's 20 → 21, rank 2's 10
  // → 11 (10.5). LE1 = min(240, 240 − 105, 240 − 21) = 135, LS1 = 125; LE2 = min(240, 125 − 21,
  // 240 − 11) = 104, LS2 = 94; LE0 = min(240, 125 − 105, 94 − 21) = 20, LS0 = 10.
  const HandJob j = three_ranks();
  const auto r = j.ranks();
  EXPECT_EQ(latest_transfer_starts(r, 3, 240, 1.05).value(), (std::vector<TimeNs>{10, 125, 94}));
}

TEST(PortDeadlines, FloatPinsShareThePathsFloat) {
  const HandJob j = three_ranks();
  const auto r = j.ranks();
  const JobTiming jt = time_job(r, 3);
  EXPECT_EQ(float_pins(r, 3, jt, 220).value(), (std::vector<TimeNs>{0, 110, 38}));
}

TEST(PortDeadlines, OnTheCriticalPathThePinsAreTheProportionalStretch) {
  // Budget 440 (k = 2): c0 at 0; c1: A = 110, B = 110 → P = 110 × 440 / 220 = 220, and its
  // predecessors ask ≥ 0 + 10 + 200 = 210 (rank 0) and ≥ P2 + 10 + 40 (rank 1). c2: A = 30,
  // B = 140: P = 30 × 440 / 170 = 77.6 → 77, its predecessor c0 asks ≥ 0 + 10 + 40 = 50.
  // c1 ≥ 77 + 50 = 127. Latest starts (deadline 440, lags × 2): LS1 = min(440, 440 − 200,
  // 440 − 40) − 10 = 230, LS2 = min(230 − 40, 440 − 20) − 10 = 180: no cap binds.
  const HandJob j = three_ranks();
  const auto r = j.ranks();
  const JobTiming jt = time_job(r, 3);
  EXPECT_EQ(float_pins(r, 3, jt, 440).value(), (std::vector<TimeNs>{0, 220, 77}));
}

TEST(PortDeadlines, ACycleHasNoLatestStarts) {
  HandJob j;
  j.graphs.push_back(ports({0, kNo}, {{0, 1, 5}}));  // c0 before c1 on rank 0
  j.graphs.push_back(ports({0, kNo}, {{0, 1, 5}}));  // c1 before c0 on rank 1
  j.instance = {{0, 1}, {1, 0}};
  const auto r = j.ranks();
  EXPECT_FALSE(latest_transfer_starts(r, 2, 1000).has_value());
  EXPECT_FALSE(float_pins(r, 2, time_job(r, 2), 1000).has_value());
}

TEST(PortDeadlines, AnInstanceOutOfRangeIsRefused) {
  HandJob j = three_ranks();
  j.instance[2] = {7};
  const auto r = j.ranks();
  EXPECT_THROW((void)latest_transfer_starts(r, 3, 220), std::invalid_argument);
}

}  // namespace
}  // namespace emo::timing
