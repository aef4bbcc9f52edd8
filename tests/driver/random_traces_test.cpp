// Issue 15, "never lose to static": `driver::optimize` on random traces (tests/support/random_trace.h)
// on the simulated A100-SXM4-80GB (seed 1, catalog min pack: 20 ms). For every trace, EMO's measured
// time must be within the measured target and its measured energy at most the static oracle's
// (Evaluation::static_best: every option clock measured on the device) + 0.2 %. Each sweep prints a
// one-line summary (docs/optimize.md, "Random traces").
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "driver/optimize.h"
#include "graph/hand_trace.h"
#include "model/gpu_catalog.h"
#include "model/op_class.h"
#include "pack/pack_run.h"
#include "support/random_trace.h"
#include "timing/analysis.h"
#include "trace/kineto/kineto_writer.h"

namespace emo::testing {
namespace {

constexpr double kStaticTolerance = 1.002;  // EMO's energy ≤ the static oracle's + 0.2 %

const model::GpuSpec& a100() { return model::GpuCatalog::builtin().at("A100-SXM4-80GB"); }

/// One optimised trace: what the checks look at.
struct Outcome {
  std::string what;  ///< describe(params) and the slowdown.
  std::size_t packs = 0;
  TimeNs target_ns = 0, emo_ns = 0, static_ns = 0;
  TimeNs baseline_ns = 0;
  double emo_j = 0, static_j = 0, baseline_j = 0, static_mhz = 0;
  bool miss() const { return emo_ns > target_ns; }
  bool loss() const { return emo_j > static_j * kStaticTolerance; }
};

/// With EMO_RANDOM_TRACE_DIR set, writes `t` there as Kineto JSON (seedN.json), so that a failing
/// seed can be replayed with the CLI: `emo optimize DIR/seedN.json --gpu A100-SXM4-80GB ...`.
void maybe_dump(const trace::Trace& t, std::uint64_t seed) {
  const char* dir = std::getenv("EMO_RANDOM_TRACE_DIR");
  if (dir == nullptr || *dir == 0) return;
  std::ofstream(std::string(dir) + "/seed" + std::to_string(seed) + ".json") << trace::to_kineto_json(t);
}

/// The figures of one optimisation that the checks look at.
Outcome outcome_of(const driver::OptimizeResult& r, std::string what) {
  const driver::Evaluation& ev = r.evaluation;
  Outcome out;
  out.what = std::move(what);
  out.packs = r.packs.packing.packs.size();
  out.target_ns = ev.statics.target_ns;
  out.emo_ns = ev.emo.time_ns;
  out.static_ns = ev.statics.best.time_ns;
  out.baseline_ns = ev.statics.baseline.time_ns;
  out.emo_j = ev.emo.energy_j;
  out.static_j = ev.statics.best.energy_j;
  out.baseline_j = ev.statics.baseline.energy_j;
  out.static_mhz = ev.statics.best.clock_mhz;
  return out;
}

Outcome optimise(const RandomTraceParams& p, double max_slowdown) {
  const trace::Trace t = random_trace(p);
  maybe_dump(t, p.seed);
  driver::OptimizeOptions o;
  o.max_slowdown = max_slowdown;
  o.seed = 1;
  return outcome_of(driver::optimize(t, {}, a100(), o), describe(p) + " max_slowdown=" + std::to_string(max_slowdown));
}

/// Checks one outcome (the two issue-15 conditions), with the figures in the message.
void check(const Outcome& o) {
  EXPECT_LE(o.emo_ns, o.target_ns) << o.what << ": EMO misses the measured target by "
                                   << 100.0 * static_cast<double>(o.emo_ns - o.target_ns) /
                                          static_cast<double>(o.target_ns)
                                   << " % (" << o.emo_ns << " ns > " << o.target_ns << " ns)";
  EXPECT_LE(o.emo_j, o.static_j * kStaticTolerance)
      << o.what << ": EMO " << o.emo_j << " J > static oracle " << o.static_j << " J at " << o.static_mhz
      << " MHz (EMO/static " << o.emo_j / o.static_j << ", " << o.packs << " packs)";
}

/// Index of the bucket of `v` among ascending upper bounds `ends` (the last bucket takes the rest).
std::size_t bucket(double v, const std::vector<double>& ends) {
  std::size_t k = 0;
  while (k < ends.size() && v >= ends[k]) ++k;
  return k;
}

/// The one-line summary of a sweep, then histograms of pack counts, baseline spans and EMO's
/// savings against the baseline.
void summarise(const std::string& label, const std::vector<Outcome>& all) {
  int misses = 0, losses = 0;
  double worst = 0, gain = 0;
  const std::vector<double> pack_ends{2, 4, 8, 16}, span_ends{50, 100, 200, 400}, save_ends{5, 10, 20, 30};
  std::vector<int> packs(5, 0), spans(5, 0), saves(5, 0);
  for (const Outcome& o : all) {
    misses += o.miss();
    losses += o.loss();
    worst = std::max(worst, o.emo_j / o.static_j);
    gain += (o.static_j - o.emo_j) / o.baseline_j;
    ++packs[bucket(static_cast<double>(o.packs), pack_ends)];
    ++spans[bucket(static_cast<double>(o.baseline_ns) / 1e6, span_ends)];
    ++saves[bucket(100.0 * (1 - o.emo_j / o.baseline_j), save_ends)];
  }
  std::printf("[random traces %s] traces %zu, target misses %d, losses to static (>0.2 %%) %d, worst EMO/static "
              "%.4f, mean savings EMO vs static %+.2f points of baseline\n",
              label.c_str(), all.size(), misses, losses, worst, 100.0 * gain / static_cast<double>(all.size()));
  const auto [few, many] = std::minmax_element(all.begin(), all.end(), [](auto& a, auto& b) { return a.packs < b.packs; });
  const auto [shortest, longest] = std::minmax_element(
      all.begin(), all.end(), [](auto& a, auto& b) { return a.baseline_ns < b.baseline_ns; });
  std::printf("  packs %zu-%zu, 1:%d 2-3:%d 4-7:%d 8-15:%d 16+:%d | baseline %.0f-%.0f ms, <50:%d 50-100:%d 100-200:%d "
              "200-400:%d 400+:%d | EMO savings %% <5:%d 5-10:%d 10-20:%d 20-30:%d 30+:%d\n",
              few->packs, many->packs, packs[0], packs[1], packs[2], packs[3], packs[4],
              static_cast<double>(shortest->baseline_ns) / 1e6, static_cast<double>(longest->baseline_ns) / 1e6,
              spans[0], spans[1], spans[2], spans[3], spans[4], saves[0], saves[1], saves[2], saves[3], saves[4]);
}

/// Optimises seeds [first, last] at `max_slowdown`, checks each and prints the summary.
void sweep(std::uint64_t first, std::uint64_t last, double max_slowdown) {
  std::vector<Outcome> all;
  for (std::uint64_t seed = first; seed <= last; ++seed) {
    all.push_back(optimise(random_trace_params(seed), max_slowdown));
    check(all.back());
  }
  summarise("seeds " + std::to_string(first) + "-" + std::to_string(last) + " at " + std::to_string(max_slowdown),
            all);
}

TEST(RandomTraces, GeneratedTracesAreValidAndVaried) {
  std::map<model::OpClass, int> classes;
  std::map<std::pair<int, int>, int> shapes;  // (threads, streams)
  int syncs = 0, waits = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const RandomTraceParams p = random_trace_params(seed);
    const trace::Trace t = random_trace(p);
    SCOPED_TRACE(describe(p));
    for (const std::string& w : t.warnings) {  // rows are written per thread, not in time order (as in Kineto files)
      EXPECT_EQ(w.rfind("events not sorted by time", 0), 0u) << w;
    }
    const pack::PackRun r = pack::run_pack(t, {}, {model::min_pack_for(t).ns, "catalog"});
    const graph::GraphStats& g = r.analysis.graph.stats;
    EXPECT_EQ(r.analysis.replay_error, 0.0);
    EXPECT_EQ(g.cycle_edges, 0);
    EXPECT_EQ(g.violated_edges, 0);
    EXPECT_EQ(g.dropped_inferred_edges, 0);
    EXPECT_EQ(g.unresolved_syncs, 0);
    EXPECT_EQ(r.contraction.contraction_error, 0.0);
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
      if (trace::is_gpu_op(t.ops.kind[i])) ++classes[model::classify_op(t.ops.kind[i], t.strings.view(t.ops.name[i]))];
    }
    syncs += static_cast<int>(t.syncs.size());
    waits += static_cast<int>(g.edges[static_cast<int>(graph::EdgeType::kEventWait)]);
    ++shapes[{p.threads, p.streams}];
  }
  EXPECT_EQ(classes.size(), 4u) << "every op class";
  EXPECT_EQ(shapes.size(), 6u) << "every (threads, streams) pair";
  EXPECT_GT(waits, 0);
  EXPECT_GT(syncs, 0);
}

/// Issue 31: an event-sync or stream-wait record that names no event stream waits for every stream
/// of the device (conservative: it can only add waits). Over seeds 1-150, dropping the event
/// stream (Kineto's `wait_on_stream`) of every sync record never gives an op more slack than it has
/// with the streams recorded; and it does remove slack somewhere, or the check would be idle.
TEST(RandomTraces, DroppingEventStreamsNeverAddsSlack) {
  std::int64_t records = 0, less = 0, more = 0, ops = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const RandomTraceParams p = random_trace_params(seed);
    SCOPED_TRACE(describe(p));
    const trace::Trace t = random_trace(p);
    trace::Trace dropped = random_trace(p);  // the same trace (deterministic in p; Trace is not copyable)
    for (std::int64_t& s : dropped.syncs.event_stream) {
      records += s != trace::kNone;
      s = trace::kNone;
    }
    const timing::Analysis a = timing::analyze(t, {}, {});
    const timing::Analysis b = timing::analyze(dropped, {}, {});
    ASSERT_EQ(a.graph.op, b.graph.op) << "the same nodes";
    EXPECT_EQ(b.replay_error, 0.0);
    for (std::size_t n = 0; n < a.graph.nodes(); ++n) {
      EXPECT_LE(b.node_slack[n], a.node_slack[n]) << "node " << n << " (trace row " << a.graph.op[n] << ", "
                                                  << t.strings.view(t.ops.name[a.graph.op[n]]) << ")";
      less += b.node_slack[n] < a.node_slack[n];
      more += b.node_slack[n] > a.node_slack[n];
      ++ops;
    }
  }
  std::printf("[random traces, issue 31] %lld sync records lose their event stream; of %lld ops, %lld have "
              "less slack, %lld more\n", static_cast<long long>(records), static_cast<long long>(ops),
              static_cast<long long>(less), static_cast<long long>(more));
  EXPECT_GT(records, 0);
  EXPECT_GT(less, 0);
}

/// The hand-checkable trace. One thread, one stream, `iterations` GPU-bound iterations: a 15 ms GEMM
/// (compute-bound) and a 5 ms elementwise kernel (memory-bound) launched back to back, then
/// cudaDeviceSynchronize and 0.5 ms of CPU work. The GPU is busy 20 of every 20.5 ms and nothing
/// overlaps: every pack is critical, and a uniform clock below f_max fits +2 % and more (the GEMMs
/// stretch, the elementwise kernels barely do). One iteration is one pack (20 ms, the A100's min
/// pack): EMO's only plans are then the static ones, so the oracle's clock is one of its options.
trace::Trace static_fits_trace(int iterations) {
  constexpr TimeNs kUs = 1000, kMs = 1'000'000;
  HandTrace h;
  TimeNs t = 0;
  std::int64_t corr = 1;
  for (int it = 0; it < iterations; ++it) {
    h.call("cudaLaunchKernel", t, 5 * kUs, corr);
    h.kernel("ampere_sgemm_128x64_tn", t + 10 * kUs, 15 * kMs, 7, corr++);
    h.call("cudaLaunchKernel", t + 10 * kUs, 5 * kUs, corr);
    h.kernel("vectorized_elementwise_kernel", t + 10 * kUs + 15 * kMs, 5 * kMs, 7, corr++);
    const TimeNs sync_start = t + 20 * kUs, end = t + 10 * kUs + 20 * kMs;
    h.call("cudaDeviceSynchronize", sync_start, end + 5 * kUs - sync_start, corr);
    h.sync(trace::SyncKind::kContextSync, sync_start, end + 5 * kUs - sync_start, corr++, 0);
    t = end + 5 * kUs + kMs / 2;
  }
  trace::Trace tr = h.finish();
  tr.meta.gpus.push_back({0, "NVIDIA A100-SXM4-80GB"});
  return tr;
}

/// Optimises static_fits_trace(iterations) at +2, +5 and +10 %: the static oracle must be below
/// f_max and within the target (the premise), then check() — EMO within the target and at most the
/// oracle's energy + 0.2 %. Prints the figures.
void expect_never_loses_where_static_fits(int iterations, std::size_t packs) {
  const trace::Trace t = static_fits_trace(iterations);
  maybe_dump(t, 9000 + static_cast<std::uint64_t>(iterations));  // seed9001.json: one iteration
  for (const double slowdown : {0.02, 0.05, 0.1}) {
    driver::OptimizeOptions o;
    o.max_slowdown = slowdown;
    const driver::OptimizeResult r = driver::optimize(t, {}, a100(), o);
    const driver::Evaluation& ev = r.evaluation;
    const Outcome out =
        outcome_of(r, "static_fits_trace(" + std::to_string(iterations) + ") max_slowdown=" + std::to_string(slowdown));
    ASSERT_EQ(out.packs, packs) << out.what;
    ASSERT_LT(ev.statics.best.clock_mhz, 1410) << out.what << ": the premise, a static clock below f_max fits";
    ASSERT_LE(ev.statics.best.time_ns, ev.statics.target_ns) << out.what;
    check(out);
    std::string clocks;
    for (const double f : r.plan().pack_clock_mhz) clocks += (clocks.empty() ? "" : ",") + std::to_string(static_cast<int>(f));
    std::printf("[static fits, %zu pack(s), +%.0f %%] static %.0f MHz: %.4f J, %.3f ms; EMO %s MHz: %.4f J, %.3f ms; "
                "baseline %.4f J, %.3f ms; target %.3f ms\n",
                out.packs, 100 * slowdown, out.static_mhz, out.static_j, static_cast<double>(ev.statics.best.time_ns) / 1e6,
                clocks.c_str(), out.emo_j, static_cast<double>(out.emo_ns) / 1e6, ev.statics.baseline.energy_j,
                static_cast<double>(ev.statics.baseline.time_ns) / 1e6, static_cast<double>(ev.statics.target_ns) / 1e6);
  }
}

// Issue 15: "a test that fails if EMO's measured energy exceeds the static oracle's on a trace where
// a static plan fits the target". One pack: fails at +10 % on the optimizer of 2026-12 (EMO keeps
// the models' clock, one step above the oracle's); four packs: passes.
TEST(RandomTraces, NeverLosesToStaticWhereAStaticClockFitsOnePack) { expect_never_loses_where_static_fits(1, 1); }
TEST(RandomTraces, NeverLosesToStaticWhereAStaticClockFitsFourPacks) { expect_never_loses_where_static_fits(4, 4); }

// The issue-15 sweep: 100 traces at +5 %, 25 at +2 % and 25 at +0 %. Known to fail on the optimizer
// of 2026-12 (see docs/optimize.md, "Random traces"): these assert what issue 15 requires.
TEST(RandomTraces, NeverLosesToStaticAt5Percent) { sweep(1, 100, 0.05); }
TEST(RandomTraces, NeverLosesToStaticAt2Percent) { sweep(101, 125, 0.02); }
TEST(RandomTraces, NeverLosesToStaticAt0Percent) { sweep(126, 150, 0.0); }

}  // namespace
}  // namespace emo::testing
