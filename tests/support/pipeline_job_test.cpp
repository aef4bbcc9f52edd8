// Generated pipeline-parallel jobs (support/pipeline_job.h, issue 26): their times worked out by
// hand on tiny pipelines, and EMO's linker and analysis on them (every transfer linked, makespan
// and per-GPU slack as worked out by hand).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "graph/dep_graph.h"
#include "pack/pack_run.h"
#include "support/cli_expect.h"
#include "support/pipeline_job.h"
#include "test_data.h"
#include "timing/analysis.h"
#include "trace/job.h"
#include "trace/kineto/kineto_writer.h"
#include "trace/load.h"

namespace emo::testing {
namespace {

using trace::OpKind;
using trace::Trace;

constexpr TimeNs kUs = 1'000, kMs = 1'000'000;
/// The first kernel's start in the hand-worked jobs: its launch call, the first call, [0, 10 µs].
constexpr TimeNs kT0 = 10 * kUs;
using Interval = std::pair<TimeNs, TimeNs>;

/// Every rank's trace of `job`.
std::vector<Trace> traces(const PipelineJob& job) {
  std::vector<Trace> out;
  for (int r = 0; r < job.ranks(); ++r) out.push_back(job.rank_trace(r));
  return out;
}

/// [start, end] of the k-th kernel named `coll` ("send", "recv", "allreduce") of a trace, ns.
std::pair<TimeNs, TimeNs> nth_collective(const Trace& t, std::string_view coll, int k) {
  for (std::size_t c = 0; c < t.collectives.size(); ++c) {
    if (t.strings.view(t.collectives.name[c]) != coll || k-- > 0) continue;
    const std::uint32_t row = t.collectives.op[c];
    return {t.ops.start_ns[row], t.ops.end_ns(row)};
  }
  ADD_FAILURE() << "no such " << coll;
  return {0, 0};
}

/// [start, end] of the k-th compute kernel of a trace.
std::pair<TimeNs, TimeNs> nth_compute(const Trace& t, int k) {
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops.kind[i] != OpKind::kKernel || t.is_collective(i) || k-- > 0) continue;
    return {t.ops.start_ns[i], t.ops.end_ns(i)};
  }
  ADD_FAILURE() << "no such compute kernel";
  return {0, 0};
}

// 2 stages, 2 micro-batches, F = 10 ms, B = 20 ms, transfers 1 ms. Host: rank r's calls run
// back to back from 0, 10 µs each, so every kernel could start by 0.2 ms: the GPU side is bound by
// the data only, from the first kernel (launched by call 0, [0, 10 µs]) at 0.01 ms. Times in ms:
//   stage 0: F0 [0.01, 10.01]; send a0 (send stream, after F0) [10.01, 11.01] (stage 1's receive
//     is posted at 0.01); F1 [10.01, 20.01]; send a1 [20.01, 42.01] (stage 1 posts it at 41.01);
//     recv g0 posted at 20.01, stage 1 sends at 41.01: [20.01, 42.01]; B0 [42.01, 62.01];
//     recv g1 [62.01, 73.01] (sent at 72.01); B1 [73.01, 93.01]; its sync ends 1 ms later.
//   stage 1: recv a0 [0.01, 11.01]; F0 [11.01, 21.01]; B0 [21.01, 41.01]; send g0 [41.01,
//     42.01]; recv a1 [41.01, 42.01]; F1 [42.01, 52.01]; B1 [52.01, 72.01]; send g1 [72.01, 73.01].
// Makespan: 0 → 94.01 ms. Compute 60 ms per stage; the GPUs idle 33 ms (stage 0, in 93 ms of
// GPU activity: waits of 21 + 10 ms in its receives and 2 ms of transfers) and 13 ms (stage 1).
// Recorded waits in linked transfers (last arrival − own): stage 0 21 (a1) + 21 (g0) + 10 (g1) =
// 52 ms; stage 1 10 ms (a0).
// EMO's slack (latest end − end, backward from 94.01 ms; a linked transfer takes 1 ms):
//   stage 0: F0, send a0, send a1 (its end feeds stage 1's F1, critical), recv g1 and B1 have
//     none; F1 21 ms (send a1 may start at 41.01), recv g0 and B0 10 ms (recv g1 waits for
//     stage 1 until 72.01 anyway). GPU slack = busy [0.01, 93.01] minus the critical intervals
//     [0.01, 11.01], [20.01, 42.01], [62.01, 93.01] = [11.01, 20.01] + [42.01, 62.01] = 29 ms.
//   stage 1: everything on its compute stream is critical; send g0 (covered by recv a1) and
//     send g1 (20 ms: only the sync waits for its end) are not: GPU slack [72.01, 73.01] = 1 ms.
TEST(PipelineJob, TwoStagesTwoMicrobatchesWorkedByHand) {
  const PipelineJob job(hand_worked_source(), PipelineSpec{.stages = 2, .microbatches = 2, .layers = 1, .forward_ns = 10 * kMs,
                                                    .backward_ratio = 2.0, .p2p_ns = 1 * kMs});
  ASSERT_EQ(job.ranks(), 2);
  EXPECT_EQ(job.transfers(), 4);
  EXPECT_EQ(job.compute_ns(0), 60 * kMs);
  EXPECT_EQ(job.compute_ns(1), 60 * kMs);
  const std::vector<Trace> t = traces(job);
  EXPECT_EQ(nth_compute(t[0], 0), Interval(kT0, kT0 + 10 * kMs));
  EXPECT_EQ(nth_compute(t[0], 2), Interval(kT0 + 42 * kMs, kT0 + 62 * kMs));
  EXPECT_EQ(nth_compute(t[0], 3), Interval(kT0 + 73 * kMs, kT0 + 93 * kMs));
  EXPECT_EQ(nth_compute(t[1], 3), Interval(kT0 + 52 * kMs, kT0 + 72 * kMs));
  EXPECT_EQ(nth_collective(t[0], "send", 1), Interval(kT0 + 20 * kMs, kT0 + 42 * kMs));
  EXPECT_EQ(nth_collective(t[0], "recv", 0), Interval(kT0 + 20 * kMs, kT0 + 42 * kMs)) << "posted early: wait + transfer";
  EXPECT_EQ(nth_collective(t[0], "recv", 1), Interval(kT0 + 62 * kMs, kT0 + 73 * kMs));
  EXPECT_EQ(nth_collective(t[1], "recv", 0), Interval(kT0, kT0 + 11 * kMs));
  EXPECT_EQ(nth_collective(t[1], "recv", 1), Interval(kT0 + 41 * kMs, kT0 + 42 * kMs));
  EXPECT_EQ(nth_collective(t[1], "send", 1), Interval(kT0 + 72 * kMs, kT0 + 73 * kMs));
  EXPECT_EQ(job.span_ns(), 94 * kMs + kT0);

  const Trace linked = trace::link_job(traces(job));
  const trace::JobInfo& info = linked.meta.job;
  EXPECT_EQ(info.collectives_linked, 4);
  EXPECT_EQ(info.match_method, "peer and order");
  EXPECT_TRUE(info.warnings.empty()) << info.warnings.front();
  ASSERT_EQ(info.ranks.size(), 2u);
  EXPECT_EQ(info.ranks[0].matched, 4);
  EXPECT_EQ(info.ranks[1].matched, 4);
  EXPECT_EQ(info.ranks[1].offset_ns, 0);
  EXPECT_EQ(info.ranks[0].wait_ns, 52 * kMs);
  EXPECT_EQ(info.ranks[1].wait_ns, 10 * kMs);

  const timing::Analysis a = timing::analyze(linked, graph::Window{}, {});
  EXPECT_EQ(a.schedule.makespan_ns, 94 * kMs + kT0);
  EXPECT_LE(a.replay_error, 1e-12);
  ASSERT_EQ(a.gpus.size(), 2u);
  EXPECT_EQ(a.gpus[0].busy_ns, 93 * kMs);
  EXPECT_EQ(a.gpus[1].busy_ns, 73 * kMs);
  EXPECT_EQ(a.gpus[0].slack_ns, 29 * kMs);
  EXPECT_EQ(a.gpus[1].slack_ns, 1 * kMs);
}

// Interleaved 1F1B, 2 ranks × 2 chunks (virtual stages 0, 2 on rank 0; 1, 3 on rank 1), 2
// micro-batches: M = S, so Megatron warms up with every forward: F(c0 m0) F(c0 m1) F(c1 m0)
// F(c1 m1), then B(c1 m0) B(c1 m1) B(c0 m0) B(c0 m1). A chunk's pass is half the stage's: F 10
// ms, B 20 ms; transfers 1 ms. Times in ms after the first kernel's start (0.01 ms):
//   rank 1: recv [0, 11]; F(c0 m0) [11, 21]; recv [21, 22] (rank 0 sent at 20); F(c0 m1) [22, 32];
//     recv (from vs 2) [32, 33]; F(c1 m0) [33, 43]; recv [43, 44]; F(c1 m1) [44, 54]; B(c1 m0)
//     [54, 74]; B(c1 m1) [74, 94]; recv g (vs 1, m0) posted 94, rank 0 sends at 95: [94, 96];
//     B(c0 m0) [96, 116]; recv [116, 117]; B(c0 m1) [117, 137].
//   rank 0: F(c0 m0) [0, 10]; F(c0 m1) [10, 20]; recv (vs 2 m0, sent by rank 1 at 21) [20, 22];
//     F(c1 m0) [22, 32]; recv [32, 33]; F(c1 m1) [33, 43]; recv g (rank 1 sends at 74) [43, 75];
//     B(c1 m0) [75, 95]; recv [95, 96]; B(c1 m1) [96, 116]; recv g (vs 0 m0, sent at 116)
//     [116, 117]; B(c0 m0) [117, 137]; recv [137, 138]; B(c0 m1) [138, 158]; sync + 1 ms.
// Makespan 159.01 ms; 12 transfers (6 each way).
TEST(PipelineJob, InterleavedTwoRanksTwoChunksWorkedByHand) {
  const PipelineJob job(hand_worked_source(), PipelineSpec{.stages = 2, .microbatches = 2, .virtual_stages = 2, .layers = 1,
                                                    .forward_ns = 20 * kMs, .backward_ratio = 2.0, .p2p_ns = 1 * kMs});
  EXPECT_EQ(job.transfers(), 12);
  const std::vector<Trace> t = traces(job);
  EXPECT_EQ(nth_compute(t[0], 2), Interval(kT0 + 22 * kMs, kT0 + 32 * kMs));
  EXPECT_EQ(nth_compute(t[0], 7), Interval(kT0 + 138 * kMs, kT0 + 158 * kMs));
  EXPECT_EQ(nth_compute(t[1], 4), Interval(kT0 + 54 * kMs, kT0 + 74 * kMs));
  EXPECT_EQ(nth_compute(t[1], 7), Interval(kT0 + 117 * kMs, kT0 + 137 * kMs));
  EXPECT_EQ(nth_collective(t[0], "recv", 2), Interval(kT0 + 43 * kMs, kT0 + 75 * kMs));
  EXPECT_EQ(nth_collective(t[1], "recv", 4), Interval(kT0 + 94 * kMs, kT0 + 96 * kMs));
  EXPECT_EQ(job.span_ns(), 159 * kMs + kT0);
  const Trace linked = trace::link_job(traces(job));
  EXPECT_EQ(linked.meta.job.collectives_linked, 12);
  EXPECT_TRUE(linked.meta.job.warnings.empty()) << linked.meta.job.warnings.front();
  const timing::Analysis a = timing::analyze(linked, graph::Window{}, {});
  EXPECT_EQ(a.schedule.makespan_ns, 159 * kMs + kT0);
  EXPECT_LE(a.replay_error, 1e-12);
}

// Two replicas of a 2-stage pipeline, 1 micro-batch (F 10 ms, B 20 ms, transfers 1 ms); replica 1
// 10 % slower (F 11, B 22); a 2 ms gradient all-reduce per stage group at the end. Ranks: stage s
// of replica r is rank 2s + r. Times in ms after the first kernel's start (0.01 ms):
//   replica 0: rank 0 F [0, 10], send [10, 11]; rank 2 recv [0, 11], F [11, 21], B [21, 41], send
//     g [41, 42]; rank 0 recv g [10, 42], B [42, 62].
//   replica 1: rank 1 F [0, 11]; rank 3 recv [0, 12], F [12, 23], B [23, 45], send g [45, 46];
//     rank 1 recv g [11, 46], B [46, 68].
//   all-reduce of stage 0 (ranks 0, 1): arrivals 62 and 68 → both end at 70: rank 0 records
//     [62, 70] (6 ms of wait + 2), rank 1 [68, 70]; stage 1 (ranks 2, 3): arrivals 41, 45 → 47.
// Makespan: stage 0's syncs return at 71 → 71.01 ms.
TEST(PipelineJob, DataParallelReplicasWorkedByHand) {
  const PipelineJob job(hand_worked_source(), PipelineSpec{.stages = 2, .microbatches = 1, .dp = 2, .layers = 1,
                                                    .forward_ns = 10 * kMs, .backward_ratio = 2.0, .p2p_ns = 1 * kMs,
                                                    .allreduce_ns = 2 * kMs, .slow_replica = 1, .replica_slowdown = 0.1});
  ASSERT_EQ(job.ranks(), 4);
  EXPECT_EQ(job.stage_of(2), 1);
  EXPECT_EQ(job.replica_of(3), 1);
  EXPECT_EQ(job.transfers(), 4);
  EXPECT_EQ(job.collectives(), 2);
  const std::vector<Trace> t = traces(job);
  EXPECT_EQ(nth_compute(t[1], 1), Interval(kT0 + 46 * kMs, kT0 + 68 * kMs));
  EXPECT_EQ(nth_collective(t[0], "allreduce", 0), Interval(kT0 + 62 * kMs, kT0 + 70 * kMs));
  EXPECT_EQ(nth_collective(t[1], "allreduce", 0), Interval(kT0 + 68 * kMs, kT0 + 70 * kMs));
  EXPECT_EQ(nth_collective(t[2], "allreduce", 0), Interval(kT0 + 41 * kMs, kT0 + 47 * kMs));
  EXPECT_EQ(nth_collective(t[3], "recv", 0), Interval(kT0, kT0 + 12 * kMs));
  EXPECT_EQ(t[2].strings.view(t[2].collectives.group_ranks[t[2].collectives.size() - 1]), "[2, 3]");
  EXPECT_EQ(job.span_ns(), 71 * kMs + kT0);
  const Trace linked = trace::link_job(traces(job));
  EXPECT_EQ(linked.meta.job.collectives_linked, 6);
  EXPECT_EQ(linked.meta.job.match_method, "peer and order, process group + sequence");
  EXPECT_TRUE(linked.meta.job.warnings.empty()) << linked.meta.job.warnings.front();
  const timing::Analysis a = timing::analyze(linked, graph::Window{}, {});
  EXPECT_EQ(a.schedule.makespan_ns, 71 * kMs + kT0);
}

// Tensor parallel and a straggler: one stage of 2 tensor-parallel ranks, 1 micro-batch, 2 layers
// (a layer's forward 5 ms, backward 10 ms), a 1 ms all-reduce after each layer of each pass; rank 1
// a 20 % straggler (6 and 12 ms). Times in ms after the first kernel's start (0.01 ms):
//   forward layer 0: [0, 5] and [0, 6]; all-reduce → both end at 7 (rank 0 records [5, 7]);
//   layer 1: [7, 12] / [7, 13] → 14; backward layer 1: [14, 24] / [14, 26] → 27; layer 0:
//   [27, 37] / [27, 39] → 40; the syncs return at 41. Makespan 41.01 ms.
// Rank 0 waits 1 + 1 + 2 + 2 = 6 ms in the all-reduces. EMO's slack: every kernel of rank 1 and
// every all-reduce is critical (each all-reduce ends when rank 1 arrives + 1 ms, and the next
// layer starts then); rank 0's kernels are not: its GPU slack is 40 ms busy − the all-reduces'
// 2 + 2 + 3 + 3 ms = 30 ms; rank 1's is 0.
TEST(PipelineJob, TensorParallelWithAStragglerWorkedByHand) {
  const PipelineJob job(hand_worked_source(), PipelineSpec{.stages = 1, .microbatches = 1, .layers = 2, .forward_ns = 10 * kMs,
                                                    .backward_ratio = 2.0, .tp = 2, .tp_allreduce_ns = 1 * kMs,
                                                    .straggler = 1, .straggler_slowdown = 0.2});
  ASSERT_EQ(job.ranks(), 2);
  EXPECT_EQ(job.tp_of(1), 1);
  EXPECT_EQ(job.collectives(), 4);
  const std::vector<Trace> t = traces(job);
  EXPECT_EQ(nth_collective(t[0], "allreduce", 0), Interval(kT0 + 5 * kMs, kT0 + 7 * kMs));
  EXPECT_EQ(nth_collective(t[0], "allreduce", 3), Interval(kT0 + 37 * kMs, kT0 + 40 * kMs));
  EXPECT_EQ(nth_compute(t[1], 2), Interval(kT0 + 14 * kMs, kT0 + 26 * kMs));
  EXPECT_EQ(t[0].strings.view(t[0].collectives.group[0]), "tp_stage0_replica0");
  const Trace linked = trace::link_job(traces(job));
  EXPECT_EQ(linked.meta.job.collectives_linked, 4);
  EXPECT_TRUE(linked.meta.job.warnings.empty()) << linked.meta.job.warnings.front();
  EXPECT_EQ(linked.meta.job.ranks[0].wait_ns, 6 * kMs);
  EXPECT_EQ(linked.meta.job.ranks[1].wait_ns, 0);
  const timing::Analysis a = timing::analyze(linked, graph::Window{}, {});
  EXPECT_EQ(a.schedule.makespan_ns, 41 * kMs + kT0);
  ASSERT_EQ(a.gpus.size(), 2u);
  EXPECT_EQ(a.gpus[0].slack_ns, 30 * kMs);
  EXPECT_EQ(a.gpus[1].slack_ns, 0);
}

// MoE: one stage, 2 data-parallel ranks = the expert-parallel group, 1 micro-batch, 1 layer: dense
// part 5 ms forward (10 backward), experts 5 ms (10), rank 0 the hot one ((0 + 0 + 0) mod 2 = 0)
// with imbalance 1 (2×: 10 and 20 ms); all-to-alls 1 ms, the gradient all-reduce 2 ms. Times in
// ms after the first kernel's start (0.01 ms):
//   dense [0, 5] both; dispatch → 6; experts [6, 16] (rank 0), [6, 11] (rank 1); combine → 17
//   (rank 1 records [11, 17]); backward: combine's gradient → 18; experts [18, 38] / [18, 28];
//   dispatch's gradient → 39 (rank 1 records [28, 39]); dense [39, 49]; all-reduce → 51; syncs
//   return at 52. Makespan 52.01 ms.
TEST(PipelineJob, MoeWithAHotExpertWorkedByHand) {
  const PipelineJob job(hand_worked_source(), PipelineSpec{.stages = 1, .microbatches = 1, .dp = 2, .layers = 1,
                                                    .forward_ns = 10 * kMs, .backward_ratio = 2.0,
                                                    .allreduce_ns = 2 * kMs, .moe = true, .expert_share = 0.5,
                                                    .expert_imbalance = 1.0, .all_to_all_ns = 1 * kMs});
  ASSERT_EQ(job.ranks(), 2);
  EXPECT_EQ(job.collectives(), 5);
  const std::vector<Trace> t = traces(job);
  EXPECT_EQ(nth_compute(t[0], 1), Interval(kT0 + 6 * kMs, kT0 + 16 * kMs));
  EXPECT_EQ(nth_compute(t[1], 2), Interval(kT0 + 18 * kMs, kT0 + 28 * kMs));
  EXPECT_EQ(nth_collective(t[1], "all_to_all", 1), Interval(kT0 + 11 * kMs, kT0 + 17 * kMs));
  EXPECT_EQ(nth_collective(t[1], "all_to_all", 3), Interval(kT0 + 28 * kMs, kT0 + 39 * kMs));
  EXPECT_EQ(nth_collective(t[0], "allreduce", 0), Interval(kT0 + 49 * kMs, kT0 + 51 * kMs));
  const Trace linked = trace::link_job(traces(job));
  EXPECT_EQ(linked.meta.job.collectives_linked, 5);
  EXPECT_TRUE(linked.meta.job.warnings.empty()) << linked.meta.job.warnings.front();
  const timing::Analysis a = timing::analyze(linked, graph::Window{}, {});
  EXPECT_EQ(a.schedule.makespan_ns, 52 * kMs + kT0);
}

/// `spec` through Kineto JSON and back (what `emo analyze rank*.json.gz` reads): the transfers and
/// collectives counted by hand, every one linked, the clock offsets recovered, the linked graph's
/// replay exact and its makespan the generator's span.
void check_roundtrip(const JobSource& src, const PipelineSpec& spec, std::int64_t transfers, std::int64_t collectives) {
  const PipelineJob job(src, spec);
  EXPECT_EQ(job.transfers(), transfers);
  EXPECT_EQ(job.collectives(), collectives);
  const auto dir = scratch_dir("pipeline-roundtrip");
  std::vector<Trace> read;
  for (int r = 0; r < job.ranks(); ++r) {
    const std::string path = (dir / ("rank" + std::to_string(r) + ".json")).string();
    std::ofstream(path) << trace::to_kineto_json(job.rank_trace(r));
    read.push_back(trace::load_trace(path));
  }
  const Trace linked = trace::link_job(std::move(read));
  const trace::JobInfo& info = linked.meta.job;
  EXPECT_EQ(info.collectives_linked, transfers + collectives);
  EXPECT_TRUE(info.warnings.empty()) << info.warnings.front();
  EXPECT_LE(info.residual_max_ns, 1);
  for (const trace::JobRank& jr : info.ranks) {
    EXPECT_EQ(jr.matched, jr.collectives) << "rank " << jr.rank;
    EXPECT_NEAR(jr.offset_ns, job.offset_ns(0) - job.offset_ns(jr.rank), 1) << "rank " << jr.rank;
  }
  const timing::Analysis a = timing::analyze(linked, graph::Window{}, {});
  EXPECT_LE(a.replay_error, 1e-12);
  EXPECT_EQ(a.schedule.makespan_ns, job.span_ns());
}

TEST(PipelineJob, EveryTransferLinksAfterAKinetoRoundTrip) {
  JobSource src = hand_worked_source();
  src.layer = {{"gemm_a", 3.0}, {"softmax", 1.0}, {"gemm_b", 2.0}};
  // 3 stage boundaries × 8 micro-batches × 2 directions × 2 replicas × 2 iterations; 4 stage
  // groups × 2 iterations of gradient all-reduces.
  check_roundtrip(src,
                  PipelineSpec{.stages = 4, .microbatches = 8, .dp = 2, .iterations = 2, .stage_scale = {1, 1, 1, 1.5},
                               .slow_replica = 1, .jitter = 0.02, .max_offset_ns = 200 * kUs, .seed = 5},
                  3 * 8 * 2 * 2 * 2, 4 * 2);
  // 2 tensor-parallel ranks and MoE layers: 1 boundary × 4 micro-batches × 2 directions × 2
  // replicas × 2 TP ranks; per (stage, replica) 16 TP all-reduces (8 passes × 2 layers); per
  // (stage, TP rank) 32 all-to-alls (8 passes × 2 layers × 2) and the gradient all-reduce.
  check_roundtrip(src,
                  PipelineSpec{.stages = 2, .microbatches = 4, .dp = 2, .layers = 2, .tp = 2, .moe = true,
                               .jitter = 0.02, .max_offset_ns = 200 * kUs, .seed = 6},
                  1 * 4 * 2 * 2 * 2, 2 * 2 * 16 + 2 * 2 * (32 + 1));
}

TEST(PipelineJob, RejectsBadSpecs) {
  for (const PipelineSpec& bad : {PipelineSpec{.stages = 0}, PipelineSpec{.microbatches = 0},
                                  PipelineSpec{.stages = 4, .microbatches = 6, .virtual_stages = 2},
                                  PipelineSpec{.stages = 2, .stage_scale = {1, 1, 1}},
                                  PipelineSpec{.stages = 2, .stage_scale = {1, 0}}, PipelineSpec{.dp = 2, .slow_replica = 2},
                                  PipelineSpec{.p2p_ns = 0}, PipelineSpec{.jitter = -0.1}, PipelineSpec{.tp = 0},
                                  PipelineSpec{.dp = 1, .moe = true}, PipelineSpec{.dp = 2, .moe = true, .expert_share = 1},
                                  PipelineSpec{.straggler = 4}}) {
    EXPECT_THROW((PipelineJob{hand_worked_source(), bad}), std::invalid_argument) << describe(bad);
  }
  JobSource empty = hand_worked_source();
  empty.layer.clear();
  EXPECT_THROW((PipelineJob{empty, PipelineSpec{}}), std::invalid_argument);
}

TEST(MakeJob, WritesALabelledPipelineJob) {
  EMO_REQUIRE_DATA(path, "kineto/hta_training_16rank_rank0.json.gz");
  const auto dir = scratch_dir("make-job-pipeline");
  const std::string out = (dir / "job").string(), log = (dir / "log").string();
  const std::string cmd = std::string(EMO_MAKE_JOB) + " " + path + " " + out +
                          " --mode pipeline --stages 3 --microbatches 4 --last-stage-scale 1.5 --forward-ms 2 > " + log;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_NE(read_file(log).view().find("SYNTHETIC job: 3 ranks, a made-up 1F1B pipeline"), std::string_view::npos)
      << read_file(log).view();
  std::vector<Trace> ranks;
  for (int r = 0; r < 3; ++r) {
    const std::string file = out + "/rank0000" + std::to_string(r) + ".json.gz";
    ranks.push_back(trace::load_trace(file));
    EXPECT_EQ(ranks.back().meta.world_size, 3);
    EXPECT_EQ(ranks.back().gpu_name(0), "NVIDIA A100-SXM4-80GB");
    const std::string text(read_maybe_gzip(file).view());
    EXPECT_NE(text.find("\"emo_synthetic\": {\"note\": \"SYNTHETIC"), std::string::npos);
    EXPECT_NE(text.find("\"mode\": \"pipeline\""), std::string::npos);
  }
  const Trace linked = trace::link_job(std::move(ranks));
  EXPECT_EQ(linked.meta.job.collectives_linked, 2 * 4 * 2);
  EXPECT_TRUE(linked.meta.job.warnings.empty()) << linked.meta.job.warnings.front();
}

TEST(MakeJob, BadPipelineArgumentsExitTwoWithOneLine) {
  expect_exit_two_with_one_line(
      EMO_MAKE_JOB,
      {"a b --mode pipe", "a b --mode pipeline --ranks 4", "a b --stages 4 --ranks 4", "a b --mode pipeline --stages 0",
       "a b --mode pipeline --stage-scale 1,x", "a b --mode pipeline --stages 2 --stage-scale 1,1,1",
       "a b --mode pipeline --virtual-stages 2", "a b --mode pipeline-interleaved --stages 4 --microbatches 6",
       "a b --mode pipeline --dp 2 --slow-replica 2", "a b --mode pipeline --group-size 2"},
      scratch_dir("make-job-pipeline-bad"));
}

}  // namespace
}  // namespace emo::testing

namespace emo::testing {
namespace {

// Issue 26: a linked job's packs follow its slack (docs/packing.md, "A linked job"), on the
// 2-stage, 2-micro-batch job worked out by hand above, packed with min_pack 5 ms (every pass is
// longer than min_pack / 2, so no segment merges). Stage 0's islands: F0 [0.01, 10.01]; F1 with
// send a0 (both start at 10.01, when F0 ends: a new island); send a1, receive g0 and B0 (a1 and g0
// start at 20.01 when F1 ends; B0 joins at 42.01, the receive's end); receive g1 and B1 (from
// 62.01). Hard boundaries: F1 (slack 21 ms) after F0 (critical): criticality; B0 starts at the end
// of g0, which waited (22 ms recorded for a 1 ms transfer): collective; B1 after g1 (waited 11
// ms): collective. So 4 packs: first (critical), criticality, collective, collective (critical).
// Stage 1 is critical throughout and its one wait (a0) heads its first island: no hard boundary.
// Its islands — {a0, F0} from 0.01, {B0} from 21.01, {g0, a1, F1} from 41.01, {B1} from 52.01, {g1}
// from 72.01 — are packed to min_pack as a single trace's: a soft boundary follows an island with
// an edge to another device (a0; g0 and a1), and the end of B1 feeds the host sync but leaves
// less than min_pack: 3 packs, [0.01, 21.01), [21.01, 52.01), [52.01, …), all critical. The
// contraction stays exact.
TEST(PackJob, APipelineStagesPacksFollowTheJobsSlackWorkedByHand) {
  const PipelineJob job(hand_worked_source(), PipelineSpec{.stages = 2, .microbatches = 2, .layers = 1, .forward_ns = 10 * kMs,
                                                    .backward_ratio = 2.0, .p2p_ns = 1 * kMs});
  const Trace linked = trace::link_job(traces(job));
  const pack::PackRun r = pack::run_pack(linked, {}, {5 * kMs, "test"});
  EXPECT_EQ(r.contraction.contraction_error, 0.0);
  std::vector<std::string> cuts;
  std::vector<bool> critical;
  int stage1 = 0;
  std::vector<std::string> stage1_cuts;
  bool stage1_critical = true;
  for (const pack::Pack& p : r.packing.packs) {
    if (p.device == 1) {
      ++stage1;
      stage1_cuts.emplace_back(pack::cut_name(p.starts_at));
      stage1_critical = stage1_critical && p.critical;
      continue;
    }
    cuts.emplace_back(pack::cut_name(p.starts_at));
    critical.push_back(p.critical);
  }
  EXPECT_EQ(cuts, (std::vector<std::string>{"first", "criticality", "collective", "collective"}));
  EXPECT_EQ(critical, (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(stage1, 3);
  EXPECT_EQ(stage1_cuts, (std::vector<std::string>{"first", "host_sync", "host_sync"}));
  EXPECT_TRUE(stage1_critical);
}

}  // namespace
}  // namespace emo::testing
