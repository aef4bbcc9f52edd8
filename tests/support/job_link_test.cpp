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

#include "job/job_solve.h"
#include "graph/dep_graph.h"
#include "support/job_generator.h"
#include "test_data.h"
#include "timing/ports.h"
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
  for (const trace::JobRank& jr : info.ranks) {
    const bool alone = gen.group_of(jr.rank).last - gen.group_of(jr.rank).first < 2;
    EXPECT_EQ(jr.collectives, static_cast<std::int64_t>(src.collectives.size())) << "rank " << jr.rank;
    EXPECT_EQ(jr.matched, alone ? 0 : jr.collectives) << "rank " << jr.rank;
    // Groups share no collective: each is aligned within itself, on its lowest rank's clock
    // (the generator's groups are ranges of ranks; its offsets are what it put in).
    const int root = gen.group_of(jr.rank).first;
    const TimeNs want = alone ? 0 : gen.offset_ns(root) - gen.offset_ns(jr.rank);
    EXPECT_EQ(jr.offset_ns, want) << "rank " << jr.rank << " in the group of rank " << root;
  }
  // Every instance lies within one group, so every one ends together to the ns once aligned.
  EXPECT_LE(info.residual_max_ns, 1) << "collectives end together to the ns once aligned";
  // Each group but the lowest rank's is named in a warning: a rank alone as unaligned, a group of
  // several as aligned among itself.
  int alone_outside = 0, groups_outside = 0;
  for (int r = gen.group_of(0).last; r < spec.ranks; r = gen.group_of(r).last)
    ++(gen.group_of(r).last - gen.group_of(r).first < 2 ? alone_outside : groups_outside);
  int alone_warned = 0, groups_warned = 0;
  for (const std::string& w : info.warnings) {
    alone_warned += w.find("shares no linked collective") != std::string::npos;
    groups_warned += w.find("share linked collectives among themselves") != std::string::npos;
  }
  EXPECT_EQ(alone_warned, alone_outside);
  EXPECT_EQ(groups_warned, groups_outside);
  // The order of the files does not change any rank's offset.
  std::vector<Trace> reversed;
  for (int r = spec.ranks - 1; r >= 0; --r) reversed.push_back(gen.rank_trace(r));
  const Trace back = trace::link_job(std::move(reversed));
  for (const trace::JobRank& jr : back.meta.job.ranks) {
    const auto same = std::find_if(info.ranks.begin(), info.ranks.end(),
                                   [&](const trace::JobRank& k) { return k.rank == jr.rank; });
    ASSERT_NE(same, info.ranks.end());
    EXPECT_EQ(jr.offset_ns, same->offset_ns) << "rank " << jr.rank << " with the files in reverse order";
  }
  // Nor the merged trace: the ranks are taken in rank order, so device i is rank i either way and
  // every op is where it was (stop 51: the simulated figures of a job changed with the file order).
  ASSERT_EQ(back.meta.job.ranks.size(), info.ranks.size());
  for (std::size_t i = 0; i < info.ranks.size(); ++i) {
    EXPECT_EQ(info.ranks[i].rank, static_cast<std::int32_t>(i));
    EXPECT_EQ(back.meta.job.ranks[i].rank, static_cast<std::int32_t>(i));
  }
  EXPECT_EQ(back.ops.start_ns, job.ops.start_ns);
  EXPECT_EQ(back.ops.dur_ns, job.ops.dur_ns);
  EXPECT_EQ(back.ops.device, job.ops.device);
  EXPECT_EQ(back.ops.stream, job.ops.stream);
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

/// Per GPU op that is not a collective: its duration scaled by factor[rank position] (a what-if).
std::vector<TimeNs> scaled(const graph::DepGraph& g, const std::vector<std::int32_t>& position_of_node,
                           const std::vector<char>& collective_node, const std::vector<double>& factor) {
  std::vector<TimeNs> dur(g.dur.begin(), g.dur.end());
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (!g.gpu[n] || collective_node[n] || position_of_node[n] < 0) continue;
    dur[n] = static_cast<TimeNs>(std::llround(static_cast<double>(dur[n]) * factor[static_cast<std::size_t>(position_of_node[n])]));
  }
  return dur;
}

/// The job timed two ways — the linked job's graph replayed whole (timing::replay), and each
/// rank's own graph reduced to its collective ports and composed (timing::time_job, what the
/// decomposed solve does) — at the recorded durations and with the ranks' compute slowed or sped
/// up by different factors: the same makespan and the same transfer start of every collective.
void check_ports_time_the_job(const std::string& path, const JobSpec& spec) {
  const Trace src = trace::load_trace(path);
  const JobGenerator gen(src, spec);
  std::vector<Trace> ranks;
  std::vector<trace::RankDigest> digests;
  for (int r = 0; r < spec.ranks; ++r) {
    ranks.push_back(gen.rank_trace(r));
    digests.push_back(trace::digest(ranks.back()));
  }
  // One process group of every rank: each digest carries its rank list once, not per collective.
  for (const trace::RankDigest& d : digests) {
    ASSERT_EQ(d.rank_lists.size(), 1u) << d.path;
    EXPECT_EQ(d.rank_lists[0], "[0, 1, 2, 3]") << d.path;
    for (const auto& c : d.collectives) EXPECT_EQ(c.group_ranks, 0) << d.path;
  }
  const job::JobPorts jp = job::job_ports(digests, trace::link_ranks(digests));
  std::vector<Trace> copies;
  for (int r = 0; r < spec.ranks; ++r) copies.push_back(gen.rank_trace(r));
  const Trace job = trace::link_job(std::move(copies));
  const graph::DepGraph g = graph::build_graph(job);
  std::vector<std::int32_t> pos(g.nodes());
  std::vector<char> coll(g.nodes(), 0);
  std::vector<std::int64_t> inst_of_row(job.ops.size(), -1);
  for (std::size_t c = 0; c < job.collectives.size(); ++c) inst_of_row[job.collectives.op[c]] = job.collectives.match[c];
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    pos[n] = trace::job_rank_index(job, g.op[n]);
    coll[n] = inst_of_row[g.op[n]] >= 0;
  }
  for (const std::vector<double>& factor : {std::vector<double>(spec.ranks, 1.0), std::vector<double>{0.9, 1.0, 1.25, 1.1}}) {
    // The whole job's graph.
    const timing::Schedule s = timing::replay(g, scaled(g, pos, coll, factor));
    std::vector<TimeNs> last(jp.instances, INT64_MIN);
    for (std::uint32_t n = 0; n < g.nodes(); ++n) {
      if (coll[n]) last[static_cast<std::size_t>(inst_of_row[g.op[n]])] = std::max(last[static_cast<std::size_t>(inst_of_row[g.op[n]])], s.start(n));
    }
    // Each rank's graph reduced to its ports, composed.
    std::vector<timing::PortGraph> pg(ranks.size());
    std::vector<timing::RankPorts> rp;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      ranks[r].meta.cut = jp.open[r];
      const graph::DepGraph gr = graph::build_graph(ranks[r]);
      std::vector<std::uint32_t> node_of(ranks[r].ops.size(), UINT32_MAX), port_node;
      for (std::uint32_t n = 0; n < gr.nodes(); ++n) node_of[gr.op[n]] = n;
      for (const trace::CollectivePin& p : jp.open[r].pins) port_node.push_back(node_of[p.op]);
      std::vector<char> rcoll(gr.nodes(), 0);
      for (const std::uint32_t n : port_node) rcoll[n] = 1;
      pg[r] = timing::reduce_to_ports(gr, scaled(gr, std::vector<std::int32_t>(gr.nodes(), static_cast<std::int32_t>(r)), rcoll, factor), port_node);
    }
    for (std::size_t r = 0; r < ranks.size(); ++r) rp.push_back({&pg[r], jp.instance[r], jp.link.info.ranks[r].offset_ns});
    const timing::JobTiming jt = timing::time_job(rp, jp.instances);
    EXPECT_EQ(jt.cycle_breaks, 0);
    EXPECT_EQ(jt.makespan_ns, s.makespan_ns) << "factors " << factor[0] << " ...";
    std::size_t same = 0;
    for (std::size_t c = 0; c < jp.instances; ++c) same += jt.transfer_start_ns[c] == last[c];
    EXPECT_EQ(same, jp.instances) << "transfer starts that differ from the job graph's";
    std::size_t lags = 0;
    for (const auto& p : pg) lags += p.lags.size();
    std::printf("%s, %s, factor of rank 2 %.2f: makespan %lld ns both ways; %zu instances; %zu port lags kept over %zu ranks\n",
                path.c_str(), describe(spec).c_str(), factor[2], static_cast<long long>(s.makespan_ns), jp.instances, lags,
                ranks.size());
  }
}

TEST(JobPorts, TheRanksReductionsTimeTheJobAsItsWholeGraph) {
  EMO_REQUIRE_DATA(path, "kineto/hta_nccl_allreduce_rank0.json.gz");
  check_ports_time_the_job(path, JobSpec{.ranks = 4, .straggler = 2, .max_offset_ns = 200'000, .seed = 3});
}

TEST(JobPorts, TheRanksReductionsTimeTheTrainingJobAsItsWholeGraph) {
  EMO_REQUIRE_DATA(path, "kineto/hta_training_16rank_rank0.json.gz");
  check_ports_time_the_job(path, JobSpec{.ranks = 4, .straggler = 1, .max_offset_ns = 100'000, .seed = 8});
}

}  // namespace
}  // namespace emo::testing
