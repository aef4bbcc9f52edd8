// The policy runtime: the switch planner as a pure function of synthetic progress, the progress
// protocol, and run_policy end to end with the recording NVML stand-in and a fake workload (a
// bash script that writes progress lines to $EMO_PROGRESS_FD).
#include "runtime/policy_runtime.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/nvml_device.h"

namespace emo::runtime {
namespace {

constexpr std::int64_t kMs = 1'000'000;

/// Packs at 0 / 10 / 20 ms of 10 ms each, clocks 1410 / 1200 / 1410, default 1410.
policy::GpuPolicy three_packs(std::vector<double> clocks = {1410, 1200, 1410}, double default_mhz = 1410) {
  policy::GpuPolicy g;
  g.device = 0;
  g.default_clock_mhz = default_mhz;
  for (int i = 0; i < static_cast<int>(clocks.size()); ++i) {
    policy::PackClock k;
    k.index = i;
    k.start = {"kernel_" + std::to_string(i), 7, 0};
    k.start_offset_ns = 10 * kMs * i;
    k.duration_ns = 10 * kMs;
    k.ops = 3;
    k.clock_mhz = clocks[static_cast<std::size_t>(i)];
    g.packs.push_back(k);
  }
  return g;
}

struct Issued {
  std::int64_t t_ns;
  std::int32_t pack;
  std::int64_t iteration;
  double clock_mhz;
  SwitchReason reason;
  bool operator==(const Issued&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Issued& s) {
  return os << "{t=" << s.t_ns << " pack=" << s.pack << " it=" << s.iteration << " " << s.clock_mhz << " MHz "
            << switch_reason_name(s.reason) << "}";
}

/// Drives a planner through `progress` (in time order), polling every 0.5 ms, and returns every
/// switch with the time it was issued.
std::vector<Issued> simulate(SwitchPlanner& planner, const std::vector<PackStarted>& progress, std::int64_t end_ns) {
  std::vector<Issued> out;
  std::size_t next = 0;
  for (std::int64_t t = 0; t <= end_ns; t += kMs / 2) {
    while (next < progress.size() && progress[next].t_ns <= t) {
      if (auto s = planner.observe(progress[next])) out.push_back({t, s->pack, s->iteration, s->clock_mhz, s->reason});
      ++next;
    }
    for (const Switch& s : planner.due(t)) out.push_back({t, s.pack, s.iteration, s.clock_mhz, s.reason});
  }
  return out;
}

constexpr std::int64_t kHalfMs = kMs / 2;

TEST(SwitchPlanner, IssuesAnUpSwitchOneLatencyEarlyAndADownSwitchAQuarterOfOne) {
  SwitchPlanner planner(three_packs(), 2 * kMs, 1410);
  // Pack 0 of iteration 0 seen at 100 ms: pack 1 (1200, down) predicted at 110 ms -> switch at
  // 109.5 ms (a quarter of the 2 ms latency early); pack 2 (1410, up) at 120 ms -> 118 ms; the
  // default (1410) equals pack 2's clock and is skipped.
  const auto got = simulate(planner, {{0, 0, 0, 100 * kMs}}, 200 * kMs);
  EXPECT_EQ(got, (std::vector<Issued>{{109 * kMs + kHalfMs, 1, 0, 1200, SwitchReason::kEarly},
                                      {118 * kMs, 2, 0, 1410, SwitchReason::kEarly}}));
  EXPECT_EQ(planner.skipped(), 1);
}

// Stop 49: a pack's own switch-down lead (policy::PackClock::down_lead_ns) replaces the quarter
// latency; capped at the latency; an up switch keeps one latency.
TEST(SwitchPlanner, APacksDownLeadReplacesTheQuarterLatency) {
  policy::GpuPolicy g = three_packs({1410, 1200, 990});
  g.packs[1].down_lead_ns = 2 * kMs;   // = the latency: 110 − 2 = 108 ms
  g.packs[2].down_lead_ns = 5 * kMs;   // above the latency: capped, 120 − 2 = 118 ms
  SwitchPlanner planner(g, 2 * kMs, 1410);
  // Pack 0 seen at 100 ms; the default (1410, up) one latency before 130 ms: 128 ms.
  const auto got = simulate(planner, {{0, 0, 0, 100 * kMs}}, 200 * kMs);
  EXPECT_EQ(got, (std::vector<Issued>{{108 * kMs, 1, 0, 1200, SwitchReason::kEarly},
                                      {118 * kMs, 2, 0, 990, SwitchReason::kEarly},
                                      {128 * kMs, -1, 0, 1410, SwitchReason::kDefault}}));
  // A lead on a pack entered by a switch up changes nothing: 1200 -> 1410 at 120 − 2 = 118 ms.
  policy::GpuPolicy up = three_packs();
  up.packs[2].down_lead_ns = 0;
  SwitchPlanner planner_up(up, 2 * kMs, 1410);
  EXPECT_EQ(simulate(planner_up, {{0, 0, 0, 100 * kMs}}, 200 * kMs),
            (std::vector<Issued>{{109 * kMs + kHalfMs, 1, 0, 1200, SwitchReason::kEarly},
                                 {118 * kMs, 2, 0, 1410, SwitchReason::kEarly}}));
}

TEST(SwitchPlanner, ReanchorsOnEachObservedPack) {
  SwitchPlanner planner(three_packs({1410, 1200, 990}), 2 * kMs, 1410);
  // Pack 1 (down) switched 0.5 ms before its predicted 110 ms; it starts 5 ms late (at 115 ms):
  // pack 2 (down) is re-predicted at 125 ms and switched at the later of 124.5 and, from the
  // iteration's first anchor (100 ms), 119.5: 124.5; the default (1410, up) at the earlier of
  // 105 + 30 − 2 = 133 and 100 + 30 − 2 = 128 ms: 128.
  const auto got = simulate(planner, {{0, 0, 0, 100 * kMs}, {0, 1, 0, 115 * kMs}}, 200 * kMs);
  EXPECT_EQ(got, (std::vector<Issued>{{109 * kMs + kHalfMs, 1, 0, 1200, SwitchReason::kEarly},
                                      {124 * kMs + kHalfMs, 2, 0, 990, SwitchReason::kEarly},
                                      {128 * kMs, -1, 0, 1410, SwitchReason::kDefault}}));
}

TEST(SwitchPlanner, LateSwitchWhenAPackStartsAtAnotherClock) {
  SwitchPlanner planner(three_packs({1200, 1200, 1410}), 2 * kMs, 1410);
  // Nothing predicted pack 0 (first observation): its switch is issued at once, "late"; pack 1
  // has the same clock: skipped.
  const auto got = simulate(planner, {{0, 0, 0, 50 * kMs}}, 100 * kMs);
  EXPECT_EQ(got, (std::vector<Issued>{{50 * kMs, 0, 0, 1200, SwitchReason::kLate},
                                      {68 * kMs, 2, 0, 1410, SwitchReason::kEarly}}));
  EXPECT_EQ(planner.skipped(), 2);  // pack 1 (same clock) and the default (same as pack 2)
}

TEST(SwitchPlanner, PredictsTheNextIterationFromTheObservedPeriod) {
  SwitchPlanner planner(three_packs({1410, 1200, 1200}, 1200), 2 * kMs, 1410);
  // Iterations every 40 ms. Iteration 0: pack 0 at the clock in force; pack 1 (down) at 109.5 ms.
  // Iteration 1 seen at 140 ms with 1200 requested: late switch to 1410; pack 1 at 149.5 ms. From
  // two anchors the period is 40 ms: pack 0 of iteration 2 (up from the default 1200) is switched
  // 2 ms before 180 ms, so its observation at 180 ms needs no late switch; pack 1 at 189.5 ms.
  const std::vector<PackStarted> progress = {{0, 0, 0, 100 * kMs}, {0, 0, 1, 140 * kMs}, {0, 0, 2, 180 * kMs}};
  const auto got = simulate(planner, progress, 200 * kMs);
  EXPECT_EQ(got, (std::vector<Issued>{{109 * kMs + kHalfMs, 1, 0, 1200, SwitchReason::kEarly},
                                      {140 * kMs, 0, 1, 1410, SwitchReason::kLate},
                                      {149 * kMs + kHalfMs, 1, 1, 1200, SwitchReason::kEarly},
                                      {178 * kMs, 0, 2, 1410, SwitchReason::kEarly},
                                      {189 * kMs + kHalfMs, 1, 2, 1200, SwitchReason::kEarly}}));
}

TEST(SwitchPlanner, IgnoresUnknownPacksAndReportsWhenNextDue) {
  SwitchPlanner planner(three_packs(), 2 * kMs, 1410);
  EXPECT_FALSE(planner.next_due_ns());
  EXPECT_FALSE(planner.observe({0, 9, 0, 10 * kMs}));
  EXPECT_FALSE(planner.next_due_ns());
  planner.observe({0, 0, 0, 10 * kMs});
  EXPECT_EQ(planner.next_due_ns(), 19 * kMs + kHalfMs);  // pack 1 (down), 0.5 ms before its start
  EXPECT_TRUE(planner.due(19 * kMs).empty());
  EXPECT_EQ(planner.due(19 * kMs + kHalfMs).size(), 1u);
  EXPECT_DOUBLE_EQ(planner.requested_clock_mhz(), 1200);
}

// ---- issue 32: starts observed by a graph launch or moved to another op ---------------------------

TEST(SwitchPlanner, GraphLaunchAnchorsThePackInsideTheGraph) {
  // Pack 1 (10 ms) starts inside a graph whose launch starts at 4 ms: the launch seen at 105 ms
  // anchors the iteration at 101 ms; pack 1 has not begun, so its own switch (down) is planned:
  // 101 + 10 - 0.5 = 110.5 ms; pack 2 (up) at 101 + 20 - 2 = 119 ms; the default (1410 = pack 2)
  // skipped.
  auto g = three_packs();
  g.packs[1].start.observed_by = policy::ObservedBy::kGraph;
  g.packs[1].start.anchor_offset_ns = 4 * kMs;
  SwitchPlanner planner(g, 2 * kMs, 1410);
  const auto got = simulate(planner, {{0, 1, 0, 105 * kMs}}, 200 * kMs);
  EXPECT_EQ(got, (std::vector<Issued>{{110 * kMs + kHalfMs, 1, 0, 1200, SwitchReason::kEarly},
                                      {119 * kMs, 2, 0, 1410, SwitchReason::kEarly}}));
}

TEST(SwitchPlanner, StartMovedToALaterOpSwitchesLate) {
  // Pack 1's first op cannot be observed; its start was moved to an op at 12 ms. Seen at 113 ms:
  // anchor 101 ms, pack 1 has begun: late switch at once; pack 2 at 101 + 20 - 2 = 119 ms.
  auto g = three_packs();
  g.packs[1].start.anchor_offset_ns = 12 * kMs;
  g.packs[1].start.moved_from = "Memcpy HtoD (Pageable -> Device)";
  SwitchPlanner planner(g, 2 * kMs, 1410);
  const auto got = simulate(planner, {{0, 1, 0, 113 * kMs}}, 200 * kMs);
  EXPECT_EQ(got, (std::vector<Issued>{{113 * kMs, 1, 0, 1200, SwitchReason::kLate},
                                      {119 * kMs, 2, 0, 1410, SwitchReason::kEarly}}));
}

TEST(WatchList, FromPolicyWritesEachWayOfObserving) {
  policy::Policy p;
  p.gpus.push_back(three_packs());
  p.gpus.back().packs.push_back(p.gpus.back().packs.back());
  auto& k = p.gpus.back().packs;
  k[0].start = {"Memcpy HtoD (Pageable -> Device)", 7, 0, policy::ObservedBy::kCopy};
  k[1].start = {"Memset (Device)", 7, 2, policy::ObservedBy::kMemset};
  k[2].start = {"gemv", 9, 1, policy::ObservedBy::kGraph, 15 * kMs, {12, "first", 4}};
  k[3].start = {"old copy", 7, 0, policy::ObservedBy::kNone};
  k[3].index = 3;
  const auto text = tracer::to_text(watch_list_of(p));
  EXPECT_NE(text.find("\ncopy 0 0 7 0 Memcpy HtoD (Pageable -> Device)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmemset 0 1 7 2 Memset (Device)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ngraph 0 2 9 1 12 4 first\n"), std::string::npos) << text;  // the graph's identity, not the op
  EXPECT_EQ(text.find("old copy"), std::string::npos) << text;  // unobservable: not watched (refused)
}

TEST(ProgressLine, ParsesWithAndWithoutTime) {
  const auto a = parse_progress_line("P 0 3 12 123456789", 5);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->device, 0);
  EXPECT_EQ(a->pack, 3);
  EXPECT_EQ(a->iteration, 12);
  EXPECT_EQ(a->t_ns, 123456789);
  const auto b = parse_progress_line("P 1 0 0", 42);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->t_ns, 42);
  for (const char* bad : {"", "P", "P 0 1", "X 0 1 2", "P 0 1 2 3 4 5", "P 0 1 2 3 -4", "P a b c", "P -1 0 0", "P 0 1 2x"}) {
    EXPECT_FALSE(parse_progress_line(bad, 0)) << bad;
  }
}

TEST(WatchList, FromPolicyRoundTripsThroughText) {
  policy::Policy p;
  p.iteration_marker = "ProfilerStep#*";
  p.gpus.push_back(three_packs());
  p.gpus.back().packs[1].start = {"void gemm<float>(float*, int) [with spaces]", 13, 4};
  const tracer::WatchList w = watch_list_of(p);
  ASSERT_EQ(w.entries.size(), 3u);
  const auto back = tracer::parse_watch_list(tracer::to_text(w));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->marker, "ProfilerStep#*");
  ASSERT_EQ(back->entries.size(), 3u);
  EXPECT_EQ(back->entries[1].name, "void gemm<float>(float*, int) [with spaces]");
  EXPECT_EQ(back->entries[1].stream, 13);
  EXPECT_EQ(back->entries[1].ordinal, 4);
  EXPECT_EQ(back->entries[1].pack, 1);
}

// ---- run_policy end to end ------------------------------------------------------------------------

class RunPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string base = ::testing::TempDir() + "emo_run_" + std::to_string(::getpid()) + "_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name();
    nvml_log_ = base + ".nvml.log";
    run_log_ = base + ".run.log";
    std::remove(nvml_log_.c_str());
    std::remove(run_log_.c_str());
    setenv("EMO_NVML_LIBRARY", EMO_FAKE_NVML, 1);
    setenv("EMO_FAKE_NVML_LOG", nvml_log_.c_str(), 1);
    unsetenv("EMO_FAKE_NVML_FAIL");
    unsetenv("EMO_FAKE_NVML_GPUS");
    options_.policy.switch_latency_ms = 2;
    options_.policy.gpus.push_back(three_packs({1200, 990, 1410}));
    options_.policy_path = "test.policy.json";
    options_.log_path = run_log_;
  }
  void TearDown() override {
    unsetenv("EMO_NVML_LIBRARY");
    unsetenv("EMO_FAKE_NVML_LOG");
    std::remove(nvml_log_.c_str());
    std::remove(run_log_.c_str());
  }
  std::vector<std::string> setters() const {
    std::ifstream in(nvml_log_);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("nvmlDeviceSet", 0) == 0 || line.rfind("nvmlDeviceReset", 0) == 0) out.push_back(line);
    }
    return out;
  }
  std::string run_log() const {
    std::ifstream in(run_log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void script(const std::string& bash) { options_.command = {"bash", "-c", bash}; }

  std::string nvml_log_, run_log_;
  RunOptions options_;
};

TEST_F(RunPolicy, AppliesSwitchesAndResetsAtStartAndExit) {
  NvmlDevice dev(Nvml::open(), 0);
  // Pack 0 starts at once; the runtime then predicts packs 1 and 2 at +10 / +20 ms.
  script("echo 'P 0 0 0' >&$EMO_PROGRESS_FD; sleep 0.2; exit 3");
  const RunReport r = run_policy(options_, {{0, &dev}});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.progress_lines, 1);
  EXPECT_EQ(r.switches, 3);
  EXPECT_EQ(r.late_switches, 1);
  EXPECT_EQ(r.resets, 1);
  EXPECT_EQ(setters(), (std::vector<std::string>{"nvmlDeviceResetGpuLockedClocks 0",
                                                 "nvmlDeviceSetGpuLockedClocks 0 1200 1200",
                                                 "nvmlDeviceSetGpuLockedClocks 0 990 990",
                                                 "nvmlDeviceSetGpuLockedClocks 0 1410 1410",
                                                 "nvmlDeviceResetGpuLockedClocks 0"}));
  const std::string log = run_log();
  EXPECT_NE(log.find("\"event\":\"switch\",\"gpu\":0,\"pack\":1,\"iteration\":0,\"clock_mhz\":990,\"reason\":\"early\""),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("\"event\":\"exit\",\"exit_code\":3"), std::string::npos) << log;
}

TEST_F(RunPolicy, StaticRunLocksBeforeTheCommandAndReportsEachPackStart) {
  NvmlDevice dev(Nvml::open(), 0);
  // Every pack and the default at 990 MHz, locked from the start: nothing else to switch. The
  // watch list reaches a command that reports progress itself too.
  options_.policy.gpus = {three_packs({990, 990, 990}, 990)};
  options_.start_clock_mhz = {{0, 990}};
  std::vector<PackStarted> seen;
  options_.on_pack_start = [&](const PackStarted& p) { seen.push_back(p); };
  script("grep -q '^emo.watch/1' \"$EMO_WATCH_FILE\" || exit 9; "
         "for i in 0 1; do for k in 0 1 2; do echo \"P 0 $k $i\" >&$EMO_PROGRESS_FD; sleep 0.01; done; done");
  const RunReport r = run_policy(options_, {{0, &dev}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.switches, 0);
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[4].pack, 1);
  EXPECT_EQ(seen[4].iteration, 1);
  EXPECT_EQ(setters(), (std::vector<std::string>{"nvmlDeviceResetGpuLockedClocks 0",
                                                 "nvmlDeviceSetGpuLockedClocks 0 990 990",
                                                 "nvmlDeviceResetGpuLockedClocks 0"}));
}

// A job's policy on 2 GPUs: rank 0's process says it runs on NVML GPU 1, rank 1's on GPU 0; a
// third process reporting section 1 (claimed by rank 1's) is not acted upon. on_routed_pack_start
// sees the two accepted pack starts, each with the GPU its section was routed to.
TEST_F(RunPolicy, RoutedPackStartsNameTheClaimedGpu) {
  setenv("EMO_FAKE_NVML_GPUS", "NVIDIA A100-SXM4-80GB,NVIDIA A100-SXM4-80GB", 1);
  const auto nvml = Nvml::open();
  NvmlDevice gpu0(nvml, 0), gpu1(nvml, 1);
  options_.policy.gpus = {three_packs({990, 990, 990}, 990), three_packs({990, 990, 990}, 990)};
  for (int r = 0; r < 2; ++r) {
    options_.policy.gpus[r].device = r;
    options_.policy.gpus[r].rank = r;
    options_.gpus.push_back({r, nvml->uuid(static_cast<unsigned>(r)), ""});
  }
  options_.start_clock_mhz = {{0, 990}, {1, 990}};
  std::vector<std::pair<std::int32_t, std::int32_t>> routed;  // section, NVML GPU
  int all = 0;
  options_.on_pack_start = [&](const PackStarted&) { ++all; };
  options_.on_routed_pack_start = [&](const PackStarted& p, std::int32_t gpu) { routed.emplace_back(p.device, gpu); };
  script("f=$EMO_PROGRESS_FD; echo 'H 111 0 0 GPU-fake-0000-0000-0000-000000000001' >&$f; echo 'P 0 0 0 5 111' >&$f; "
         "echo 'H 222 1 1 GPU-fake-0000-0000-0000-000000000000' >&$f; echo 'P 1 0 0 6 222' >&$f; "
         "echo 'P 1 1 0 7 333' >&$f; sleep 0.05");
  const RunReport r = run_policy(options_, {{0, &gpu0}, {1, &gpu1}});
  unsetenv("EMO_FAKE_NVML_GPUS");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.hellos, 2);
  EXPECT_EQ(all, 3);
  EXPECT_EQ(routed, (std::vector<std::pair<std::int32_t, std::int32_t>>{{0, 1}, {1, 0}}));
}

TEST_F(RunPolicy, DryRunNeverCallsASetter) {
  script("echo 'P 0 0 0' >&$EMO_PROGRESS_FD; echo 'P 0 1 0' >&$EMO_PROGRESS_FD; echo garbage >&$EMO_PROGRESS_FD; "
         "sleep 0.1");
  options_.dry_run = true;
  const RunReport r = run_policy(options_, {});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.progress_lines, 2);
  EXPECT_EQ(r.bad_lines, 1);
  EXPECT_GE(r.switches, 2);
  EXPECT_EQ(r.resets, 0);
  EXPECT_TRUE(setters().empty());
  const std::string log = run_log();
  EXPECT_NE(log.find("\"applied\":false"), std::string::npos) << log;
  EXPECT_EQ(log.find("\"applied\":true"), std::string::npos) << log;
}

TEST_F(RunPolicy, ResetsWhenTheCommandCrashes) {
  NvmlDevice dev(Nvml::open(), 0);
  script("echo 'P 0 0 0' >&$EMO_PROGRESS_FD; sleep 0.05; kill -SEGV $$");
  const RunReport r = run_policy(options_, {{0, &dev}});
  EXPECT_EQ(r.child_signal, 11);
  EXPECT_EQ(r.exit_code, 128 + 11);
  const auto s = setters();
  ASSERT_GE(s.size(), 3u);
  EXPECT_EQ(s.front(), "nvmlDeviceResetGpuLockedClocks 0");
  EXPECT_EQ(s[1], "nvmlDeviceSetGpuLockedClocks 0 1200 1200");
  EXPECT_EQ(s.back(), "nvmlDeviceResetGpuLockedClocks 0");
}

TEST_F(RunPolicy, NoPermissionStopsBeforeTheCommandStarts) {
  setenv("EMO_FAKE_NVML_FAIL", "nvmlDeviceResetGpuLockedClocks=4", 1);
  NvmlDevice dev(Nvml::open(), 0);
  const std::string marker = ::testing::TempDir() + "emo_run_must_not_exist_" + std::to_string(::getpid());
  script("touch " + marker);
  try {
    run_policy(options_, {{0, &dev}});
    FAIL() << "expected an error";
  } catch (const NvmlError& e) {
    EXPECT_NE(std::string(e.what()).find("root or CAP_SYS_ADMIN"), std::string::npos) << e.what();
  }
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the command must not have run";
}

TEST_F(RunPolicy, RefusesAPolicyWithUnobservableStartsBeforeRunning) {
  options_.policy.gpus[0].packs[0].start = {"Memcpy HtoD (Pageable -> Device)", 7, 0, policy::ObservedBy::kNone};
  options_.policy.gpus[0].packs[2].start = {"Memset (Device)", 7, 0, policy::ObservedBy::kNone};
  script("echo ran > /dev/null");
  try {
    run_policy(options_, {});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("test.policy.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2 of 3 pack starts cannot be observed"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(setters().empty());  // refused before any clock is touched
}

TEST_F(RunPolicy, BadInput) {
  options_.command.clear();
  EXPECT_THROW(run_policy(options_, {}), InputError);
  script("true");
  EXPECT_THROW(run_policy(options_, {}), InputError);  // not a dry run: GPU 0 has no device
  options_.dry_run = true;
  options_.command = {"/nonexistent/emo-test-command"};
  try {
    run_policy(options_, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/emo-test-command: cannot run the command: No such file or directory");
  }
}

}  // namespace
}  // namespace emo::runtime
