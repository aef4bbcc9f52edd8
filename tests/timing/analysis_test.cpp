// `emo analyze` as a whole (timing/analysis.h): step windows (2021 `Operator` step markers too),
// the lead before the critical path named for what it is, shares over the path and over the
// makespan, "nothing to analyse", and the v100 step HTA was compared on.
#include "output/analysis_output.h"
#include "timing/analysis.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "graph/hand_trace.h"
#include "test_data.h"
#include "core/error.h"
#include "trace/load.h"

namespace emo::testing {
namespace {

using timing::BoundBy;

/// A step whose first kernel waits for the previous step's kernel:
///   [0,5)    cudaLaunchKernel corr 1 -> k0 on stream 7, [10, 110)     (before the step)
///   [20,200) the step marker (annotation, or a 2021 "Operator" event)
///   [30,35)  cudaLaunchKernel corr 2 -> k1 on stream 7, [110, 150)    (queued behind k0)
///   [40,151) cudaDeviceSynchronize corr 3 (context sync record), returns 1 ns after k1
/// Window [20, 200): k1's stream is busy with k0 until 110, so the path starts at k1 (pinned),
/// 90 ns after the window start: work from before the window, not idle. Makespan 151 - 20 = 131.
/// `operator_marker`: the step marker is a 2021 "Operator" event; `both`: recorded both ways.
trace::Trace busy_before_step(bool operator_marker, bool both = false) {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 5, 1);
  h.kernel("k0", 10, 100, 7, 1);
  if (operator_marker || both) {
    h.t.ops.push(OpKind::kFrameworkOp, 20, 180, h.t.strings.intern("ProfilerStep#1"), kNone, kNone,
                 kPid, 1, kNone, kNone);
  }
  if (!operator_marker || both) h.annotation("ProfilerStep#1", 20, 180);
  h.call("cudaLaunchKernel", 30, 5, 2);
  h.kernel("k1", 110, 40, 7, 2);
  h.call("cudaDeviceSynchronize", 40, 111, 3);
  h.sync(SyncKind::kContextSync, 40, 111, 3, 0);
  return h.finish();
}

TEST(Analysis, LeadBeforeTheStepIsBeforeWindowNotIdle) {
  const trace::Trace t = busy_before_step(false);
  const graph::Window w = timing::find_window(t, "", "ProfilerStep", 0);
  EXPECT_EQ(w.begin_ns, 20);
  EXPECT_EQ(w.end_ns, 200);
  const timing::Analysis a = timing::analyze(t, w, {});
  EXPECT_EQ(a.schedule.makespan_ns, 131);
  EXPECT_EQ(a.path.lead, BoundBy::kBeforeWindow);
  EXPECT_EQ(a.path.lead_ns, 90);
  EXPECT_EQ(a.path.length_ns, 41);  // k1 [110, 150) and the sync's return at 151
  const BoundBy& bb = a.path.bound_by;
  EXPECT_EQ(bb.ns[BoundBy::kBeforeWindow], 90);
  EXPECT_EQ(bb.ns[BoundBy::kIdle], 0);
  EXPECT_EQ(bb.ns[BoundBy::kGpuCompute], 40);
  EXPECT_EQ(bb.ns[BoundBy::kSyncWait], 1);
  // Over the makespan: 90/131 before the window; over the path (lead left out): 40/41 compute.
  EXPECT_NEAR(a.path.share_of_makespan(BoundBy::kBeforeWindow), 90.0 / 131.0, 1e-12);
  EXPECT_EQ(a.path.share_of_path(BoundBy::kBeforeWindow), 0.0);
  EXPECT_NEAR(a.path.share_of_path(BoundBy::kGpuCompute), 40.0 / 41.0, 1e-12);
  const std::string text = output::to_text(t, a);
  EXPECT_NE(text.find("bound by, share of the critical path: gpu_compute 97.6 %, sync_wait 2.4 %"),
            std::string::npos) << text;
  EXPECT_NE(text.find("bound by, share of the makespan:      gpu_compute 30.5 %, sync_wait 0.8 %, "
                      "before_window 68.7 %"), std::string::npos) << text;
  EXPECT_EQ(text.find("idle "), std::string::npos) << text;  // no "idle N %" share
  const nlohmann::json j = output::to_json(t, a);
  EXPECT_EQ(j["path_lead"]["category"], "before_window");
  EXPECT_EQ(j["path_lead"]["ns"], 90);
  EXPECT_NEAR(j["bound_by_critical_path"]["gpu_compute"].get<double>(), 40.0 / 41.0, 1e-12);
  EXPECT_EQ(j["bound_by"], j["bound_by_makespan"]);
}

TEST(Analysis, OperatorStepMarkersOf2021AreWindows) {
  const trace::Trace t = busy_before_step(true);
  const graph::Window by_annotation = timing::find_window(t, "", "ProfilerStep", 0);
  EXPECT_EQ(by_annotation.begin_ns, 20);
  EXPECT_EQ(by_annotation.end_ns, 200);
  const graph::Window by_name = timing::find_window(t, "ProfilerStep#1", "", 0);
  EXPECT_EQ(by_name.begin_ns, 20);
  const timing::Analysis a = timing::analyze(t, by_name, {});
  EXPECT_EQ(a.schedule.makespan_ns, 131);
  // A step recorded both as an annotation and as an operator counts once.
  const trace::Trace both = busy_before_step(true, true);
  EXPECT_EQ(timing::find_window(both, "", "ProfilerStep", 0).begin_ns, 20);
  EXPECT_THROW(timing::find_window(both, "", "ProfilerStep", 1), InputError);
  // Other framework ops are not window markers.
  HandTrace h;
  h.t.ops.push(OpKind::kFrameworkOp, 0, 10, h.t.strings.intern("aten::conv2d"), kNone, kNone, kPid,
               1, kNone, kNone);
  const trace::Trace u = h.finish();
  EXPECT_THROW(timing::find_window(u, "aten::conv2d", "", 0), InputError);
}

TEST(Analysis, NothingToAnalyseIsAnInputError) {
  HandTrace h;
  h.annotation("ProfilerStep#0", 0, 100);  // CPU-side marker only, no GPU op, no call
  const trace::Trace t = h.finish();
  try {
    (void)timing::analyze(t, graph::Window{}, {});
    FAIL() << "an analysis of nothing was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hand.json: nothing to analyse"), std::string::npos)
        << e.what();
  }
}

TEST(AnalysisRealData, V100StepOneLeadIsWorkBeforeTheWindow) {
  // hta_v100_ns_resolution, ProfilerStep instance 1 (the window compared with HTA): the GPU is
  // busy with the previous step's kernels for the first ~66 ms; that stretch is before_window,
  // and nothing in the output calls it idle beyond the path's own unexplained gaps.
  EMO_REQUIRE_DATA(path, "kineto/hta_v100_ns_resolution.json.gz");
  const trace::Trace t = trace::load_trace(path);
  const graph::Window w = timing::find_window(t, "", "ProfilerStep", 1);
  const timing::Analysis a = timing::analyze(t, w, {});
  EXPECT_EQ(a.path.lead, BoundBy::kBeforeWindow);
  EXPECT_GT(a.path.lead_ns, 60'000'000);
  EXPECT_LT(a.path.lead_ns, 70'000'000);
  EXPECT_LT(a.path.share_of_makespan(BoundBy::kIdle), 0.02);
  EXPECT_LT(a.path.share_of_path(BoundBy::kIdle), 0.02);
  EXPECT_GT(a.path.share_of_path(BoundBy::kGpuCompute), 0.9);
  EXPECT_EQ(a.path.skew_ns, 0);
  for (int c = 0; c < BoundBy::kCount; ++c) EXPECT_GE(a.path.bound_by.ns[c], 0) << BoundBy::name(c);
  const std::string text = output::to_text(t, a);
  EXPECT_NE(text.find("before_window — the GPU was still busy"), std::string::npos) << text;
}

TEST(AnalysisRealData, ResNet2021StepsAreWindows) {
  EMO_REQUIRE_DATA(path, "kineto/kineto_resnet50_2021.json.gz");
  const trace::Trace t = trace::load_trace(path);
  for (int k = 0; k < 6; ++k) {
    const graph::Window w = timing::find_window(t, "", "ProfilerStep", k);
    EXPECT_EQ(w.label, "ProfilerStep (instance " + std::to_string(k) + ")");
    EXPECT_LT(w.begin_ns, w.end_ns);
  }
  EXPECT_THROW(timing::find_window(t, "", "ProfilerStep", 6), InputError);  // 6 steps: #5..#10
  EXPECT_NO_THROW(timing::find_window(t, "ProfilerStep#7", "", 0));
}

}  // namespace
}  // namespace emo::testing
