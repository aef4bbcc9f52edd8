// Generated jobs (support/job_generator.h) through trace::link_job and the joint dependency graph
// (issue 16): linking recovers the clock offsets the generator put in and matches every
// collective; the joint graph gives every linked collective the transfer time the generator used
// (the last arrival's own duration), so the generator's coupled replay and EMO's joint graph agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/dep_graph.h"
#include "support/job_generator.h"
#include "test_data.h"
#include "timing/timing.h"
#include "trace/job.h"
#include "trace/load.h"

namespace emo::testing {
namespace {

using trace::Trace;

void check_link(const std::string& path, const JobSpec& spec) {
  const Trace src = trace::load_trace(path);
  const JobGenerator gen(src, spec);
  std::vector<Trace> ranks;
  for (int r = 0; r < spec.ranks; ++r) ranks.push_back(gen.rank_trace(r));
  const Trace job = trace::link_job(std::move(ranks));
  const trace::JobInfo& info = job.meta.job;
  ASSERT_EQ(static_cast<int>(info.ranks.size()), spec.ranks);
  EXPECT_EQ(info.world_size, spec.ranks);
  // Every collective instance is linked: one per source collective and group of ≥ 2 ranks.
  int groups = 0;
  for (int r = 0; r < spec.ranks; r = gen.group_of(r).last) groups += gen.group_of(r).last - gen.group_of(r).first >= 2;
  EXPECT_EQ(info.collectives_linked, static_cast<std::int64_t>(src.collectives.size()) * groups);
  const int reference = info.ranks[0].rank;
  for (const trace::JobRank& jr : info.ranks) {
    const bool alone = gen.group_of(jr.rank).last - gen.group_of(jr.rank).first < 2;
    EXPECT_EQ(jr.collectives, static_cast<std::int64_t>(src.collectives.size())) << "rank " << jr.rank;
    EXPECT_EQ(jr.matched, alone ? 0 : jr.collectives) << "rank " << jr.rank;
    // Groups share no collective: only the reference's group can be aligned with it.
    if (alone || gen.group_of(jr.rank).index != gen.group_of(reference).index) continue;
    // Offsets put each rank on the reference's clock: offset(reference) − offset(rank).
    const TimeNs want = gen.offset_ns(reference) - gen.offset_ns(jr.rank);
    EXPECT_LE(std::abs(jr.offset_ns - want), info.residual_max_ns + 1)
        << "rank " << jr.rank << " recovered " << jr.offset_ns << " put in " << want;
  }
  if (groups == 1) {
    EXPECT_LE(info.residual_max_ns, 1) << "collectives end together to the ns once aligned";
  } else {
    // Disjoint groups: the ranks outside the reference's group cannot be aligned with it, and
    // link_job says so for each of them.
    int unaligned = 0;
    for (const std::string& w : info.warnings) unaligned += w.find("shares no linked collective") != std::string::npos;
    int outside = 0;
    for (int r = 0; r < spec.ranks; ++r) outside += gen.group_of(r).index != gen.group_of(reference).index;
    EXPECT_EQ(unaligned, outside);
  }
  // The joint graph: every linked collective's duration is the generator's T.
  const graph::DepGraph g = graph::build_graph(job);
  std::vector<std::int64_t> coll_of(job.ops.size(), -1);
  for (std::size_t c = 0; c < job.collectives.size(); ++c) coll_of[job.collectives.op[c]] = static_cast<std::int64_t>(c);
  std::size_t checked = 0;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    const std::int64_t c = coll_of[g.op[n]];
    if (c < 0 || job.collectives.match.empty() || job.collectives.match[c] == trace::kNone) continue;
    const auto seq = static_cast<std::size_t>(job.collectives.sequence[c]);
    EXPECT_EQ(g.dur[n], gen.transfer_ns(seq)) << "collective seq " << seq << " on device " << job.ops.device[g.op[n]];
    ++checked;
  }
  EXPECT_GT(checked, 0u);
  EXPECT_GT(g.stats.edges[static_cast<int>(graph::EdgeType::kCollective)], 0);
  const timing::Schedule s = timing::replay(g, g.dur);
  EXPECT_LE(timing::replay_error(g, s), 1e-9);
  std::printf("%s, %s: %lld collective instances linked, residual max %lld ns, %zu collective nodes checked\n",
              path.c_str(), describe(spec).c_str(), static_cast<long long>(info.collectives_linked),
              static_cast<long long>(info.residual_max_ns), checked);
}

TEST(JobLink, RecoversOffsetsAndMatchesEveryCollective) {
  EMO_REQUIRE_DATA(path, "kineto/hta_nccl_allreduce_rank0.json.gz");
  check_link(path, JobSpec{.ranks = 4, .straggler = 2, .max_offset_ns = 200'000, .seed = 3});
}

TEST(JobLink, GroupsOfTwoOnTheTrainingTrace) {
  EMO_REQUIRE_DATA(path, "kineto/hta_training_16rank_rank0.json.gz");
  check_link(path, JobSpec{.ranks = 4, .straggler = 1, .max_offset_ns = 100'000, .seed = 8, .group_size = 2});
}

}  // namespace
}  // namespace emo::testing
