// The stage-level view of a generated pipeline (support/stage_profile.h, issue 26 item 5): the
// Perseus stage profile derived from the simulated device, worked out by hand on a 2-stage x
// 2-micro-batch 1F1B job, and a stage-level plan mapped onto the job's graph.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/gpu_catalog.h"
#include "model/measurements.h"
#include "opt/pipeline.h"
#include "opt/solver.h"
#include "runtime/sim_backend.h"
#include "runtime/sim_run.h"
#include "support/pipeline_job.h"
#include "support/stage_profile.h"
#include "timing/analysis.h"
#include "trace/job.h"

namespace emo::testing {
namespace {

constexpr TimeNs kUs = 1'000, kMs = 1'000'000;

// 2 stages x 2 micro-batches, 1F1B; a pass is 1 layer of two kernels of equal weight: a GEMM
// (class compute: "gemm") and an elementwise kernel (class memory). Forward 10 ms on stage 0,
// stage 1 1.5x; backward 2x forward (the same kernels in reverse). Transfers 1 ms. No jitter.
trace::Trace hand_job() {
  JobSource src;
  src.layer = {{"ampere_sgemm_128x64_nn", 1.0}, {"vectorized_elementwise_kernel", 1.0}};
  src.host = HostTiming{.launch_ns = 10 * kUs, .gap_ns = 0, .event_call_ns = 10 * kUs, .sync_return_ns = 1 * kMs};
  src.gpu.name = "NVIDIA A100-SXM4-80GB";
  PipelineSpec spec;
  spec.stages = 2;
  spec.microbatches = 2;
  spec.layers = 1;
  spec.forward_ns = 10 * kMs;
  spec.stage_scale = {1.0, 1.5};
  spec.p2p_ns = 1 * kMs;
  const PipelineJob job(src, spec);
  std::vector<trace::Trace> ranks;
  for (int r = 0; r < job.ranks(); ++r) ranks.push_back(job.rank_trace(r));
  return trace::link_job(std::move(ranks));
}

runtime::SimDevice class_device() {
  runtime::SimDeviceOptions o;
  o.per_op_variation = false;  // β and power level of each kernel = its class's (model/ground_truth.cpp)
  o.noise = false;
  return runtime::SimDevice(model::GpuCatalog::builtin().at("A100-SXM4-80GB"), o);
}

TEST(StageProfile, TwoStagesTwoMicrobatchesByHand) {
  const trace::Trace job = hand_job();
  const PipelinePasses passes = find_passes(job, 2, 2);
  ASSERT_EQ(passes.rows.size(), 2u);
  for (const auto& stage : passes.rows) {
    ASSERT_EQ(stage.size(), 4u);  // F0 F1 B0 B1 / F0 B0 F1 B1
    for (const auto& pass : stage) EXPECT_EQ(pass.size(), 2u);
  }
  const std::vector<StageProfileRow> rows = stage_profile(job, passes, class_device(), {1410, 1005});
  // The simulated device (runtime/sim_device.h), x = f / 1410, per kernel of traced time t_ref:
  //   t = t_ref (1 − β + β x^−p)^(1/p),  P = max(60 W, level · 400 W · π(x)),
  //   π(x) = s + (1 − s) g(x) / g(1),  g(x) = x (1 + k max(0, x − x_knee))²,
  // compute: β 0.36, p 16, s 0.1059, knee 0.76, k 0.75, level 0.5381 (P(1) = 215.24 W);
  // memory:  β 0.0175, p 16, s 0.0927, knee 0.87, k 0.20, level 0.5739 (P(1) = 229.56 W).
  // At 1410 MHz (x = 1): stage 0 forward = 5 ms of each: 10 ms, 0.005 (215.24 + 229.56) = 2.224 J.
  // At 1005 MHz (x = 0.712766, below both knees, g = x):
  //   compute τ = (0.64 + 0.36 x^−16)^(1/16) = 1.316847, π = 0.1059 + 0.8941 x / 1.3924 = 0.563587,
  //           P = 0.5381 · 400 · π = 121.3066 W;
  //   memory  τ = (0.9825 + 0.0175 x^−16)^(1/16) = 1.104794, π = 0.0927 + 0.9073 x / 1.052676 = 0.707032,
  //           P = 0.5739 · 400 · π = 162.3063 W;
  //   stage 0 forward: t = 5 ms (1.316847 + 1.104794) = 12.108202 ms,
  //                    E = 5 ms (1.316847 · 121.3066 + 1.104794 · 162.3063) = 1.695285 J.
  // Backward = 2x, stage 1 = 1.5x: times and energies scale alike (the kernels are the same).
  struct Want {
    int stage;
    opt::PassKind kind;
    double clock, time_s, energy_j;
  };
  const opt::PassKind F = opt::PassKind::kForward, B = opt::PassKind::kBackward;
  const std::vector<Want> want = {
      {0, F, 1410, 0.010, 2.224},          {0, F, 1005, 0.012108202, 1.6952855},
      {0, B, 1410, 0.020, 4.448},          {0, B, 1005, 0.024216404, 3.3905709},
      {1, F, 1410, 0.015, 3.336},          {1, F, 1005, 0.018162303, 2.5429282},
      {1, B, 1410, 0.030, 6.672},          {1, B, 1005, 0.036324606, 5.0858564}};
  ASSERT_EQ(rows.size(), want.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rows[i].stage, want[i].stage);
    EXPECT_EQ(rows[i].kind, want[i].kind);
    EXPECT_EQ(rows[i].clock_mhz, want[i].clock);
    EXPECT_NEAR(rows[i].time_s, want[i].time_s, 2e-9);
    EXPECT_NEAR(rows[i].energy_j, want[i].energy_j, 1e-6);
  }
  const std::string csv = stage_profile_csv(rows);
  EXPECT_EQ(csv.substr(0, 65), "stage,instruction,frequency,time,energy\n0,forward,1410,0.01,2.224") << csv;

  // Read back as `emo pipeline` reads it: the 1F1B DAG at the max clock takes, by hand,
  // stage 0 F0 [0, 10] F1 [10, 20]; stage 1 F0 [10, 25] B0 [25, 55] F1 [55, 70] B1 [70, 100];
  // stage 0 B0 [55, 75] B1 [100, 120]: 120 ms (transfers are not in the stage-level model).
  const auto path = std::filesystem::temp_directory_path() / "emo_stage_profile_test.csv";
  std::ofstream(path) << csv;
  const model::MeasurementSet m = model::load_measurements(path.string());
  std::filesystem::remove(path);
  const opt::PipelineProblem pp = opt::build_pipeline(m, {2, 2, 60.0});
  EXPECT_NEAR(opt::evaluate(pp.problem, opt::max_clock_assignment(pp.problem)).makespan_s, 0.120, 1e-9);
}

TEST(StageProfile, APlanSetsItsPassesAndTheTransfersWhileItsClockHolds) {
  const trace::Trace job = hand_job();
  const PipelinePasses passes = find_passes(job, 2, 2);
  const timing::Analysis an = timing::analyze(job, graph::Window{}, {});
  const graph::DepGraph& g = an.graph;
  PassPlan plan;
  for (int s = 0; s < 2; ++s) {
    for (const char* kind : {"forward", "backward"}) {
      for (int mb = 0; mb < 2; ++mb) {
        plan.pass_names.push_back(fmt::format("stage {} {} mb {}", s, kind, mb));
        plan.clock_mhz.push_back(s == 1 && std::string(kind) == "backward" && mb == 0 ? 1005 : 1410);
      }
    }
  }
  const std::vector<double> clock = plan_node_clocks(job, passes, g.op, g.gpu, plan);
  // Stage 1 runs F0 B0 F1 B1: B0's kernels at 1005 MHz, and every other GPU op of stage 1 that
  // starts from B0's start up to F1's first kernel (F1's receive, B0's send) too; all else 1410.
  const TimeNs b0 = job.ops.start_ns[passes.rows[1][1].front()], f1 = job.ops.start_ns[passes.rows[1][2].front()];
  const std::int32_t dev1 = job.meta.job.ranks[0].rank == 1 ? 0 : 1;
  int slow = 0, slow_other = 0;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    const std::uint32_t r = g.op[n];
    if (!g.gpu[n]) {
      EXPECT_EQ(clock[n], 0.0);
      continue;
    }
    const bool in_b0 = job.ops.device[r] == dev1 && job.ops.start_ns[r] >= b0 && job.ops.start_ns[r] < f1;
    EXPECT_EQ(clock[n], in_b0 ? 1005.0 : 1410.0) << job.strings.view(job.ops.name[r]) << " at " << job.ops.start_ns[r];
    slow += in_b0;
    slow_other += in_b0 && !job.is_collective(r);
  }
  EXPECT_EQ(slow_other, 2);  // B0's two kernels
  EXPECT_EQ(slow, 4);        // and B0's send to stage 0, F1's receive from it

  // The same plan as `emo run` issues it (20 ms switch latency). Run with ideal switching (no
  // noise), stage 1's passes start where the job recorded them until B0, which is slower:
  //   stage 0 F0 [0.01, 10.01] ms, its send; stage 1's receive ends at 10.01 + 1 = 11.01,
  //   F0 [11.01, 26.01] (2 × 7.5 ms), B0 from 26.01 for 15 ms × (1.104794 + 1.316847) = 36.3246 ms
  //   (the 1005 MHz ratios above) to 62.3346; F1's receive then starts, its data sent long before
  //   (stage 0's F1 ended at 20.01), and runs at B0's clock (still in effect): its 1 ms transfer,
  //   class communication (β 0.1, p 1: τ = 0.9 + 0.1 / x = 1.040299), takes 1.0403 ms: F1
  //   starts at 63.3749 ms.
  // Switches: down to 1005 a quarter latency (5 ms) before B0: 21.01 ms; up to 1410 a latency
  // before F1: 43.3749 ms; the iteration starts at the last pass's clock, 1410; stage 0 none.
  runtime::SimRunOptions quiet;
  quiet.noise = false;
  const runtime::SimDevice dev = class_device();
  const runtime::SimRunResult ideal = runtime::run_on_sim(job, g, dev, clock, {}, quiet);
  std::map<std::int32_t, double> initial;
  const auto requests = runtime::switch_requests(plan_pass_policy(job, passes, g, ideal, plan), 20 * kMs, initial);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].device, dev1);
  EXPECT_EQ(requests[0].clock_mhz, 1005.0);
  EXPECT_NEAR(static_cast<double>(requests[0].request_ns), 21.01 * kMs, 1 * kUs);
  EXPECT_EQ(requests[1].device, dev1);
  EXPECT_EQ(requests[1].clock_mhz, 1410.0);
  EXPECT_NEAR(static_cast<double>(requests[1].request_ns), 43.3749 * kMs, 1 * kUs);
  EXPECT_EQ(initial, (std::map<std::int32_t, double>{{0, 1410.0}, {1, 1410.0}}));

  plan.clock_mhz.pop_back();
  plan.pass_names.pop_back();
  EXPECT_THROW(plan_node_clocks(job, passes, g.op, g.gpu, plan), std::invalid_argument);
}

TEST(StageProfile, AJobThatIsNotOneRankPerStageIsRefused) {
  const trace::Trace job = hand_job();
  EXPECT_THROW(find_passes(job, 3, 2), InputError);  // 2 ranks for 3 stages
  EXPECT_THROW(find_passes(job, 2, 3), InputError);  // 8 kernels per rank are not 6 passes
}

}  // namespace
}  // namespace emo::testing
