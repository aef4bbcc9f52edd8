// The time-base checks (timing/time_base.h) on hand-built traces whose skew and offsets are
// chosen, and the analysis that shows them: shares never negative, warnings in the text.
#include "timing/time_base.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "graph/hand_trace.h"
#include "output/analysis_output.h"
#include "timing/analysis.h"

namespace emo::testing {
namespace {

using timing::BoundBy;

bool has_warning(const timing::Analysis& a, const std::string& part) {
  for (const std::string& w : a.time_base.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

/// A kernel that starts 10 ns before the call that launches it (the GPU clock runs behind):
///   [100,110) cudaLaunchKernel corr 1 -> k on stream 7, recorded [90, 140)
///   [120,141) cudaDeviceSynchronize corr 2, returns 1 ns after k ends (context sync record)
trace::Trace skewed() {
  HandTrace h;
  h.call("cudaLaunchKernel", 100, 10, 1);
  h.kernel("k", 90, 50, 7, 1);
  h.call("cudaDeviceSynchronize", 120, 21, 2);
  h.sync(SyncKind::kContextSync, 120, 21, 2, 0);
  return h.finish();
}

TEST(TimeBase, ClockSkewIsCountedWithItsLargestValue) {
  const trace::Trace t = skewed();
  const timing::Analysis a = timing::analyze(t, graph::Window{}, {});
  const timing::TimeBaseCheck& c = a.time_base;
  EXPECT_EQ(c.launches, 1);
  EXPECT_EQ(c.before_call_start, 1);
  EXPECT_EQ(c.max_before_call_start_ns, 10);  // call start 100 - kernel start 90
  EXPECT_EQ(c.before_call_end, 1);
  EXPECT_EQ(c.max_before_call_end_ns, 20);    // call end 110 - kernel start 90
  EXPECT_EQ(c.median_delay_ns, -10);
  EXPECT_FALSE(c.different_time_bases);
  EXPECT_TRUE(has_warning(a, "clock skew: 1 of 1 GPU ops")) << ::testing::PrintToString(c.warnings);
  EXPECT_NE(output::to_text(t, a).find("warning: clock skew"), std::string::npos);
}

TEST(TimeBase, SkewedLaunchNeverMakesANegativeShare) {
  // Path, back from the sync's end: host sync (1 ns return latency) <- k (50) <- launch edge with
  // lag -10 (k starts before its call) <- the call, pinned at 100, 10 ns after the window start
  // (90, k's recorded start): untraced CPU work. The -10 goes to skew_ns, not launch_overhead.
  const trace::Trace t = skewed();
  const timing::Analysis a = timing::analyze(t, graph::Window{}, {});
  EXPECT_EQ(a.schedule.makespan_ns, 51);
  EXPECT_EQ(a.path.skew_ns, 10);
  const BoundBy& bb = a.path.bound_by;
  EXPECT_EQ(bb.ns[BoundBy::kLaunchOverhead], 0);
  EXPECT_EQ(bb.ns[BoundBy::kGpuCompute], 50);
  EXPECT_EQ(bb.ns[BoundBy::kCpu], 10);
  EXPECT_EQ(a.path.lead, BoundBy::kCpu);
  EXPECT_EQ(a.path.lead_ns, 10);
  TimeNs total = 0;
  for (int c = 0; c < BoundBy::kCount; ++c) {
    EXPECT_GE(bb.ns[c], 0) << BoundBy::name(c);
    EXPECT_GE(a.path.share_of_makespan(c), 0.0) << BoundBy::name(c);
    EXPECT_GE(a.path.share_of_path(c), 0.0) << BoundBy::name(c);
    total += bb.ns[c];
  }
  EXPECT_EQ(total, a.schedule.makespan_ns + a.path.skew_ns);
  EXPECT_NEAR(a.path.share_of_makespan(BoundBy::kGpuCompute), 50.0 / 61.0, 1e-12);
  EXPECT_NEAR(a.path.share_of_path(BoundBy::kGpuCompute), 50.0 / 51.0, 1e-12);
  const nlohmann::json j = output::to_json(t, a);
  EXPECT_EQ(j["clock_skew_on_path_ns"], 10);
  for (const auto& [k, v] : j["bound_by"].items()) EXPECT_GE(v.get<double>(), 0.0) << k;
  EXPECT_NE(output::to_text(t, a).find("clock skew; that time is in no category"), std::string::npos);
}

TEST(TimeBase, GpuOpsDaysAfterTheirLaunchAreDifferentTimeBases) {
  // The GPU clock is 141 days ahead: each kernel starts 141 d + 5 ns after its call.
  constexpr TimeNs kOffset = TimeNs{141} * 86'400 * 1'000'000'000;
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 10, 1);
  h.kernel("k1", kOffset + 5, 100, 7, 1);
  h.call("cudaLaunchKernel", 20, 10, 2);
  h.kernel("k2", kOffset + 105, 100, 7, 2);
  const trace::Trace t = h.finish();
  const timing::Analysis a = timing::analyze(t, graph::Window{}, {});
  const timing::TimeBaseCheck& c = a.time_base;
  EXPECT_EQ(c.launches, 2);
  EXPECT_TRUE(c.different_time_bases);
  EXPECT_GE(c.median_delay_ns, kOffset);
  EXPECT_EQ(c.before_call_end, 0);
  EXPECT_TRUE(has_warning(a, "different time bases")) << ::testing::PrintToString(c.warnings);
  EXPECT_NE(output::to_text(t, a).find("warning: GPU and CPU timestamps are on different time bases"),
            std::string::npos);
  EXPECT_TRUE(output::to_json(t, a)["time_base"]["different_time_bases"].get<bool>());
}

TEST(TimeBase, OrdinaryLaunchesAndBlockingCopiesRaiseNothing) {
  // two_streams: launches 12 and 15 ns before their kernels; blocking_copy: the copy runs inside
  // its cudaMemcpy (a blocking call waiting for its op is not skew).
  for (const trace::Trace& t : {two_streams(), blocking_copy()}) {
    const timing::Analysis a = timing::analyze(t, graph::Window{}, {});
    EXPECT_EQ(a.time_base.before_call_end, 0);
    EXPECT_FALSE(a.time_base.different_time_bases);
    EXPECT_TRUE(a.time_base.warnings.empty()) << ::testing::PrintToString(a.time_base.warnings);
    EXPECT_EQ(a.path.skew_ns, 0);
  }
}

}  // namespace
}  // namespace emo::testing
