// `emo analyze --durations-from` (timing/durations_from.h): one step's graph replayed with another
// step's measured durations, on a hand-built two-step trace whose answer is worked out by hand.
#include "timing/durations_from.h"

#include <gtest/gtest.h>

#include "graph/hand_trace.h"
#include "timing/analysis.h"
#include "core/error.h"

namespace emo::testing {
namespace {

/// Step 0 [0, 1000):  [10,20) launch corr 1 -> gemm on stream 7 [30, 130) (launch latency 20);
///                    [21,24) launch corr 5 -> extra on stream 8 [40, 50) (only in step 0);
///                    [25,131) cudaDeviceSynchronize corr 2 (returns 1 ns after gemm).
/// Step 1 [1000, 2000): [1010,1020) launch corr 3 -> gemm [1040, 1240) (200 ns, latency 30);
///                    [1025,1241) cudaDeviceSynchronize corr 4.
trace::Trace two_steps() {
  HandTrace h;
  h.annotation("ProfilerStep#0", 0, 1000);
  h.call("cudaLaunchKernel", 10, 10, 1);
  h.kernel("gemm", 30, 100, 7, 1);
  h.call("cudaLaunchKernel", 21, 3, 5);
  h.kernel("extra", 40, 10, 8, 5);
  h.call("cudaDeviceSynchronize", 25, 106, 2);
  h.sync(SyncKind::kContextSync, 25, 106, 2, 0);
  h.annotation("ProfilerStep#1", 1000, 1000);
  h.call("cudaLaunchKernel", 1010, 10, 3);
  h.kernel("gemm", 1040, 200, 7, 3);
  h.call("cudaDeviceSynchronize", 1025, 216, 4);
  h.sync(SyncKind::kContextSync, 1025, 216, 4, 0);
  return h.finish();
}

TEST(DurationsFrom, StepZeroGraphWithStepOneDurations) {
  const trace::Trace t = two_steps();
  const timing::Analysis a = timing::analyze(t, timing::find_window(t, "ProfilerStep#0", "", 0), {});
  EXPECT_EQ(a.schedule.makespan_ns, 131);
  const timing::DurationsFrom d =
      timing::durations_from(t, a.graph, t, timing::find_window(t, "ProfilerStep#1", "", 0));
  // Step 1 as recorded: 1241 - 1000.
  EXPECT_EQ(d.source_makespan_ns, 241);
  // Step 0's graph: the call pinned 10 ns into the window, step 0's launch latency (20), step
  // 1's gemm (200), the sync's return latency (1): 10 + 20 + 200 + 1.
  EXPECT_EQ(d.predicted_makespan_ns, 231);
  EXPECT_DOUBLE_EQ(d.error, 231.0 / 241.0 - 1.0);
  EXPECT_EQ(d.durations_only_makespan_ns, 231);  // the same starting state in both steps
  EXPECT_EQ(d.gpu_ops, 2u);
  EXPECT_EQ(d.gpu_matched, 1u);   // gemm; "extra" runs only in step 0
  EXPECT_EQ(d.calls, 3u);
  EXPECT_EQ(d.calls_matched, 2u); // the first launch and the sync
  EXPECT_EQ(d.source_gpu_ops, 1u);
  EXPECT_EQ(d.source_unmatched, 0u);
  ASSERT_EQ(d.unmatched.size(), 2u);
  EXPECT_NE(d.unmatched[0].find("cudaLaunchKernel"), std::string::npos) << d.unmatched[0];
  EXPECT_NE(d.unmatched[1].find("extra"), std::string::npos) << d.unmatched[1];
}

TEST(DurationsFrom, OwnDurationsReproduceTheWindow) {
  const trace::Trace t = two_steps();
  for (const char* step : {"ProfilerStep#0", "ProfilerStep#1"}) {
    const graph::Window w = timing::find_window(t, step, "", 0);
    const timing::Analysis a = timing::analyze(t, w, {});
    const timing::DurationsFrom d = timing::durations_from(t, a.graph, t, w);
    EXPECT_EQ(d.predicted_makespan_ns, a.schedule.makespan_ns) << step;
    EXPECT_EQ(d.error, 0.0) << step;
    EXPECT_TRUE(d.unmatched.empty()) << step;
  }
}

TEST(DurationsFrom, EmptySourceWindowIsAnInputError) {
  trace::Trace t = two_steps();
  const timing::Analysis a = timing::analyze(t, timing::find_window(t, "ProfilerStep#0", "", 0), {});
  graph::Window nothing;
  nothing.begin_ns = 5000;
  nothing.end_ns = 6000;
  nothing.label = "empty";
  EXPECT_THROW(timing::durations_from(t, a.graph, t, nothing), InputError);
}

}  // namespace
}  // namespace emo::testing
