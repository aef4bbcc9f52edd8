// Many GPUs, many processes (issue 17): the hello line, GPU identities, the router that maps a
// process to its policy section and NVML GPU, and the planner's minimum switch interval, each as
// a pure function with answers worked out by hand.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "runtime/policy_runtime.h"

namespace emo::runtime {
namespace {

constexpr std::int64_t kMs = 1'000'000;

TEST(HelloLine, Parses) {
  const auto h = parse_hello_line("H 4242 3 1 GPU-fake-0000-0000-0000-000000000002");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->pid, 4242);
  EXPECT_EQ(h->rank, 3);
  EXPECT_EQ(h->device, 1);
  EXPECT_EQ(h->gpu_id, "GPU-fake-0000-0000-0000-000000000002");
  const auto anon = parse_hello_line("H 7 -1 0 -");
  ASSERT_TRUE(anon);
  EXPECT_EQ(anon->rank, -1);
  EXPECT_EQ(anon->gpu_id, "");
  for (const char* bad : {"", "H", "H 1 0 0", "H 1 0 0 GPU-a extra", "H 0 0 0 GPU-a", "H 1 -2 0 GPU-a",
                          "H 1 0 -1 GPU-a", "P 1 0 0 GPU-a", "H x 0 0 GPU-a"}) {
    EXPECT_FALSE(parse_hello_line(bad)) << bad;
  }
}

TEST(ProgressLine, CarriesTheProcess) {
  const auto p = parse_progress_line("P 2 1 0 5000 4242", 9);
  ASSERT_TRUE(p);
  EXPECT_EQ(std::make_tuple(p->device, p->pack, p->t_ns, p->pid), std::make_tuple(2, 1, 5000, 4242));
  EXPECT_EQ(parse_progress_line("P 2 1 0 5000", 9)->pid, 0);  // the one-process form
}

TEST(GpuId, UuidAndPciBusId) {
  EXPECT_TRUE(same_gpu_id("GPU-5A1C", "gpu-5a1c"));
  EXPECT_TRUE(same_gpu_id("00000000:3B:00.0", "0000:3b:00.0"));
  EXPECT_FALSE(same_gpu_id("0000:3b:00.0", "0000:3c:00.0"));
  EXPECT_FALSE(same_gpu_id("", ""));
}

/// A job policy of 4 ranks: section i is rank i.
policy::Policy job_of_four() {
  policy::Policy p;
  for (int i = 0; i < 4; ++i) {
    policy::GpuPolicy g;
    g.device = i;
    g.rank = i;
    g.packs.push_back({});
    p.gpus.push_back(g);
  }
  return p;
}

std::vector<GpuIdentity> node_of_four() {
  std::vector<GpuIdentity> v;
  for (int i = 0; i < 4; ++i) v.push_back({i, "GPU-" + std::to_string(i), ""});
  return v;
}

TEST(GpuRouter, RoutesEachSectionToTheGpuItsProcessNames) {
  GpuRouter r(job_of_four(), node_of_four());
  // Rank 0 runs on NVML GPU 2 (CUDA_VISIBLE_DEVICES=2,...), rank 1 on GPU 0.
  EXPECT_EQ(r.claim({100, 0, 0, "GPU-2"}), "");
  EXPECT_EQ(r.claim({101, 1, 1, "gpu-0"}), "");
  EXPECT_EQ(r.gpu_of(0), 2);
  EXPECT_EQ(r.gpu_of(1), 0);
  EXPECT_EQ(r.gpu_of(3), 3);  // unclaimed: its own index
  EXPECT_TRUE(r.accepts({0, 0, 0, 0, 100}));
  EXPECT_FALSE(r.accepts({0, 0, 0, 0, 101}));  // another process's section
  EXPECT_FALSE(r.accepts({0, 0, 0, 0, 0}));    // claimed: an anonymous line is not its process's
  EXPECT_TRUE(r.accepts({3, 0, 0, 0, 0}));     // unclaimed and GPU 3 exists: the one-process form
  EXPECT_FALSE(r.accepts({7, 0, 0, 0, 0}));    // no such section
  EXPECT_EQ(r.unclaimed(), (std::vector<std::int32_t>{2, 3}));
  EXPECT_EQ(r.claims(), 2u);
}

TEST(GpuRouter, RefusesWithOneLine) {
  GpuRouter r(job_of_four(), node_of_four());
  ASSERT_EQ(r.claim({100, 0, 0, "GPU-2"}), "");
  EXPECT_EQ(r.claim({100, 0, 0, "GPU-2"}), "");  // the same hello again
  EXPECT_EQ(r.claim({200, 0, 0, "GPU-1"}), "process 200 (rank 0) claims section 0, already claimed by process 100");
  EXPECT_EQ(r.claim({201, 1, 1, "GPU-2"}),
            "process 201 (rank 1) claims GPU 2 for section 1, already claimed by process 100 for section 0");
  EXPECT_EQ(r.claim({202, 2, 1, "GPU-1"}), "process 202 (rank 2) claims section 1, which is rank 1's");
  EXPECT_EQ(r.claim({203, 5, 5, "GPU-1"}), "process 203 (rank 5) follows section 5, which the policy does not have");
  EXPECT_NE(r.claim({204, 1, 1, "GPU-9"}).find("not among the GPUs emo run drives"), std::string::npos);
  EXPECT_EQ(r.claims(), 1u);
}

TEST(GpuRouter, WithoutIdentitiesKeepsTheClaimOnTheSectionsIndex) {
  GpuRouter r(job_of_four(), {});  // a dry run without NVML
  EXPECT_EQ(r.claim({100, 2, 2, "GPU-x"}), "");
  EXPECT_EQ(r.gpu_of(2), 2);
  EXPECT_TRUE(r.accepts({2, 0, 0, 0, 100}));
}

/// Packs at 0/10/20/30 ms of 10 ms, clocks 1200/990/1410/1100, default 1410.
policy::GpuPolicy four_packs() {
  policy::GpuPolicy g;
  g.default_clock_mhz = 1410;
  const double clocks[] = {1200, 990, 1410, 1100};
  for (int i = 0; i < 4; ++i) {
    policy::PackClock k;
    k.index = i;
    k.start_offset_ns = 10 * kMs * i;
    k.duration_ns = 10 * kMs;
    k.clock_mhz = clocks[i];
    g.packs.push_back(k);
  }
  return g;
}

struct Out {
  std::int64_t t_ms;
  double mhz;
  bool deferred;
  bool operator==(const Out&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Out& o) {
  return os << "{" << o.t_ms << " ms " << o.mhz << (o.deferred ? " deferred}" : "}");
}

/// Polls `pl` every 1 ms from `from_ms` to `to_ms` and lists what it issues (planned time).
std::vector<Out> poll(SwitchPlanner& pl, std::int64_t from_ms, std::int64_t to_ms) {
  std::vector<Out> out;
  for (std::int64_t t = from_ms; t <= to_ms; ++t) {
    for (const Switch& s : pl.due(t * kMs)) out.push_back({s.t_ns / kMs, s.clock_mhz, s.deferred});
  }
  return out;
}

// By hand (lead 2 ms, interval 15 ms; pack 0 seen at 100 ms, so pack j is predicted at 100 +
// 10 j; a switch up is planned 2 ms early, a switch down 0.5 ms early): 1200 late at 100. 990
// (down) due 109.5 < 100 + 15: held, issued at 115. 1410 (up) due 118 < 130: held; 1100 (down)
// due 129.5 < 130 replaces it (dropped) and is issued at 130. The default 1410 (up) due
// 100 + 40 − 2 = 138 < 145: held, issued at 145.
TEST(SwitchPlannerInterval, DefersAndDropsByHand) {
  SwitchPlanner pl(four_packs(), 2 * kMs, 1410, 15 * kMs);
  const auto late = pl.observe({0, 0, 0, 100 * kMs});
  ASSERT_TRUE(late);
  EXPECT_EQ(late->clock_mhz, 1200);
  EXPECT_EQ(poll(pl, 100, 200), (std::vector<Out>{{115, 990, true}, {130, 1100, true}, {145, 1410, true}}));
  EXPECT_EQ(pl.deferred(), 3);
  EXPECT_EQ(pl.dropped(), 1);
  EXPECT_EQ(pl.skipped(), 0);
}

// The same with no interval: up 2 ms before its pack, down 0.5 ms before (109.5, 118, 129.5, 138;
// `poll` lists whole ms of the planned time).
TEST(SwitchPlannerInterval, ZeroIntervalChangesNothing) {
  SwitchPlanner pl(four_packs(), 2 * kMs, 1410, 0);
  ASSERT_TRUE(pl.observe({0, 0, 0, 100 * kMs}));
  EXPECT_EQ(poll(pl, 100, 200),
            (std::vector<Out>{{109, 990, false}, {118, 1410, false}, {129, 1100, false}, {138, 1410, false}}));
  EXPECT_EQ(pl.deferred(), 0);
}

// Interval 10 ms: 990 due 109.5 < 110: deferred to 110; 1410 due 118 < 120: deferred to 120; 1100
// due 129.5 < 130: deferred to 130; the default 1410 due 138 < 140: deferred to 140. Nothing
// dropped: each held switch is released before the next is due.
TEST(SwitchPlannerInterval, ShiftsAChainWithoutDropping) {
  SwitchPlanner pl(four_packs(), 2 * kMs, 1410, 10 * kMs);
  ASSERT_TRUE(pl.observe({0, 0, 0, 100 * kMs}));
  EXPECT_EQ(poll(pl, 100, 200),
            (std::vector<Out>{{110, 990, true}, {120, 1410, true}, {130, 1100, true}, {140, 1410, true}}));
  EXPECT_EQ(pl.dropped(), 0);
}

// A late switch inside the interval is held too: 1200 late at 100; pack 1 seen at 104 (its clock
// 990 not requested) → late switch held until 115; pack 2's switch (due 104 - 10 + 20 - 2 = 112)
// replaces it (dropped) and goes out at 115; the observation dropped nothing else.
TEST(SwitchPlannerInterval, HoldsALateSwitch) {
  SwitchPlanner pl(four_packs(), 2 * kMs, 1410, 15 * kMs);
  ASSERT_TRUE(pl.observe({0, 0, 0, 100 * kMs}));
  EXPECT_FALSE(pl.observe({0, 1, 0, 104 * kMs}));
  EXPECT_EQ(pl.next_due_ns(), 112 * kMs);
  const auto out = poll(pl, 104, 116);
  EXPECT_EQ(out, (std::vector<Out>{{115, 1410, true}}));
  EXPECT_EQ(pl.dropped(), 1);
}

}  // namespace
}  // namespace emo::runtime
