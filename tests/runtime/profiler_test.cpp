#include "runtime/profiler.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "runtime/sim_device.h"

namespace emo::runtime {
namespace {

const model::GpuSpec& a100() { return model::GpuCatalog::builtin().at("A100-SXM4-80GB"); }

TEST(Profiler, ProfilingClocksSpreadOverTheUpperRange) {
  const auto& clocks = a100().sm_clocks_mhz;
  EXPECT_EQ(profiling_clocks(clocks, 3), (std::vector<double>{1410, 1065, 705}));
  EXPECT_EQ(profiling_clocks(clocks, 2), (std::vector<double>{1410, 705}));
  const auto five = profiling_clocks(clocks, 5);
  ASSERT_EQ(five.size(), 5u);
  EXPECT_DOUBLE_EQ(five.front(), 1410);
  EXPECT_NEAR(five.back(), 0.5 * 1410, 7.5);
  EXPECT_THROW(profiling_clocks(clocks, 1), std::invalid_argument);
  EXPECT_THROW(profiling_clocks({1410, 1395}, 3), std::invalid_argument);
}

TEST(Profiler, TrustedClocksStopBelowTheProfiledRange) {
  const auto trusted = trusted_clocks(a100().sm_clocks_mhz, {1410, 1065, 705});
  EXPECT_DOUBLE_EQ(trusted.front(), 1410);
  EXPECT_DOUBLE_EQ(trusted.back(), 705);  // no extrapolation below the lowest profiled clock
  EXPECT_EQ(trusted.size(), 48u);          // 705..1410 in 15 MHz steps
}

TEST(Profiler, FitsAPackFromThreeClocksAndPredictsTheRest) {
  SimDevice dev(a100(), {.seed = 4});
  Work w;
  w.label = "pack";
  for (int i = 0; i < 20; ++i) {
    w.ops.push_back({i % 2 ? "sm80_xmma_gemm_a" : "vectorized_elementwise_kernel", trace::OpKind::kKernel, 7,
                     i * 600'000, 500'000});
  }
  const auto clocks = profiling_clocks(dev.supported_sm_clocks_mhz(), 3);
  const ProfileResult r = profile_work(dev, w, clocks);
  EXPECT_TRUE(r.simulated);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_GT(r.runs, 3);
  EXPECT_GT(r.device_time_s, 3 * 50 * 0.020 * 0.9);  // ≥ 50 counter periods per clock
  for (double f : trusted_clocks(dev.supported_sm_clocks_mhz(), clocks)) {
    const TrueRun t = dev.true_run(w, f);
    EXPECT_NEAR(r.model.time_s(f) / (t.time_ns * 1e-9), 1.0, 0.02) << f;
    // Measured: time within 1.6 %, energy within 5.2 % over 705-1410 MHz (the fitted P_static + b·x^γ
    // against the ground truth's voltage-knee power; docs/simulated-device.md).
    EXPECT_NEAR(r.model.energy_j(f) / t.energy_j, 1.0, 0.06) << f;
  }
}

}  // namespace
}  // namespace emo::runtime
