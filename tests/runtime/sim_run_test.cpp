#include "runtime/sim_run.h"

#include <gtest/gtest.h>

#include "graph/hand_trace.h"

namespace emo::runtime {
namespace {

using testing::HandTrace;

const model::GpuSpec& a100() { return model::GpuCatalog::builtin().at("A100-SXM4-80GB"); }

// One stream: two GEMMs back to back (launched early), 10 ms each, then a 5 ms elementwise.
trace::Trace chain() {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 10'000, 1);
  h.call("cudaLaunchKernel", 20'000, 10'000, 2);
  h.call("cudaLaunchKernel", 40'000, 10'000, 3);
  h.kernel("sm80_xmma_gemm_a", 100'000, 10'000'000, 7, 1);
  h.kernel("sm80_xmma_gemm_b", 10'100'000, 10'000'000, 7, 2);
  h.kernel("vectorized_elementwise_kernel", 20'100'000, 5'000'000, 7, 3);
  return h.finish();
}

SimRunOptions no_noise() {
  SimRunOptions o;
  o.noise = false;
  return o;
}

SimRunOptions seeded(std::uint64_t seed) {
  SimRunOptions o;
  o.seed = seed;
  return o;
}

std::vector<double> clocks_for(const graph::DepGraph& g, double f) {
  std::vector<double> c(g.nodes(), 0.0);
  for (std::size_t i = 0; i < g.nodes(); ++i)
    if (g.gpu[i]) c[i] = f;
  return c;
}

TEST(SimRun, ReproducesTheTraceAtMaxClockWithoutNoise) {
  const auto t = chain();
  const auto g = graph::build_graph(t);
  SimDevice dev(a100(), {.seed = 1});
  const auto r = run_on_sim(t, g, dev, clocks_for(g, 1410), {}, no_noise());
  EXPECT_EQ(r.makespan_ns, 25'100'000);
  EXPECT_TRUE(r.simulated);
  double e = 60 * 25.1e-3;
  for (std::size_t i = 0; i < g.nodes(); ++i) {
    if (!g.gpu[i]) continue;
    const WorkOp op{std::string(t.strings.view(t.ops.name[g.op[i]])), trace::OpKind::kKernel, 0, 0, g.dur[i]};
    e += (dev.true_power_w(op, 1410) - 60) * g.dur[i] * 1e-9;
  }
  EXPECT_NEAR(r.energy_j, e, 1e-9);
  ASSERT_EQ(r.gpu_energy_j.size(), 1u);
}

TEST(SimRun, LowerClockIsSlowerAndNoiseIsSeeded) {
  const auto t = chain();
  const auto g = graph::build_graph(t);
  SimDevice dev(a100(), {.seed = 1});
  const auto fast = run_on_sim(t, g, dev, clocks_for(g, 1410), {}, no_noise());
  const auto slow = run_on_sim(t, g, dev, clocks_for(g, 990), {}, no_noise());
  EXPECT_GT(slow.makespan_ns, fast.makespan_ns);
  const auto a = run_on_sim(t, g, dev, clocks_for(g, 1410), {}, seeded(5));
  const auto b = run_on_sim(t, g, dev, clocks_for(g, 1410), {}, seeded(5));
  const auto c = run_on_sim(t, g, dev, clocks_for(g, 1410), {}, seeded(6));
  EXPECT_EQ(a.makespan_ns, b.makespan_ns);
  EXPECT_NE(a.makespan_ns, c.makespan_ns);
  EXPECT_NEAR(static_cast<double>(a.makespan_ns) / fast.makespan_ns, 1.0, 0.01);
}

TEST(SimRun, ClockTakesEffectOnlyAfterTheSwitchLatency) {
  const auto t = chain();
  const auto g = graph::build_graph(t);
  SimDevice dev(a100(), {.seed = 1});
  auto clocks = clocks_for(g, 1410);
  // Plan: the elementwise kernel (starting at 20.1 ms) at 990 MHz.
  std::size_t elementwise = 0;
  for (std::size_t i = 0; i < g.nodes(); ++i)
    if (g.gpu[i] && t.strings.view(t.ops.name[g.op[i]]) == "vectorized_elementwise_kernel") elementwise = i;
  clocks[elementwise] = 990;
  const auto planned = run_on_sim(t, g, dev, clocks, {}, no_noise());
  // Requested 20 ms early (= the latency): in effect at 20.1 ms, on time.
  const auto on_time = run_on_sim(t, g, dev, clocks, {{0, 100'000, 990}}, no_noise());
  EXPECT_EQ(on_time.makespan_ns, planned.makespan_ns);
  EXPECT_EQ(on_time.ops_at_other_clock, 0);
  // Requested at its start: the switch lands 20 ms later, after it ends; it runs at 1410.
  const auto late = run_on_sim(t, g, dev, clocks, {{0, 20'100'000, 990}}, no_noise());
  EXPECT_EQ(late.makespan_ns, 25'100'000);
  EXPECT_EQ(late.ops_at_other_clock, 1);
  // Requested too early: the second GEMM (from 10.1 ms) also runs at 990 and delays everything.
  const auto early = run_on_sim(t, g, dev, clocks, {{0, -10'000'000, 990}}, no_noise());
  EXPECT_GT(early.makespan_ns, planned.makespan_ns);
  EXPECT_GE(early.ops_at_other_clock, 1);
  EXPECT_THROW(run_on_sim(t, g, dev, std::vector<double>(1, 1410.0)), std::invalid_argument);
}

}  // namespace
}  // namespace emo::runtime
