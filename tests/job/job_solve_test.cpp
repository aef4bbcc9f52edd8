// The decomposed solve's promises (job/job_solve.h; issue 29), as properties over generated
// jobs: SYNTHETIC jobs of 2–6 ranks (tests/support/job_generator.h) derived from small random
// traces with NCCL kernels (tests/support/random_trace.h), with and without a straggler, at
// several targets. No real data: the sources are generated, so these always run.
//
// The promises (docs/multi-rank.md, "Decomposed solve"; DESIGN §8):
//  1. The kept plan is within the latency target, baseline × (1 + max_slowdown): where the
//     composed plan misses it, a static clock (the max clock at worst, the baseline) is kept.
//  2. It is the cheapest plan measured within the target: never costlier than the composed plan
//     when that one fits, than the baseline, or than the best static clock.
//  3. "Best static clock" checked by a second method: every supported clock from the max down to
//     the lowest the ranks' solves offered, run as a static schedule on the linked job's whole
//     graph (job::run_job_plan: one graph, its own noise draws, not the ranks' port reductions
//     composed); the kept plan costs no more than the cheapest of those within the target, up to
//     the two measurements' noise (kNoise).
//  4. The composed plan measured the other way: every rank's policy run together on the linked
//     job's whole graph (one simultaneous run, each rank's clock requests as `emo run` issues them,
//     moved from its own clock to the job's) takes the time and energy the composition of the
//     ranks' own runs says, up to kNoise. Composed from each rank's run on its own graph without
//     waiting at its collectives (before the fixed point of job_solve.h, step 3), a pipeline's
//     composed plan missed its target by 5 % while it was within (docs/multi-rank.md).
// Inputs: the generated data-parallel jobs above, and generated pipelines (support/pipeline_job.h,
// SYNTHETIC) — where a rank waits at almost every transfer.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "job/job_solve.h"
#include "graph/dep_graph.h"
#include "model/gpu_catalog.h"
#include "core/units.h"
#include "runtime/sim_backend.h"
#include "runtime/sim_device.h"
#include "runtime/sim_run.h"
#include "support/job_generator.h"
#include "support/pipeline_job.h"
#include "support/random_trace.h"
#include "trace/job.h"

namespace emo::testing {
namespace {

/// Relative difference allowed between the decomposed solve's measurement of a schedule (each
/// rank's run on its own graph, composed at the ports) and run_job_plan's (the job's whole graph):
/// both are the simulated device with different noise draws. The baselines of the cases below
/// agree within 0.09 % in time and 0.07 % in energy (printed by the test).
constexpr double kNoise = 0.003;

const model::GpuSpec& a100() { return model::GpuCatalog::builtin().at("A100-SXM4-80GB"); }

/// One generated job and target.
struct Case {
  std::uint64_t source_seed = 1;  ///< random_trace's seed.
  int ranks = 2;
  int straggler = -1;
  double max_slowdown = 0.05;
};

std::string describe(const Case& c) {
  return fmt::format("source seed {}, {} ranks, straggler {}, max_slowdown {}", c.source_seed, c.ranks, c.straggler,
                     c.max_slowdown);
}

/// A small random trace with collectives: 2 iterations of about 24 GPU ops on one or two streams.
trace::Trace source_trace(std::uint64_t seed) {
  RandomTraceParams p = random_trace_params(seed);
  p.iterations = 2;
  p.ops_per_iteration = 24;
  p.threads = 1;
  return random_trace(p);
}

std::vector<trace::Trace> job_of(const trace::Trace& source, const Case& c) {
  JobSpec spec;
  spec.ranks = c.ranks;
  spec.straggler = c.straggler;
  spec.straggler_slowdown = 0.15;
  spec.jitter = 0.02;
  spec.max_offset_ns = 50'000;
  spec.seed = c.source_seed;
  return generate_job(source, spec);
}

/// The figures of one case that the checks print.
struct Outcome {
  job::DecomposedSolve d;
  driver::Evaluated brute_baseline;  ///< run_job_plan at the max clock.
  driver::Evaluated brute_static;    ///< run_job_plan's cheapest static clock within the target (energy 0: none).
  driver::Evaluated together;        ///< The composed plan's policy run together on the job's whole graph.
};

/// Promise 4's second method: every section of `policy` (device = the rank's position in `ranks`)
/// run together on the linked job `job`'s graph `g` on the simulated A100 (device seed `seed`, run
/// noise seed + 1, as run_job_plan): each section's requests as `emo run` issues them
/// (runtime::issued_requests; its GPU at its last pack's clock before them, and
/// throughout where it has no request — where the rank's own run keeps ops in no pack at the max
/// clock: none in these jobs' plans to speak of, within kNoise), moved
/// from its rank's clock to the job's — plus its rank graph's window start and its offset, minus
/// the job graph's window start.
driver::Evaluated run_together(const trace::Trace& job, const graph::DepGraph& g, const std::vector<trace::Trace>& ranks,
                               const policy::Policy& policy, std::uint64_t seed) {
  runtime::SimDeviceOptions dev_opts;
  dev_opts.seed = seed;
  const runtime::SimDevice device(a100(), dev_opts);
  runtime::SimRunOptions o;
  o.seed = seed + 1;
  std::vector<runtime::ClockRequest> requests;
  for (std::size_t i = 0; i < policy.gpus.size(); ++i) {
    policy::Policy one = policy;
    one.gpus = {policy.gpus[i]};
    std::map<std::int32_t, double> initial;
    const std::vector<runtime::ClockRequest> mine =
        runtime::issued_requests(one, ms_to_ns(device.switch_latency_ms()), initial);
    const TimeNs shift = graph::build_graph(ranks.at(i)).window_start_ns + job.meta.job.ranks.at(i).offset_ns - g.window_start_ns;
    for (runtime::ClockRequest r : mine) {
      r.request_ns += shift;
      requests.push_back(r);
    }
    o.initial_clock_mhz.insert(initial.begin(), initial.end());
  }
  // A device with no request runs every op at its node clock: its section's one clock.
  std::vector<double> clock = job::static_clocks(g, a100().max_sm_clock_mhz());
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    const auto it = o.initial_clock_mhz.find(job.ops.device[g.op[n]]);
    if (g.gpu[n] && it != o.initial_clock_mhz.end()) clock[n] = it->second;
  }
  const runtime::SimRunResult res = runtime::run_on_sim(job, g, device, clock, requests, o);
  return {res.makespan_ns, res.energy_j, 0};
}

/// The decomposed solve of the job of the ranks `make()` makes (the same every call) at
/// `max_slowdown`, and the second methods' figures.
Outcome solve(const std::function<std::vector<trace::Trace>()>& make, double max_slowdown) {
  std::vector<trace::Trace> ranks = make();
  std::vector<trace::RankDigest> digests;
  for (const trace::Trace& t : ranks) digests.push_back(trace::digest(t));
  const job::JobPorts jp = job::job_ports(digests, trace::link_ranks(digests));
  driver::OptimizeOptions opts;
  opts.max_slowdown = max_slowdown;
  opts.seed = 1;
  Outcome out;
  out.d = job::solve_decomposed(jp, make(), a100(), opts, {.threads = 2});

  // The second method: every static clock on the linked job's whole graph.
  const trace::Trace job = trace::link_job(make());
  const graph::DepGraph g = graph::build_graph(job);
  const double f_max = a100().max_sm_clock_mhz();
  out.brute_baseline = job::run_job_plan(job, g, a100(), opts.seed, job::static_clocks(g, f_max));
  const auto target = static_cast<double>(out.brute_baseline.time_ns) * (1.0 + max_slowdown);
  for (const double f : a100().sm_clocks_mhz) {
    if (f > f_max) continue;
    driver::Evaluated e = job::run_job_plan(job, g, a100(), opts.seed, job::static_clocks(g, f));
    e.clock_mhz = f;
    // The max clock is the baseline (within the target by definition); another clock within the
    // target with room for the two measurements' noise.
    if (f < f_max && static_cast<double>(e.time_ns) > target * (1.0 - kNoise)) continue;
    if (out.brute_static.energy_j == 0 || e.energy_j < out.brute_static.energy_j) out.brute_static = e;
  }
  out.together = run_together(job, g, ranks, out.d.composed.policy, opts.seed);
  return out;
}

Outcome solve(const Case& c) {
  const trace::Trace source = source_trace(c.source_seed);
  if (source.collectives.size() == 0) throw std::logic_error("a source without collectives: " + describe(c));
  return solve([&] { return job_of(source, c); }, c.max_slowdown);
}

/// Checks the promises of the file comment on one solve `o` at `max_slowdown` (`what`: the case).
void check(const Outcome& o, double max_slowdown, const std::string& what) {
  SCOPED_TRACE(what);
  const job::DecomposedSolve& d = o.d;
  std::printf("[ decomposed ] %s: baseline %.4f J %lld ns (whole graph %.4f J %lld ns); composed %.4f J %lld ns "
              "(together %.4f J %lld ns; %d rounds, %d passes); static best %.0f MHz %.4f J (whole graph %.0f MHz %.4f J); kept "
              "%.4f J %lld ns, target %lld ns%s\n",
              what.c_str(), d.baseline.run.energy_j, static_cast<long long>(d.baseline.run.time_ns),
              o.brute_baseline.energy_j, static_cast<long long>(o.brute_baseline.time_ns), d.composed.plan.energy_j,
              static_cast<long long>(d.composed.plan.time_ns), o.together.energy_j,
              static_cast<long long>(o.together.time_ns), d.composed.rounds, d.composed.passes, d.static_choice.best.clock_mhz, d.static_choice.best.energy_j,
              o.brute_static.clock_mhz, o.brute_static.energy_j, d.plan.energy_j,
              static_cast<long long>(d.plan.time_ns), static_cast<long long>(d.baseline.target_ns),
              d.static_choice.kept ? " (static kept)" : "");
  EXPECT_TRUE(d.simulated);
  // The baseline: the same schedule as the second method's max clock, within the noise.
  EXPECT_NEAR(static_cast<double>(d.baseline.run.time_ns), static_cast<double>(o.brute_baseline.time_ns),
              kNoise * static_cast<double>(o.brute_baseline.time_ns));
  EXPECT_NEAR(d.baseline.run.energy_j, o.brute_baseline.energy_j, kNoise * o.brute_baseline.energy_j);
  // 1. The target, from the baseline; the kept plan within it.
  EXPECT_EQ(d.baseline.target_ns, static_cast<TimeNs>(std::floor(static_cast<double>(d.baseline.run.time_ns) * (1.0 + max_slowdown))));
  EXPECT_LE(d.plan.time_ns, d.baseline.target_ns) << "the kept plan misses the target (composed plan "
                                         << d.composed.plan.time_ns << " ns)";
  // The split of the target s (docs/multi-rank.md, "Decomposed solve", step 2): in the first
  // round a tenth each rank's own, a tenth kept for the composition, the pins stretched by the
  // rest, (1 + s) / (1 + 0.2 s) − 1 (at 5 %: 1.05 / 1.01 − 1 = 0.0396040); a later round cuts the
  // stretch, or quarters both shares (ρ = 0.1 s / 4^k) and stretches by what they leave at most.
  int quartered = 0;
  double share = 0.1 * max_slowdown;
  while (share > 0 && d.composed.rank_slowdown < share * (1 - 1e-9) && quartered < 3) share /= 4, ++quartered;
  EXPECT_NEAR(d.composed.rank_slowdown, share, 1e-15) << "a share of 0.1 s / 4^k";
  EXPECT_NEAR(d.composed.compose_reserve, d.composed.rank_slowdown, 1e-15);
  EXPECT_LE(quartered, d.composed.rounds - 1);
  const double leaves = (1.0 + max_slowdown) / (1.0 + 2 * share) - 1.0;
  if (d.composed.rounds == 1) {
    EXPECT_NEAR(d.composed.pin_stretch, leaves, 1e-12);
  } else {
    EXPECT_LE(d.composed.pin_stretch, leaves + 1e-12);
  }
  // 2. The cheapest measured within the target.
  EXPECT_LE(d.plan.energy_j, d.baseline.run.energy_j);
  if (d.composed.plan.time_ns <= d.baseline.target_ns) {
    EXPECT_LE(d.plan.energy_j, d.composed.plan.energy_j) << "a costlier plan kept than the composed plan, which fits";
  }
  if (d.static_choice.best.clock_mhz > 0) {
    EXPECT_LE(d.plan.energy_j, d.static_choice.best.energy_j) << "a costlier plan kept than the static clock "
                                                       << d.static_choice.best.clock_mhz << " MHz";
  }
  // 3. Never costlier than the best static clock measured the other way.
  ASSERT_GT(o.brute_static.energy_j, 0) << "the max clock is within the target";
  EXPECT_LE(d.plan.energy_j, o.brute_static.energy_j * (1.0 + kNoise))
      << "costlier than the static clock " << o.brute_static.clock_mhz << " MHz on the job's whole graph";
  // 4. The composed plan is what the ranks' policies do when they run together.
  EXPECT_NEAR(static_cast<double>(o.together.time_ns), static_cast<double>(d.composed.plan.time_ns),
              kNoise * static_cast<double>(d.baseline.run.time_ns))
      << "the composition's time is not the ranks' run together";
  EXPECT_NEAR(o.together.energy_j, d.composed.plan.energy_j, kNoise * d.composed.plan.energy_j)
      << "the composition's energy is not the ranks' run together";
}

void check(const Case& c) { check(solve(c), c.max_slowdown, describe(c)); }

/// A generated pipeline's ranks (SYNTHETIC; support/pipeline_job.h), from three kernels per layer.
std::vector<trace::Trace> pipeline_ranks(const PipelineSpec& spec) {
  JobSource s;
  s.layer = {{"ampere_sgemm_128x64_tn", 3.0}, {"vectorized_elementwise_kernel", 1.0}, {"layer_norm_kernel", 0.5}};
  s.gpu.name = "NVIDIA A100-SXM4-80GB";
  const PipelineJob job(s, spec);
  std::vector<trace::Trace> ranks;
  for (int r = 0; r < job.ranks(); ++r) ranks.push_back(job.rank_trace(r));
  return ranks;
}

// At targets of 0 and 0.5 % many composed plans miss the target by a few µs (seeds 1, 8, 9 and 25
// below: a rank's own share adds up over its collectives), cheaper than any static clock within it.
TEST(JobSolveProperty, WithAStraggler) {
  for (const Case& c : {Case{9, 2, 1, 0.02}, Case{22, 3, 0, 0.05}, Case{25, 4, 2, 0.0}, Case{11, 3, 2, 0.10},
                        Case{1, 6, 4, 0.05}, Case{1, 2, 0, 0.005}, Case{9, 3, 0, 0.0}}) {
    check(c);
  }
}

TEST(JobSolveProperty, WithoutAStraggler) {
  for (const Case& c : {Case{8, 2, -1, 0.05}, Case{44, 3, -1, 0.0}, Case{49, 4, -1, 0.10}, Case{20, 3, -1, 0.02},
                        Case{13, 6, -1, 0.0}, Case{8, 4, -1, 0.0}, Case{25, 3, -1, 0.0}}) {
    check(c);
  }
}

// Pipelines: every stage waits at almost every transfer, where a rank's timed clock switches and the
// job's transfer starts must agree (promise 4). 1F1B with the last stage heavier, and two
// data-parallel replicas of a 3-stage pipeline, one slower, their host clocks up to 5 ms apart
// (the composition converts the job's transfer starts to each rank's clock).
TEST(JobSolveProperty, Pipelines) {
  constexpr TimeNs kMs = 1'000'000;
  const std::vector<PipelineSpec> specs = {
      {.stages = 4, .microbatches = 8, .forward_ns = 6 * kMs, .stage_scale = {1.0, 1.0, 1.0, 1.5}},
      {.stages = 3, .microbatches = 4, .dp = 2, .forward_ns = 8 * kMs, .stage_scale = {1.0, 1.0, 1.5}, .slow_replica = 1,
       .max_offset_ns = 5 * kMs},
  };
  for (const PipelineSpec& spec : specs) {
    double previous_j = 0;
    for (const double s : {0.0, 0.01, 0.03}) {
      const std::string what =
          fmt::format("SYNTHETIC pipeline S={} M={} dp={} at +{} %", spec.stages, spec.microbatches, spec.dp, 100 * s);
      const Outcome o = solve([&] { return pipeline_ranks(spec); }, s);
      check(o, s, what);
      EXPECT_EQ(o.d.composed.residual_ns, 0) << what << ": no fixed point in " << o.d.composed.passes << " compositions";
      EXPECT_GT(o.d.composed.passes, 1) << what << ": the ranks' transfers start where their pins are";
      // Savings rise with the target here. Measured, not by construction: the decomposed solve
      // plans at its target alone (no target ladder, whose cost it would pay once per rank).
      if (s > 0) {
        EXPECT_LE(o.d.plan.energy_j, previous_j) << what << ": costlier than at a tighter target";
      }
      previous_j = o.d.plan.energy_j;
    }
  }
}

// Tensor-parallel stages (an all-reduce per layer) and MoE layers (two all-to-alls per layer): many
// collectives per rank, where the ranks' own shares compound and a later round may quarter them
// (next_split). The promises of the file comment at two targets.
TEST(JobSolveProperty, TensorParallelAndMoe) {
  constexpr TimeNs kMs = 1'000'000;
  const std::vector<PipelineSpec> specs = {
      {.stages = 2, .microbatches = 4, .forward_ns = 6 * kMs, .tp = 4},
      {.stages = 1, .microbatches = 4, .dp = 4, .forward_ns = 6 * kMs, .moe = true},
  };
  for (const PipelineSpec& spec : specs) {
    for (const double s : {0.005, 0.02}) {
      const std::string what = fmt::format("SYNTHETIC S={} M={} dp={} tp={} moe={} at +{} %", spec.stages,
                                           spec.microbatches, spec.dp, spec.tp, spec.moe, 100 * s);
      const Outcome o = solve([&] { return pipeline_ranks(spec); }, s);
      std::printf("[ split ] %s: %d rounds, share %.6f, stretch %.6f\n", what.c_str(), o.d.composed.rounds,
                  o.d.composed.rank_slowdown, o.d.composed.pin_stretch);
      check(o, s, what);
    }
  }
}

// first_split and next_split by hand (docs/multi-rank.md, "Decomposed solve", step 3).
TEST(JobSplit, WorkedByHand) {
  job::ComposedRounds c;
  job::first_split(c, 0.01);  // ρ = r = 0.001; σ = 1.01 / 1.002 − 1
  EXPECT_DOUBLE_EQ(c.rank_slowdown, 0.001);
  EXPECT_DOUBLE_EQ(c.compose_reserve, 0.001);
  EXPECT_NEAR(c.pin_stretch, 0.0079840319361277, 1e-15);
  // A miss of 0.2 %: the stretch cut by it and 0.05 %, 1.0079840319 / 1.002 − 1 − 0.0005; the shares kept.
  ASSERT_TRUE(job::next_split(c, 0.01, 0.002));
  EXPECT_NEAR(c.pin_stretch, 0.0054720877606064, 1e-15);
  EXPECT_DOUBLE_EQ(c.rank_slowdown, 0.001);
  // A miss of 0.9 %: 1.0054720878 / 1.009 − 1 − 0.0005 < 0, no stretch absorbs it: both shares
  // quartered (0.00025) and the stretch what they leave, 1.01 / 1.0005 − 1.
  ASSERT_TRUE(job::next_split(c, 0.01, 0.009));
  EXPECT_DOUBLE_EQ(c.rank_slowdown, 0.00025);
  EXPECT_DOUBLE_EQ(c.compose_reserve, 0.00025);
  EXPECT_NEAR(c.pin_stretch, 0.0094952523738132, 1e-15);
  // No share (a target of 0): no stretch either, nothing to cut.
  job::ComposedRounds z;
  job::first_split(z, 0);
  EXPECT_EQ(z.rank_slowdown, 0);
  EXPECT_EQ(z.pin_stretch, 0);
  EXPECT_FALSE(job::next_split(z, 0, 0.001));
  // No share but a stretch the miss exceeds: one round at no stretch, then nothing.
  job::ComposedRounds n;
  n.pin_stretch = 0.001;
  ASSERT_TRUE(job::next_split(n, 0.002, 0.01));
  EXPECT_EQ(n.pin_stretch, 0);
  EXPECT_FALSE(job::next_split(n, 0.002, 0.01));
  EXPECT_THROW((void)job::next_split(c, 0.01, 0), std::invalid_argument);
  EXPECT_THROW((void)job::next_split(c, 0.01, std::nan("")), std::invalid_argument);
}

// StaticSearch worked by hand: 6 clocks below the max, 2 GPUs of 50 W idle, the baseline 1 ms
// (11 J), target 1.010 ms. Times 1000, 1002, 1005, 1009, 1012, 1030 us; energy above idle 10, 9.5,
// 9.2, 9.1, 8.0, 7.0 J, so the job's energy is that + 50 W × 2 × T: 10.1, 9.6002, 9.3005, 9.2009
// (within), 8.1012, 7.1030 (miss). Nothing measured, all 6 are open (their bound, with the
// baseline's time, is below 11 J) and none is known within: 4 evenly spaced, 6 × k / 5 = 1, 2,
// 3, 4. Then 3 is the best (9.2009), 5 is below a miss, 0's bound 10 + 0.1 = 10.1 J is above the
// best: done, 4 measured of 6 (a scan from the top measures 0–4). With 9.0 J above idle at 0 its
// bound (9.1) is below the best and it is known within (1 is): it is measured next and kept.
TEST(StaticSearch, WorkedByHand) {
  const std::vector<TimeNs> t = {1'000'000, 1'002'000, 1'005'000, 1'009'000, 1'012'000, 1'030'000};
  for (const double above0 : {10.0, 9.0}) {
    const std::vector<double> above = {above0, 9.5, 9.2, 9.1, 8.0, 7.0};
    job::StaticSearch s(above, driver::Evaluated{1'000'000, 11.0, 1410}, 50.0, 2, 1'010'000);
    ASSERT_EQ(s.next_batch(), (std::vector<std::size_t>{1, 2, 3, 4}));
    for (const std::size_t i : {1, 2, 3, 4}) {
      s.record(i, {t[i], above[i] + 0.1 * static_cast<double>(t[i]) * 1e-6, static_cast<double>(i)});
    }
    ASSERT_TRUE(s.best().has_value());
    EXPECT_EQ(s.best()->clock_mhz, 3.0);
    EXPECT_NEAR(s.best()->energy_j, 9.2009, 1e-12);
    if (above0 == 10.0) {
      EXPECT_TRUE(s.next_batch().empty());
      EXPECT_EQ(s.measured(), 4u);
      continue;
    }
    ASSERT_EQ(s.next_batch(), (std::vector<std::size_t>{0}));
    s.record(0, {t[0], 9.0 + 0.1, 0});
    EXPECT_TRUE(s.next_batch().empty());
    EXPECT_EQ(s.best()->clock_mhz, 0.0);
    EXPECT_EQ(s.measured(), 5u);
  }
  // Ties go to the higher clock, the baseline first: a clock whose bound (5 J + 50 W × 2 × 1 ms,
  // evaluate()'s expression) equals the baseline's energy cannot beat it and is not even
  // measured; two clocks that tie each other: the higher one kept, whichever is recorded first.
  const double tied_j = 5.0 + 50.0 * static_cast<double>(1'000'000) * 1e-9 * 2.0;
  job::StaticSearch tie({5.0}, driver::Evaluated{1'000'000, tied_j, 1410}, 50.0, 2, 1'010'000);
  EXPECT_EQ(tie.next_batch(), (std::vector<std::size_t>{})) << "its bound equals the baseline's energy";
  EXPECT_EQ(tie.best()->clock_mhz, 1410.0);
  job::StaticSearch pair({5.0, 5.0}, driver::Evaluated{1'000'000, 6.0, 1410}, 50.0, 2, 1'010'000);
  ASSERT_EQ(pair.next_batch(), (std::vector<std::size_t>{0, 1}));
  pair.record(1, {1'000'000, tied_j, 1});
  pair.record(0, {1'000'000, tied_j, 0});
  EXPECT_EQ(pair.best()->clock_mhz, 0.0) << "equal energies: the higher clock (index 0), recorded second";
  // The baseline within and cheapest: kept, nothing below it beats its bound but a cheaper one.
  job::StaticSearch none({5.0}, driver::Evaluated{1'000'000, 1.0, 1410}, 50.0, 2, 1'010'000);
  EXPECT_TRUE(none.next_batch().empty());
  EXPECT_EQ(none.best()->clock_mhz, 1410.0);
  // Nothing within (the baseline misses): nullopt after the clocks are measured.
  job::StaticSearch miss({1.0, 0.5}, driver::Evaluated{1'000'000, 2.0, 1410}, 50.0, 2, 999'000);
  EXPECT_TRUE(miss.next_batch().empty()) << "every clock is at least as slow as the baseline, which misses";
  EXPECT_FALSE(miss.best().has_value());
  EXPECT_THROW(job::StaticSearch({NAN}, driver::Evaluated{1, 1, 1}, 50.0, 1, 1), std::invalid_argument);
  EXPECT_THROW(job::StaticSearch({1.0}, driver::Evaluated{1, 1, 1}, -1.0, 1, 1), std::invalid_argument);
  job::StaticSearch empty({}, driver::Evaluated{1'000'000, 1.0, 1410}, 50.0, 2, 1'010'000);
  EXPECT_TRUE(empty.next_batch().empty());
  EXPECT_EQ(empty.best()->clock_mhz, 1410.0) << "no clock below the max: the baseline";
}

// StaticSearch against the scan it replaces (brute force over every clock: the cheapest within
// the target, the highest clock on ties, the baseline first), on 3,000 generated searches: times
// that never fall as the clock falls (equal steps included), energies above idle that rise,
// fall or repeat, targets from below the baseline to above every clock. The search's answer is
// the scan's, to the bit, it never asks a clock twice, and it asks fewer than the scan would
// in total over the searches.
TEST(StaticSearch, FindsWhatTheScanFromTheMaxClockFinds) {
  std::mt19937_64 rng(7);
  std::size_t asked = 0, scanned = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const std::size_t n = 1 + rng() % 48, ranks = 1 + rng() % 64;
    const double idle_w = 30.0 + static_cast<double>(rng() % 60);
    std::vector<TimeNs> t(n);
    std::vector<double> above(n);
    TimeNs now = 1'000'000'000;
    const TimeNs base_ns = now;
    double a = 100.0 * static_cast<double>(ranks);
    for (std::size_t i = 0; i < n; ++i) {
      now += static_cast<TimeNs>(rng() % 4 == 0 ? 0 : rng() % 5'000'000);
      t[i] = now;
      a *= 0.97 + 0.05 * static_cast<double>(rng() % 100) / 100.0;  // mostly falling, sometimes rising
      above[i] = rng() % 10 == 0 && i > 0 ? above[i - 1] : std::round(a * 8.0) / 8.0;
    }
    auto energy = [&](double above_j, TimeNs ns) { return job::job_energy_j(above_j, idle_w, ns, ranks); };
    const driver::Evaluated base{base_ns, energy(100.0 * static_cast<double>(ranks) * 1.02, base_ns), -1};
    const TimeNs target = base_ns - 1'000'000 + static_cast<TimeNs>(rng() % static_cast<std::uint64_t>(now - base_ns + 3'000'000));
    // The scan from the max clock down.
    std::optional<driver::Evaluated> scan;
    if (base.time_ns <= target) scan = base;
    std::size_t scan_runs = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ++scan_runs;
      if (t[i] > target) break;
      const double e = energy(above[i], t[i]);
      if (!scan || e < scan->energy_j) scan = driver::Evaluated{t[i], e, static_cast<double>(i)};
    }
    job::StaticSearch s(above, base, idle_w, ranks, target);
    std::vector<char> seen(n, 0);
    for (std::vector<std::size_t> b = s.next_batch(); !b.empty(); b = s.next_batch()) {
      for (const std::size_t i : b) {
        ASSERT_LT(i, n);
        ASSERT_FALSE(seen[i]) << "clock " << i << " asked twice";
        seen[i] = 1;
        s.record(i, {t[i], energy(above[i], t[i]), static_cast<double>(i)});
      }
    }
    ASSERT_EQ(s.best().has_value(), scan.has_value()) << "trial " << trial;
    if (scan) {
      EXPECT_EQ(s.best()->clock_mhz, scan->clock_mhz) << "trial " << trial;
      EXPECT_EQ(s.best()->energy_j, scan->energy_j) << "trial " << trial;
    }
    asked += s.measured();
    scanned += scan_runs;
  }
  EXPECT_LT(asked, scanned);
  std::printf("StaticSearch: %zu clocks measured over the searches, the scan %zu\n", asked, scanned);
}

}  // namespace
}  // namespace emo::testing
