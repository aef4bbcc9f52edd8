#include "model/gpu_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace emo::model {
namespace {

using ::testing::HasSubstr;

TEST(GpuCatalog, HasTheIssuesGpusWithSourcedFigures) {
  const GpuCatalog& c = GpuCatalog::builtin();
  for (const char* id : {"A100-SXM4-80GB", "A100-PCIE-40GB", "A100-PCIE-80GB", "H100-SXM5-80GB",
                         "H200-SXM-141GB", "V100-SXM2-32GB", "A40", "L40S"}) {
    const GpuSpec* g = c.find(id);
    ASSERT_NE(g, nullptr) << id;
    EXPECT_GT(g->sm_clocks_mhz.size(), 10u) << id;
    EXPECT_TRUE(std::is_sorted(g->sm_clocks_mhz.rbegin(), g->sm_clocks_mhz.rend())) << id;
    for (const double f : g->sm_clocks_mhz) EXPECT_EQ(f, std::floor(f)) << id << ": NVML clocks are whole MHz";
    EXPECT_GT(g->power_limit_max_w, g->idle_power_w) << id;
    EXPECT_GT(g->switch_latency_ms, 0) << id;
    for (const char* field : {"sm_clock_mhz", "power_limit_w", "idle_power_w", "switch_latency_ms"}) {
      const std::string& src = g->sources.at(field);
      EXPECT_TRUE(src.starts_with("datasheet") || src.starts_with("measured") ||
                  src.starts_with("assumption"))
          << id << "." << field << ": " << src;
    }
  }
}

TEST(GpuCatalog, FractionalStepGivesWholeMhzClocks) {
  const auto& v100 = GpuCatalog::builtin().at("V100-SXM2-32GB").sm_clocks_mhz;
  ASSERT_GE(v100.size(), 5u);
  EXPECT_EQ(std::vector<double>(v100.begin(), v100.begin() + 5), (std::vector<double>{1530, 1522, 1515, 1507, 1500}));
}

TEST(GpuCatalog, MeasuredFiguresFromPerseusAndTheClockTable) {
  const GpuCatalog& c = GpuCatalog::builtin();
  const GpuSpec& a100 = c.at("A100-SXM4-80GB");
  ASSERT_TRUE(a100.blocked_power_w.has_value());
  EXPECT_DOUBLE_EQ(*a100.blocked_power_w, 83.64);  // Perseus, SOURCES.md
  EXPECT_DOUBLE_EQ(*c.at("A40").blocked_power_w, 70.38);
  EXPECT_FALSE(c.at("L40S").blocked_power_w.has_value());
  EXPECT_EQ(a100.max_sm_clock_mhz(), 1410);
  EXPECT_EQ(a100.sm_clocks_mhz.back(), 210);
  EXPECT_EQ(a100.sm_clocks_mhz.size(), 81u);  // 1410, 1395, ..., 210
  EXPECT_EQ(a100.nearest_sm_clock(1000), 1005);
}

TEST(GpuCatalog, LookupByIdOrNvmlNameCaseInsensitively) {
  const GpuCatalog& c = GpuCatalog::builtin();
  EXPECT_EQ(c.at("a100-sxm4-80gb").id, "A100-SXM4-80GB");
  EXPECT_EQ(c.at("NVIDIA A100-SXM4-80GB").id, "A100-SXM4-80GB");
  EXPECT_EQ(c.at("Tesla V100-SXM2-32GB").id, "V100-SXM2-32GB");
  EXPECT_EQ(c.at("nvidia h200").id, "H200-SXM-141GB");
  EXPECT_EQ(c.find("GeForce GTX 1080"), nullptr);
  try {
    c.at("GTX 1080");
    FAIL();
  } catch (const ArgumentError& e) {
    EXPECT_EQ(e.field(), "gpu");
    EXPECT_THAT(e.what(), HasSubstr("unknown GPU"));
    EXPECT_THAT(e.what(), HasSubstr("A100-SXM4-80GB"));
  }
}

TEST(GpuCatalog, ResolveSaysWhichEntryAndWhy) {
  const GpuCatalog& c = GpuCatalog::builtin();
  const auto exact = c.resolve("A100-SXM4-80GB");
  ASSERT_NE(exact.spec, nullptr);
  EXPECT_FALSE(exact.assumed);
  EXPECT_THAT(exact.why, HasSubstr("catalog id"));
  // The 40 GB SXM4 part is one of the 80 GB entry's NVML names: said, not silent.
  const auto listed = c.resolve("A100-SXM4-40GB");
  ASSERT_NE(listed.spec, nullptr);
  EXPECT_EQ(listed.spec->id, "A100-SXM4-80GB");
  EXPECT_FALSE(listed.assumed);
  EXPECT_THAT(listed.why, HasSubstr("NVML names of A100-SXM4-80GB"));
  // Not in the catalog: the same GPU with another memory size, as an assumption.
  const auto v100 = c.resolve("Tesla V100-SXM2-16GB");
  ASSERT_NE(v100.spec, nullptr);
  EXPECT_EQ(v100.spec->id, "V100-SXM2-32GB");
  EXPECT_TRUE(v100.assumed);
  EXPECT_THAT(v100.why, HasSubstr("assumption"));
  EXPECT_EQ(c.at("Tesla V100-SXM2-16GB").id, "V100-SXM2-32GB");
  // Another form factor or family is not guessed.
  EXPECT_EQ(c.resolve("V100-PCIE-16GB").spec, nullptr);
  EXPECT_EQ(c.resolve("B200").spec, nullptr);
}

TEST(GpuCatalog, MalformedCatalogsAreInputErrors) {
  EXPECT_THROW(GpuCatalog::parse("{", "x.json"), InputError);
  EXPECT_THROW(GpuCatalog::parse(R"({"gpus": [{"id": "X"}]})", "x.json"), InputError);
  // A figure without its source is refused.
  const char* no_source = R"({"gpus": [{"id": "X", "nvml_names": [], "sm_clock_mhz": [1000],
      "memory_clock_mhz": [1], "power_limit_w": {"min": 1, "max": 2, "default": 2},
      "idle_power_w": 1, "blocked_power_w": null, "switch_latency_ms": 1}]})";
  try {
    GpuCatalog::parse(no_source, "x.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("has no source"));
  }
}

}  // namespace
}  // namespace emo::model

namespace emo::model {
namespace {

/// A one-kernel trace on an A100 (catalog: switch latency 20 ms, minimum interval 100 ms).
trace::Trace one_kernel(const char* kernel) {
  trace::Trace t;
  t.meta.gpus.push_back({});
  t.meta.gpus.back().name = "NVIDIA A100-SXM4-80GB";
  t.ops.push(trace::OpKind::kKernel, 0, 1000, t.strings.intern(kernel), 0, 7, trace::kNone, trace::kNone, 1,
             trace::kNone);
  return t;
}

// Issue 17: the catalog's minimum switch interval, and collectives recognised; the default
// minimum pack stays the switch latency (docs/gpu-catalog.md says why).
TEST(MinPackFor, CollectivesAndTheSwitchInterval) {
  const GpuSpec& a100 = GpuCatalog::builtin().at("A100-SXM4-80GB");
  EXPECT_EQ(a100.min_switch_interval_ms, 100);
  EXPECT_TRUE(a100.sources.at("min_switch_interval_ms").starts_with("assumption: NVIDIA/nccl issue #1551"));
  const trace::Trace gemm = one_kernel("ampere_sgemm_128x64_nn");
  EXPECT_FALSE(has_collectives(gemm));
  EXPECT_EQ(min_pack_for(gemm).ns, 20'000'000);
  const trace::Trace nccl = one_kernel("ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_TRUE(has_collectives(nccl));
  EXPECT_EQ(min_pack_for(nccl).ns, 20'000'000);
}

TEST(MinPackFor, AnIntervalNeedsItsSource) {
  const char* no_source = R"({"gpus": [{"id": "X", "nvml_names": [], "sm_clock_mhz": [1000],
      "memory_clock_mhz": [1], "memory_clock_mhz_source": "s", "power_limit_w": {"min": 1, "max": 2, "default": 2},
      "power_limit_w_source": "s", "idle_power_w": 1, "idle_power_w_source": "s", "blocked_power_w": null,
      "blocked_power_w_source": "s", "switch_latency_ms": 1, "switch_latency_ms_source": "s",
      "sm_clock_mhz_source": "s", "min_switch_interval_ms": 50}]})";
  std::string what = "no error";
  try {
    GpuCatalog::parse(no_source, "x.json");
  } catch (const InputError& e) {
    what = e.what();
  }
  EXPECT_THAT(what, HasSubstr("x.json"));
  EXPECT_THAT(what, HasSubstr("'min_switch_interval_ms' has no source"));
}

}  // namespace
}  // namespace emo::model
