// The seam of the decomposed solve (job/rank_worker.h) and the messages that carry its steps
// between MPI processes (job/messages.h), without MPI: a wrapper around the in-process worker
// sees every step and can fail one (the fault injection tests/cli/optimize_mpi_test.sh does across
// processes with emo_test_mpi_fault), and every step's results cross the encoding unchanged —
// the expected values are the structs that went in, read field by field.
// The job: SYNTHETIC, 2 ranks generated from a small random trace with NCCL kernels
// (tests/support/job_generator.h, random_trace.h); no real data, so these always run.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <set>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "job/job_solve.h"
#include "job/messages.h"
#include "job/rank_worker.h"
#include "model/gpu_catalog.h"
#include "support/job_generator.h"
#include "support/pipeline_job.h"
#include "support/random_trace.h"
#include "trace/job.h"

namespace emo::job {
namespace {

const model::GpuSpec& a100() { return model::GpuCatalog::builtin().at("A100-SXM4-80GB"); }

/// 2 ranks of a small random trace (2 iterations of 24 GPU ops, seed 1), the second a 15 % straggler.
std::vector<trace::Trace> two_ranks() {
  testing::RandomTraceParams p = testing::random_trace_params(1);
  p.iterations = 2;
  p.ops_per_iteration = 24;
  p.threads = 1;
  const trace::Trace source = testing::random_trace(p);
  testing::JobSpec spec;
  spec.ranks = 2;
  spec.straggler = 1;
  spec.straggler_slowdown = 0.15;
  spec.seed = 1;
  return testing::generate_job(source, spec);
}

JobPorts ports_of(const std::vector<trace::Trace>& ranks) {
  std::vector<trace::RankDigest> digests;
  for (const trace::Trace& t : ranks) digests.push_back(trace::digest(t));
  return job_ports(digests, trace::link_ranks(digests));
}

driver::OptimizeOptions options() {
  driver::OptimizeOptions o;
  o.max_slowdown = 0.05;
  o.seed = 1;
  return o;
}

/// Forwards every step to the wrapped worker, counting the calls and keeping what came back;
/// with `fail_solves`, its solve() throws instead (as a failing process would).
class Recording : public RankWorker {
 public:
  struct Seen {
    int recorded = 0, solves = 0, released = 0, statics = 0, static_energies = 0;
    std::vector<timing::PortGraph> ports;
    std::vector<RankPlan> first_plans;
    std::vector<trace::JobCut> first_cuts;
    std::vector<std::vector<RankRun>> first_statics;
  };
  Recording(std::unique_ptr<RankWorker> inner, Seen& seen, bool fail_solves)
      : inner_(std::move(inner)), seen_(seen), fail_solves_(fail_solves) {}
  std::vector<timing::PortGraph> recorded() override {
    ++seen_.recorded;
    return seen_.ports = inner_->recorded();
  }
  std::vector<RankPlan> solve(std::vector<trace::JobCut>& cuts, int round, double rank_slowdown) override {
    ++seen_.solves;
    if (fail_solves_) throw InputError("test worker", "fails its rank solves as asked");
    std::vector<RankPlan> out = inner_->solve(cuts, round, rank_slowdown);
    if (round == 0) seen_.first_plans = out, seen_.first_cuts = cuts;
    return out;
  }
  std::vector<RankRun> released(const std::vector<trace::JobCut>& releases) override {
    ++seen_.released;
    return inner_->released(releases);
  }
  std::vector<std::vector<RankRun>> statics(const std::vector<double>& clocks_mhz) override {
    ++seen_.statics;
    std::vector<std::vector<RankRun>> out = inner_->statics(clocks_mhz);
    if (seen_.first_statics.empty()) seen_.first_statics = out;
    return out;
  }
  std::vector<std::vector<double>> static_energies(const std::vector<double>& clocks_mhz) override {
    ++seen_.static_energies;
    return inner_->static_energies(clocks_mhz);
  }

 private:
  std::unique_ptr<RankWorker> inner_;
  Seen& seen_;
  bool fail_solves_;
};

/// One decomposed solve of two_ranks() through a Recording wrapper, computed once.
struct Recorded {
  Recording::Seen seen;
  int wraps = 0;
  DecomposedSolve d;
};

const Recorded& recorded_solve() {
  static const Recorded r = [] {
    Recorded out;
    std::vector<trace::Trace> ranks = two_ranks();
    const JobPorts jp = ports_of(ranks);
    DecomposedOptions how;
    how.threads = 2;
    how.wrap_worker = [&](std::unique_ptr<RankWorker> w) {
      ++out.wraps;
      return std::make_unique<Recording>(std::move(w), out.seen, false);
    };
    out.d = solve_decomposed(jp, std::move(ranks), a100(), options(), how);
    return out;
  }();
  return r;
}

void expect_same(const timing::PortGraph& a, const timing::PortGraph& b) {
  EXPECT_EQ(std::tie(a.release_ns, a.end_release_ns, a.dur_ns, a.end_release_ns_rank, a.window_start_ns),
            std::tie(b.release_ns, b.end_release_ns, b.dur_ns, b.end_release_ns_rank, b.window_start_ns));
  ASSERT_EQ(a.lags.size(), b.lags.size());
  for (std::size_t i = 0; i < a.lags.size(); ++i) {
    const timing::PortLag &x = a.lags[i], &y = b.lags[i];
    EXPECT_EQ(std::tie(x.from, x.to, x.lag_ns, x.into_end), std::tie(y.from, y.to, y.lag_ns, y.into_end)) << "lag " << i;
  }
}

void expect_same(const RankRun& a, const RankRun& b) {
  expect_same(a.ports, b.ports);
  EXPECT_EQ(a.above_idle_j, b.above_idle_j);  // exact: CBOR carries the double's bits
}

/// The policy a RankPlan carries, as one JSON text (header and its section).
std::string policy_text(const RankPlan& p) {
  policy::Policy whole = p.policy;
  whole.gpus = {p.section};
  return policy::to_json(whole);
}

TEST(RankWorkerSeam, AWrapperSeesEveryStepOfTheSolve) {
  const Recorded& r = recorded_solve();
  EXPECT_EQ(r.wraps, 1) << "the in-process worker is built and wrapped once";
  EXPECT_EQ(r.seen.recorded, 1) << "step 0 once";
  EXPECT_EQ(r.seen.solves, r.d.composed.rounds) << "one solve per round";
  EXPECT_GE(r.d.composed.rounds, 1);
  EXPECT_GE(r.d.composed.passes, 1);
  // Step 3's fixed point: a released run per pass after the first.
  if (r.d.composed.rounds == 1) {
    EXPECT_EQ(r.seen.released, r.d.composed.passes - 1);
  }
  ASSERT_EQ(r.seen.ports.size(), 2u);
  ASSERT_EQ(r.seen.first_plans.size(), 2u);
  EXPECT_EQ(r.d.ranks.size(), 2u);
  // Each rank's reduction has one port per linked collective it takes part in.
  EXPECT_GT(r.seen.ports[0].dur_ns.size(), 0u);
  EXPECT_EQ(static_cast<std::int64_t>(r.seen.ports[0].dur_ns.size()), r.d.recorded.collectives_pinned);
}

TEST(RankWorkerSeam, AWorkerThatFailsItsSolvesFailsTheJobWithItsError) {
  std::vector<trace::Trace> ranks = two_ranks();
  const JobPorts jp = ports_of(ranks);
  Recording::Seen seen;
  DecomposedOptions how;
  how.threads = 2;
  how.wrap_worker = [&](std::unique_ptr<RankWorker> w) { return std::make_unique<Recording>(std::move(w), seen, true); };
  try {
    (void)solve_decomposed(jp, std::move(ranks), a100(), options(), how);
    ADD_FAILURE() << "the solve did not fail";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "test worker");
    EXPECT_EQ(e.problem(), "fails its rank solves as asked");
  }
  EXPECT_EQ(seen.recorded, 1);
  EXPECT_EQ(seen.solves, 1) << "the first failing round ends the solve";
  EXPECT_EQ(seen.released, 0);
  EXPECT_EQ(seen.statics, 0);
  EXPECT_EQ(seen.static_energies, 0);
}

/// A generated 4-stage 1F1B pipeline (SYNTHETIC, support/pipeline_job.h), the last stage 1.5×:
/// its ranks wait at their transfers, and their plans switch clocks.
std::vector<trace::Trace> pipeline_ranks() {
  testing::JobSource s;
  s.layer = {{"ampere_sgemm_128x64_tn", 3.0}, {"vectorized_elementwise_kernel", 1.0}};
  s.gpu.name = "NVIDIA A100-SXM4-80GB";
  const testing::PipelineJob job(s, {.stages = 4, .microbatches = 4, .forward_ns = 6'000'000, .stage_scale = {1, 1, 1, 1.5}});
  std::vector<trace::Trace> ranks;
  for (int r = 0; r < job.ranks(); ++r) ranks.push_back(job.rank_trace(r));
  return ranks;
}

// Step 3's released runs (RankWorker::released) on a worker of its own, with the first round's
// cuts of a decomposed solve of the pipeline: refused before a solve and for other collectives; at
// the cuts' own pins, the solve's plan run exactly (the plan was run released at them); a rank
// whose plan switches clocks, released 2 ms later, runs the work after its transfers at other
// clocks; a rank whose releases did not move, the same run.
TEST(RankWorkerSeam, ReleasedRunsAreThePlanRunAtTheCutsPinsAndRefuseOtherCollectives) {
  Recording::Seen seen;
  {
    std::vector<trace::Trace> ranks = pipeline_ranks();
    const JobPorts jp = ports_of(ranks);
    DecomposedOptions how;
    how.threads = 2;
    how.wrap_worker = [&](std::unique_ptr<RankWorker> w) { return std::make_unique<Recording>(std::move(w), seen, false); };
    driver::OptimizeOptions o = options();
    o.max_slowdown = 0.01;
    (void)solve_decomposed(jp, std::move(ranks), a100(), o, how);
  }
  std::vector<trace::Trace> ranks = pipeline_ranks();
  const JobPorts jp = ports_of(ranks);
  driver::OptimizeOptions o = options();
  o.max_slowdown = 0.01;
  ThreadRankWorker w(ranks, {0, 1, 2, 3}, jp.open, a100(), rank_options(o), {.threads = 2});
  ASSERT_EQ(seen.first_cuts.size(), 4u);
  EXPECT_THROW((void)w.released(seen.first_cuts), std::logic_error) << "before any solve";
  std::vector<trace::JobCut> cuts = seen.first_cuts;
  const std::vector<RankPlan> plans = w.solve(cuts, 0, rank_options(o).max_slowdown);
  const std::vector<RankRun> at_pins = w.released(seen.first_cuts);
  ASSERT_EQ(at_pins.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) expect_same(at_pins[i], plans[i].plan);
  std::size_t switching = 4;  // a rank whose plan has two clocks
  for (std::size_t i = 0; i < 4 && switching == 4; ++i) {
    for (const policy::PackClock& k : plans[i].section.packs) {
      if (k.clock_mhz != plans[i].section.packs.front().clock_mhz) switching = i;
    }
  }
  ASSERT_LT(switching, 4u) << "no rank's plan switches clocks";
  std::vector<trace::JobCut> later = seen.first_cuts;
  for (trace::CollectivePin& p : later[switching].pins) p.start_ns += 2'000'000;
  const std::vector<RankRun> moved = w.released(later);
  EXPECT_NE(moved[switching].above_idle_j, plans[switching].plan.above_idle_j) << "2 ms later releases, the same run";
  for (std::size_t i = 0; i < 4; ++i) {
    if (i != switching) expect_same(moved[i], plans[i].plan);  // its releases did not move
  }
  // Back at the pins: a run made again (its last run was at the later releases), the solve's own
  // plan run to the bit — the same clocks, requests, initial clock, noise and releases.
  const std::vector<RankRun> back = w.released(seen.first_cuts);
  expect_same(back[switching], plans[switching].plan);
  std::vector<trace::JobCut> other = seen.first_cuts;
  other[1].pins.pop_back();
  EXPECT_THROW((void)w.released(other), std::invalid_argument);
  other = seen.first_cuts;
  other[0].pins[0].op += 1;
  EXPECT_THROW((void)w.released(other), std::invalid_argument);
  // The worker keeps each rank's graph across its steps (ThreadRankWorker): after a solve and
  // runs released elsewhere, its graphs are as a fresh worker builds them — its reductions at the
  // recorded durations, its static runs and their energies, to the bit.
  std::vector<trace::Trace> fresh_ranks = pipeline_ranks();
  ThreadRankWorker fresh(fresh_ranks, {0, 1, 2, 3}, jp.open, a100(), rank_options(o), {.threads = 2});
  const std::vector<timing::PortGraph> ports = w.recorded(), fresh_ports = fresh.recorded();
  const std::vector<double> clocks = {1305, 1005};
  const std::vector<std::vector<RankRun>> statics = w.statics(clocks), fresh_statics = fresh.statics(clocks);
  const std::vector<std::vector<double>> energies = w.static_energies(clocks), fresh_energies = fresh.static_energies(clocks);
  for (std::size_t i = 0; i < 4; ++i) {
    expect_same(ports[i], fresh_ports[i]);
    for (std::size_t k = 0; k < clocks.size(); ++k) expect_same(statics[i][k], fresh_statics[i][k]);
    EXPECT_EQ(energies[i], fresh_energies[i]);
  }
}

TEST(JobMessages, ReleasedCommandCrosses) {
  messages::Command c;
  c.kind = messages::CommandKind::kReleased;
  c.gpu = "A100-SXM4-80GB";
  c.cuts = {{{{7, 1'234'567, 4'500}}, 0}};
  const std::string bytes = messages::encode(c);
  EXPECT_EQ(bytes[0], 'T');
  ASSERT_TRUE(messages::is_command(bytes));
  const messages::Command d = messages::decode_command(bytes);
  EXPECT_EQ(d.kind, messages::CommandKind::kReleased);
  ASSERT_EQ(d.cuts.size(), 1u);
  ASSERT_EQ(d.cuts[0].pins.size(), 1u);
  EXPECT_EQ(d.cuts[0].pins[0].start_ns, 1'234'567);
}

// The static search's energies (RankWorker::static_energies): statics()' runs' energies above
// idle to the bit, per rank and clock, from the worker's own runs (the search's bounds rely on
// it: job_solve.h StaticSearch), before and after the ranks' graphs are built by another step.
TEST(RankWorkerSeam, StaticEnergiesAreTheStaticRunsEnergiesToTheBit) {
  std::vector<trace::Trace> ranks = pipeline_ranks();
  const JobPorts jp = ports_of(ranks);
  ThreadRankWorker w(ranks, {0, 1, 2, 3}, jp.open, a100(), rank_options(options()), {.threads = 2});
  const std::vector<double> clocks = {1395, 1200, 1005, 705};
  const std::vector<std::vector<double>> first = w.static_energies(clocks);
  const std::vector<std::vector<RankRun>> runs = w.statics(clocks);
  ASSERT_EQ(first.size(), 4u);
  ASSERT_EQ(runs.size(), 4u);
  for (std::size_t r = 0; r < 4; ++r) {
    ASSERT_EQ(first[r].size(), clocks.size());
    ASSERT_EQ(runs[r].size(), clocks.size());
    for (std::size_t k = 0; k < clocks.size(); ++k) EXPECT_EQ(first[r][k], runs[r][k].above_idle_j) << "rank " << r << " at " << clocks[k];
    EXPECT_GT(first[r][0], first[r][3]) << "more energy above idle at 1395 than at 705 MHz";
  }
  EXPECT_EQ(w.static_energies({1200}).at(2).at(0), first[2][1]) << "a clock asked alone: the same run";
}

TEST(JobMessages, StaticEnergiesCommandAndReplyCross) {
  messages::Command c;
  c.kind = messages::CommandKind::kStaticEnergies;
  c.gpu = "A100-SXM4-80GB";
  c.clocks_mhz = {1395, 1200.5};
  const std::string bytes = messages::encode(c);
  EXPECT_EQ(bytes[0], 'W');
  ASSERT_TRUE(messages::is_command(bytes));
  const messages::Command d = messages::decode_command(bytes);
  EXPECT_EQ(d.kind, messages::CommandKind::kStaticEnergies);
  EXPECT_EQ(d.clocks_mhz, c.clocks_mhz);
  const std::vector<std::vector<double>> energies = {{0.1, 1e-300, 123456.789012345}, {}, {2.0 / 3.0}};
  EXPECT_EQ(messages::decode_energies_reply(messages::encode_energies_reply(energies)), energies) << "doubles cross exactly";
  EXPECT_THROW((void)messages::decode_energies_reply(messages::encode_failure(std::make_exception_ptr(std::runtime_error("x")))),
               std::runtime_error);
}

TEST(JobMessages, CommandsCrossUnchanged) {
  messages::Command c;
  c.kind = messages::CommandKind::kRound;
  c.gpu = "H100-SXM5-80GB";
  c.round = 1;
  c.rank_slowdown = 0.000125;
  c.cuts = {{{{7, 1'234'567'890'123, 4'500}, {9, trace::kOpenPin, 0}}, 9'876'543'210'987},
            {{{3, -5, 1}}, 42}};
  c.clocks_mhz = {1410, 1395.5};
  const std::string bytes = messages::encode(c);
  EXPECT_EQ(bytes[0], 'R');
  ASSERT_TRUE(messages::is_command(bytes));
  const messages::Command d = messages::decode_command(bytes);
  EXPECT_EQ(d.kind, messages::CommandKind::kRound);
  EXPECT_EQ(d.gpu, "H100-SXM5-80GB");
  EXPECT_EQ(d.round, 1);
  EXPECT_EQ(d.rank_slowdown, 0.000125);
  EXPECT_EQ(d.clocks_mhz, (std::vector<double>{1410, 1395.5}));
  ASSERT_EQ(d.cuts.size(), 2u);
  EXPECT_EQ(d.cuts[0].end_ns, 9'876'543'210'987);
  ASSERT_EQ(d.cuts[0].pins.size(), 2u);
  EXPECT_EQ(d.cuts[0].pins[0].op, 7u);
  EXPECT_EQ(d.cuts[0].pins[0].start_ns, 1'234'567'890'123);
  EXPECT_EQ(d.cuts[0].pins[0].transfer_ns, 4'500);
  EXPECT_EQ(d.cuts[0].pins[1].start_ns, trace::kOpenPin);
  EXPECT_EQ(d.cuts[1].end_ns, 42);
  ASSERT_EQ(d.cuts[1].pins.size(), 1u);
  EXPECT_EQ(d.cuts[1].pins[0].start_ns, -5);
  // The loop's own one-character messages are not commands.
  for (const char* other : {"D", "A", "G", ""}) EXPECT_FALSE(messages::is_command(other)) << other;
  EXPECT_THROW((void)messages::decode_command("D"), std::invalid_argument);
}

TEST(JobMessages, AHandMadePortReductionCrossesUnchanged) {
  // Every field set, the extremes included: INT64_MIN (no constraint), a lag into a port's end.
  timing::PortGraph g;
  g.release_ns = {INT64_MIN, 17, 3'000'000'000'000};
  g.end_release_ns = {5, INT64_MIN, -2};
  g.dur_ns = {0, 1, 999'999'999'999};
  g.end_release_ns_rank = -123'456'789'012;
  g.window_start_ns = 1'700'000'000'000'000'000;
  g.lags = {{0, 1, 250, false}, {1, 2, -7, true}, {2, 0, INT64_MAX, true}};
  const std::vector<timing::PortGraph> back = messages::decode_ports_reply(messages::encode_reply(std::vector{g}));
  ASSERT_EQ(back.size(), 1u);
  expect_same(back[0], g);
}

TEST(JobMessages, AFailureReplyThrowsTheErrorItCarries) {
  const std::string input = messages::encode_failure(std::make_exception_ptr(InputError("rank3.json", "no GPU op")));
  try {
    (void)messages::decode_plans_reply(input);
    ADD_FAILURE() << "no error thrown";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "rank3.json");
    EXPECT_EQ(e.problem(), "no GPU op");
  }
  const std::string other = messages::encode_failure(std::make_exception_ptr(std::logic_error("broken\nin two")));
  try {
    (void)messages::decode_ports_reply(other);
    ADD_FAILURE() << "no error thrown";
  } catch (const InputError&) {
    ADD_FAILURE() << "a non-input error came back as an InputError";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "broken\nin two");
  }
  EXPECT_THROW((void)messages::decode_statics_reply(""), std::runtime_error);
}

TEST(JobMessages, ASolvesPortsPlansAndStaticRunsCrossUnchanged) {
  const Recorded& r = recorded_solve();
  const std::vector<timing::PortGraph> ports = messages::decode_ports_reply(messages::encode_reply(r.seen.ports));
  ASSERT_EQ(ports.size(), r.seen.ports.size());
  for (std::size_t i = 0; i < ports.size(); ++i) expect_same(ports[i], r.seen.ports[i]);

  const std::vector<RankPlan> plans = messages::decode_plans_reply(messages::encode_reply(r.seen.first_plans));
  ASSERT_EQ(plans.size(), r.seen.first_plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const RankPlan &a = plans[i], &b = r.seen.first_plans[i];
    EXPECT_EQ(policy_text(a), policy_text(b));
    EXPECT_EQ(a.option_clocks_mhz, b.option_clocks_mhz);
    EXPECT_EQ(a.solve.packs, b.solve.packs);
    EXPECT_EQ(a.solve.pinned, b.solve.pinned);
    EXPECT_EQ(a.solve.mean_clock_mhz, b.solve.mean_clock_mhz);
    EXPECT_EQ(a.solve.own_savings, b.solve.own_savings);
    EXPECT_EQ(a.solve.own_met, b.solve.own_met);
    expect_same(a.plan, b.plan);
    ASSERT_EQ(a.statics.size(), 1u) << "round 0 carries the run at the max clock";
    ASSERT_EQ(b.statics.size(), 1u);
    EXPECT_EQ(a.statics[0].first, b.statics[0].first);
    expect_same(a.statics[0].second, b.statics[0].second);
  }

  ASSERT_FALSE(r.seen.first_statics.empty()) << "no static clock was asked of the ranks";
  const auto statics = messages::decode_statics_reply(messages::encode_reply(r.seen.first_statics));
  ASSERT_EQ(statics.size(), r.seen.first_statics.size());
  for (std::size_t i = 0; i < statics.size(); ++i) {
    ASSERT_EQ(statics[i].size(), r.seen.first_statics[i].size());
    for (std::size_t k = 0; k < statics[i].size(); ++k) expect_same(statics[i][k], r.seen.first_statics[i][k]);
  }
}

TEST(JobMessages, DigestsCrossUnchanged) {
  const std::vector<trace::Trace> ranks = two_ranks();
  std::vector<trace::RankDigest> in;
  for (const trace::Trace& t : ranks) in.push_back(trace::digest(t));
  const std::vector<trace::RankDigest> out = messages::decode_digests(messages::encode_digests(in));
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const trace::RankDigest &x = out[i], &y = in[i];
    EXPECT_EQ(std::tie(x.path, x.rank, x.world_size, x.device, x.device_error, x.first_ns, x.last_ns, x.rank_lists),
              std::tie(y.path, y.rank, y.world_size, y.device, y.device_error, y.first_ns, y.last_ns, y.rank_lists));
    ASSERT_EQ(x.collectives.size(), y.collectives.size());
    ASSERT_GT(y.collectives.size(), 0u);
    for (std::size_t c = 0; c < y.collectives.size(); ++c) {
      const auto &a = x.collectives[c], &b = y.collectives[c];
      EXPECT_EQ(std::tie(a.name, a.group, a.group_ranks, a.stream, a.sequence, a.src_rank, a.dst_rank, a.start_ns, a.end_ns, a.op),
                std::tie(b.name, b.group, b.group_ranks, b.stream, b.sequence, b.src_rank, b.dst_rank, b.start_ns, b.end_ns, b.op))
          << "collective " << c;
    }
  }
}

}  // namespace
}  // namespace emo::job

namespace emo::job {
namespace {

TEST(JobMessages, ALanesCommandAndItsReplyCrossUnchanged) {
  messages::Command c;
  c.kind = messages::CommandKind::kLanes;
  c.gpu = "A100-SXM4-80GB";
  c.clocks_mhz = {1185};
  c.port_end_ns = {{120, 1'234'567'890'123}, {}, {-5}};
  const std::string bytes = messages::encode(c);
  EXPECT_EQ(bytes[0], 'L');
  ASSERT_TRUE(messages::is_command(bytes));
  const messages::Command d = messages::decode_command(bytes);
  EXPECT_EQ(d.kind, messages::CommandKind::kLanes);
  EXPECT_EQ(d.clocks_mhz, (std::vector<double>{1185}));
  EXPECT_EQ(d.port_end_ns, c.port_end_ns);
  const std::vector<RankLane> lanes{{{0, 100, 1000.5, 3}, {120, 9'876'543'210'987, 1200, 1}}, {}};
  const std::vector<RankLane> back = messages::decode_lanes_reply(messages::encode_reply(lanes));
  ASSERT_EQ(back.size(), 2u);
  ASSERT_EQ(back[0].size(), 2u);
  EXPECT_TRUE(back[1].empty());
  for (std::size_t i = 0; i < 2; ++i) {
    const RankLanePack &a = back[0][i], &b = lanes[0][i];
    EXPECT_EQ(std::tie(a.start_ns, a.end_ns, a.clock_mhz, a.ops), std::tie(b.start_ns, b.end_ns, b.clock_mhz, b.ops));
  }
}

/// two_ranks() solved with the job view (DecomposedOptions::lanes), once.
const DecomposedSolve& solved_with_view() {
  static const DecomposedSolve d = [] {
    std::vector<trace::Trace> ranks = two_ranks();
    const JobPorts jp = ports_of(ranks);
    DecomposedOptions how;
    how.threads = 2;
    how.lanes = true;
    return solve_decomposed(jp, std::move(ranks), a100(), options(), how);
  }();
  return d;
}

// The job view of a real solve agrees with the solve's own figures: the kept run's makespan, the
// job's energies summed over the ranks, every pack of each rank's policy section at its clock, and
// a critical path that runs without a gap from its first rank's start to the job's end.
TEST(JobViewOfASolve, AgreesWithTheSolvesFiguresAndPolicy) {
  const DecomposedSolve& d = solved_with_view();
  ASSERT_TRUE(d.view.has_value());
  const JobView& v = *d.view;
  EXPECT_EQ(v.makespan_ns, d.plan.time_ns);
  double base = 0, kept = 0;
  for (const JobViewRank& k : v.ranks) base += k.baseline_j, kept += k.kept_j;
  EXPECT_NEAR(base, d.baseline.run.energy_j, 1e-9 * d.baseline.run.energy_j);
  EXPECT_NEAR(kept, d.plan.energy_j, 1e-9 * d.plan.energy_j);
  ASSERT_EQ(v.ranks.size(), d.policy.gpus.size());
  for (std::size_t r = 0; r < v.ranks.size(); ++r) {
    std::multiset<double> want, got;
    for (const policy::PackClock& pc : d.policy.gpus[r].packs) want.insert(pc.clock_mhz);
    for (const RankLanePack& p : v.ranks[r].packs) {
      got.insert(p.clock_mhz);
      EXPECT_GE(p.start_ns, v.start_ns);
      EXPECT_LE(p.end_ns, v.start_ns + v.makespan_ns);
      EXPECT_LE(p.start_ns, p.end_ns);
    }
    EXPECT_EQ(got, want) << "rank " << r << ": one lane pack per policy pack, at its clock";
    EXPECT_EQ(static_cast<std::int64_t>(v.ranks[r].packs.size()), d.ranks[r].packs);
  }
  ASSERT_FALSE(v.path.empty());
  EXPECT_EQ(v.path.back().end_ns, v.start_ns + v.makespan_ns);
  EXPECT_EQ(v.path.back().to_instance, -1);
  EXPECT_EQ(v.path.front().from_instance, -1);
  for (std::size_t i = 1; i < v.path.size(); ++i) {
    EXPECT_EQ(v.path[i].start_ns, v.path[i - 1].end_ns) << "stretch " << i;
    EXPECT_NE(v.path[i].rank, v.path[i - 1].rank);
  }
}

TEST(JobViewOfASolve, NoneWithoutLanes) {
  EXPECT_FALSE(recorded_solve().d.view.has_value());
}

}  // namespace
}  // namespace emo::job
