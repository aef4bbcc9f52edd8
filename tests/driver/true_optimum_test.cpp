// The true optimum of `emo optimize --true-optimum` (driver/true_optimum.h) on a shared trace:
// its true costs against what the simulated device measured when profiling, the same device
// either way, and its refusals.
#include "driver/true_optimum.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "driver/optimize.h"
#include "model/gpu_catalog.h"
#include "runtime/sim_backend.h"
#include "test_data.h"
#include "trace/load.h"

namespace emo::testing {
namespace {

const model::GpuSpec& a100() { return model::GpuCatalog::builtin().at("A100-SXM4-80GB"); }

struct Optimized {
  trace::Trace trace;
  driver::OptimizeOptions options;
  driver::OptimizeResult result;
};

Optimized optimized(const std::string& path) {
  Optimized r{trace::load_trace(path), {}, {}};
  r.result = driver::optimize(r.trace, graph::Window{}, a100(), r.options);
  return r;
}

// The true costs are what profiling measures, without its noise: at each profiled clock, every
// pack's true time is within 0.5 % of the measured mean (3 sigma of the device's 0.13 % time
// noise per run) and its true energy within 3.5 % (the energy counter's step over the >= 50
// periods a profile spans, 2 %, plus 3 sigma of its 0.49 % energy noise; docs/simulated-device.md).
TEST(TrueOptimum, TrueCostsAreTheProfiledMeasurementsWithoutNoise) {
  EMO_REQUIRE_DATA(path, "kineto/hta_nccl_allreduce_rank0.json.gz");
  const Optimized r = optimized(path);
  const runtime::SimDevice device(a100(), runtime::SimDeviceOptions{});  // seed 1, as the run
  const auto& profiled = r.result.profile.profiled_clocks_mhz;
  const auto truth = runtime::true_pack_points(device, r.trace, r.result.packs, profiled);
  const auto& measured = r.result.profile.measured.points;
  ASSERT_EQ(truth.size(), measured.size());
  for (std::size_t p = 0; p < truth.size(); ++p) {
    ASSERT_EQ(truth[p].size(), profiled.size());
    for (std::size_t k = 0; k < profiled.size(); ++k) {
      EXPECT_EQ(truth[p][k].clock_mhz, measured[p][k].clock_mhz);
      EXPECT_NEAR(truth[p][k].time_s / measured[p][k].time_s, 1, 0.005) << "pack " << p << " at " << profiled[k];
      EXPECT_NEAR(truth[p][k].energy_j / measured[p][k].energy_j, 1, 0.035) << "pack " << p << " at " << profiled[k];
    }
  }
  EXPECT_THROW(runtime::true_pack_points(device, r.trace, r.result.packs, {1234.5}), std::invalid_argument);
}

// A fresh simulated device of the same GPU and seed is the device the run measured on: the same
// oracle run either way, and the gap is EMO's measured energy over the oracle's.
TEST(TrueOptimum, SameDeviceEitherWay) {
  EMO_REQUIRE_DATA(path, "kineto/hta_nccl_allreduce_rank0.json.gz");
  const Optimized r = optimized(path);
  const driver::TrueOptimum fresh = driver::true_optimum(r.trace, r.result, a100(), r.options);
  runtime::SimBackend backend(a100(), r.options.seed);
  const driver::TrueOptimum given = driver::true_optimum(r.trace, r.result, a100(), r.options, backend);
  ASSERT_TRUE(fresh.computed);
  EXPECT_EQ(fresh.time_ns, given.time_ns);
  EXPECT_EQ(fresh.energy_j, given.energy_j);
  EXPECT_EQ(fresh.status, "optimal");
  EXPECT_EQ(fresh.packs, r.result.packs.pack_graph.packs);
  EXPECT_EQ(fresh.pack_clock_mhz.size(), fresh.packs);
  EXPECT_DOUBLE_EQ(fresh.gap, r.result.evaluation.emo.energy_j / fresh.energy_j - 1);
  EXPECT_TRUE(fresh.met_target);
  EXPECT_LE(fresh.time_ns, r.result.evaluation.statics.target_ns);
  // Another seed is another device: its baseline differs from the run's, which is refused.
  driver::OptimizeOptions other = r.options;
  other.seed = 2;
  EXPECT_THROW(driver::true_optimum(r.trace, r.result, a100(), other), std::logic_error);
}

TEST(TrueOptimum, RefusesARealGpuAndTooManyPacks) {
  EMO_REQUIRE_DATA(path, "kineto/hta_nccl_allreduce_rank0.json.gz");
  Optimized r = optimized(path);
  driver::TrueOptimumOptions small;
  small.max_packs = 3;
  const driver::TrueOptimum t = driver::true_optimum(r.trace, r.result, a100(), r.options, small);
  EXPECT_FALSE(t.computed);
  EXPECT_EQ(t.not_computed, std::to_string(r.result.packs.pack_graph.packs) + " packs > 3");
  r.result.simulated = false;
  EXPECT_THROW(driver::true_optimum(r.trace, r.result, a100(), r.options), ArgumentError);
}

}  // namespace
}  // namespace emo::testing
