// Recognising pack starts from launches and NVTX ranges (what the tracer does in `emo run`).
#include "tracer/pack_matcher.h"

#include <gtest/gtest.h>

namespace emo::tracer {
namespace {

WatchList two_packs(std::string marker = "") {
  WatchList w;
  w.marker = std::move(marker);
  w.entries.push_back({0, 0, 7, 0, "embed"});
  w.entries.push_back({0, 1, 7, 1, "gemm"});  // the second gemm of the iteration
  return w;
}

TEST(GlobMatch, StarMatchesAnyRun) {
  EXPECT_TRUE(glob_match("ProfilerStep#*", "ProfilerStep#12"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_TRUE(glob_match("step", "step"));
  EXPECT_FALSE(glob_match("step", "steps"));
  EXPECT_FALSE(glob_match("ProfilerStep#*", "forward"));
  EXPECT_FALSE(glob_match("a*b", "acbx"));
}

TEST(PackMatcher, MatchesNameStreamAndOrdinalWithinAnIteration) {
  PackMatcher m(two_packs("ProfilerStep#*"));
  EXPECT_FALSE(m.on_launch(0, 7, "init"));   // set-up before the first marker
  EXPECT_TRUE(m.on_range("ProfilerStep#0"));
  const auto a = m.on_launch(0, 7, "embed");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pack, 0);
  EXPECT_EQ(a->iteration, 0);
  EXPECT_FALSE(m.on_launch(0, 7, "gemm"));     // ordinal 0, not 1
  EXPECT_FALSE(m.on_launch(0, 13, "gemm"));    // ordinal 1 but another stream
  EXPECT_FALSE(m.on_launch(1, 7, "gemm"));     // another device counts separately
  EXPECT_FALSE(m.on_range("forward"));
  EXPECT_TRUE(m.on_range("ProfilerStep#1"));
  EXPECT_EQ(m.iteration(), 1);
  EXPECT_TRUE(m.on_launch(0, 7, "embed"));
  EXPECT_FALSE(m.on_launch(0, 7, "gemm"));
  const auto b = m.on_launch(0, 7, "gemm");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->pack, 1);
  EXPECT_EQ(b->iteration, 1);
}

TEST(PackMatcher, PatternUntilTheFirstMarkerThenMarkers) {
  PackMatcher m(two_packs("ProfilerStep#*"));
  const auto a = m.on_launch(0, 7, "embed");  // no marker yet: the pattern counts
  ASSERT_TRUE(a);
  EXPECT_EQ(a->iteration, 0);
  EXPECT_TRUE(m.on_range("ProfilerStep#5"));  // from here on, markers: iteration 1
  const auto b = m.on_launch(0, 7, "embed");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->iteration, 1);
  EXPECT_FALSE(m.on_launch(0, 7, "embed"));  // ordinal 1: not a pack start, and no pattern reset
}

TEST(PackMatcher, WithoutMarkersARepeatingPatternStartsIterations) {
  PackMatcher m(two_packs());
  for (int it = 0; it < 3; ++it) {
    const auto a = m.on_launch(0, 7, "embed");
    ASSERT_TRUE(a) << it;
    EXPECT_EQ(a->iteration, it);
    EXPECT_FALSE(m.on_launch(0, 7, "gemm"));
    const auto b = m.on_launch(0, 7, "gemm");
    ASSERT_TRUE(b) << it;
    EXPECT_EQ(b->pack, 1);
    EXPECT_FALSE(m.on_launch(0, 7, "gemm"));  // a third gemm in the tail
  }
}

TEST(WatchListText, RejectsOtherText) {
  EXPECT_FALSE(parse_watch_list(""));
  EXPECT_FALSE(parse_watch_list("emo.watch/2\n"));
  EXPECT_FALSE(parse_watch_list("emo.watch/1\npack 0 x 7 0 k\n"));
  EXPECT_FALSE(parse_watch_list("emo.watch/1\nbogus\n"));
  const auto w = parse_watch_list("emo.watch/1\nmarker \npack 0 2 7 3 k(int)\n");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->marker, "");
  ASSERT_EQ(w->entries.size(), 1u);
  EXPECT_EQ(w->entries[0].name, "k(int)");
  EXPECT_EQ(w->entries[0].ordinal, 3);
}

}  // namespace
}  // namespace emo::tracer
