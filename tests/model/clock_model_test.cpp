#include "model/clock_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <stdexcept>

#include "test_data.h"

namespace emo::model {
namespace {

std::vector<ClockPoint> synthetic(const std::vector<double>& clocks, double t_mem, double t_comp,
                                  double f_ref, double p_static, double b, double gamma) {
  std::vector<ClockPoint> pts;
  for (double f : clocks) {
    const double t = t_mem + t_comp * f_ref / f;
    const double p = p_static + b * std::pow(f / f_ref, gamma);
    pts.push_back({f, t, p * t});
  }
  return pts;
}

TEST(ClockModel, RecoversSyntheticModelExactly) {
  const auto pts = synthetic({1410, 1200, 990, 855}, 0.010, 0.020, 1410, 60.0, 240.0, 4.0);
  const auto m = fit_clock_model(pts);
  EXPECT_EQ(m.kind(), ClockModel::Kind::kParametric);
  EXPECT_NEAR(m.time_model().t_mem_s, 0.010, 1e-12);
  EXPECT_NEAR(m.time_model().t_comp_s, 0.020, 1e-12);
  EXPECT_NEAR(m.time_model().beta(), 2.0 / 3.0, 1e-9);
  EXPECT_NEAR(m.power_model().p_static_w, 60.0, 1e-8);
  EXPECT_NEAR(m.power_model().b_w, 240.0, 1e-8);
  EXPECT_DOUBLE_EQ(m.power_model().gamma, 4.0);
  EXPECT_LT(m.residuals().time_max, 1e-12);
  EXPECT_LT(m.residuals().energy_max, 1e-10);
  for (double f : {300.0, 700.0, 1100.0, 1980.0}) {  // unmeasured clocks
    const auto truth = synthetic({f}, 0.010, 0.020, 1410, 60.0, 240.0, 4.0)[0];
    EXPECT_NEAR(m.time_s(f) / truth.time_s, 1.0, 1e-10) << f;
    EXPECT_NEAR(m.energy_j(f) / truth.energy_j, 1.0, 1e-9) << f;
  }
}

TEST(ClockModel, TwoClocksFallBackToCubicPower) {
  const auto pts = synthetic({1410, 990}, 0.0, 0.05, 1410, 80.0, 200.0, 3.0);
  const auto m = fit_clock_model(pts);
  EXPECT_DOUBLE_EQ(m.power_model().gamma, 3.0);
  EXPECT_NEAR(m.power_model().p_static_w, 80.0, 1e-8);
  EXPECT_NEAR(m.time_model().t_comp_s, 0.05, 1e-12);
  EXPECT_NEAR(m.time_model().t_mem_s, 0.0, 1e-12);
  EXPECT_LT(m.residuals().time_max, 1e-12);
}

TEST(ClockModel, ConstraintsHoldOnUnphysicalData) {
  // Time rising with clock and power falling: the constrained fit is flat, never inverted.
  std::vector<ClockPoint> pts{{1000, 1.0, 200.0}, {1400, 1.2, 150.0}};
  const auto m = fit_clock_model(pts);
  EXPECT_GE(m.time_model().t_mem_s, 0);
  EXPECT_GE(m.time_model().t_comp_s, 0);
  EXPECT_GE(m.power_model().b_w, 0);
  EXPECT_GE(m.time_s(1000), m.time_s(1400));
  EXPECT_LE(m.power_w(1000), m.power_w(1400));
  EXPECT_GT(m.residuals().time_max, 0.05);  // residuals are reported
}

TEST(ClockModel, TableFallbackWithManyNoisyPointsIsMonotone) {
  std::vector<ClockPoint> pts;
  for (int i = 0; i < 12; ++i) {
    const double f = 600 + 75 * i;
    const double wiggle = (i % 3 == 1) ? 0.08 : 0.0;
    const double t = 1.0 + 500.0 / f + wiggle;            // non-monotone in places
    const double p = 50 + 0.1 * f - (i % 4 == 2 ? 12 : 0);  // non-monotone in places
    pts.push_back({f, t, p * t});
  }
  const auto m = fit_clock_model(pts);
  ASSERT_EQ(m.kind(), ClockModel::Kind::kTable);
  double prev_t = INFINITY, prev_p = -INFINITY;
  for (double f = 600; f <= 1425; f += 5) {
    EXPECT_LE(m.time_s(f), prev_t + 1e-12) << f;
    EXPECT_GE(m.power_w(f), prev_p - 1e-12) << f;
    prev_t = m.time_s(f);
    prev_p = m.power_w(f);
  }
  EXPECT_NEAR(m.time_s(600), pts[0].time_s, 1e-12);  // interpolates measured points where monotone
}

/// A pipeline pack's profile (issue 26, docs/models.md): measured densely near the max clock where
/// the plans went, then at the profiling clocks 1065 and 705 MHz. Its time is a roofline op of the
/// simulated device's compute class (p = 16; β = 0.36 ± 0.27: model/ground_truth.cpp) at β = 0.1,
/// 0.36 and 0.62, plus clock-independent time (a wait), which neither parametric form fits within
/// 0.5 %, so the table is used. Between 1320
/// and 1065 MHz the curve bends at its knee: the chord between the two measured times overstates
/// the time there; the table follows the parametric curve instead. Expected values: the truth itself.
TEST(ClockModel, TableFollowsTheCurveAcrossAGapInsteadOfItsChord) {
  auto op = [](double f, double beta) { return std::pow(1 - beta + beta * std::pow(f / 1410, -16), 1.0 / 16); };
  auto truth_t = [&](double f) { return op(f, 0.1) + op(f, 0.36) + op(f, 0.62) + 0.4; };
  auto truth_p = [](double f) { return 60 + 240 * std::pow(f / 1410, 3); };
  std::vector<ClockPoint> pts;
  for (double f : {705, 1065, 1320, 1350, 1365, 1380, 1395, 1410}) pts.push_back({f, truth_t(f), truth_p(f) * truth_t(f)});
  const auto m = fit_clock_model(pts);
  ASSERT_EQ(m.kind(), ClockModel::Kind::kTable) << m.parametric_residuals().time_max;
  for (const auto& pt : pts) EXPECT_NEAR(m.time_s(pt.clock_mhz), pt.time_s, 1e-12) << pt.clock_mhz;
  for (double f : {1290.0, 1245.0, 1185.0, 1125.0}) {
    const double chord = truth_t(1320) + (truth_t(1065) - truth_t(1320)) * (1320 - f) / (1320 - 1065);
    const double slowdown = truth_t(f) - truth_t(1410);
    EXPECT_GT(chord - truth_t(f), 0.08 * slowdown) << f;  // the chord's error (9–25 %), by hand: the premise
    EXPECT_LT(std::abs(m.time_s(f) - truth_t(f)), 0.02 * slowdown) << f << ": " << m.time_s(f) << " vs " << truth_t(f);
  }
  double prev = INFINITY;
  for (double f = 705; f <= 1410; f += 15) {
    EXPECT_LE(m.time_s(f), prev + 1e-15) << f;
    prev = m.time_s(f);
  }
}

TEST(InterpolateAlong, FollowsTheShapeAndIsLinearWhereItIsFlat) {
  const std::vector<double> xs{1, 2, 4}, ys{10, 6, 5};
  auto inv = [](double x) { return 1 / x; };
  // Between 2 and 4 along 1/x: at 3 the share is (1/3 − 1/2) / (1/4 − 1/2) = 2/3: 6 − 2/3.
  EXPECT_NEAR(interpolate_along(xs, ys, 3, inv), 6 - 2.0 / 3, 1e-12);
  EXPECT_NEAR(interpolate_along(xs, ys, 1.5, inv), 10 - 4 * (1 / 1.5 - 1) / (0.5 - 1), 1e-12);
  for (double x : {1.0, 2.0, 4.0}) EXPECT_EQ(interpolate_along(xs, ys, x, inv), interpolate(xs, ys, x));
  EXPECT_EQ(interpolate_along(xs, ys, 0.5, inv), 10);
  EXPECT_EQ(interpolate_along(xs, ys, 5, inv), 5);
  EXPECT_NEAR(interpolate_along(xs, ys, 3, [](double) { return 7.0; }), 5.5, 1e-12);  // flat: linear
}

TEST(ClockModel, RejectsTooFewClocks) {
  EXPECT_THROW(fit_clock_model({{1000, 1, 1}}), std::invalid_argument);
  EXPECT_THROW(fit_clock_model({{1000, 1, 1}, {1000, 2, 2}}), std::invalid_argument);
  EXPECT_THROW(fit_clock_model({{1000, 1, 1}, {900, -1, 2}}), std::invalid_argument);
}

TEST(Nnls, SmallProblem) {
  // y = 2·c0 + 0·c1 with c1's unconstrained optimum negative: clamped to 0.
  const std::vector<double> a{1, 1, 1, 2, 1, 3};
  const std::vector<double> y{2, 1.9, 1.8};
  const auto x = nnls_small(a, y, 2);
  EXPECT_NEAR(x[1], 0.0, 1e-15);
  EXPECT_NEAR(x[0], 1.9, 1e-12);
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
}

struct Goal {
  const char* file;
  std::vector<double> clocks;
  double time_median, energy_median, time_max, energy_max;  // as measured, docs/models.md
};
// gtest prints a parameter into the ctest name ("# GetParam() = ..."): the file, not the struct's
// bytes (which hold pointers, so the name changed from build to build).
void PrintTo(const Goal& g, std::ostream* os) { *os << g.file; }

class RealFit : public ::testing::TestWithParam<Goal> {};

TEST_P(RealFit, ErrorsAsMeasuredAndMonotone) {
  const Goal& g = GetParam();
  EMO_REQUIRE_DATA(path, g.file);
  const auto set = load_measurements(path);
  const auto report = check_fit(set, g.clocks);
  EXPECT_EQ(report.ops.size(), set.ops.size());
  EXPECT_EQ(report.points, set.point_count() - 3 * set.ops.size());
  EXPECT_LE(report.time_err_median, g.time_median);
  EXPECT_LE(report.energy_err_median, g.energy_median);
  EXPECT_LE(report.time_err_max, g.time_max);
  EXPECT_LE(report.energy_err_max, g.energy_max);
  for (const auto& op : report.ops) {
    double prev_t = INFINITY, prev_p = 0;
    for (double f = 150; f <= 2000; f += 10) {
      const double t = op.model.time_s(f), p = op.model.power_w(f);
      EXPECT_LE(t, prev_t) << op.op << " at " << f;
      EXPECT_GE(p, prev_p) << op.op << " at " << f;
      prev_t = t, prev_p = p;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, RealFit,
    ::testing::Values(
        // Goal met: median <= 2 % time, <= 3 % energy (measured 0.34 %, 1.54 %; max 1.46 %, 5.76 %).
        Goal{"perseus/stage_profile/gpt3-175b+a100_sxm_bf16.csv", {1410, 1200, 990}, 0.02, 0.03,
             0.015, 0.058},
        // V100: energy goal met (2.17 %), time missed (2.66 %): the 405-600 MHz rows scale worse
        // than 1/f, see docs/models.md. Time bound is the measured value rounded up.
        Goal{"dvfs/v100-dvfs-real.csv", {1380, 1087, 802}, 0.027, 0.03, 0.52, 0.37},
        // Time goal met (0.22 %); energy misses (10.9 %): power extrapolated from 1005-1410 down to
        // 210 MHz, below the voltage knee.
        Goal{"dvfs/kerneltuner_synthetic_fp32_a100_pcie.json", {1410, 1200, 990}, 0.02, 0.11, 0.007,
             0.53}),
    [](const ::testing::TestParamInfo<Goal>& info) { return ::emo::testing::data_file_test_name(info.param.file); });

}  // namespace
}  // namespace emo::model
