// Per-pack time and energy of a run, and its power series: hand-built ops whose answers are
// worked out below, then a simulated run whose breakdown must add up to its own totals.
#include "runtime/run_breakdown.h"

#include <gtest/gtest.h>

#include <numeric>

#include "graph/hand_trace.h"
#include "model/gpu_catalog.h"
#include "pack/pack_run.h"
#include "runtime/sim_backend.h"

namespace emo::runtime {
namespace {

using testing::HandTrace;

// Idle 50 W, makespan 100 ns, two devices.
//   device 0, pack 0: [10, 30) at +100 W and [20, 40) at +50 W  → [10, 40): 30 ns,
//                     50·30 + 100·20 + 50·20 = 4500 W·ns
//   device 0, pack 1: [60, 70) at +200 W                         → 10 ns, 50·10 + 200·10 = 2500 W·ns
//   device 1, pack 2: [0, 100) at +10 W                          → 100 ns, 50·100 + 10·100 = 6000 W·ns
//   device 1, no pack: [0, 5) at +40 W                           → 200 W·ns above idle
//   pack 3: no op                                               → 0 ns, 0 J
// Outside the packs: 2·100 − (30 + 10 + 100) = 60 ns, 50·60 + 200 = 3200 W·ns.
// The run: idle 2·50·100 = 10000 + above idle 2000 + 1000 + 2000 + 1000 + 200 = 16200 W·ns.
std::vector<RunOp> two_devices() {
  return {{0, 0, 0, 10, 20, 100.0}, {1, 0, 0, 20, 20, 50.0}, {2, 0, 1, 60, 10, 200.0},
          {3, 1, 2, 0, 100, 10.0},  {4, 1, kNoRunPack, 0, 5, 40.0}};
}

TEST(PackCosts, HandBuiltRunByHand) {
  const PackCosts c = pack_costs(two_devices(), 4, 100, 50.0);
  ASSERT_EQ(c.packs.size(), 4u);
  EXPECT_EQ(c.packs[0].start_ns, 10);
  EXPECT_EQ(c.packs[0].time_ns, 30);
  EXPECT_NEAR(c.packs[0].energy_j, 4500e-9, 1e-18);
  EXPECT_EQ(c.packs[1].start_ns, 60);
  EXPECT_EQ(c.packs[1].time_ns, 10);
  EXPECT_NEAR(c.packs[1].energy_j, 2500e-9, 1e-18);
  EXPECT_EQ(c.packs[2].time_ns, 100);
  EXPECT_NEAR(c.packs[2].energy_j, 6000e-9, 1e-18);
  EXPECT_EQ(c.packs[3].time_ns, 0);
  EXPECT_EQ(c.packs[3].energy_j, 0.0);
  EXPECT_EQ(c.outside_ns, 60);
  EXPECT_NEAR(c.outside_energy_j, 3200e-9, 1e-18);
  double sum = c.outside_energy_j;
  for (const auto& p : c.packs) sum += p.energy_j;
  EXPECT_NEAR(sum, 16200e-9, 1e-18);
  EXPECT_THROW(pack_costs(two_devices(), 2, 100, 50.0), std::invalid_argument);  // pack 2 of 2
}

// Idle 50 W, one device, makespan 100 ns in 4 bins of 25 ns:
//   [0, 25) at +100 W        → bin 0: +100
//   [30, 90) at +40 W        → bin 1: 40·20/25 = 32, bin 2: 40, bin 3: 40·15/25 = 24
//   [95, 115) at +10 W       → clipped to [95, 100): bin 3: 10·5/25 = 2
// → [150, 82, 90, 76]; × 25 ns = 9950 W·ns = idle 5000 + 2500 + 2400 + 50.
TEST(PowerSeries, HandBuiltRunByHand) {
  const std::vector<RunOp> ops = {{0, 0, 0, 0, 25, 100.0}, {1, 0, 0, 30, 60, 40.0}, {2, 0, 0, 95, 20, 10.0}};
  const PowerSeries s = power_series(ops, 100, 50.0, 4);
  EXPECT_EQ(s.duration_ns, 100);
  ASSERT_EQ(s.power_w.size(), 4u);
  EXPECT_NEAR(s.power_w[0], 150.0, 1e-9);
  EXPECT_NEAR(s.power_w[1], 82.0, 1e-9);
  EXPECT_NEAR(s.power_w[2], 90.0, 1e-9);
  EXPECT_NEAR(s.power_w[3], 76.0, 1e-9);
  // Two devices: twice the idle power in every bin.
  const PowerSeries two = power_series(two_devices(), 100, 50.0, 1);
  EXPECT_NEAR(two.power_w[0], 100.0 + 6200.0 / 100, 1e-9);
  EXPECT_THROW(power_series(ops, 100, 50.0, 0), std::invalid_argument);
  EXPECT_THROW(power_series(ops, -1, 50.0, 4), std::invalid_argument);
}

const model::GpuSpec& a100() { return model::GpuCatalog::builtin().at("A100-SXM4-80GB"); }

// Two phases on one stream separated by a host sync and 3 ms of CPU time: two packs at min_pack 1 ms.
trace::Trace two_phases() {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 10'000, 1);
  h.kernel("sm80_xmma_gemm_a", 100'000, 10'000'000, 7, 1);
  h.call("cudaStreamSynchronize", 20'000, 10'100'000, 2);
  h.sync(trace::SyncKind::kStreamSync, 20'000, 10'100'000, 2, 0, 7);
  h.call("cudaLaunchKernel", 13'200'000, 10'000, 3);
  h.kernel("vectorized_elementwise_kernel", 13'300'000, 5'000'000, 7, 3);
  trace::Trace t = h.finish();
  t.meta.gpus.push_back({0, "NVIDIA A100-SXM4-80GB"});
  return t;
}

// A simulated run's breakdown adds up to the run itself: the packs and the rest to its energy
// and makespan, the power series (× its interval) to its energy.
TEST(RunBreakdown, SimulatedRunAddsUp) {
  const trace::Trace t = two_phases();
  pack::PackOptions po;
  po.min_pack_ns = 1'000'000;
  const pack::PackRun packs = pack::run_pack(t, graph::Window{}, po);
  ASSERT_EQ(packs.packing.packs.size(), 2u);
  SimBackend backend(a100(), 1);
  for (const double f : {1410.0, 990.0}) {
    SCOPED_TRACE(f);
    const RunMeasurement m = backend.run_static(t, packs, f);
    ASSERT_EQ(m.pack_costs.packs.size(), 2u);
    double energy = m.pack_costs.outside_energy_j;
    TimeNs time = m.pack_costs.outside_ns;
    for (const auto& p : m.pack_costs.packs) energy += p.energy_j, time += p.time_ns;
    EXPECT_NEAR(energy, m.energy_j, 1e-9 * m.energy_j);
    EXPECT_EQ(time, m.time_ns);  // one device
    ASSERT_EQ(m.power.power_w.size(), static_cast<std::size_t>(kPowerBins));
    EXPECT_EQ(m.power.duration_ns, m.time_ns);
    const double integral = std::accumulate(m.power.power_w.begin(), m.power.power_w.end(), 0.0) *
                            static_cast<double>(m.time_ns) / kPowerBins * 1e-9;
    EXPECT_NEAR(integral, m.energy_j, 1e-9 * m.energy_j);
    // Between the packs the GPU idles: the gap's bins are at idle power.
    const std::size_t gap_bin = static_cast<std::size_t>(12'000'000.0 / static_cast<double>(m.time_ns) * kPowerBins);
    if (f == 1410.0) {
      EXPECT_NEAR(m.power.power_w[gap_bin], a100().idle_power_w, 1e-9);
    }
  }
}

}  // namespace
}  // namespace emo::runtime
