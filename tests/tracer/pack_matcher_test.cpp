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

// ---- issue 32: copies, memsets and CUDA graphs -------------------------------------------------

TEST(WatchKindOfApi, FollowsAsyncCopiesMemsetsLaunchesAndGraphLaunches) {
  // By the families docs/runtime.md lists; versions and per-thread suffixes as CUPTI names them.
  for (const char* api : {"cudaLaunchKernel", "cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000",
                          "cudaLaunchKernelExC_v11060", "cuLaunchKernel", "cuLaunchKernelEx_ptsz"}) {
    EXPECT_EQ(watch_kind_of_api(api), WatchKind::kKernel) << api;
  }
  for (const char* api : {"cudaMemcpyAsync", "cudaMemcpyAsync_v3020", "cudaMemcpy2DAsync_ptsz_v7000",
                          "cudaMemcpyPeerAsync_v4000", "cuMemcpyHtoDAsync_v2", "cuMemcpyAsync_ptsz"}) {
    EXPECT_EQ(watch_kind_of_api(api), WatchKind::kCopy) << api;
  }
  for (const char* api : {"cudaMemsetAsync", "cudaMemset3DAsync_v3020", "cuMemsetD8Async", "cuMemsetD2D32Async_ptsz"}) {
    EXPECT_EQ(watch_kind_of_api(api), WatchKind::kMemset) << api;
  }
  for (const char* api : {"cudaGraphLaunch", "cudaGraphLaunch_v10000", "cudaGraphLaunch_ptsz_v10000", "cuGraphLaunch"}) {
    EXPECT_EQ(watch_kind_of_api(api), WatchKind::kGraph) << api;
  }
  // Synchronous copies and memsets, other calls, HIP: not followed.
  for (const char* api : {"cudaMemcpy", "cudaMemcpy_v3020", "cuMemcpyHtoD_v2", "cudaMemset", "cudaMemPrefetchAsync",
                          "cudaEventRecord", "cudaLaunchCooperativeKernel", "hipMemcpyAsync", "hipLaunchKernel",
                          "cudaGraphInstantiate", "INVALID", ""}) {
    EXPECT_FALSE(watch_kind_of_api(api)) << api;
  }
}

/// An iteration that starts with a host-to-device copy, then a memset, kernels and a graph:
/// pack 0 at the first copy, pack 1 at the second memset, pack 2 inside launch 1 of graph A
/// (3 kernels, one named "a1"), pack 3 inside the same launch (shares its anchor).
WatchList copies_and_graphs() {
  WatchList w;
  w.entries.push_back({0, 0, 7, 0, "Memcpy HtoD (Pageable -> Device)", WatchKind::kCopy});
  w.entries.push_back({0, 1, 7, 1, "Memset (Device)", WatchKind::kMemset});
  w.entries.push_back({0, 2, 7, 1, "a1", WatchKind::kGraph, 3, 1});
  w.entries.push_back({0, 3, 7, 1, "a1", WatchKind::kGraph, 3, 2});
  return w;
}

const GraphShape kGraphA{3, {"a0", "a1", "a2"}};
const GraphShape kGraphB{3, {"b0", "b1", "b2"}};  // same kernel count, other kernels

TEST(WatchListText, CopyMemsetAndGraphLinesRoundTrip) {
  const WatchList w = copies_and_graphs();
  const std::string text = to_text(w);
  EXPECT_NE(text.find("copy 0 0 7 0 Memcpy HtoD (Pageable -> Device)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memset 0 1 7 1 Memset (Device)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("graph 0 2 7 1 3 1 a1\n"), std::string::npos) << text;
  const auto back = parse_watch_list(text);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->entries.size(), 4u);
  EXPECT_EQ(back->entries[0].kind, WatchKind::kCopy);
  EXPECT_EQ(back->entries[1].kind, WatchKind::kMemset);
  EXPECT_EQ(back->entries[2].kind, WatchKind::kGraph);
  EXPECT_EQ(back->entries[2].graph_kernels, 3);
  EXPECT_EQ(back->entries[3].graph_index, 2);
  EXPECT_EQ(back->entries[3].name, "a1");
  EXPECT_FALSE(parse_watch_list("emo.watch/1\ngraph 0 2 7 1 3 a1\n"));  // INDEX missing: "a1" is not a number
}

TEST(PackMatcher, CopiesAndMemsetsCountByCallWhateverTheirName) {
  PackMatcher m(copies_and_graphs());
  const auto c = m.on_call(WatchKind::kCopy, 0, 7);  // copy 0: pack 0
  ASSERT_TRUE(c);
  EXPECT_EQ(c->pack, 0);
  EXPECT_FALSE(m.on_call(WatchKind::kCopy, 0, 7));     // copy 1
  EXPECT_FALSE(m.on_call(WatchKind::kMemset, 0, 13));  // memset 0, on another stream
  EXPECT_FALSE(m.on_launch(0, 7, "Memset (Device)"));  // a kernel of that name is not a memset
  EXPECT_FALSE(m.on_call(WatchKind::kMemset, 1, 7));   // memset 0 of another device
  const auto s = m.on_call(WatchKind::kMemset, 0, 7);  // memset 1 of device 0: pack 1
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pack, 1);
  EXPECT_FALSE(m.on_call(WatchKind::kGraph, 0, 7));    // not a call kind
}

TEST(PackMatcher, GraphReplayedAnchorsItsPacksAtTheRightLaunch) {
  PackMatcher m(copies_and_graphs());
  ASSERT_TRUE(m.on_call(WatchKind::kCopy, 0, 7));
  m.on_call(WatchKind::kMemset, 0, 7);
  ASSERT_TRUE(m.on_call(WatchKind::kMemset, 0, 7));
  EXPECT_FALSE(m.on_graph_launch(0, 7, kGraphA));  // launch 0 of A
  EXPECT_FALSE(m.on_graph_launch(0, 7, kGraphB));  // another graph between: does not count for A
  const auto g = m.on_graph_launch(0, 7, kGraphA); // launch 1 of A: packs 2 and 3, the lowest reported
  ASSERT_TRUE(g);
  EXPECT_EQ(g->pack, 2);
  EXPECT_EQ(g->iteration, 0);
  EXPECT_FALSE(m.on_graph_launch(0, 7, kGraphA));  // launch 2
  // Every pack matched (3 through the shared anchor): the next first copy starts iteration 1.
  const auto next = m.on_call(WatchKind::kCopy, 0, 7);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->iteration, 1);
}

TEST(PackMatcher, GraphIdentityNeedsKernelCountAndName) {
  WatchList w;
  w.entries.push_back({0, 0, 7, 0, "a1", WatchKind::kGraph, 3, 0});
  PackMatcher m(w);
  EXPECT_FALSE(m.on_graph_launch(0, 7, GraphShape{4, {"a0", "a1", "a2", "a3"}}));  // a1, but 4 kernels
  EXPECT_FALSE(m.on_graph_launch(0, 7, GraphShape{}));                             // shape unknown
  const auto g = m.on_graph_launch(0, 7, kGraphA);  // the first launch of this identity
  ASSERT_TRUE(g);
  EXPECT_EQ(g->pack, 0);
}

TEST(PackMatcher, GraphOnAnotherStreamCountsButDoesNotMatch) {
  WatchList w;
  w.marker = "step*";
  w.entries.push_back({0, 0, 7, 0, "a1", WatchKind::kGraph, 3, 0});
  w.entries.push_back({0, 1, 9, 0, "b0", WatchKind::kGraph, 3, 0});  // graph B launched on stream 9
  PackMatcher m(w);
  ASSERT_TRUE(m.on_range("step1"));
  EXPECT_FALSE(m.on_graph_launch(0, 9, kGraphA));  // A's launch 0 is on stream 9, not 7: counted, no pack
  EXPECT_FALSE(m.on_graph_launch(0, 7, kGraphA));  // A's launch 1: the policy's is launch 0
  const auto b = m.on_graph_launch(0, 9, kGraphB);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->pack, 1);
  ASSERT_TRUE(m.on_range("step2"));  // counts restart
  const auto a = m.on_graph_launch(0, 7, kGraphA);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pack, 0);
  EXPECT_EQ(a->iteration, 1);
}

}  // namespace
}  // namespace emo::tracer
