#include "model/measurements.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "test_data.h"
#include "core/error.h"

namespace emo::model {
namespace {

const char* kPerseus = "perseus/stage_profile/gpt3-175b+a100_sxm_bf16.csv";
const char* kV100 = "dvfs/v100-dvfs-real.csv";
const char* kKernelTuner = "dvfs/kerneltuner_synthetic_fp32_a100_pcie.json";

/// Independent count: non-empty lines of a file, and lines containing `needle`.
std::size_t count_lines(const std::string& path, const std::string& needle = "") {
  std::ifstream in(path);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line))
    if (!line.empty() && (needle.empty() || line.find(needle) != std::string::npos)) ++n;
  return n;
}

TEST(MeasurementsReal, PerseusStageProfile) {
  EMO_REQUIRE_DATA(path, kPerseus);
  const auto set = load_measurements(path);
  EXPECT_EQ(set.format, MeasurementFormat::kPerseusStageProfile);
  EXPECT_EQ(set.point_count(), count_lines(path) - 1);  // header
  ASSERT_EQ(set.ops.size(), 16u);                       // 8 stages x forward/backward
  EXPECT_EQ(set.ops[0].op, "stage 0 forward");
  EXPECT_EQ(set.ops[1].op, "stage 0 backward");
  for (const auto& op : set.ops) {
    ASSERT_EQ(op.points.size(), 38u) << op.op;  // 855..1410 step 15
    EXPECT_EQ(op.points.front().clock_mhz, 855);
    EXPECT_EQ(op.points.back().clock_mhz, 1410);
  }
  const auto& p = set.ops[0].points.back();
  EXPECT_NEAR(p.time_s, 0.05016166687011708, 1e-15);
  EXPECT_NEAR(p.energy_j, 23.80547200000007, 1e-12);
}

TEST(MeasurementsReal, NvDvfsBenchmark) {
  EMO_REQUIRE_DATA(path, kV100);
  const auto set = load_measurements(path);
  EXPECT_EQ(set.format, MeasurementFormat::kNvDvfsBenchmark);
  EXPECT_EQ(set.point_count(), count_lines(path) - 1);
  ASSERT_EQ(set.ops.size(), 20u);
  std::set<double> clocks;
  for (const auto& op : set.ops) {
    EXPECT_EQ(op.points.size(), 10u) << op.op;
    for (const auto& p : op.points) clocks.insert(p.clock_mhz);
  }
  EXPECT_EQ(clocks, (std::set<double>{405, 502, 600, 705, 802, 945, 1087, 1102, 1237, 1380}));
  EXPECT_EQ(set.ops[0].op, "BlackScholes/BlackScholesGPU");
  // First data row: 1087 MHz, 0.91044 ms, 157.9836 W.
  for (const auto& p : set.ops[0].points) {
    if (p.clock_mhz != 1087) continue;
    EXPECT_NEAR(p.time_s, 0.91044e-3, 1e-12);
    EXPECT_NEAR(p.energy_j, 157.9836 * 0.91044e-3, 1e-9);
  }
}

TEST(MeasurementsReal, KernelTunerCache) {
  EMO_REQUIRE_DATA(path, kKernelTuner);
  const auto set = load_measurements(path);
  EXPECT_EQ(set.format, MeasurementFormat::kKernelTunerCache);
  ASSERT_EQ(set.ops.size(), 1u);
  EXPECT_EQ(set.ops[0].op, "fp32_kernel[1024,64,1024]");
  EXPECT_EQ(set.point_count(), count_lines(path, "\"nvml_power\""));
  ASSERT_EQ(set.ops[0].points.size(), 10u);
  EXPECT_EQ(set.ops[0].points.front().clock_mhz, 210);
  const auto& top = set.ops[0].points.back();
  EXPECT_EQ(top.clock_mhz, 1410);
  EXPECT_NEAR(top.time_s, 0.1962396667480469, 1e-12);
  EXPECT_NEAR(top.power_w(), 153.408, 1e-9);
}

TEST(Measurements, RepeatsAtOneClockAreAveraged) {
  const auto set = parse_measurements(
      "stage,instruction,frequency,time,energy\n0,forward,1000,1.0,10\n0,forward,1000,3.0,30\n"
      "0,forward,900,2,5\n",
      "x.csv");
  ASSERT_EQ(set.ops.size(), 1u);
  ASSERT_EQ(set.ops[0].points.size(), 2u);
  EXPECT_EQ(set.ops[0].points[0].clock_mhz, 900);
  EXPECT_DOUBLE_EQ(set.ops[0].points[1].time_s, 2.0);
  EXPECT_DOUBLE_EQ(set.ops[0].points[1].energy_j, 20.0);
}

void expect_input_error(const std::string& content, const std::string& fragment) {
  try {
    parse_measurements(content, "bad.file");
    FAIL() << "no error for: " << content.substr(0, 60);
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.file"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Measurements, BadContentIsInputError) {
  expect_input_error("", "empty");
  expect_input_error("  \n\n", "empty");
  expect_input_error("a,b,c\n1,2,3\n", "unknown measurement layout");
  expect_input_error("stage,instruction,frequency,time\n0,forward,1410,1\n", "energy");
  expect_input_error("stage,instruction,frequency,time,energy\n", "no data rows");
  expect_input_error("stage,instruction,frequency,time,energy\n0,forward,fast,1,2\n", "not a number");
  expect_input_error("stage,instruction,frequency,time,energy\n0,forward,1410,1\n", "fields");
  expect_input_error("stage,instruction,frequency,time,energy\n0,forward,1410,-1,2\n", "positive");
  expect_input_error("benchmark,kernel,core_frequency,time\nb,k,1,2\n", "average_power");
  expect_input_error("{\"cache\": {}}", "no entries");
  expect_input_error("{\"x\": 1}", "no 'cache'");
  expect_input_error("{\"cache\": ", "invalid JSON");
  expect_input_error("{\"cache\": {\"a\": {\"nvml_gr_clock\": 1410, \"time\": \"x\", \"nvml_power\": 1}}}",
                     "not a number");
  expect_input_error("{\"cache\": {\"a\": {\"time\": 1, \"nvml_power\": 1}}}", "nvml_gr_clock");
  expect_input_error(std::string("ab\0cd", 5), "binary");
}

TEST(Measurements, MissingFileIsInputError) {
  EXPECT_THROW(load_measurements("/nonexistent/emo-measurements.csv"), InputError);
}

}  // namespace
}  // namespace emo::model
