#include "runtime/sim_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/clock_model.h"

namespace emo::runtime {
namespace {

const model::GpuSpec& a100() { return model::GpuCatalog::builtin().at("A100-SXM4-80GB"); }

Work one_op(const std::string& name, std::int64_t ns, int reps = 1) {
  Work w;
  w.label = name;
  w.ops.push_back({name, trace::OpKind::kKernel, 7, 0, ns});
  w.repetitions = reps;
  return w;
}

TEST(SimDevice, DescribesItselfAsSimulatedWithCatalogFigures) {
  SimDevice dev(a100());
  EXPECT_TRUE(dev.simulated());
  EXPECT_EQ(dev.name(), "A100-SXM4-80GB (simulated)");
  EXPECT_DOUBLE_EQ(dev.supported_sm_clocks_mhz().front(), 1410);
  EXPECT_DOUBLE_EQ(dev.sm_clock_mhz(), 1410);
  EXPECT_DOUBLE_EQ(dev.idle_power_w(), 60);
  EXPECT_DOUBLE_EQ(*dev.blocked_power_w(), 83.64);
  EXPECT_DOUBLE_EQ(dev.switch_latency_ms(), 20);
  const auto& h100 = model::GpuCatalog::builtin().at("H100-SXM5-80GB");
  SimDevice h(h100);  // blocked power not measured: 83.64/60 of idle
  EXPECT_NEAR(*h.blocked_power_w(), h100.idle_power_w * 83.64 / 60, 1e-9);
}

TEST(SimDevice, DeterministicForASeed) {
  SimDevice a(a100(), {.seed = 42}), b(a100(), {.seed = 42}), c(a100(), {.seed = 43});
  const Work w = one_op("ampere_sgemm_128x64_nn", 2'000'000, 20);
  for (double f : {1410.0, 1200.0, 990.0}) {
    const Measurement ma = a.run(w, f), mb = b.run(w, f), mc = c.run(w, f);
    EXPECT_EQ(ma.time_ns, mb.time_ns);
    EXPECT_DOUBLE_EQ(ma.energy_j, mb.energy_j);
    EXPECT_TRUE(ma.simulated);
    EXPECT_NE(ma.time_ns, mc.time_ns);  // other seed: other noise (and another β for the kernel)
  }
  const WorkOp op{"ampere_sgemm_128x64_nn", trace::OpKind::kKernel, 0, 0, 1000};
  EXPECT_DOUBLE_EQ(a.truth(op).beta, b.truth(op).beta);
  EXPECT_NE(a.truth(op).beta, c.truth(op).beta);
}

TEST(SimDevice, TruthIsMonotoneInClockForEveryClass) {
  SimDevice dev(a100(), {.seed = 3});
  const auto descending = dev.supported_sm_clocks_mhz();
  const std::vector<double> ascending(descending.rbegin(), descending.rend());
  for (const char* name : {"sm80_xmma_gemm", "vectorized_elementwise_kernel", "ncclKernel_AllReduce", "triton_x"}) {
    for (int v = 0; v < 20; ++v) {
      const WorkOp op{std::string(name) + std::to_string(v), trace::OpKind::kKernel, 0, 0, 100'000};
      double prev_t = INFINITY, prev_p = 0;
      for (double f : ascending) {
        const double t = dev.true_time_ns(op, f), p = dev.true_power_w(op, f);
        EXPECT_LE(t, prev_t) << op.name << " " << f;
        EXPECT_GE(p, prev_p) << op.name << " " << f;
        EXPECT_GE(p, dev.idle_power_w());
        prev_t = t, prev_p = p;
      }
      EXPECT_NEAR(dev.true_time_ns(op, 1410), 100'000, 1e-6);  // traced duration is at f_max
    }
  }
}

// Over many ops of one class, the median time and power ratios reproduce the calibrated class
// curve (per-op β and level are drawn around the class values).
TEST(SimDevice, ReproducesCalibratedClassCurves) {
  SimDevice dev(a100(), {.seed = 11});
  const auto& gt = model::builtin_ground_truth();
  struct Case { const char* prefix; model::OpClass cls; };
  for (Case c : {Case{"sm80_xmma_gemm_", model::OpClass::kCompute}, Case{"elementwise_kernel_", model::OpClass::kMemory},
                 Case{"triton_poi_", model::OpClass::kMixed}}) {
    for (double f : {1200.0, 990.0, 855.0}) {
      std::vector<double> tr, pr, levels;
      for (int i = 0; i < 401; ++i) {
        const WorkOp op{c.prefix + std::to_string(i), trace::OpKind::kKernel, 0, 0, 1'000'000};
        ASSERT_EQ(dev.truth(op).cls, c.cls);
        tr.push_back(dev.true_time_ns(op, f) / dev.true_time_ns(op, 1410));
        pr.push_back(dev.true_power_w(op, f) / dev.true_power_w(op, 1410));
        levels.push_back(dev.truth(op).power_at_max_w / 400.0);
      }
      const double x = f / 1410;
      const auto& curve = gt.curve(c.cls);
      EXPECT_NEAR(model::median(tr) / curve.time_ratio(x), 1.0, 0.01) << c.prefix << f;
      EXPECT_NEAR(model::median(pr) / curve.power_ratio(x), 1.0, 0.01) << c.prefix << f;
      EXPECT_NEAR(model::median(levels), curve.power_level, 0.02) << c.prefix;
    }
  }
}

TEST(SimDevice, NoiseMatchesCalibratedLevel) {
  SimDevice dev(a100(), {.seed = 5});
  const Work w = one_op("sm80_xmma_gemm", 50'000'000);  // 50 ms: > 2 counter periods
  const double truth_ns = static_cast<double>(dev.true_run(w, 1410).time_ns);
  std::vector<double> logs;
  for (int i = 0; i < 400; ++i) logs.push_back(std::log(static_cast<double>(dev.run(w, 1410).time_ns) / truth_ns));
  double m = 0, s = 0;
  for (double v : logs) m += v;
  m /= static_cast<double>(logs.size());
  for (double v : logs) s += (v - m) * (v - m);
  s = std::sqrt(s / static_cast<double>(logs.size() - 1));
  const double sd = model::builtin_ground_truth().noise.time_sd;
  EXPECT_NEAR(s / sd, 1.0, 0.15);
  EXPECT_NEAR(m, 0.0, 4 * sd / std::sqrt(400.0));
}

TEST(SimDevice, EnergyCounterAdvancesInStepsAndConvergesWithRepetitions) {
  SimDevice dev(a100(), {.seed = 9, .noise = false});
  // A 1 ms op is far below the 20 ms counter period: single runs read 0 J or a whole period.
  const Work short_run = one_op("sm80_xmma_gemm", 1'000'000, 1);
  int zero = 0;
  for (int i = 0; i < 40; ++i) {
    const Measurement m = dev.run(short_run, 1410);
    EXPECT_EQ(m.time_ns, 1'000'000);
    const double steps = m.energy_j / 1e-3;
    EXPECT_NEAR(steps, std::round(steps), 1e-6);  // whole mJ
    if (m.energy_j == 0) ++zero;
  }
  EXPECT_GT(zero, 30);  // 19 of 20 consecutive 1 ms runs see no counter update
  // Enough repetitions to span 10 periods: the per-run energy is within ~1/10 of the truth.
  Work many = short_run;
  many.repetitions = repetitions_for(1e-3, dev);
  EXPECT_EQ(many.repetitions, 200);
  const Measurement m = dev.run(many, 1410);
  const double truth = dev.true_run(short_run, 1410).energy_j;
  EXPECT_NEAR(m.energy_j / truth, 1.0, 0.1);
  // The counter never runs ahead of the true energy.
  EXPECT_LE(dev.energy_counter_j(), dev.true_energy_j() + 1e-9);
}

TEST(SimDevice, ConcurrentStreamsOverlapAndIdleAndBlockedPowerAccumulate) {
  SimDevice dev(a100(), {.seed = 1, .noise = false});
  Work w;
  w.label = "two streams";
  w.ops = {{"sm80_xmma_gemm", trace::OpKind::kKernel, 1, 0, 4'000'000},
           {"vectorized_elementwise_kernel", trace::OpKind::kKernel, 2, 1'000'000, 2'000'000},
           {"sm80_xmma_gemm", trace::OpKind::kKernel, 1, 5'000'000, 1'000'000}};  // 1 ms gap kept
  const TrueRun at_max = dev.true_run(w, 1410);
  EXPECT_EQ(at_max.time_ns, 6'000'000);  // replays the traced timeline exactly at f_max
  const double e = 60 * 6e-3 + (dev.true_power_w(w.ops[0], 1410) - 60) * 5e-3 +
                   (dev.true_power_w(w.ops[1], 1410) - 60) * 2e-3;
  EXPECT_NEAR(at_max.energy_j, e, 1e-9);
  const TrueRun slow = dev.true_run(w, 990);
  EXPECT_GT(slow.time_ns, at_max.time_ns);
  EXPECT_NEAR(static_cast<double>(slow.time_ns),
              dev.true_time_ns(w.ops[0], 990) + 1e6 + dev.true_time_ns(w.ops[2], 990), 1.0);

  const double before = dev.true_energy_j();
  dev.idle(1'000'000'000);
  EXPECT_NEAR(dev.true_energy_j() - before, 60.0, 1e-9);
  dev.idle(1'000'000'000, /*blocked=*/true);
  EXPECT_NEAR(dev.true_energy_j() - before, 60.0 + 83.64, 1e-9);
}

TEST(SimDevice, ClockSwitchTakesTheLatency) {
  SimDevice dev(a100(), {.noise = false});
  const std::int64_t t0 = dev.now_ns();
  dev.lock_sm_clock(990);
  EXPECT_EQ(dev.now_ns() - t0, 20'000'000);
  EXPECT_DOUBLE_EQ(dev.sm_clock_mhz(), 990);
  dev.lock_sm_clock(990);  // no change, no latency
  EXPECT_EQ(dev.now_ns() - t0, 20'000'000);
  dev.reset_sm_clock();
  EXPECT_DOUBLE_EQ(dev.sm_clock_mhz(), 1410);
}

TEST(SimDevice, RejectsBadRequests) {
  SimDevice dev(a100());
  EXPECT_THROW(dev.lock_sm_clock(1000), std::invalid_argument);  // not on the 15 MHz grid
  EXPECT_THROW(dev.lock_sm_clock(2000), std::invalid_argument);
  Work empty;
  EXPECT_THROW(dev.run(empty, 1410), std::invalid_argument);
  Work zero = one_op("k", 0);
  EXPECT_THROW(dev.run(zero, 1410), std::invalid_argument);
  Work reps = one_op("k", 10, 0);
  EXPECT_THROW(dev.run(reps, 1410), std::invalid_argument);
  try {
    dev.lock_sm_clock(1000);
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "A100-SXM4-80GB (simulated): 1000 MHz is not a supported SM clock (210-1410 MHz)");
  }
}

// Profiling a sim op at 3 clocks and fitting: the few-clock model predicts the device's truth at
// the other clocks (the same path `emo optimize` takes).
TEST(SimDevice, FewClockModelPredictsTruth) {
  SimDevice dev(a100(), {.seed = 21});
  Work w = one_op("sm80_xmma_gemm_big", 30'000'000);
  w.repetitions = repetitions_for(0.03, dev, 100);  // 2 s per clock: counter steps cost < 1 %
  std::vector<model::ClockPoint> pts;
  for (double f : {1410.0, 1200.0, 990.0}) {
    const Measurement m = dev.run(w, f);
    pts.push_back({f, m.time_ns * 1e-9, m.energy_j});
  }
  const auto fit = model::fit_clock_model(pts);
  for (double f : {1305.0, 1095.0, 900.0}) {
    const TrueRun t = dev.true_run(w, f);
    EXPECT_NEAR(fit.time_s(f) / (t.time_ns * 1e-9), 1.0, 0.03) << f;
    EXPECT_NEAR(fit.energy_j(f) / t.energy_j, 1.0, 0.05) << f;
  }
}

}  // namespace
}  // namespace emo::runtime
