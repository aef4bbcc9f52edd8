#include "policy/policy.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_data.h"
#include "core/error.h"

namespace emo::policy {
namespace {

Policy sample() {
  Policy p;
  p.emo_version = "0.1.0";
  p.gpu = "A100-SXM4-80GB";
  p.trace = "t.json.gz";
  p.iteration_marker = "ProfilerStep#5";
  p.max_slowdown = 0.05;
  p.latency_target_ns = 105;
  p.baseline_time_ns = 100;
  p.baseline_energy_j = 10;
  p.predicted_time_ns = 104;
  p.predicted_energy_j = 8.5;
  p.switch_latency_ms = 20;
  p.simulated = true;
  GpuPolicy g;
  g.device = 0;
  g.rank = 0;
  g.default_clock_mhz = 1410;
  g.packs.push_back({0, {"ampere_sgemm", 7, 0}, 0, 40, 12, 1410, 5.0});
  g.packs.push_back({1, {"vectorized_elementwise_kernel", 7, 3}, 40, 64, 30, 990, 3.5});
  p.gpus.push_back(g);
  return p;
}

TEST(Policy, RoundTripsThroughJson) {
  const Policy p = sample();
  const Policy q = parse_policy(to_json(p), "mem");
  EXPECT_EQ(q.gpu, p.gpu);
  EXPECT_EQ(q.latency_target_ns, 105);
  EXPECT_EQ(q.baseline_time_ns, 100);
  EXPECT_DOUBLE_EQ(q.predicted_energy_j, 8.5);
  EXPECT_TRUE(q.simulated);
  ASSERT_EQ(q.gpus.size(), 1u);
  ASSERT_EQ(q.gpus[0].packs.size(), 2u);
  EXPECT_EQ(q.gpus[0].packs[1].start.op_name, "vectorized_elementwise_kernel");
  EXPECT_EQ(q.gpus[0].packs[1].start.ordinal, 3);
  EXPECT_DOUBLE_EQ(q.gpus[0].packs[1].clock_mhz, 990);
  EXPECT_EQ(to_json(q), to_json(p));
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse_policy(text, "p.json");
    ADD_FAILURE() << "no error for " << needle;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    EXPECT_EQ(std::string(e.what()).rfind("p.json", 0), 0u) << e.what();
  }
}

/// The sample policy's JSON with the first `from` replaced by `to` (`from` must occur).
std::string replaced(const std::string& from, const std::string& to) {
  std::string s = to_json(sample());
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

TEST(Policy, BadInputNamesTheProblem) {
  expect_error("{", "not valid JSON");
  expect_error("[]", "JSON object");
  expect_error(replaced("\"emo.policy/1\"", "\"emo.policy/9\""), "schema");
  expect_error(replaced("\"clock_mhz\": 990.0", "\"clock_mhz\": -1.0"), "clock_mhz");
  expect_error(replaced("\"clock_mhz\": 990.0", "\"clock_mhz\": \"fast\""), "wrong type");
  expect_error(replaced("\"latency_target_ns\": 105", "\"latency_target_nz\": 105"), "latency_target_ns");
  expect_error(replaced("\"start_offset_ns\": 40", "\"start_offset_ns\": -5"), "start order");
}

// Stop 50 (a breaker's findings): integers beyond their 32-bit fields were wrapped (device 2^40
// read as 0, rank 2^32 + 1 as 1); negative devices, ranks below -1, a negative switch latency, an
// empty 'gpus' and two sections for one (rank, device) were accepted.
TEST(Policy, OutOfRangeAndInconsistentSectionsAreRefused) {
  expect_error(replaced("\"device\": 0", "\"device\": 1099511627776"), "'device' is out of range (1099511627776)");
  expect_error(replaced("\"rank\": 0", "\"rank\": 4294967297"), "'rank' is out of range");
  expect_error(replaced("\"rank\": 0", "\"rank\": -4294967295"), "'rank' is out of range");
  expect_error(replaced("\"index\": 1", "\"index\": 18446744073709551615"), "'index' is out of range");
  expect_error(replaced("\"device\": 0", "\"device\": -1"), "device -1 is negative");
  expect_error(replaced("\"rank\": 0", "\"rank\": -2"), "rank -2 is below -1");
  expect_error(replaced("\"switch_latency_ms\": 20.0", "\"switch_latency_ms\": -20.0"), "switch_latency_ms -20 is not");
  Policy empty = sample();
  empty.gpus.clear();
  expect_error(to_json(empty), "'gpus' is empty");
  Policy twice = sample();
  twice.gpus.push_back(twice.gpus[0]);
  expect_error(to_json(twice), "gpus[1]: a second section for rank 0, device 0");
  // One process driving two GPUs: one rank, two devices — two sections, accepted.
  Policy two_gpus = sample();
  two_gpus.gpus.push_back(two_gpus.gpus[0]);
  two_gpus.gpus[1].device = 1;
  EXPECT_EQ(parse_policy(to_json(two_gpus), "mem").gpus.size(), 2u);
  // The range's ends are accepted.
  EXPECT_EQ(parse_policy(replaced("\"device\": 0", "\"device\": 2147483647"), "mem").gpus[0].device, 2147483647);
}

// Issue 17: the minimum switch interval is optional, written only when set.
TEST(Policy, MinSwitchIntervalIsOptional) {
  Policy p = sample();
  EXPECT_EQ(to_json(p).find("min_switch_interval_ms"), std::string::npos);
  EXPECT_EQ(parse_policy(to_json(p), "mem").min_switch_interval_ms, 0);
  p.min_switch_interval_ms = 100;
  const std::string text = to_json(p);
  EXPECT_DOUBLE_EQ(parse_policy(text, "mem").min_switch_interval_ms, 100);
  std::string negative = text;
  negative.replace(negative.find("\"min_switch_interval_ms\": 100.0"), 31, "\"min_switch_interval_ms\": -1.0");
  expect_error(negative, "min_switch_interval_ms is negative");
}

// Stop 49: a pack's switch-down lead is optional, written only when set (≥ 0).
TEST(Policy, DownLeadIsOptional) {
  Policy p = sample();
  EXPECT_EQ(to_json(p).find("down_lead_ns"), std::string::npos);
  EXPECT_EQ(parse_policy(to_json(p), "mem").gpus[0].packs[1].down_lead_ns, -1);
  p.gpus[0].packs[1].down_lead_ns = 20'000'000;
  const std::string text = to_json(p);
  const Policy q = parse_policy(text, "mem");
  EXPECT_EQ(q.gpus[0].packs[0].down_lead_ns, -1);
  EXPECT_EQ(q.gpus[0].packs[1].down_lead_ns, 20'000'000);
  EXPECT_EQ(to_json(q), text);
  auto with = [&](const std::string& value) {
    std::string t = text;
    return t.replace(t.find("\"down_lead_ns\": 20000000"), 24, "\"down_lead_ns\": " + value);
  };
  expect_error(with("-1"), "down_lead_ns is negative");
  expect_error(with("2.5"), "wrong type");
  expect_error(with("\"early\""), "wrong type");
}

TEST(Policy, ObservationFieldsRoundTrip) {
  Policy p = sample();
  auto& s = p.gpus[0].packs[1].start;
  s = {"gemv", 9, 2, ObservedBy::kGraph, 31, {12, "first_kernel", 4}};
  p.gpus[0].packs[0].start = {"Memcpy HtoD (Pageable -> Device)", 7, 0, ObservedBy::kCopy};
  const std::string json = to_json(p);
  EXPECT_NE(json.find("\"observed_by\": \"graph\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"observed_by\": \"copy\""), std::string::npos) << json;
  EXPECT_EQ(json.find("moved_from"), std::string::npos) << json;  // only when moved
  const Policy q = parse_policy(json, "mem");
  const auto& t = q.gpus[0].packs[1].start;
  EXPECT_EQ(t.observed_by, ObservedBy::kGraph);
  EXPECT_EQ(t.anchor_offset_ns, 31);
  EXPECT_EQ(q.gpus[0].packs[1].anchor_offset_ns(), 31);
  EXPECT_EQ(q.gpus[0].packs[0].anchor_offset_ns(), 0);  // its own start
  EXPECT_EQ(t.graph.kernels, 12);
  EXPECT_EQ(t.graph.first_kernel, "first_kernel");
  EXPECT_EQ(t.graph.index, 4);
  EXPECT_EQ(to_json(q), json);
  const auto n = observation_counts(q);
  EXPECT_EQ(n[static_cast<std::size_t>(ObservedBy::kCopy)], 1);
  EXPECT_EQ(n[static_cast<std::size_t>(ObservedBy::kGraph)], 1);
  EXPECT_EQ(n[static_cast<std::size_t>(ObservedBy::kNone)], 0);
}

TEST(Policy, StartsWithoutObservedByAreKernelsExceptCopiesAndMemsets) {
  // A policy written before issue 32: its copy starts were counted among ops of their name.
  Policy p = sample();
  p.gpus[0].packs[0].start.op_name = "Memset (Device)";
  std::string json = to_json(p);
  const std::string field = "\"observed_by\": \"kernel\",";  // keys are written in sorted order
  for (std::size_t at; (at = json.find(field)) != std::string::npos;) json.erase(at, field.size());
  ASSERT_EQ(json.find("observed_by"), std::string::npos) << json;
  const Policy q = parse_policy(json, "old.json");
  EXPECT_EQ(q.gpus[0].packs[0].start.observed_by, ObservedBy::kNone);
  EXPECT_EQ(q.gpus[0].packs[1].start.observed_by, ObservedBy::kKernel);
}

TEST(Policy, UnknownObservedByIsInputError) {
  Policy p = sample();
  std::string json = to_json(p);
  json.replace(json.find("\"kernel\""), 8, "\"ioctl\"");
  try {
    parse_policy(json, "bad.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("observed_by 'ioctl' is not one of"), std::string::npos) << e.what();
  }
  json = to_json(p);
  json.replace(json.find("\"kernel\""), 8, "\"graph\"");  // graph without its object
  EXPECT_THROW(parse_policy(json, "bad.json"), InputError);
}

TEST(Policy, MissingFileIsInputError) {
  EXPECT_THROW(load_policy("/nonexistent/policy.json"), InputError);
}

}  // namespace
}  // namespace emo::policy
