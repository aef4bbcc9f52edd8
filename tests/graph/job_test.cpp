// Linking the ranks of one job (trace/job.h) and the collective edges of the joint graph, on a
// hand-made two-rank job whose every figure is worked out below, and on the real 2-rank pair.
//
// The hand-made job, in true time (rank 1's host clock runs 1000 ns ahead of rank 0's):
//   rank 0: cudaLaunchKernel [0, 5)  -> gemm [10, 110) on stream 7;
//           cudaLaunchKernel [20, 25) -> allreduce [110, 310) (it waits 100 ns for rank 1)
//   rank 1: cudaLaunchKernel [0, 5)  -> gemm [10, 210);  cudaLaunchKernel [20, 25) -> allreduce
//           [210, 310) (the last arrival: its 100 ns are the transfer)
// Rank 1's trace records every time + 1000. Both allreduces end together at 310 (true time).
#include "trace/job.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/dep_graph.h"
#include "graph/hand_trace.h"
#include "test_data.h"
#include "timing/timing.h"
#include "trace/load.h"

namespace emo::testing {
namespace {

constexpr auto S = DepGraph::start_tp;
constexpr auto E = DepGraph::end_tp;

struct RankSpec {
  std::int32_t rank = 0;
  TimeNs clock_ahead = 0;  ///< Added to every recorded time.
  TimeNs gemm = 100;       ///< gemm duration.
  TimeNs coll_end = 310;   ///< True end of the allreduce.
  bool group = true;       ///< Process group + sequence recorded.
  int collectives = 1;
  std::int32_t world = 2;
  bool device_sync = false;  ///< A cudaDeviceSynchronize [300, 320) with no record (inferred).
};

trace::Trace rank_trace(const RankSpec& r) {
  HandTrace h;
  const TimeNs a = r.clock_ahead;
  h.call("cudaLaunchKernel", a + 0, 5, 1);
  h.kernel("gemm", a + 10, r.gemm, 7, 1);
  for (int c = 0; c < r.collectives; ++c) {
    const TimeNs start = 10 + r.gemm + 1000 * c;
    h.call("cudaLaunchKernel", a + 20 + 1000 * c, 5, 2 + c);
    h.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", a + start, r.coll_end + 1000 * c - start, 7, 2 + c);
  }
  if (r.device_sync) h.call("cudaDeviceSynchronize", a + 300, 20, 50);
  trace::Trace t = h.finish();
  t.meta.path = fmt::format("rank{}.json", r.rank);
  t.meta.rank = r.rank;
  t.meta.world_size = r.world;
  auto& ct = t.collectives;
  for (std::uint32_t row = 0; row < t.ops.size(); ++row) {
    if (t.strings.view(t.ops.name[row]).find("ncclKernel") == std::string_view::npos) continue;
    ct.op.push_back(row);
    ct.name.push_back(t.strings.intern("allreduce"));
    ct.group.push_back(t.strings.intern(r.group ? "0" : ""));
    ct.group_ranks.push_back(t.strings.intern(r.group ? "[0, 1]" : ""));
    ct.group_size.push_back(r.group ? 2 : static_cast<std::int32_t>(kNone));
    ct.in_nelems.push_back(kNone);
    ct.out_nelems.push_back(kNone);
    ct.dtype.push_back(t.strings.intern(""));
    ct.sequence.push_back(r.group ? static_cast<std::int64_t>(ct.sequence.size()) : kNone);
  }
  return t;
}

std::vector<trace::Trace> two_ranks(bool group = true) {
  std::vector<trace::Trace> v;
  v.push_back(rank_trace({.rank = 0, .gemm = 100, .group = group}));
  v.push_back(rank_trace({.rank = 1, .clock_ahead = 1000, .gemm = 200, .group = group}));
  return v;
}

/// Node of the GPU op named `name` on linked device `device`.
std::uint32_t node_named(const trace::Trace& t, const DepGraph& g, std::string_view name, std::int32_t device) {
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    const std::uint32_t row = g.op[n];
    if (t.ops.device[row] == device && t.strings.view(t.ops.name[row]).starts_with(name)) return n;
  }
  ADD_FAILURE() << name << " on device " << device;
  return 0;
}

TEST(LinkJob, OffsetsWaitsAndMatchesOfAHandMadeJob) {
  for (const bool group : {true, false}) {
    const trace::Trace t = trace::link_job(two_ranks(group));
    const trace::JobInfo& job = t.meta.job;
    ASSERT_EQ(job.ranks.size(), 2u);
    EXPECT_EQ(job.collectives_linked, 1);
    EXPECT_EQ(job.match_method, group ? "process group + sequence" : "order per stream");
    EXPECT_EQ(job.ranks[0].offset_ns, 0);
    EXPECT_EQ(job.ranks[1].offset_ns, -1000);  // its clock runs 1000 ns ahead
    EXPECT_EQ(job.residual_max_ns, 0);
    EXPECT_EQ(job.ranks[0].wait_ns, 100);  // arrived at 110, the last at 210
    EXPECT_EQ(job.ranks[1].wait_ns, 0);
    EXPECT_EQ(job.ranks[0].matched, 1);
    EXPECT_EQ(job.ranks[1].matched, 1);
    // Device = position; rank 1's ops are on rank 0's clock; ids distinct per rank.
    std::vector<std::int64_t> corr;
    for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
      if (t.strings.view(t.ops.name[i]) == "gemm" && t.ops.device[i] == 1) {
        EXPECT_EQ(t.ops.start_ns[i], 10);
      }
      if (trace::is_api_call(t.ops.kind[i])) corr.push_back(t.ops.correlation[i]);
      if (i > 0) EXPECT_LE(t.ops.start_ns[i - 1], t.ops.start_ns[i]);
    }
    std::sort(corr.begin(), corr.end());
    EXPECT_EQ(std::adjacent_find(corr.begin(), corr.end()), corr.end());
    ASSERT_EQ(t.collectives.match.size(), 2u);
    EXPECT_EQ(t.collectives.match[0], t.collectives.match[1]);
    EXPECT_EQ(trace::job_rank_index(t, t.collectives.op[1]), t.ops.device[t.collectives.op[1]]);
  }
}

TEST(LinkJob, TheCollectiveWaitsForItsLastParticipant) {
  const trace::Trace t = trace::link_job(two_ranks());
  const DepGraph g = graph::build_graph(t);
  EXPECT_EQ(g.stats.edges[static_cast<int>(EdgeType::kCollective)], 2);
  const auto c0 = node_named(t, g, "nccl", 0), c1 = node_named(t, g, "nccl", 1);
  const auto g0 = node_named(t, g, "gemm", 0), g1 = node_named(t, g, "gemm", 1);
  // Transfer T = the shortest participant's duration (rank 1's 100 ns); every participant's too.
  EXPECT_EQ(g.dur[c0], 100);
  EXPECT_EQ(g.dur[c1], 100);
  const auto hub = c0, other = c1;
  expect_edge(g, S(other), E(hub), EdgeType::kCollective, 100);
  expect_edge(g, E(hub), E(other), EdgeType::kCollective, 0);
  expect_exact_replay(g);

  // Rank 0 is early by 100 ns: its gemm has 100 ns of slack, rank 1's none.
  const timing::Schedule s = timing::replay(g, g.dur);
  EXPECT_EQ(s.makespan_ns, 310);
  const std::vector<TimeNs> slack = timing::slack(g, s, g.dur);
  EXPECT_EQ(slack[g0], 100);
  EXPECT_EQ(slack[g1], 0);

  // What-ifs worked by hand: rank 1's gemm halved -> both arrive at 110, end at 210.
  std::vector<TimeNs> dur = g.dur;
  dur[g1] = 100;
  EXPECT_EQ(timing::replay(g, dur).makespan_ns, 210);
  // Rank 0's gemm 150 ns: it still arrives before rank 1 (160 < 210): nothing changes.
  dur = g.dur;
  dur[g0] = 150;
  EXPECT_EQ(timing::replay(g, dur).makespan_ns, 310);
  // Rank 0's gemm 250 ns: rank 0 is now the last (260): both end at 360.
  dur[g0] = 250;
  const timing::Schedule late = timing::replay(g, dur);
  EXPECT_EQ(late.makespan_ns, 360);
  EXPECT_EQ(late.end(c1), 360);
}

// A rank cut out of the job (trace::JobCut, the decomposed solve): rank 0 alone, on its own
// clock, its allreduce pinned at the job's transfer start 210 (rank 1 arrives then) with the
// transfer's 100 ns, the job to end by 330 (a stretched target). Worked by hand: the allreduce
// waits until 210 and ends at 310; "no later than 210" is an edge S(allreduce) -> E(sink) of
// 330 - 210 = 120 ns, so the makespan is 330 while it starts by 210 and grows by its lateness
// beyond. The sink: rank 0's only node nothing waits for is the allreduce itself (every host
// call launches something); with a trailing cudaDeviceSynchronize it is that call.
TEST(JobCut, APinnedCollectiveStartsAtItsPinAndALateStartOverrunsTheJobEnd) {
  for (const bool device_sync : {false, true}) {
    trace::Trace t = rank_trace({.rank = 0, .gemm = 100, .device_sync = device_sync});
    const std::uint32_t coll = t.collectives.op[0];
    t.meta.cut.pins.push_back({coll, 210, 100});
    t.meta.cut.end_ns = 330;
    const DepGraph g = graph::build_graph(t);
    const auto c = node_named(t, g, "nccl", 0), gemm = node_named(t, g, "gemm", 0);
    EXPECT_EQ(g.dur[c], 100);
    EXPECT_EQ(g.release[c], 210);
    const timing::Schedule s = timing::replay(g, g.dur);
    EXPECT_EQ(s.start(c), 210) << "device_sync " << device_sync;
    EXPECT_EQ(s.end(c), device_sync ? 310 : 330);  // without a sync the allreduce is the sink
    EXPECT_EQ(s.makespan_ns, 330);
    std::vector<TimeNs> dur = g.dur;
    dur[gemm] = 150;  // arrives at 160, still before the others: nothing moves
    EXPECT_EQ(timing::replay(g, dur).makespan_ns, 330);
    dur[gemm] = 250;  // arrives at 260, 50 ns late: the makespan says so
    EXPECT_EQ(timing::replay(g, dur).makespan_ns, 380);
  }
  // Without pins the same trace replays as recorded (the cut changes nothing else).
  const trace::Trace plain = rank_trace({.rank = 0, .gemm = 100});
  const DepGraph g = graph::build_graph(plain);
  EXPECT_EQ(timing::replay(g, g.dur).makespan_ns, 310);
}

TEST(LinkJob, AnUnrecordedDeviceSyncWaitsForItsOwnRankOnly) {
  std::vector<trace::Trace> v;
  v.push_back(rank_trace({.rank = 0, .gemm = 100, .device_sync = true}));
  v.push_back(rank_trace({.rank = 1, .clock_ahead = 1000, .gemm = 200}));
  const trace::Trace t = trace::link_job(std::move(v));
  const DepGraph g = graph::build_graph(t);
  int syncs = 0;
  for (std::uint32_t tp = 0; tp < 2 * g.nodes(); ++tp) {
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_type[k] != EdgeType::kHostSync) continue;
      ++syncs;
      EXPECT_EQ(t.ops.device[g.op[DepGraph::node_of(g.in_from[k])]], 0) << "a sync on rank 0 waits for rank 1";
    }
  }
  EXPECT_EQ(syncs, 1);  // the last op of rank 0's one stream
}

TEST(LinkJob, BadJobsAreRefusedOrWarned) {
  // Duplicated ranks: an error naming both files.
  {
    std::vector<trace::Trace> v;
    v.push_back(rank_trace({.rank = 1}));
    v.push_back(rank_trace({.rank = 1, .clock_ahead = 1000}));
    v[0].meta.path = "a.json";
    v[1].meta.path = "b.json";
    try {
      trace::link_job(std::move(v));
      FAIL() << "duplicated ranks accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("a.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("duplicated rank"), std::string::npos) << e.what();
    }
  }
  // Different world sizes, or recorded hours apart: not one job.
  {
    std::vector<trace::Trace> v = two_ranks();
    v[1].meta.world_size = 4;
    const auto why = trace::not_one_job(v);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("world sizes differ"), std::string::npos) << *why;
  }
  {
    std::vector<trace::Trace> v;
    v.push_back(rank_trace({.rank = 0}));
    v.push_back(rank_trace({.rank = 1, .clock_ahead = TimeNs{7200} * 1'000'000'000}));
    const auto why = trace::not_one_job(v);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("an hour apart"), std::string::npos) << *why;
    EXPECT_FALSE(trace::not_one_job(two_ranks()).has_value());
  }
  // A collective on one of its group's two ranks only (rank 1 has a second one): left unlinked,
  // with a warning; the one both have is linked.
  {
    std::vector<trace::Trace> v;
    v.push_back(rank_trace({.rank = 0}));
    v.push_back(rank_trace({.rank = 1, .clock_ahead = 1000, .gemm = 200, .collectives = 2}));
    const trace::Trace t = trace::link_job(std::move(v));
    EXPECT_EQ(t.meta.job.collectives_linked, 1);
    ASSERT_FALSE(t.meta.job.warnings.empty());
    EXPECT_NE(t.meta.job.warnings[0].find("missing on some of their group's ranks"), std::string::npos)
        << t.meta.job.warnings[0];
    std::int64_t unlinked = 0;
    for (const std::int64_t m : t.collectives.match) unlinked += m == kNone;
    EXPECT_EQ(unlinked, 1);
  }
  // Without sequence numbers, counts that differ: none of that kind is linked.
  {
    std::vector<trace::Trace> v;
    v.push_back(rank_trace({.rank = 0, .group = false}));
    v.push_back(rank_trace({.rank = 1, .clock_ahead = 1000, .gemm = 200, .group = false, .collectives = 2}));
    const trace::Trace t = trace::link_job(std::move(v));
    EXPECT_EQ(t.meta.job.collectives_linked, 0);
    ASSERT_FALSE(t.meta.job.warnings.empty());
    EXPECT_NE(t.meta.job.warnings.front().find("differ in number between ranks (rank 0: 1, rank 1: 2)"),
              std::string::npos)
        << t.meta.job.warnings.front();
    EXPECT_NE(t.meta.job.warnings.back().find("its clock is not aligned (offset 0)"), std::string::npos)
        << t.meta.job.warnings.back();
    EXPECT_EQ(graph::build_graph(t).stats.edges[static_cast<int>(EdgeType::kCollective)], 0);
  }
  // --ranks of the wrong length, and malformed --ranks text.
  EXPECT_THROW(trace::link_job(two_ranks(), {.ranks = {0}}), ArgumentError);
  EXPECT_THROW(trace::parse_ranks("0,x"), ArgumentError);
  EXPECT_EQ(trace::parse_ranks("2-4"), (std::vector<std::int32_t>{2, 3, 4}));
  EXPECT_EQ(trace::parse_ranks("3,1"), (std::vector<std::int32_t>{3, 1}));
}

TEST(LinkJobRealData, TheSampledTwoRankPairLinksAllTenSendRecvKernels) {
  EMO_REQUIRE_DATA(rank0, "kineto/hta_sampled_2rank_rank0.json.gz");
  EMO_REQUIRE_DATA(rank1, "kineto/hta_sampled_2rank_rank1.json.gz");
  std::vector<trace::Trace> v;
  v.push_back(trace::load_trace(rank0));
  v.push_back(trace::load_trace(rank1));
  ASSERT_FALSE(trace::not_one_job(v).has_value());
  const trace::Trace t = trace::link_job(std::move(v));
  const trace::JobInfo& job = t.meta.job;
  EXPECT_EQ(job.world_size, 128);
  EXPECT_EQ(job.collectives_linked, 10);
  EXPECT_EQ(job.match_method, "order per stream");
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[1].matched, 10);
  // The median over the ten pairs of (rank 0's end - rank 1's end), worked out from the JSON with
  // a script (docs/multi-rank.md): -8 us. The spread left is up to 134.145 ms (pairs of
  // different all_to_alls: the traces carry no sequence numbers).
  EXPECT_EQ(job.ranks[1].offset_ns, -8000);
  EXPECT_EQ(job.residual_max_ns, 134'145'000);
  const DepGraph g = graph::build_graph(t);
  EXPECT_EQ(g.stats.edges[static_cast<int>(EdgeType::kCollective)], 20);
  EXPECT_EQ(g.stats.cycle_edges, 0);
  expect_exact_replay(g);
}

}  // namespace
}  // namespace emo::testing
