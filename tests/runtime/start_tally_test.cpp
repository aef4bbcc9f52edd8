// Pack starts seen per iteration against expected (issue 32): one observation covers the packs
// sharing its anchor; iterations that saw none are named.
#include "runtime/start_tally.h"

#include <gtest/gtest.h>

namespace emo::runtime {
namespace {

/// Section 0: pack 0 at a copy, packs 1 and 2 inside launch 0 of one graph (one anchor), pack 3
/// at a kernel. Section 1: one kernel pack.
policy::Policy policy_with_shared_anchor() {
  policy::Policy p;
  policy::GpuPolicy g;
  g.device = 0;
  const policy::GraphStart graph{12, "first", 0};
  std::vector<policy::PackStart> starts = {
      {"Memcpy HtoD", 7, 0, policy::ObservedBy::kCopy},
      {"k2", 7, 0, policy::ObservedBy::kGraph, 1000, graph},
      {"k5", 7, 0, policy::ObservedBy::kGraph, 1000, graph},
      {"gemm", 7, 0, policy::ObservedBy::kKernel}};
  starts[1].graph.index = 2;
  starts[2].graph.index = 5;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    policy::PackClock k;
    k.index = static_cast<std::int32_t>(i);
    k.start = starts[i];
    g.packs.push_back(k);
  }
  p.gpus.push_back(g);
  policy::GpuPolicy h;
  h.device = 1;
  h.packs.resize(1);
  p.gpus.push_back(h);
  return p;
}

TEST(StartTally, CountsPacksSharingAnAnchorAndNamesEmptyIterations) {
  StartTally t(policy_with_shared_anchor());
  EXPECT_EQ(t.expected(0), 4);
  EXPECT_EQ(t.expected(1), 1);
  EXPECT_EQ(t.expected(7), 0);
  t.record({0, 0, 0, 10});  // copy
  t.record({0, 1, 0, 20});  // the graph launch: packs 1 and 2
  t.record({0, 3, 0, 30});
  t.record({0, 3, 0, 31});  // the same pack again: counted once
  t.record({0, 1, 2, 50});  // iteration 1 saw nothing, iteration 2 only the graph
  t.record({0, 9, 2, 60});  // unknown pack: ignored
  t.record({5, 0, 0, 60});  // unknown section: ignored
  EXPECT_EQ(t.seen(0), (std::vector<std::int64_t>{4, 0, 2}));
  EXPECT_EQ(seen_summary(t.seen(0), t.expected(0)), "4/4 in iteration 0, 0/4 in iteration 1, 2/4 in iteration 2");
  EXPECT_NE(seen_warning(0, t.seen(0)).find("no pack start was seen in 1 of 3 iterations (1)"), std::string::npos) << seen_warning(0, t.seen(0));
  EXPECT_TRUE(t.seen(1).empty());
  EXPECT_EQ(seen_summary(t.seen(1), t.expected(1)), "none seen of 1 per iteration");
  EXPECT_NE(seen_warning(1, t.seen(1)).find("no pack start was seen in any iteration"), std::string::npos) << seen_warning(1, t.seen(1));
}

TEST(StartTally, EveryIterationSeenNeedsNoWarning) {
  StartTally t(policy_with_shared_anchor());
  for (std::int64_t it = 0; it < 3; ++it) {
    for (std::int32_t pack : {0, 2, 3}) t.record({0, pack, it, 0});  // pack 2 covers pack 1
  }
  EXPECT_EQ(seen_summary(t.seen(0), t.expected(0)), "4/4 in iterations 0-2");
  EXPECT_EQ(seen_warning(0, t.seen(0)), "");
}

}  // namespace
}  // namespace emo::runtime
