#include "runtime/sim_run.h"

#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <utility>
#include <vector>

#include "graph/hand_trace.h"
#include "pack/random_trace.h"
#include "runtime/sim_backend.h"
#include "timing/timing.h"

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


// With clock requests run_on_sim iterates start times and clocks to a fixed point, recomputing a
// node's duration only where its clock changed between passes. Where it converged (fewer passes
// than the cap), every GPU op must have run for exactly its duration at the clock in effect on its
// device at its start — the clock found here from the requests (the last whose request time +
// switch latency is at or before the start; before any, the max clock), the duration from
// StaticSimRuns at that clock (one fresh evaluation per clock, no memo) — and the starts must be
// the replay of the graph with those durations. Random traces of 1–2 GPUs, 1–5 requests per GPU
// at random times over the run and random clocks, noise on.
TEST(RunOnSim, WithRequestsEachOpRunsForItsDurationAtTheClockInEffectAtItsStart) {
  const std::vector<double> kClocks{1410.0, 1230.0, 990.0, 705.0};
  const TimeNs latency_ns = static_cast<TimeNs>(a100().switch_latency_ms * 1e6);
  int converged = 0, moved = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const trace::Trace t = emo::testing::random_trace(seed, 1 + static_cast<int>(seed % 2), 1 + static_cast<int>((seed / 2) % 2),
                                                      1 + static_cast<int>((seed / 4) % 3), 120);
    const auto g = graph::build_graph(t);
    SimDevice dev(a100(), {.seed = seed});
    const StaticSimRuns statics(t, g, dev, seeded(seed * 7));
    std::map<double, std::vector<TimeNs>> dur_at;  // per clock: every node's duration there
    for (const double f : kClocks) (void)statics.run(f, dur_at[f]);
    const TimeNs span = run_on_sim(t, g, dev, clocks_for(g, 1410), {}, seeded(seed * 7)).makespan_ns;
    emo::testing::Rng r{seed * 11};
    std::vector<ClockRequest> requests;  // per device, at distinct times over [-latency, span - latency]
    std::map<std::int32_t, int> devices;
    for (std::size_t i = 0; i < g.nodes(); ++i)
      if (g.gpu[i]) devices[t.ops.device[g.op[i]]] = 1;
    for (const auto& [d, unused] : devices) {
      const int n = 1 + static_cast<int>(r.next() % 5);
      for (int k = 0; k < n; ++k)
        requests.push_back({d, -latency_ns + span * (2 * k + 1) / (2 * n) + r.in(-span / (4 * n), span / (4 * n)),
                            kClocks[r.next() % kClocks.size()]});
    }
    const SimRunResult run = run_on_sim(t, g, dev, clocks_for(g, 1410), requests, seeded(seed * 7));
    if (run.passes >= SimRunOptions{}.max_passes) continue;  // capped: not a fixed point
    ++converged;
    std::vector<TimeNs> dur(g.dur.begin(), g.dur.end());
    for (const RunOp& op : run.ops) {
      double f = 1410;
      TimeNs latest = INT64_MIN;
      for (const ClockRequest& q : requests) {
        if (q.device == op.device && q.request_ns + latency_ns <= op.start_ns && q.request_ns + latency_ns >= latest)
          latest = q.request_ns + latency_ns, f = q.clock_mhz;
      }
      ASSERT_EQ(op.dur_ns, dur_at[f][op.node]) << "seed " << seed << " node " << op.node << " at " << f << " MHz";
      dur[op.node] = op.dur_ns;
      moved += f != 1410;
    }
    const timing::Schedule s = timing::replay(g, dur);
    for (const RunOp& op : run.ops) ASSERT_EQ(op.start_ns, s.start(op.node) - g.window_start_ns) << "seed " << seed;
    ASSERT_EQ(run.makespan_ns, s.makespan_ns) << "seed " << seed;
  }
  EXPECT_GT(converged, 50);
  EXPECT_GT(moved, 500);  // ops at a requested clock, not only the max
}

// hold_to_interval: the simulated device issues a policy's switches as `emo run`'s SwitchPlanner
// does under a minimum interval. Requests (ms) −2: 1200, 8: 990, 18: 1410, 28: 1100 on device 0,
// which starts at 1100 (four 10 ms packs, switch latency 2 ms). Worked by hand:
//   interval 15: 1200 at −2; 990 due 8 < 13: held, issued at 13; 1410 due 18 < 28: held; at 28 the
//   held 1410 is released (28 ≥ 13 + 15) at 28, then 1100 due 28 < 43: held, issued at 43.
//   interval 25: 1200 at −2; 990 held (8 < 23); 1410 due 18 replaces it (dropped); released at 23;
//   1100 due 28 < 48: held, issued at 48.
//   interval 0: unchanged.
std::vector<std::pair<TimeNs, double>> held(TimeNs interval_ms, std::vector<ClockRequest> extra = {}) {
  constexpr TimeNs kMs = 1'000'000;
  std::vector<ClockRequest> r{{0, -2 * kMs, 1200}, {0, 8 * kMs, 990}, {0, 18 * kMs, 1410}, {0, 28 * kMs, 1100}};
  r.insert(r.end(), extra.begin(), extra.end());
  std::vector<std::pair<TimeNs, double>> out;
  for (const ClockRequest& q : hold_to_interval(r, interval_ms * kMs, {{0, 1100.0}, {1, 1410.0}}))
    out.push_back({q.request_ns / kMs * (q.device == 0 ? 1 : 1000), q.clock_mhz});
  return out;
}

TEST(HoldToInterval, DefersAndReplacesAsTheSwitchPlannerDoes) {
  using V = std::vector<std::pair<TimeNs, double>>;
  EXPECT_EQ(held(15), (V{{-2, 1200}, {13, 990}, {28, 1410}, {43, 1100}}));
  EXPECT_EQ(held(25), (V{{-2, 1200}, {23, 1410}, {48, 1100}}));
  EXPECT_EQ(held(0), (V{{-2, 1200}, {8, 990}, {18, 1410}, {28, 1100}}));
}

// issued_requests: a policy's requests as `emo run` issues them — its switches early by the
// latency (up) or a quarter of it (down), then held to the policy's minimum interval. Device 0's
// packs start at 0, 10, 20, 30 ms at 1200, 990, 1410, 1100 MHz; latency 2 ms. Worked by hand: the
// iteration starts at the last pack's clock, 1100; 1200 is up: at −2; 990 down: at 9.5; 1410 up:
// at 18; 1100 down: at 29.5. Held to 15 ms (as HoldToInterval above): −2; 9.5 < 13: at 13; 18 <
// 28: held, released at 28; 29.5 < 43: at 43. With no interval: unchanged.
TEST(IssuedRequests, AreTheSwitchesEarlyByTheirLeadHeldToTheMinimumInterval) {
  constexpr TimeNs kMs = 1'000'000;
  policy::Policy p;
  p.gpus.emplace_back();
  for (const auto& [start_ms, mhz] : std::vector<std::pair<TimeNs, double>>{{0, 1200}, {10, 990}, {20, 1410}, {30, 1100}}) {
    policy::PackClock k;
    k.start_offset_ns = start_ms * kMs;
    k.clock_mhz = mhz;
    p.gpus[0].packs.push_back(k);
  }
  using V = std::vector<std::pair<TimeNs, double>>;
  auto issued = [&](double interval_ms) {
    p.min_switch_interval_ms = interval_ms;
    std::map<std::int32_t, double> initial;
    V out;
    for (const ClockRequest& q : issued_requests(p, 2 * kMs, initial)) {
      EXPECT_EQ(q.device, 0);
      out.push_back({q.request_ns, q.clock_mhz});
    }
    EXPECT_EQ(initial, (std::map<std::int32_t, double>{{0, 1100.0}}));
    return out;
  };
  EXPECT_EQ(issued(15), (V{{-2 * kMs, 1200}, {13 * kMs, 990}, {28 * kMs, 1410}, {43 * kMs, 1100}}));
  EXPECT_EQ(issued(0), (V{{-2 * kMs, 1200}, {9'500'000, 990}, {18 * kMs, 1410}, {29'500'000, 1100}}));
}

TEST(HoldToInterval, ARedundantRequestIsDroppedAndDevicesAreIndependent) {
  using V = std::vector<std::pair<TimeNs, double>>;
  constexpr TimeNs kMs = 1'000'000;
  // Device 1 (starts at 1410; its times ×1000 in `held`'s output): 1410 at 0 is redundant
  // (dropped), 990 at 5 is issued, 1410 at 6 is held until 5 + 15 = 20.
  EXPECT_EQ(held(15, {{1, 0, 1410}, {1, 5 * kMs, 990}, {1, 6 * kMs, 1410}}),
            (V{{-2, 1200}, {13, 990}, {28, 1410}, {43, 1100}, {5000, 990}, {20000, 1410}}));
}

// planner_requests: the requests `emo run`'s SwitchPlanner issues, re-anchored on each observed
// pack start. Device 0's packs start (predicted) at 0, 10, 20, 30 ms at 1410, 990, 1410, 1200 MHz;
// latency 4 ms (up: asked 4 ms early, down: 1 ms). Worked by hand:
//   open loop (switch_requests): the iteration starts at the last pack's clock, 1200; 1410 up at
//   −4; 990 down at 9; 1410 up at 16; 1200 down at 29.
//   observed on time (0, 10, 20, 30): each observation re-anchors at 0 — the same four requests.
//   Each switch is planned from the last observation's anchor and from the iteration's first (0):
//   up at the earlier time, down at the later.
//   pack 2 observed 3 ms late (23): 1410 for it was asked at 16, before; re-anchored at 3, pack 3's
//   switch down moves to the later of 3 + 30 − 1 = 32 and 29: 32 — but pack 3 is seen starting at
//   30, at 1410, before that: a late switch at 30 instead (seen at 33, late too: the switch at 32).
//   pack 2 observed 3 ms early (17): re-anchored at −3, pack 3's switch down stays at the later of
//   26 and 29: 29 (pack 3 need not start early: the open loop's request).
//   pack 1 observed 3 ms late (13): re-anchored at 3, pack 2's switch up at the earlier of 19 and
//   16: 16; pack 2 then seen on time (20) re-anchors at 0: pack 3's at 29.
//   pack 2 observed 5 ms early (15), before its switch up (16) was asked: a late switch at 15; then
//   re-anchored at −5, pack 3's at the later of 24 and 29: 29.
// Packs 0–3 at 0/10/13/30 ms, 1410/990/1410/990 MHz (C): the open loop drops pack 1's switch down
// (asked at 9, no earlier than pack 2's up at 13 − 4 = 9: overtaken), so the clock stays 1410 and
// pack 3's 990 is asked at 29. Observed on time, the planner sees pack 1 begin at 10 at 1410: a
// late switch to 990 would be due, but re-anchored at 0, pack 2's switch up to 1410 (planned at 9)
// is already overdue and supersedes it — no late switch, and 1410 is the clock already asked
// (until stop 46: 990 then 1410, both at 10); then 990 at 29: the open loop's requests.
policy::Policy planner_policy(const std::vector<std::pair<TimeNs, double>>& packs) {
  constexpr TimeNs kMs = 1'000'000;
  policy::Policy p;
  p.gpus.emplace_back();
  for (const auto& [start_ms, mhz] : packs) {
    policy::PackClock k;
    k.index = static_cast<std::int32_t>(p.gpus[0].packs.size());
    k.start_offset_ns = start_ms * kMs;
    k.clock_mhz = mhz;
    p.gpus[0].packs.push_back(k);
  }
  return p;
}

std::vector<std::pair<double, double>> ms_of(const std::vector<ClockRequest>& requests) {
  std::vector<std::pair<double, double>> out;
  for (const ClockRequest& q : requests) out.emplace_back(static_cast<double>(q.request_ns) * 1e-6, q.clock_mhz);
  return out;
}

TEST(PlannerRequests, ReanchorOnEachObservedPackStartAsEmoRunDoes) {
  constexpr TimeNs kMs = 1'000'000;
  const policy::Policy a = planner_policy({{0, 1410}, {10, 990}, {20, 1410}, {30, 1200}});
  using V = std::vector<std::pair<double, double>>;
  std::map<std::int32_t, double> initial;
  EXPECT_EQ(ms_of(switch_requests(a, 4 * kMs, initial)), (V{{-4, 1410}, {9, 990}, {16, 1410}, {29, 1200}}));
  auto planned = [&](std::vector<TimeNs> observed_ms) {
    for (TimeNs& t : observed_ms) t *= kMs;
    std::map<std::int32_t, double> init;
    const V out = ms_of(planner_requests(a, 4 * kMs, {observed_ms}, init));
    EXPECT_EQ(init, (std::map<std::int32_t, double>{{0, 1200.0}}));
    return out;
  };
  EXPECT_EQ(planned({0, 10, 20, 30}), (V{{-4, 1410}, {9, 990}, {16, 1410}, {29, 1200}}));
  EXPECT_EQ(planned({0, 10, 23, 30}), (V{{-4, 1410}, {9, 990}, {16, 1410}, {30, 1200}}));
  EXPECT_EQ(planned({0, 10, 23, 33}), (V{{-4, 1410}, {9, 990}, {16, 1410}, {32, 1200}}));
  EXPECT_EQ(planned({0, 10, 17, 30}), (V{{-4, 1410}, {9, 990}, {16, 1410}, {29, 1200}}));
  EXPECT_EQ(planned({0, 13, 20, 30}), (V{{-4, 1410}, {9, 990}, {16, 1410}, {29, 1200}}));
  EXPECT_EQ(planned({0, 10, 15, 30}), (V{{-4, 1410}, {9, 990}, {15, 1410}, {29, 1200}}));

  // Stop 49: pack 1 with its own switch-down lead (4 ms, the latency): 990 asked at 10 − 4 = 6,
  // open loop and closed loop alike; pack 3 (1200 after 1410) with a 2 ms lead: at 28.
  policy::Policy led = a;
  led.gpus[0].packs[1].down_lead_ns = 4 * kMs;
  led.gpus[0].packs[3].down_lead_ns = 2 * kMs;
  EXPECT_EQ(ms_of(switch_requests(led, 4 * kMs, initial)), (V{{-4, 1410}, {6, 990}, {16, 1410}, {28, 1200}}));
  EXPECT_EQ(ms_of(planner_requests(led, 4 * kMs, {{0, 10 * kMs, 20 * kMs, 30 * kMs}}, initial)),
            (V{{-4, 1410}, {6, 990}, {16, 1410}, {28, 1200}}));

  const policy::Policy c = planner_policy({{0, 1410}, {10, 990}, {13, 1410}, {30, 990}});
  EXPECT_EQ(ms_of(switch_requests(c, 4 * kMs, initial)), (V{{-4, 1410}, {29, 990}}));
  EXPECT_EQ(ms_of(planner_requests(c, 4 * kMs, {{0, 10 * kMs, 13 * kMs, 30 * kMs}}, initial)),
            (V{{-4, 1410}, {29, 990}}));
  // Minimum switch interval 15 ms, observed on time (worked by hand): pack 0's 1410 at −4 counts,
  // so pack 1's 990 (due 9) is held to −4 + 15 = 11; the planner, re-planning at 10, asks the late
  // 990 instead, held too, and released at 11 when pack 2's 1410 falls due (16); that one is held
  // to 26 and, seen late at 20, asked as a late switch held to 26; pack 3's 1200 (due 29, late at
  // 30) is held to 41. Without pack 0's request counted: 990 at 9, 1410 at 24, 1200 at 39.
  policy::Policy held = a;
  held.min_switch_interval_ms = 15;
  EXPECT_EQ(ms_of(planner_requests(held, 4 * kMs, {{0, 10 * kMs, 20 * kMs, 30 * kMs}}, initial)),
            (V{{-4, 1410}, {11, 990}, {26, 1410}, {41, 1200}}));
  // A pack not observed (INT64_MAX) re-anchors nothing; a list per GPU of its pack count is needed.
  EXPECT_EQ(ms_of(planner_requests(a, 4 * kMs, {{0, INT64_MAX, INT64_MAX, INT64_MAX}}, initial)),
            (V{{-4, 1410}, {9, 990}, {16, 1410}, {29, 1200}}));
  EXPECT_THROW((void)planner_requests(a, 4 * kMs, {{0, 10 * kMs}}, initial), std::invalid_argument);
  EXPECT_THROW((void)planner_requests(a, 4 * kMs, {}, initial), std::invalid_argument);
}

// run_policy_closed_loop's fixed point, with a replay that records its requests and an observer
// whose starts are those of PlannerRequests' second case (pack 2 at 23 ms): the first replay has
// the open loop's requests; the second, the planner's from those starts (pack 3's late, at 30 ms); the
// third would repeat them, so there is none — two replays, the second's run and requests returned.
TEST(RunPolicyClosedLoop, ReplaysUntilTheRequestsRepeat) {
  constexpr TimeNs kMs = 1'000'000;
  const policy::Policy a = planner_policy({{0, 1410}, {10, 990}, {20, 1410}, {30, 1200}});
  std::vector<std::vector<ClockRequest>> replayed;
  std::vector<ClockRequest> requests;
  std::map<std::int32_t, double> initial;
  const SimRunResult run = run_policy_closed_loop(
      a, 4 * kMs,
      [&](const std::vector<ClockRequest>& r, const std::map<std::int32_t, double>& init) {
        EXPECT_EQ(init, (std::map<std::int32_t, double>{{0, 1200.0}}));
        replayed.push_back(r);
        SimRunResult out;
        out.makespan_ns = static_cast<TimeNs>(replayed.size());  // which replay
        return out;
      },
      [&](const SimRunResult&) { return std::vector<std::vector<TimeNs>>{{0, 10 * kMs, 23 * kMs, 30 * kMs}}; },
      &requests, &initial);
  using V = std::vector<std::pair<double, double>>;
  ASSERT_EQ(replayed.size(), 2u);
  EXPECT_EQ(ms_of(replayed[0]), (V{{-4, 1410}, {9, 990}, {16, 1410}, {29, 1200}}));
  EXPECT_EQ(ms_of(replayed[1]), (V{{-4, 1410}, {9, 990}, {16, 1410}, {30, 1200}}));
  EXPECT_EQ(run.makespan_ns, 2);
  EXPECT_EQ(ms_of(requests), ms_of(replayed[1]));
  EXPECT_EQ(initial, (std::map<std::int32_t, double>{{0, 1200.0}}));
  // Starts that move with the requests never settle: kClosedLoopReplays replays, the last returned.
  replayed.clear();
  TimeNs shift = 0;
  const SimRunResult last = run_policy_closed_loop(
      a, 4 * kMs,
      [&](const std::vector<ClockRequest>& r, const std::map<std::int32_t, double>&) {
        replayed.push_back(r);
        SimRunResult out;
        out.makespan_ns = static_cast<TimeNs>(replayed.size());
        return out;
      },
      [&](const SimRunResult&) {
        shift += kMs / 10;
        return std::vector<std::vector<TimeNs>>{{0, 10 * kMs, 20 * kMs + shift, 30 * kMs}};
      });
  EXPECT_EQ(replayed.size(), static_cast<std::size_t>(kClosedLoopReplays));
  EXPECT_EQ(last.makespan_ns, kClosedLoopReplays);
}

// StaticSimRuns against run_on_sim (the replayed run, a second method): every GPU node's duration
// and the sum of its ops' energy above idle, to the bit, at several clocks (noise on, several
// seeds), on the hand chain and on random traces of every shape; the chain's 990 MHz GEMM is
// also worked from the device's formula. An unsupported clock is refused as run_on_sim refuses it.
TEST(StaticSimRuns, AreRunOnSimsOpsAtOneClockForEveryGpuOp) {
  int compared = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const trace::Trace t = seed == 1 ? chain()
                                     : emo::testing::random_trace(seed, 1 + static_cast<int>(seed % 2), 1 + static_cast<int>((seed / 2) % 2),
                                                                  1 + static_cast<int>((seed / 4) % 3), 40);
    const auto g = graph::build_graph(t);
    SimDevice dev(a100(), {.seed = seed});
    const StaticSimRuns runs(t, g, dev, seeded(seed * 3));
    std::vector<TimeNs> dur;
    for (const double f : {1410.0, 1230.0, 990.0, 705.0}) {
      const double above = runs.run(f, dur);
      const auto r = run_on_sim(t, g, dev, clocks_for(g, f), {}, seeded(seed * 3));
      ASSERT_EQ(dur.size(), g.nodes());
      std::vector<TimeNs> want(g.dur.begin(), g.dur.end());
      double want_above = 0;
      for (const RunOp& op : r.ops) {
        want[op.node] = op.dur_ns;
        want_above += op.above_idle_w * static_cast<double>(op.dur_ns) * 1e-9;
      }
      ASSERT_EQ(dur, want) << "seed " << seed << " at " << f << " MHz";
      EXPECT_EQ(above, want_above) << "seed " << seed << " at " << f << " MHz";
      ++compared;
    }
  }
  EXPECT_EQ(compared, 160);
  // The chain without noise: the first GEMM at 990 MHz from the device's formula.
  const auto t = chain();
  const auto g = graph::build_graph(t);
  SimDevice dev(a100(), {.seed = 1});
  const StaticSimRuns quiet(t, g, dev, no_noise());
  std::vector<TimeNs> dur;
  (void)quiet.run(990, dur);
  std::uint32_t gemm = 0;
  while (!g.gpu[gemm]) ++gemm;
  const WorkOp op{std::string(t.strings.view(t.ops.name[g.op[gemm]])), trace::OpKind::kKernel, 0, 0, g.dur[gemm]};
  EXPECT_EQ(dur[gemm], std::llround(dev.true_time_ns(dev.truth(op), g.dur[gemm], 990)));
  EXPECT_GT(dur[gemm], g.dur[gemm]);
  EXPECT_THROW((void)quiet.run(1000.5, dur), std::invalid_argument);
}

}  // namespace
}  // namespace emo::runtime
