// The measurements of `emo optimize --device nvml` from a workload run's pack starts and energy
// counter readings (policy/workload_backend.h), on synthetic runs.
#include "driver/workload_backend.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace emo::driver {
namespace {

constexpr std::int64_t kMs = 1'000'000;

/// A run of `iterations` iterations of packs with the given durations (ms) at a constant `power_w`,
/// the first starting at 1 s; the energy counter is read exactly at each start; the run starts
/// 5 ms before the first pack and ends 5 ms after the last one.
WorkloadRun steady_run(const std::vector<double>& ms, int iterations, double power_w) {
  WorkloadRun run;
  run.start_ns = 1000 * kMs - 5 * kMs;
  run.start_energy_j = 0;
  std::int64_t t = 1000 * kMs;
  double e = power_w * 0.005;
  for (int i = 0; i < iterations; ++i) {
    for (std::size_t k = 0; k < ms.size(); ++k) {
      run.samples.push_back({{0, static_cast<std::int32_t>(k), i, t}, e});
      const auto d = static_cast<std::int64_t>(ms[k] * kMs);
      t += d;
      e += power_w * static_cast<double>(d) * 1e-9;
    }
  }
  run.end_ns = t + 5 * kMs;
  run.end_energy_j = e + power_w * 0.005;
  return run;
}

TEST(MeasurePacks, SpansToTheNextStartAcrossIterations) {
  const WorkloadRun run = steady_run({10, 20, 5}, 4, 100);
  const auto m = measure_packs(run, 3);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].time_ns, 10 * kMs);
  EXPECT_EQ(m[1].time_ns, 20 * kMs);
  EXPECT_EQ(m[2].time_ns, 5 * kMs);  // the last pack spans to the next iteration's first
  EXPECT_EQ(m[0].spans, 4);
  EXPECT_EQ(m[2].spans, 3);          // the run's tail is not used when other spans exist
  EXPECT_NEAR(m[1].energy_j, 2.0, 1e-9);
  EXPECT_FALSE(m[1].run_power);
}

TEST(MeasurePacks, MedianTimeIgnoresAnOutlierAndOneIterationUsesTheRunsEnd) {
  WorkloadRun run = steady_run({10, 20}, 5, 50);
  // Iteration 0's pack 1 took 100 ms longer (warm-up): shift every later start.
  for (std::size_t i = 2; i < run.samples.size(); ++i) run.samples[i].start.t_ns += 100 * kMs;
  run.end_ns += 100 * kMs;
  EXPECT_EQ(measure_packs(run, 2)[1].time_ns, 20 * kMs);
  const WorkloadRun once = steady_run({10, 20}, 1, 50);
  const auto m = measure_packs(once, 2);
  EXPECT_EQ(m[1].spans, 1);
  EXPECT_EQ(m[1].time_ns, 25 * kMs);  // to the run's end (5 ms after the pack)
}

TEST(MeasurePacks, UnseenPackAndStuckCounter) {
  WorkloadRun run = steady_run({10, 20}, 3, 80);
  const auto m = measure_packs(run, 3);
  EXPECT_EQ(m[2].spans, 0);
  for (auto& s : run.samples) s.energy_j = 0;  // a counter that never advanced during the packs
  const auto z = measure_packs(run, 2);
  EXPECT_TRUE(z[0].run_power);
  EXPECT_GT(z[0].energy_j, 0);
}

TEST(MeasureIteration, MedianPeriodAndMedianEnergy) {
  WorkloadRun run = steady_run({10, 20}, 6, 100);
  const IterationMeasure m = measure_iteration(run);
  EXPECT_EQ(m.periods, 5);
  EXPECT_EQ(m.time_ns, 30 * kMs);
  EXPECT_NEAR(m.energy_j, 3.0, 1e-9);
  // No repeated pack 0: the whole run.
  const WorkloadRun once = steady_run({10, 20}, 1, 100);
  const IterationMeasure w = measure_iteration(once);
  EXPECT_EQ(w.periods, 0);
  EXPECT_EQ(w.time_ns, once.end_ns - once.start_ns);
  EXPECT_NEAR(w.energy_j, once.end_energy_j, 1e-9);
}

// The parent reads the counter when it receives a line, late by a delay that varies. A run at a
// constant 100 W, packs of 10 + 20 ms (30 ms, 3 J an iteration), the lines of pack 0 received
// 0 or 6 ms late in turn (pack 1's on time), each counter read at its receipt. By hand: the
// iterations' counter differences are 3 + 0.1 W·s/ms × (±6 ms) = 3.6, 2.4, 3.6, 2.4, 3.6 J
// (median 3.6 J, 20 % over), but their read windows are 36, 24, ... ms at 100 W: times the 30 ms
// period, 3 J each. Pack 1's five spans end at pack 0's lines, read windows 26, 20, 26, 20, 26 ms:
// its power over them is 100 W, so 20 ms × 100 W = 2 J (Σ energy / Σ stamped time: 11.8 J / 100 ms,
// 2.36 J). Pack 0's six spans, read windows 10, 4, ... ms: 1 J (by stamped time 4.2 J / 60 ms, 0.7 J).
TEST(MeasureIteration, EnergyFollowsTheStampsNotTheCounterReadDelays) {
  WorkloadRun run = steady_run({10, 20}, 6, 100);
  for (std::size_t i = 0; i < run.samples.size(); ++i) {
    ProgressSample& s = run.samples[i];
    const std::int64_t delay = s.start.pack == 0 && s.start.iteration % 2 == 1 ? 6 * kMs : 0;
    s.read_ns = s.start.t_ns + delay;
    s.energy_j = 100.0 * static_cast<double>(s.read_ns - run.start_ns) * 1e-9;  // the counter at the read
  }
  run.end_energy_j = 100.0 * static_cast<double>(run.end_ns - run.start_ns) * 1e-9;
  const IterationMeasure m = measure_iteration(run);
  EXPECT_EQ(m.time_ns, 30 * kMs);
  EXPECT_NEAR(m.energy_j, 3.0, 1e-9);
  const auto p = measure_packs(run, 2);
  EXPECT_EQ(p[1].time_ns, 20 * kMs);
  EXPECT_NEAR(p[1].energy_j, 2.0, 1e-9);
  EXPECT_NEAR(p[0].energy_j, 1.0, 1e-9);
  // Without read times (read_ns 0) the stamps stand in, as before: the counter's differences.
  for (ProgressSample& s : run.samples) s.read_ns = 0;
  EXPECT_NEAR(measure_iteration(run).energy_j, 3.6, 1e-9);
  const auto q = measure_packs(run, 2);
  EXPECT_NEAR(q[1].energy_j, 2.36, 1e-9);
  EXPECT_NEAR(q[0].energy_j, 0.7, 1e-9);
}

// A job: section 0 (packs of 10 + 20 ms at 100 W: 30 ms, 3 J an iteration) routed to NVML GPU 1,
// section 1 (10 + 25 ms at 200 W: 35 ms, 7 J) to GPU 0. By hand: the job's iteration is the
// slowest section's 35 ms and 3 + 7 = 10 J; each section sees its own GPU's counter.
TEST(MeasureJobIteration, SlowestSectionsTimeAndTheSumOfTheGpusEnergies) {
  const WorkloadRun s0 = steady_run({10, 20}, 6, 100), s1 = steady_run({10, 25}, 6, 200);
  WorkloadRun job;
  job.start_ns = s0.start_ns;
  job.end_ns = std::max(s0.end_ns, s1.end_ns);
  job.section_samples = {{0, s0.samples}, {1, s1.samples}};
  for (auto& sample : job.section_samples[1]) sample.start.device = 1;
  job.section_gpu = {{0, 1}, {1, 0}};
  job.gpu_energy_j = {{1, {s0.start_energy_j, s0.end_energy_j}}, {0, {s1.start_energy_j, s1.end_energy_j}}};
  const WorkloadRun v1 = section_run(job, 1);
  EXPECT_EQ(v1.samples.size(), 12U);
  EXPECT_DOUBLE_EQ(v1.end_energy_j, s1.end_energy_j);  // GPU 0's counter
  EXPECT_DOUBLE_EQ(section_run(job, 0).end_energy_j, s0.end_energy_j);
  const IterationMeasure m = measure_job_iteration(job);
  EXPECT_EQ(m.periods, 5);
  EXPECT_EQ(m.time_ns, 35 * kMs);
  EXPECT_NEAR(m.energy_j, 10.0, 1e-9);
  // No pack start at all: the whole run, every GPU's counter.
  job.section_samples.clear();
  const IterationMeasure w = measure_job_iteration(job);
  EXPECT_EQ(w.periods, 0);
  EXPECT_EQ(w.time_ns, job.end_ns - job.start_ns);
  EXPECT_NEAR(w.energy_j, s0.end_energy_j + s1.end_energy_j, 1e-9);
  // A section never seen: no samples, no counter.
  EXPECT_TRUE(section_run(job, 7).samples.empty());
  EXPECT_EQ(section_run(job, 7).end_energy_j, 0);
}

}  // namespace
}  // namespace emo::driver
