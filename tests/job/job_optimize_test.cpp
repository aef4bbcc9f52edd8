// Joint optimisation of a job of several ranks (docs/multi-rank.md) on a generated job
// (tests/support/job_generator.h: SYNTHETIC, derived from the real hta_training_16rank_rank0 trace)
// with one straggler: the other ranks have slack before every collective, waiting for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "job/job_compare.h"
#include "job/job_solve.h"
#include "graph/dep_graph.h"
#include "timing/timing.h"
#include "driver/optimize.h"
#include "model/gpu_catalog.h"
#include "support/job_generator.h"
#include "test_data.h"
#include "trace/job.h"
#include "trace/load.h"

namespace emo::testing {
namespace {

constexpr int kRanks = 3;
constexpr int kStraggler = 1;

std::vector<trace::Trace> job_ranks(const trace::Trace& source) {
  JobSpec spec;
  spec.ranks = kRanks;
  spec.straggler = kStraggler;
  spec.straggler_slowdown = 0.10;
  spec.jitter = 0.01;
  spec.max_offset_ns = 100'000;
  spec.seed = 3;
  return generate_job(source, spec);
}

/// Duration-weighted mean clock of each rank's packs in r's kept plan (MHz), by rank.
std::map<std::int32_t, double> mean_clock_by_rank(const trace::Trace& job, const driver::OptimizeResult& r) {
  std::map<std::int32_t, double> num, den;
  const auto& packs = r.packs.packing.packs;
  for (std::size_t p = 0; p < packs.size(); ++p) {
    const std::int32_t rank = job.meta.job.ranks.at(static_cast<std::size_t>(packs[p].device)).rank;
    num[rank] += r.plan().pack_clock_mhz[p] * static_cast<double>(packs[p].dur_ns());
    den[rank] += static_cast<double>(packs[p].dur_ns());
  }
  std::map<std::int32_t, double> out;
  for (const auto& [rank, n] : num) out[rank] = n / den[rank];
  return out;
}

TEST(JobOptimize, TheOtherRanksSlowDownIntoTheirWaitForTheStraggler) {
  EMO_REQUIRE_DATA(path, "kineto/hta_training_16rank_rank0.json.gz");
  const trace::Trace source = trace::load_trace(path);
  trace::Trace job = trace::link_job(job_ranks(source));
  ASSERT_EQ(job.meta.job.ranks.size(), static_cast<std::size_t>(kRanks));
  ASSERT_EQ(job.meta.job.collectives_linked, static_cast<std::int64_t>(source.collectives.size()));
  // The straggler is the last to arrive: it waits least in the collectives.
  for (const trace::JobRank& r : job.meta.job.ranks) {
    if (r.rank != kStraggler) {
      EXPECT_GT(r.wait_ns, job.meta.job.ranks[kStraggler].wait_ns) << "rank " << r.rank;
    }
  }
  // The ranks are coupled: the straggler's compute 20 % longer delays every other rank's end.
  {
    const graph::DepGraph g = graph::build_graph(job);
    std::vector<TimeNs> dur = g.dur;
    for (std::uint32_t n = 0; n < g.nodes(); ++n) {
      const std::uint32_t row = g.op[n];
      if (g.gpu[n] && job.ops.device[row] == kStraggler && !job.is_collective(row)) dur[n] = dur[n] * 6 / 5;
    }
    const timing::Schedule before = timing::replay(g, g.dur), after = timing::replay(g, dur);
    for (std::int32_t d = 0; d < kRanks; ++d) {
      TimeNs end0 = 0, end1 = 0;
      for (std::uint32_t n = 0; n < g.nodes(); ++n) {
        if (!g.gpu[n] || job.ops.device[g.op[n]] != d) continue;
        end0 = std::max(end0, before.end(n));
        end1 = std::max(end1, after.end(n));
      }
      EXPECT_GT(end1, end0) << "rank " << d << " does not wait for the straggler";
    }
  }
  driver::OptimizeOptions opts;
  opts.max_slowdown = 0.005;
  const model::GpuSpec& gpu = model::GpuCatalog::builtin().at("A100-SXM4-80GB");
  const driver::OptimizeResult r = driver::optimize(job, graph::Window{}, gpu, opts);
  const driver::Evaluation& ev = r.evaluation;
  EXPECT_LE(ev.emo.time_ns, ev.statics.target_ns) << "the joint plan misses the job's target";
  EXPECT_LT(ev.emo.energy_j, ev.statics.baseline.energy_j);
  // One policy section per rank.
  ASSERT_EQ(r.policy().gpus.size(), static_cast<std::size_t>(kRanks));
  for (int i = 0; i < kRanks; ++i) EXPECT_EQ(r.policy().gpus[static_cast<std::size_t>(i)].rank, i);
  // The ranks that wait for the straggler run slower than it.
  const auto clock = mean_clock_by_rank(job, r);
  for (const auto& [rank, mhz] : clock) {
    if (rank != kStraggler) {
      EXPECT_LT(mhz, clock.at(kStraggler)) << "rank " << rank;
    }
  }
  // Each rank optimised alone, run together: the joint plan is within the target and not
  // costlier (up to the simulated device's noise, 0.2 %). The comparison runs both plans with each
  // op at its pack's clock (no switch latency: run_job_plan), not as the kept policy was measured
  // (ev.emo above, within the target exactly); the two differ by up to 0.1 % of the makespan.
  std::vector<trace::Trace> alone = job_ranks(source);
  const job::JobComparison c = job::compare_with_independent(job, r, alone, gpu, opts);
  EXPECT_TRUE(c.simulated);
  EXPECT_LE(static_cast<double>(c.joint.time_ns), static_cast<double>(c.target_ns) * 1.001);
  EXPECT_LE(c.joint.energy_j, c.independent.energy_j * 1.002);
  EXPECT_LT(c.joint.energy_j, c.baseline.energy_j);

  // The decomposed solve (job/job_solve.h) of the same job: each rank against its collectives'
  // pinned times. Run together on the joint graph it keeps the job's target, the waiting ranks run
  // slower than the straggler, and it gives up little against the joint plan (both run alike:
  // same device and seed, the decomposed plan with switch latency, the joint one without; measured
  // +2.6 % here (+2.7 % with the per-rank solves' lighter search), +1.7 % on the 8-rank job of
  // docs/multi-rank.md, so 4 % bounds it with room for the noise of the models).
  std::vector<trace::Trace> ranks = job_ranks(source);
  std::vector<trace::RankDigest> digests;
  for (const trace::Trace& t : ranks) digests.push_back(trace::digest(t));
  const job::JobPorts jp = job::job_ports(digests, trace::link_ranks(digests));
  const job::DecomposedSolve d = job::solve_decomposed(jp, std::move(ranks), gpu, opts, {.threads = 2});
  EXPECT_TRUE(d.simulated);
  // The same job at the max clock, timed from the ranks' port reductions with each rank's own
  // noise draws instead of the job graph's: within the simulated noise of the makespan (0.1 %).
  EXPECT_NEAR(static_cast<double>(d.baseline.run.time_ns), static_cast<double>(c.baseline.time_ns), 1e-3 * static_cast<double>(c.baseline.time_ns));
  EXPECT_EQ(d.recorded.collectives_pinned, job.meta.job.collectives_linked);
  EXPECT_LE(d.plan.time_ns, d.baseline.target_ns) << "the composed plan misses the job's target";
  EXPECT_LT(d.composed.plan.energy_j, d.baseline.run.energy_j);
  ASSERT_EQ(d.ranks.size(), static_cast<std::size_t>(kRanks));
  ASSERT_EQ(d.policy.gpus.size(), static_cast<std::size_t>(kRanks));
  for (int i = 0; i < kRanks; ++i) {
    EXPECT_EQ(d.policy.gpus[static_cast<std::size_t>(i)].rank, i);
    EXPECT_EQ(d.policy.gpus[static_cast<std::size_t>(i)].device, i);
    if (i == kStraggler) continue;
    EXPECT_LT(d.ranks[static_cast<std::size_t>(i)].mean_clock_mhz, d.ranks[kStraggler].mean_clock_mhz) << "rank " << i;
    EXPECT_GT(d.ranks[static_cast<std::size_t>(i)].wait_ns, d.ranks[kStraggler].wait_ns) << "rank " << i;
  }
  EXPECT_LE(d.composed.plan.energy_j, c.joint.energy_j * 1.04) << "the decomposition loses more than 4 % against the joint plan";
  std::printf("[ decomposed ] joint %.3f J, decomposed %.3f J (%+.2f %%), baseline %.3f J; slowdown %.3f %%\n",
              c.joint.energy_j, d.composed.plan.energy_j, 100 * (d.composed.plan.energy_j / c.joint.energy_j - 1),
              d.baseline.run.energy_j, 100 * d.slowdown());
}

}  // namespace
}  // namespace emo::testing
