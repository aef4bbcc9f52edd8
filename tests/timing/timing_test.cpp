// Replay, slack, critical path, per-GPU slack windows, bound-by and what-if timing on
// hand-made traces whose answers are worked out in the comments.
#include "timing/timing.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <numeric>
#include <string>
#include <vector>

#include "graph/hand_trace.h"
#include "output/analysis_output.h"
#include "timing/analysis.h"
#include "core/error.h"

namespace emo::testing {
namespace {

using timing::Analysis;
using timing::BoundBy;
using timing::PathStep;

struct Step {
  std::uint32_t node;
  bool via_edge;
  EdgeType edge;
};

/// Expects the critical path to be exactly `want` (nodes and the edges that reached them).
void expect_path(const timing::CriticalPath& p, const std::vector<Step>& want) {
  ASSERT_EQ(p.steps.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(p.steps[i].node, want[i].node) << "step " << i;
    EXPECT_EQ(p.steps[i].via_edge, want[i].via_edge) << "step " << i;
    if (want[i].via_edge) {
      EXPECT_EQ(p.steps[i].edge, want[i].edge)
          << "step " << i << ": " << graph::edge_type_name(p.steps[i].edge);
    }
  }
}

TimeNs bound_total(const BoundBy& b) { return std::accumulate(b.ns.begin(), b.ns.end(), TimeNs{0}); }

Analysis analyze(const trace::Trace& t, const std::vector<std::string>& specs = {}) {
  std::vector<timing::WhatIf> w;
  for (const std::string& s : specs) w.push_back(timing::parse_what_if(s));
  return timing::analyze(t, graph::Window{}, w);
}

TimeNs what_if_makespan(const trace::Trace& t, const DepGraph& g, const std::string& spec) {
  const auto dur = timing::apply_what_if(t, g, timing::parse_what_if(spec));
  return timing::replay(g, dur).makespan_ns;
}

// ---- the reference case ---------------------------------------------------------------------

TEST(Timing, TwoStreamsMakespanPathSlackAndGpuWindows) {
  const trace::Trace t = two_streams();
  const Analysis a = analyze(t);
  const DepGraph& g = a.graph;
  const auto b = api_node(t, g, 1), a2 = api_node(t, g, 2), c = api_node(t, g, 3);
  const auto k_short = gpu_node(t, g, 1), k_long = gpu_node(t, g, 2);

  EXPECT_EQ(a.schedule.makespan_ns, 130);
  EXPECT_EQ(a.schedule.end_ns, 130);
  EXPECT_EQ(a.replay_error, 0.0);

  // first launch -> (program order) second launch -> (launch) k_long -> (host sync) the sync.
  expect_path(a.path, {{b, false, {}},
                       {a2, true, EdgeType::kProgramOrder},
                       {k_long, true, EdgeType::kLaunch},
                       {c, true, EdgeType::kHostSync}});
  EXPECT_EQ(a.path.length_ns, 130);

  // Slack = latest end keeping 130 - end. k_short could end at 130: 78 ns. The second launch's
  // *end* could slip by 100 (only the sync call's start follows it, 5 ns later); its start is
  // what is critical.
  EXPECT_EQ(a.node_slack[k_short], 78);
  EXPECT_EQ(a.node_slack[k_long], 0);
  EXPECT_EQ(a.node_slack[b], 0);
  EXPECT_EQ(a.node_slack[a2], 100);
  EXPECT_EQ(a.node_slack[c], 0);

  // GPU 0: busy [12, 130); critical (zero-slack ops) [30, 130); one slack window [12, 30).
  ASSERT_EQ(a.gpus.size(), 1u);
  EXPECT_EQ(a.gpus[0].device, 0);
  EXPECT_EQ(a.gpus[0].busy_ns, 118);
  EXPECT_EQ(a.gpus[0].critical_busy_ns, 100);
  EXPECT_EQ(a.gpus[0].slack_ns, 18);
  ASSERT_EQ(a.gpus[0].windows.size(), 1u);
  EXPECT_EQ(a.gpus[0].windows[0].start_ns, 12);
  EXPECT_EQ(a.gpus[0].windows[0].end_ns, 30);

  // Where the 130 ns go: CPU 10 (first call) + 5 (gap); launch 15; kernel 100.
  const BoundBy& bb = a.path.bound_by;
  EXPECT_EQ(bb.ns[BoundBy::kCpu], 15);
  EXPECT_EQ(bb.ns[BoundBy::kGpuCompute], 100);
  EXPECT_EQ(bb.ns[BoundBy::kCommunication], 0);
  EXPECT_EQ(bb.ns[BoundBy::kLaunchOverhead], 15);
  EXPECT_EQ(bb.ns[BoundBy::kSyncWait], 0);
  EXPECT_EQ(bb.ns[BoundBy::kIdle], 0);
  EXPECT_EQ(bound_total(bb), a.schedule.makespan_ns);

  const nlohmann::json j = output::to_json(t, a);
  double sum = 0;
  for (const auto& [k, v] : j["bound_by"].items()) sum += v.get<double>();
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(j["bound_by"]["gpu_compute"].get<double>(), 100.0 / 130.0, 1e-12);
  EXPECT_NEAR(j["bound_by"]["cpu"].get<double>(), 15.0 / 130.0, 1e-12);
  EXPECT_EQ(j["makespan_ns"], 130);
  EXPECT_EQ(j["critical_path_ns"], 130);
  ASSERT_EQ(j["critical_path"].size(), 4u);
  EXPECT_EQ(j["critical_path"][2]["name"], "k_long");
  EXPECT_EQ(j["critical_path"][2]["kind"], "kernel");
  EXPECT_EQ(j["critical_path"][2]["stream"], 7);
  EXPECT_EQ(j["critical_path"][2]["via"], "launch");
  EXPECT_TRUE(j["critical_path"][0]["via"].is_null());
  EXPECT_EQ(j["critical_path"][3]["via"], "host_sync");
  EXPECT_EQ(j["gpus"][0]["slack_windows"], nlohmann::json::parse("[[12, 30]]"));
  EXPECT_EQ(j["edges"]["host_sync"], 2);
  EXPECT_EQ(j["edges"]["inferred"]["host_sync"], 0);
}

TEST(Timing, SlackIsTheLatestEndMinusTheEnd) {
  // Same as above, checked against the definition: delaying an op's end by its slack keeps the
  // makespan, by one more ns does not (for ops whose end is their start + duration).
  for (const trace::Trace& t : {two_streams(), two_streams(false), stream_wait(), blocking_copy()}) {
    const Analysis a = analyze(t);
    const DepGraph& g = a.graph;
    for (std::uint32_t n = 0; n < g.nodes(); ++n) {
      const TimeNs s = a.node_slack[n];
      ASSERT_GE(s, 0);
      std::vector<TimeNs> dur = g.dur;
      dur[n] += s;
      EXPECT_EQ(timing::replay(g, dur).makespan_ns, a.schedule.makespan_ns) << "node " << n;
      if (a.schedule.start(n) + g.dur[n] == a.schedule.end(n)) {
        dur[n] += 1;
        EXPECT_EQ(timing::replay(g, dur).makespan_ns, a.schedule.makespan_ns + 1) << "node " << n;
      }
    }
  }
}

TEST(Timing, StreamWaitPathAndBoundBy) {
  const trace::Trace t = stream_wait();
  const Analysis a = analyze(t);
  const DepGraph& g = a.graph;
  const auto l1 = api_node(t, g, 1), ka = gpu_node(t, g, 1), mb = gpu_node(t, g, 4);
  const auto sync = api_node(t, g, 5);
  EXPECT_EQ(a.schedule.makespan_ns, 125);
  expect_path(a.path, {{l1, false, {}},
                       {ka, true, EdgeType::kLaunch},
                       {mb, true, EdgeType::kEventWait},
                       {sync, true, EdgeType::kHostSync}});
  const BoundBy& bb = a.path.bound_by;
  EXPECT_EQ(bb.ns[BoundBy::kGpuCompute], 110);   // kA 100 + memset 10
  EXPECT_EQ(bb.ns[BoundBy::kLaunchOverhead], 10);
  EXPECT_EQ(bb.ns[BoundBy::kSyncWait], 5);       // event wait 2 + sync return 3
  EXPECT_EQ(bb.ns[BoundBy::kCpu], 0);
  EXPECT_EQ(bound_total(bb), 125);
  EXPECT_EQ(a.node_slack[ka], 0);
  EXPECT_EQ(a.node_slack[mb], 0);
  EXPECT_EQ(a.node_slack[api_node(t, g, 4)], 82);  // the memset's launch call
  EXPECT_EQ(a.node_slack[api_node(t, g, 3)], 82);  // cudaStreamWaitEvent
  ASSERT_EQ(a.gpus.size(), 1u);
  EXPECT_EQ(a.gpus[0].busy_ns, 110);
  EXPECT_EQ(a.gpus[0].critical_busy_ns, 110);
  EXPECT_EQ(a.gpus[0].slack_ns, 0);
  EXPECT_TRUE(a.gpus[0].windows.empty());
  // The wait carries delay across streams: 50 ns more on kA is 50 ns more in the end.
  EXPECT_EQ(what_if_makespan(t, g, fmt::format("id={}:+50ns", g.op[ka])), 175);
}

TEST(Timing, BlockingCopyPathEntersAndLeavesTheCall) {
  const trace::Trace t = blocking_copy();
  const Analysis a = analyze(t);
  const DepGraph& g = a.graph;
  const auto m = api_node(t, g, 1), copy = gpu_node(t, g, 1);
  const auto l = api_node(t, g, 2), k = gpu_node(t, g, 2);
  EXPECT_EQ(a.schedule.makespan_ns, 80);
  // The blocking call appears twice: its start launches the copy, its end waits for it.
  expect_path(a.path, {{m, false, {}},
                       {copy, true, EdgeType::kLaunch},
                       {m, true, EdgeType::kHostSync},
                       {l, true, EdgeType::kProgramOrder},
                       {k, true, EdgeType::kLaunch}});
  const BoundBy& bb = a.path.bound_by;
  EXPECT_EQ(bb.ns[BoundBy::kCommunication], 35);
  EXPECT_EQ(bb.ns[BoundBy::kGpuCompute], 18);
  EXPECT_EQ(bb.ns[BoundBy::kLaunchOverhead], 17);
  EXPECT_EQ(bb.ns[BoundBy::kSyncWait], 5);
  EXPECT_EQ(bb.ns[BoundBy::kCpu], 5);
  EXPECT_EQ(bound_total(bb), 80);
  // A slower copy delays everything after the blocking call.
  EXPECT_EQ(what_if_makespan(t, g, "kind=memcpy:+20ns"), 100);
  EXPECT_EQ(what_if_makespan(t, g, "name=Memcpy DtoH:x2"), 115);
}

TEST(Timing, ContradictedEdgesStillAddUpToTheMakespan) {
  HandTrace h;
  h.call("cudaLaunchKernel", 10, 5, 1);
  h.kernel("k", 5, 45, 7, 1);                  // starts before its launch call (clock skew)
  h.call("cudaDeviceSynchronize", 20, 28, 2);  // returns before the kernel ends
  h.sync(SyncKind::kContextSync, 20, 28, 2, 0);
  const trace::Trace t = h.finish();
  const Analysis a = analyze(t);
  EXPECT_EQ(a.graph.stats.violated_edges, 2);
  EXPECT_EQ(a.schedule.makespan_ns, 45);
  EXPECT_EQ(a.replay_error, 0.0);
  EXPECT_EQ(a.path.bound_by.ns[BoundBy::kGpuCompute], 45);
  // The path: the call (pinned at 10, 5 ns of untraced CPU work after the window start 5), the
  // launch edge back 5 ns (lag -5: clock skew, in skew_ns, not in launch_overhead), the kernel.
  EXPECT_EQ(a.path.skew_ns, 5);
  EXPECT_EQ(a.path.bound_by.ns[BoundBy::kLaunchOverhead], 0);
  EXPECT_EQ(a.path.bound_by.ns[BoundBy::kCpu], 5);
  EXPECT_EQ(bound_total(a.path.bound_by), 45 + a.path.skew_ns);
  EXPECT_LE(a.path.length_ns, a.schedule.makespan_ns);
}

TEST(Timing, ReplayErrorMeasuresGpuEndsAgainstTheMakespan) {
  const trace::Trace t = two_streams();
  const DepGraph g = graph::build_graph(t);
  timing::Schedule s = timing::replay(g, g.dur);
  EXPECT_EQ(timing::replay_error(g, s), 0.0);
  s.time[DepGraph::end_tp(gpu_node(t, g, 1))] += 13;  // k_short off by 13 ns
  EXPECT_DOUBLE_EQ(timing::replay_error(g, s), 13.0 / 130.0);
}

TEST(Timing, ReplayErrorCountsEarlyEndsAsMuchAsLateOnes) {
  // The error is a distance: an op replayed 20 ns too early is 20 ns wrong, whatever the sign.
  // Worked by hand on two_streams (makespan 130): k_short 20 ns early, k_long 5 ns late -> the
  // worst is 20 ns, 20/130; early alone -> 20/130; late alone -> 5/130.
  const trace::Trace t = two_streams();
  const DepGraph g = graph::build_graph(t);
  const timing::Schedule exact = timing::replay(g, g.dur);
  timing::Schedule early = exact;
  early.time[DepGraph::end_tp(gpu_node(t, g, 1))] -= 20;
  EXPECT_DOUBLE_EQ(timing::replay_error(g, early), 20.0 / 130.0);
  timing::Schedule both = early;
  both.time[DepGraph::end_tp(gpu_node(t, g, 2))] += 5;
  EXPECT_DOUBLE_EQ(timing::replay_error(g, both), 20.0 / 130.0);
  timing::Schedule late = exact;
  late.time[DepGraph::end_tp(gpu_node(t, g, 2))] += 5;
  EXPECT_DOUBLE_EQ(timing::replay_error(g, late), 5.0 / 130.0);
}

// ---- what-if ----------------------------------------------------------------------------------

TEST(WhatIf, LawsOnTheReferenceCase) {
  const trace::Trace t = two_streams();
  const DepGraph g = graph::build_graph(t);
  const std::uint32_t k_long = g.op[gpu_node(t, g, 2)];
  const std::uint32_t k_short = g.op[gpu_node(t, g, 1)];
  // A zero-slack op slowed by d: the makespan grows by exactly d.
  EXPECT_EQ(what_if_makespan(t, g, fmt::format("id={}:+7ns", k_long)), 137);
  EXPECT_EQ(what_if_makespan(t, g, fmt::format("id={}:+1us", k_long)), 1130);
  // An op slowed by at most its slack (78 ns): nothing changes; one ns more shows.
  EXPECT_EQ(what_if_makespan(t, g, fmt::format("id={}:+77ns", k_short)), 130);
  EXPECT_EQ(what_if_makespan(t, g, fmt::format("id={}:+78ns", k_short)), 130);
  EXPECT_EQ(what_if_makespan(t, g, fmt::format("id={}:+79ns", k_short)), 131);
  // Every GPU op x2: k_long runs [30, 230).
  EXPECT_EQ(what_if_makespan(t, g, "gpu:x2"), 230);
  EXPECT_EQ(what_if_makespan(t, g, "kind=kernel:*2"), 230);
  EXPECT_EQ(what_if_makespan(t, g, "name~^k_(long|short)$:x2"), 230);
  EXPECT_EQ(what_if_makespan(t, g, "name=k_long:x0.5"), 80);
  EXPECT_EQ(what_if_makespan(t, g, "stream=8:x3"), 132);    // k_short now ends at 132
  EXPECT_EQ(what_if_makespan(t, g, "device=1:x10"), 130);   // no GPU 1
  EXPECT_EQ(what_if_makespan(t, g, "kind=memcpy:x10"), 130);
  EXPECT_EQ(what_if_makespan(t, g, "kind=collective:x10"), 130);
  EXPECT_EQ(what_if_makespan(t, g, "kind=kernel:=0ns"), 30);
  // Launch calls 100 ns slower: the second launch starts at 115, k_long at 130.
  EXPECT_EQ(what_if_makespan(t, g, "name=cudaLaunchKernel:+100ns"), 230);
  // Rules apply in order.
  EXPECT_EQ(what_if_makespan(t, g, "gpu:x2;name=k_long:+10ns"), 240);
  EXPECT_EQ(what_if_makespan(t, g, "name=k_long:+10ns;gpu:x2"), 250);
  // Subtraction floors at 0: everything instantaneous leaves only the recorded gaps.
  EXPECT_EQ(what_if_makespan(t, g, "all:-1s"), 20);
  EXPECT_EQ(what_if_makespan(t, g, "all:x1"), 130);
}

TEST(WhatIf, UniformScaleOfAGpuBoundGraphScalesTheMakespan) {
  // Three back-to-back kernels queued well ahead of the GPU: GPU-bound, so x k on the GPU ops
  // scales the makespan (measured from the first launch) minus the launch prefix by k.
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 2, 1);
  h.call("cudaLaunchKernel", 3, 2, 2);
  h.call("cudaLaunchKernel", 6, 2, 3);
  h.kernel("k1", 10, 300, 7, 1);
  h.kernel("k2", 310, 300, 7, 2);
  h.kernel("k3", 610, 300, 7, 3);
  h.call("cudaDeviceSynchronize", 9, 901, 4);
  const trace::Trace t = h.finish();
  const DepGraph g = graph::build_graph(t);
  EXPECT_EQ(timing::replay(g, g.dur).makespan_ns, 910);
  EXPECT_EQ(what_if_makespan(t, g, "gpu:x1.5"), 10 + 1350);
  EXPECT_EQ(what_if_makespan(t, g, "gpu:x0.5"), 10 + 450);
  EXPECT_EQ(what_if_makespan(t, g, "gpu:x2;gpu:x0.5"), 910);
}

TEST(WhatIf, CorrelationSelectsTheGpuOpNotItsLaunch) {
  const trace::Trace t = two_streams();
  const DepGraph g = graph::build_graph(t);
  EXPECT_EQ(what_if_makespan(t, g, "corr=2:+7ns"), 137);   // k_long, zero slack
  EXPECT_EQ(what_if_makespan(t, g, "corr=1:+78ns"), 130);  // k_short, 78 ns of slack
  EXPECT_EQ(what_if_makespan(t, g, "corr=1:+79ns"), 131);
  std::size_t matched = 9;
  const auto dur = timing::apply_what_if(t, g, timing::parse_what_if("corr=2:+1us"), &matched);
  EXPECT_EQ(matched, 1u);
  EXPECT_EQ(dur[api_node(t, g, 2)], g.dur[api_node(t, g, 2)]) << "the launch call is untouched";
  // corr 3 is the cudaDeviceSynchronize: no GPU op has it.
  (void)timing::apply_what_if(t, g, timing::parse_what_if("corr=3:+1us"), &matched);
  EXPECT_EQ(matched, 0u);
}

TEST(WhatIf, InstanceSuffixPicksTheKthMatchInStartOrder) {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 2, 1);
  h.call("cudaLaunchKernel", 3, 2, 2);
  h.call("cudaLaunchKernel", 6, 2, 3);
  h.call("cudaLaunchKernel", 9, 2, 4);
  h.kernel("k", 10, 100, 7, 1);
  h.kernel("other", 110, 100, 7, 2);
  h.kernel("k", 210, 100, 7, 3);
  h.kernel("k", 310, 100, 7, 4);
  const trace::Trace t = h.finish();
  const DepGraph g = graph::build_graph(t);
  const auto k0 = gpu_node(t, g, 1), other = gpu_node(t, g, 2), k1 = gpu_node(t, g, 3),
             k2 = gpu_node(t, g, 4);
  const auto changed = [&](const std::string& spec) {
    std::size_t matched = 0;
    const auto dur = timing::apply_what_if(t, g, timing::parse_what_if(spec), &matched);
    std::vector<std::uint32_t> out;
    for (std::uint32_t n = 0; n < g.nodes(); ++n) {
      if (dur[n] != g.dur[n]) out.push_back(n);
    }
    EXPECT_EQ(matched, out.size()) << spec;
    return out;
  };
  using V = std::vector<std::uint32_t>;
  EXPECT_EQ(changed("name=k:+1ns"), V({k0, k1, k2}));
  EXPECT_EQ(changed("name=k@0:+1ns"), V({k0}));
  EXPECT_EQ(changed("name=k@1:+1ns"), V({k1}));
  EXPECT_EQ(changed("name=k@2:+1ns"), V({k2}));
  EXPECT_EQ(changed("name=k@-1:+1ns"), V({k2}));
  EXPECT_EQ(changed("name=k@-3:+1ns"), V({k0}));
  EXPECT_EQ(changed("name=k@3:+1ns"), V()) << "no 4th k: nothing changes";
  EXPECT_EQ(changed("name=k@-4:+1ns"), V());
  EXPECT_EQ(changed("gpu@1:+1ns"), V({other}));
  EXPECT_EQ(changed("name~^k$@1:+1ns"), V({k1}));
  EXPECT_EQ(changed("stream=7@3:+1ns"), V({k2}));
  // Each rule picks its own instance.
  EXPECT_EQ(changed("name=k@0:+1ns;name=k@2:+1ns"), V({k0, k2}));
  // A '@' not followed by an integer is part of the selector.
  EXPECT_EQ(changed("name=k@:+1ns"), V());
  EXPECT_EQ(changed("name=k@x:+1ns"), V());
  // The 2nd k slowed by 50 ns delays the 3rd: the stream is back to back.
  EXPECT_EQ(what_if_makespan(t, g, "name=k@1:+50ns"), timing::replay(g, g.dur).makespan_ns + 50);
}

/// One step with a side stream, as the device-validation workload runs it (docs/device-validation.md):
///   [0,10)  cudaLaunchKernel corr 1 -> teacher on stream 8, [15, 115)
///   [10,12) cudaLaunchKernel corr 7 -> spin on stream 8, right after teacher (only if spin_ns > 0)
///   [12,15) cudaEventRecord corr 2 on stream 8
///   [15,25) cudaLaunchKernel corr 3 -> m1 on stream 7, [30, 230)
///   [25,30) cudaStreamWaitEvent corr 4: stream 7 waits for the event of corr 2
///   [30,40) cudaLaunchKernel corr 5 -> m2 on stream 7, after m1 (2 ns gap) and after the event
///   [40, ..) cudaStreamSynchronize corr 6 on stream 7, returns 3 ns after m2 ends
/// The times of the spin run are worked out by hand from the same lags.
trace::Trace side_stream_step(TimeNs spin_ns) {
  HandTrace h;
  const TimeNs teacher_end = 115, event_done = teacher_end + spin_ns;
  const TimeNs m2_start = std::max<TimeNs>(232, event_done), m2_end = m2_start + 100;
  h.call("cudaLaunchKernel", 0, 10, 1);
  h.kernel("teacher", 15, 100, 8, 1);
  if (spin_ns > 0) {
    h.call("cudaLaunchKernel", 10, 2, 7);
    h.kernel("spin_kernel", teacher_end, spin_ns, 8, 7);
  }
  const TimeNs record_start = spin_ns > 0 ? 12 : 10;
  h.call("cudaEventRecord", record_start, 15 - record_start, 2);
  h.call("cudaLaunchKernel", 15, 10, 3);
  h.kernel("m1", 30, 200, 7, 3);
  h.call("cudaStreamWaitEvent", 25, 5, 4);
  h.sync(SyncKind::kStreamWaitEvent, 25, 5, 4, 0, 7, 8, 2);
  h.call("cudaLaunchKernel", 30, 10, 5);
  h.kernel("m2", m2_start, 100, 7, 5);
  h.call("cudaStreamSynchronize", 40, m2_end + 3 - 40, 6);
  h.sync(SyncKind::kStreamSync, 40, m2_end + 3 - 40, 6, 0, 7);
  return h.finish();
}

TEST(WhatIf, DelayAfterAnOpPredictsTheRunWithASpinInsertedThere) {
  const trace::Trace base = side_stream_step(0);
  const DepGraph g = graph::build_graph(base);
  ASSERT_EQ(timing::replay(g, g.dur).makespan_ns, 335);
  // Within the teacher's slack (232 - 115 = 117 ns) nothing moves; past it, the excess shows.
  for (const TimeNs d : {TimeNs{50}, TimeNs{117}, TimeNs{118}, TimeNs{150}, TimeNs{400}}) {
    const trace::Trace perturbed = side_stream_step(d);
    const DepGraph gp = graph::build_graph(perturbed);
    const timing::Schedule measured = timing::replay(gp, gp.dur);
    EXPECT_EQ(timing::replay_error(gp, measured), 0.0);
    const TimeNs want = 335 + std::max<TimeNs>(0, d - 117);
    EXPECT_EQ(measured.makespan_ns, want) << "spin " << d;
    EXPECT_EQ(what_if_makespan(base, g, fmt::format("corr=1:+{}ns", d)), want) << "spin " << d;
    EXPECT_EQ(what_if_makespan(base, g, fmt::format("name=teacher@0:+{}ns", d)), want);
  }
}

TEST(WhatIf, AnalyzeReportsEachSpec) {
  const trace::Trace t = two_streams();
  const Analysis a = analyze(t, {"gpu:x2", "name=k_short:+1ns"});
  ASSERT_EQ(a.what_ifs.size(), 2u);
  EXPECT_EQ(a.what_ifs[0].spec, "gpu:x2");
  EXPECT_EQ(a.what_ifs[0].makespan_ns, 230);
  EXPECT_DOUBLE_EQ(a.what_ifs[0].change, 230.0 / 130.0 - 1.0);
  EXPECT_EQ(a.what_ifs[1].makespan_ns, 130);
  EXPECT_DOUBLE_EQ(a.what_ifs[1].change, 0.0);
  const nlohmann::json j = output::to_json(t, a);
  EXPECT_EQ(j["what_if"][0]["makespan_ns"], 230);
  EXPECT_EQ(j["what_if"][0]["spec"], "gpu:x2");
}

TEST(WhatIf, ParsesValidSpecs) {
  // (WhatIf::Rule is opaque outside timing.cpp: specs are checked by their effect.)
  EXPECT_NO_THROW(timing::parse_what_if("kind=kernel:x1.5"));
  EXPECT_NO_THROW(timing::parse_what_if("all:x1;")) << "a trailing ';' is fine";
  EXPECT_EQ(timing::parse_what_if("name~gemm:x1.2").spec, "name~gemm:x1.2");

  // Units and number forms, checked on the durations they produce.
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 10, 1);
  h.kernel("at::native::vectorized_elementwise_kernel<4>", 20, 1000, 7, 1);
  const trace::Trace t = h.finish();
  const DepGraph g = graph::build_graph(t);
  const auto k = gpu_node(t, g, 1);
  const auto dur_after = [&](const std::string& spec) {
    return timing::apply_what_if(t, g, timing::parse_what_if(spec))[k];
  };
  EXPECT_EQ(dur_after("id=" + std::to_string(g.op[k]) + ":+2ms"), 2'001'000);
  EXPECT_EQ(dur_after("gpu:+1.5us"), 2500);
  EXPECT_EQ(dur_after("gpu:+1e3ns"), 2000);
  EXPECT_EQ(dur_after("gpu:=2s"), 2'000'000'000);
  EXPECT_EQ(dur_after("gpu:-400ns"), 600);
  EXPECT_EQ(dur_after("gpu:*0.5;stream=7:-100ns"), 400);
  EXPECT_EQ(dur_after("gpu:-5ms"), 0);
  EXPECT_EQ(dur_after("gpu:x0"), 0);
  EXPECT_EQ(dur_after("gpu:x1.0006"), 1001);  // rounded to the nearest ns
  EXPECT_EQ(dur_after("device=0:x3"), 3000);
  EXPECT_EQ(dur_after("stream=7:x3"), 3000);
  EXPECT_EQ(dur_after("stream=8:x3"), 1000);
  // C++ names contain "::": the change is after the last ':'.
  EXPECT_EQ(dur_after("name=at::native::vectorized_elementwise_kernel<4>:x2"), 2000);
  EXPECT_EQ(dur_after("name~vectorized:x2"), 2000);
  EXPECT_EQ(dur_after("name=vectorized:x2"), 1000) << "name= is an exact match";
  EXPECT_EQ(dur_after("kind=runtime:x2"), 1000);
  EXPECT_EQ(timing::apply_what_if(t, g, timing::parse_what_if("kind=runtime:x2"))[api_node(t, g, 1)], 20);
}

TEST(WhatIf, RejectsBadSpecsWithAHelpfulMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty spec"},
      {";", "empty spec"},
      {"all", "no ':CHANGE'"},
      {"kernel:x2", "unknown selector 'kernel'"},
      {"kind=gpu:x2", "unknown kind 'gpu'"},
      {"all:x", "must be xF, +DUR, -DUR or =DUR"},
      {"all:5", "must be xF, +DUR, -DUR or =DUR"},
      {"all:xabc", "not a scale factor"},
      {"all:x-1", "not a scale factor"},
      {"all:xnan", "not a scale factor"},
      {"all:xinf", "not a scale factor"},
      {"all:+5", "needs a unit"},
      {"all:+5parsecs", "unknown unit"},
      {"all:+ms", "not a duration"},
      {"all:=-5ns", "not a duration"},
      {"id=abc:x2", "not an integer"},
      {"stream=:x2", "not an integer"},
      {"name~(:x2", "bad regex"},
      {"corr=abc:+1ns", "not an integer"},
      {"corr=:+1ns", "not an integer"},
      {"kernel@2:x2", "unknown selector 'kernel'"},
      {"gpu:x2;bogus:x2", "unknown selector 'bogus'"},
  };
  for (const auto& [spec, why] : cases) {
    try {
      (void)timing::parse_what_if(spec);
      ADD_FAILURE() << "accepted bad spec '" << spec << "'";
    } catch (const ArgumentError& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.field(), "what_if");
      EXPECT_EQ(e.value(), spec);
      EXPECT_NE(what.find(why), std::string::npos) << "spec '" << spec << "': " << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// ---- windows ----------------------------------------------------------------------------------

TEST(Window, FindsAnnotationsByNameAndInstance) {
  HandTrace h;
  h.annotation("ProfilerStep#7", 0, 100);
  h.annotation("ProfilerStep#8", 100, 50);
  h.annotation("forward", 10, 20);
  h.call("cudaLaunchKernel", 10, 5, 1);
  h.kernel("k", 20, 20, 7, 1);
  const trace::Trace t = h.finish();
  const graph::Window all = timing::find_window(t, "", "", 0);
  EXPECT_EQ(all.begin_ns, INT64_MIN);
  EXPECT_EQ(all.end_ns, INT64_MAX);
  const graph::Window w8 = timing::find_window(t, "ProfilerStep#8", "", 0);
  EXPECT_EQ(w8.begin_ns, 100);
  EXPECT_EQ(w8.end_ns, 150);
  const graph::Window i1 = timing::find_window(t, "", "ProfilerStep", 1);
  EXPECT_EQ(i1.begin_ns, 100);
  EXPECT_EQ(i1.end_ns, 150);
  const graph::Window f = timing::find_window(t, "", "forward", 0);
  EXPECT_EQ(f.begin_ns, 10);
  EXPECT_EQ(f.end_ns, 30);
  EXPECT_THROW(timing::find_window(t, "ProfilerStep", "", 0), InputError) << "--window is exact";
  try {
    timing::find_window(t, "", "ProfilerStep", 2);
    ADD_FAILURE() << "instance 2 of 2 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has 2 instance(s)"), std::string::npos) << e.what();
  }
  try {
    timing::find_window(t, "nosuch", "", 0);
    ADD_FAILURE() << "unknown window accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hand.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ProfilerStep#7"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace emo::testing
