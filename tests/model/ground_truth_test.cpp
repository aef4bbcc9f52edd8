#include "model/ground_truth.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/op_class.h"
#include "test_data.h"
#include "core/error.h"

namespace emo::model {
namespace {

TEST(OpClass, ClassifiesByKindAndName) {
  using trace::OpKind;
  EXPECT_EQ(classify_op(OpKind::kKernel, "ampere_sgemm_128x64_nn"), OpClass::kCompute);
  EXPECT_EQ(classify_op(OpKind::kKernel, "sm80_xmma_fprop_implicit_gemm_f16f16"), OpClass::kCompute);
  EXPECT_EQ(classify_op(OpKind::kKernel, "void flash_fwd_kernel<Flash_fwd_kernel_traits>"), OpClass::kCompute);
  EXPECT_EQ(classify_op(OpKind::kKernel, "void cudnn::winograd::generateWinogradTilesKernel"), OpClass::kCompute);
  EXPECT_EQ(classify_op(OpKind::kKernel, "ncclKernel_AllReduce_RING_LL_Sum_float"), OpClass::kCommunication);
  EXPECT_EQ(classify_op(OpKind::kKernel, "ncclDevKernel_SendRecv"), OpClass::kCommunication);
  EXPECT_EQ(classify_op(OpKind::kKernel, "void at::native::vectorized_elementwise_kernel<4, add>"),
            OpClass::kMemory);
  EXPECT_EQ(classify_op(OpKind::kKernel, "void at::native::reduce_kernel<512, 1>"), OpClass::kMemory);
  EXPECT_EQ(classify_op(OpKind::kKernel, "Memcpy-like softmax_warp_forward"), OpClass::kMemory);
  EXPECT_EQ(classify_op(OpKind::kMemcpy, "Memcpy HtoD (Pageable -> Device)"), OpClass::kMemory);
  EXPECT_EQ(classify_op(OpKind::kMemset, "Memset (Device)"), OpClass::kMemory);
  EXPECT_EQ(classify_op(OpKind::kKernel, "triton_poi_fused_0"), OpClass::kMixed);
  EXPECT_EQ(classify_op(OpKind::kKernel, "GEMM_REDUCE"), OpClass::kCompute);  // compute before memory
  EXPECT_EQ(classify_op(OpKind::kRuntime, "cudaLaunchKernel"), OpClass::kMixed);
  EXPECT_EQ(op_class_name(OpClass::kCommunication), "communication");
}

TEST(ClassCurve, TimeAndPowerRatiosAreOneAtMaxClockAndMonotone) {
  for (int i = 0; i < kOpClassCount; ++i) {
    const ClassCurve& c = builtin_ground_truth().curves[i];
    EXPECT_NEAR(c.time_ratio(1.0), 1.0, 1e-12);
    EXPECT_NEAR(c.power_ratio(1.0), 1.0, 1e-12);
    double prev_t = INFINITY, prev_p = 0;
    for (double x = 0.1; x <= 1.0001; x += 0.01) {
      EXPECT_LE(c.time_ratio(x), prev_t + 1e-12) << i << " " << x;
      EXPECT_GE(c.power_ratio(x), prev_p - 1e-12) << i << " " << x;
      prev_t = c.time_ratio(x), prev_p = c.power_ratio(x);
    }
  }
}

TEST(ClassCurve, SumFormIsDesignFormula) {
  ClassCurve c;
  c.beta = 0.6, c.p = 1;
  // t(f)/t(f_max) = (1 - β) + β / x: docs/design.md §4's t_mem + t_comp·f_ref/f with β = t_comp / total.
  EXPECT_NEAR(c.time_ratio(0.5), 0.4 + 0.6 * 2, 1e-12);
}

TEST(Calibration, RecoversKnownCurveFromSyntheticSweeps) {
  ClassCurve truth;
  truth.beta = 0.7, truth.p = 4, truth.s = 0.25, truth.x_knee = 0.6, truth.k = 1.5;
  std::vector<CalibrationOp> ops;
  for (int op = 0; op < 3; ++op) {
    CalibrationOp c;
    c.cls = OpClass::kCompute;
    c.max_clock_mhz = 1400;
    c.power_limit_w = 400;
    const double t1 = 0.01 * (op + 1), p1 = 200 + 20 * op;
    for (double f = 700; f <= 1400; f += 50) {
      const double x = f / 1400;
      const double t = t1 * truth.time_ratio(x), p = p1 * truth.power_ratio(x);
      c.sweep.points.push_back({f, t, p * t});
    }
    ops.push_back(c);
  }
  const ClassCurve got = calibrate_class(ops);
  EXPECT_DOUBLE_EQ(got.p, 4);
  EXPECT_NEAR(got.beta, 0.7, 0.0025);
  EXPECT_NEAR(got.x_knee, 0.6, 0.01);
  EXPECT_NEAR(got.k, 1.5, 0.05);
  EXPECT_NEAR(got.s, 0.25, 0.01);
  EXPECT_LT(got.time_rms, 1e-3);
  EXPECT_LT(got.power_rms, 1e-3);
  EXPECT_NEAR(got.power_level, 0.55, 1e-12);  // (200 + 220 + 240) / 3 / 400
  EXPECT_EQ(got.ops, 3u);
  EXPECT_EQ(got.points, 3u * 15u);
}

TEST(Calibration, NoPointsThrows) {
  EXPECT_THROW(calibrate_class({}), std::invalid_argument);
}

// The values compiled into EMO are what calibration on the measured files returns.
TEST(GroundTruth, BuiltinMatchesCalibrationOnMeasuredFiles) {
  EMO_REQUIRE_DATA(dvfs, "dvfs/v100-dvfs-real.csv");
  const GroundTruth gt = calibrate_ground_truth(::emo::testing::data_dir().string());
  const GroundTruth& b = builtin_ground_truth();
  for (int i = 0; i < kOpClassCount; ++i) {
    SCOPED_TRACE(op_class_name(static_cast<OpClass>(i)));
    const ClassCurve &g = gt.curves[i], &c = b.curves[i];
    EXPECT_NEAR(g.beta, c.beta, 1e-4);
    EXPECT_DOUBLE_EQ(g.p, c.p);
    EXPECT_NEAR(g.beta_sd, c.beta_sd, 1e-4);
    EXPECT_NEAR(g.s, c.s, 1e-4);
    EXPECT_NEAR(g.x_knee, c.x_knee, 1e-9);
    EXPECT_NEAR(g.k, c.k, 1e-9);
    EXPECT_NEAR(g.power_level, c.power_level, 1e-4);
    EXPECT_NEAR(g.power_level_sd, c.power_level_sd, 1e-4);
    EXPECT_EQ(g.ops, c.ops);
    EXPECT_EQ(g.points, c.points);
  }
  EXPECT_NEAR(gt.noise.time_sd, b.noise.time_sd, 1e-4);
  EXPECT_NEAR(gt.noise.energy_sd, b.noise.energy_sd, 1e-4);
  // Class evidence: compute-bound work scales with the clock more than memory-bound work.
  EXPECT_GT(gt.curve(OpClass::kCompute).time_ratio(0.6), gt.curve(OpClass::kMemory).time_ratio(0.6));
  // The calibrated curves fit their own points: time within 8 %, power within 6 % rms.
  for (OpClass c : {OpClass::kCompute, OpClass::kMemory, OpClass::kMixed}) {
    EXPECT_LT(gt.curve(c).time_rms, 0.08);
    EXPECT_LT(gt.curve(c).power_rms, 0.06);
  }
}

TEST(GroundTruth, CalibrationOnMissingDirectoryIsInputError) {
  EXPECT_THROW(calibrate_ground_truth("/nonexistent/emo-data"), InputError);
}

}  // namespace
}  // namespace emo::model
