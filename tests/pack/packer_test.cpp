// The packer and the pack graph on hand-made traces whose packs are worked out in the comments.
#include "pack/packer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/hand_trace.h"
#include "pack/pack_graph.h"
#include "model/gpu_catalog.h"
#include "model/op_class.h"
#include "output/pack_output.h"
#include "pack/pack_run.h"
#include "timing/analysis.h"
#include "core/error.h"

namespace emo::testing {
namespace {

using pack::Cut;
using pack::PackGraph;
using pack::Packing;

constexpr TimeNs kNs = 1;

struct Packed {
  timing::Analysis a;
  Packing p;
  PackGraph pg;
};

Packed pack_of(const trace::Trace& t, TimeNs min_pack) {
  Packed r;
  r.a = timing::analyze(t, graph::Window{}, {});
  r.p = pack::pack_timeline(t, r.a.graph, r.a.schedule, r.a.node_slack, {min_pack});
  r.pg = pack::contract(r.a.graph, r.p);
  return r;
}

/// The pack graph's makespan equals the op graph's at every uniform factor and at per-pack
/// factors (a few fixed patterns).
void expect_exact(const Packed& r) {
  const std::size_t P = r.p.packs.size();
  std::vector<std::vector<double>> cases;
  for (double f : {1.0, 1.1, 1.3, 2.0}) cases.emplace_back(P, f);
  for (std::size_t i = 0; i < P; ++i) {
    std::vector<double> one(P, 1.0);
    one[i] = 2.0;
    cases.push_back(one);
    std::vector<double> alt(P);
    for (std::size_t j = 0; j < P; ++j) alt[j] = (i + j) % 2 ? 1.3 : 1.0;
    cases.push_back(alt);
  }
  for (const auto& f : cases) {
    const TimeNs op = timing::replay(r.a.graph, pack::scaled_op_durations(r.a.graph, r.p, f)).makespan_ns;
    EXPECT_EQ(r.pg.evaluate_factors(f).makespan_ns, op) << "factor of pack 0: " << f[0];
  }
}

/// Every GPU op in exactly one pack; packs of a device in time order, not overlapping.
void expect_partition(const Packed& r) {
  const DepGraph& g = r.a.graph;
  std::vector<int> seen(g.nodes(), 0);
  for (std::uint32_t p = 0; p < r.p.packs.size(); ++p) {
    for (const std::uint32_t n : r.p.ops_of(p)) {
      ++seen[n];
      EXPECT_EQ(r.p.pack_of[n], p);
      EXPECT_GE(g.rec_start[n], r.p.packs[p].start_ns);
      EXPECT_LE(g.rec_end[n], r.p.packs[p].end_ns);
    }
    if (p > 0 && r.p.packs[p - 1].device == r.p.packs[p].device) {
      EXPECT_LE(r.p.packs[p - 1].end_ns, r.p.packs[p].start_ns);
      EXPECT_EQ(r.p.packs[p - 1].span_ns, r.p.packs[p].start_ns - r.p.packs[p - 1].start_ns);
    }
  }
  for (std::uint32_t n = 0; n < g.nodes(); ++n) EXPECT_EQ(seen[n], g.gpu[n] ? 1 : 0) << n;
}

/// One thread:
///   [0,5)    launch k1 on stream 7 -> [10, 40)
///   [6,11)   launch k2 on stream 7 -> [40, 70)   (queued behind k1)
///   [12,72)  cudaDeviceSynchronize (record): returns 2 ns after k2
///   [80,85)  launch k3 on stream 7 -> [90, 100)
///   [120,125) launch k4 on stream 8 -> [130, 150)
///   [126,152) cudaDeviceSynchronize (record): waits for k3 and k4
/// The syncs cut after k2 and after k3: packs {k1, k2}, {k3}, {k4}.
trace::Trace sync_split() {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 5, 1);
  h.kernel("k1", 10, 30, 7, 1);
  h.call("cudaLaunchKernel", 6, 5, 2);
  h.kernel("k2", 40, 30, 7, 2);
  h.call("cudaDeviceSynchronize", 12, 60, 3);
  h.sync(SyncKind::kContextSync, 12, 60, 3);
  h.call("cudaLaunchKernel", 80, 5, 4);
  h.kernel("k3", 90, 10, 7, 4);
  h.call("cudaLaunchKernel", 120, 5, 5);
  h.kernel("k4", 130, 20, 8, 5);
  h.call("cudaDeviceSynchronize", 126, 26, 6);
  h.sync(SyncKind::kContextSync, 126, 26, 6);
  return h.finish();
}

TEST(Packer, HostSyncsCutThePacks) {
  const trace::Trace t = sync_split();
  const Packed r = pack_of(t, 1 * kNs);
  ASSERT_EQ(r.p.packs.size(), 3u);
  const auto& P = r.p.packs;
  EXPECT_EQ(P[0].count, 2u);
  EXPECT_EQ(P[0].start_ns, 10);
  EXPECT_EQ(P[0].end_ns, 70);
  EXPECT_EQ(P[0].islands, 2u);
  EXPECT_EQ(P[0].starts_at, Cut::kFirst);
  EXPECT_EQ(P[1].count, 1u);
  EXPECT_EQ(P[1].start_ns, 90);
  EXPECT_EQ(P[1].starts_at, Cut::kHostSync);
  EXPECT_EQ(P[2].start_ns, 130);
  EXPECT_EQ(P[2].end_ns, 150);
  EXPECT_EQ(P[2].starts_at, Cut::kHostSync);
  EXPECT_EQ(P[0].span_ns, 80);  // to k3's start
  EXPECT_EQ(P[2].span_ns, 20);  // the last: its own length
  EXPECT_EQ(r.p.stats.forced_short, 0);
  EXPECT_EQ(r.p.stats.cuts[static_cast<int>(Cut::kHostSync)], 2);
  EXPECT_EQ(r.p.stats.islands, 4);
  expect_partition(r);
  expect_exact(r);

  // Pack 0 at x2: k1 [0, 60), k2 queued behind it [60, 120): 120 from its start. k2's launch
  // (at 6, lag 0) enters the pack through one port edge to its end, lag 0 + k2's duration.
  // k2's end, waited for by the sync, is always the pack's end: no exit port.
  const pack::PackTime pt = r.pg.pack_time(0, 2.0);
  EXPECT_EQ(pt.dur_ns, 120);
  ASSERT_EQ(pt.port_lags_ns.size(), 1u);
  EXPECT_EQ(pt.port_lags_ns[0], 60);
  EXPECT_EQ(r.pg.pack_time(0, 1.0).dur_ns, 60);
  EXPECT_EQ(r.pg.pack_time(0, 1.0).port_lags_ns[0], 30);
  EXPECT_TRUE(r.pg.port_kind.empty());
  // The pack graph at the recorded durations reproduces the recording.
  const timing::Schedule s = timing::replay(r.pg.g, r.pg.g.dur);
  EXPECT_EQ(s.makespan_ns, r.a.schedule.makespan_ns);
  for (std::uint32_t p = 0; p < 3; ++p) {
    EXPECT_EQ(s.start(p), P[p].start_ns);
    EXPECT_EQ(s.end(p), P[p].end_ns);
  }
  // x2 on everything: k1 [10, 70), k2 [70, 130), the sync returns at 132; the CPU gaps stay
  // (8 ns to the next launch, then 35 ns): k3 [150, 170), k4 launched at 180, [190, 230); the
  // last sync returns at 232.
  EXPECT_EQ(r.pg.evaluate_factors(std::vector<double>(3, 2.0)).makespan_ns, 232);
}

TEST(Packer, PacksShorterThanMinPackAreCountedAsForced) {
  // The whole timeline (140 ns) is shorter than min_pack: one pack, forced short; the syncs
  // do not cut it (no boundary has to be cut).
  const trace::Trace t = sync_split();
  const Packed r = pack_of(t, 20'000'000);
  ASSERT_EQ(r.p.packs.size(), 1u);
  EXPECT_EQ(r.p.stats.forced_short, 1);
  EXPECT_TRUE(r.p.packs[0].forced_short);
  EXPECT_EQ(r.p.stats.mid_pack_exits, 2);  // k2 and k3 feed syncs before the pack ends
  expect_partition(r);
  expect_exact(r);
}

/// One stream, a sync after every kernel, one pack: the first two kernels' ends are exit ports
/// (the CPU waits on them mid-pack), the last one's end is the pack's end itself (every op end
/// reaches it through the earlier exits), so it needs no port.
TEST(Packer, LastExitOfAStreamIsThePacksEnd) {
  HandTrace h;
  TimeNs t = 0;
  for (std::int64_t c = 1; c <= 3; ++c) {
    h.call("cudaLaunchKernel", t, 5, 2 * c - 1);
    h.kernel("k" + std::to_string(c), t + 10, 30, 7, 2 * c - 1);
    h.call("cudaStreamSynchronize", t + 6, 36, 2 * c);
    h.sync(SyncKind::kStreamSync, t + 6, 36, 2 * c, 0, /*stream=*/7);
    t += 60;
  }
  const trace::Trace tr = h.finish();
  const Packed r = pack_of(tr, 1'000'000'000);
  ASSERT_EQ(r.p.packs.size(), 1u);
  EXPECT_EQ(std::count(r.pg.port_kind.begin(), r.pg.port_kind.end(), pack::PortKind::kExit), 2);
  expect_partition(r);
  expect_exact(r);
}

TEST(Packer, MinPackMergesAcrossHostSyncsAndStaysExact) {
  // min_pack 60: {k1, k2} is 80 ns to k3's start and k3..k4 is 60 ns to the end, so the first
  // sync cuts; the second (after k3) does not, since k3's pack would be 40 ns. k3 and k4 are on
  // different streams and both feed the last sync: k3's end is an exit port.
  const trace::Trace t = sync_split();
  const Packed r = pack_of(t, 60);
  ASSERT_EQ(r.p.packs.size(), 2u);
  EXPECT_EQ(r.p.packs[1].count, 2u);
  EXPECT_EQ(r.p.packs[1].starts_at, Cut::kHostSync);
  EXPECT_EQ(r.p.stats.forced_short, 0);
  EXPECT_EQ(std::count(r.pg.port_kind.begin(), r.pg.port_kind.end(), pack::PortKind::kExit), 2);
  expect_partition(r);
  expect_exact(r);
}

/// Two streams overlap: one island, one pack, both streams in it.
TEST(Packer, OverlappingStreamsShareOnePack) {
  const trace::Trace t = two_streams();
  const Packed r = pack_of(t, 1);
  ASSERT_EQ(r.p.packs.size(), 1u);
  EXPECT_EQ(r.p.packs[0].count, 2u);
  EXPECT_EQ(r.p.packs[0].start_ns, 12);
  EXPECT_EQ(r.p.packs[0].end_ns, 130);
  EXPECT_TRUE(r.p.packs[0].critical);
  expect_partition(r);
  expect_exact(r);
  // k_short alone from the start ends at 80 at x2. k_long (launched at 15, started at 30: lag
  // 15) enters through port edges: at x2 it ends 15 + 200 after its launch, at 230, which is
  // the pack's end. Neither op's end is always the pack's end (neither reaches the other), so
  // the sync waits on two exit ports.
  const pack::PackTime pt = r.pg.pack_time(0, 2.0);
  EXPECT_EQ(pt.dur_ns, 80);
  EXPECT_EQ(std::count(r.pg.port_kind.begin(), r.pg.port_kind.end(), pack::PortKind::kExit), 2);
  const timing::Schedule s = r.pg.evaluate_factors(std::vector<double>{2.0});
  EXPECT_EQ(s.start(0), 12);
  EXPECT_EQ(s.end(0), 230);
}

/// Criticality changes between k_a (slack: only the end of the window follows it) and k_b
/// (waited for by a stream sync):
///   [0,5)   launch k_a on stream 7 -> [10, 50)
///   [55,58) launch k_b on stream 8 -> [60, 70)
///   [59,72) cudaStreamSynchronize(stream 8) (record)
/// With min_pack 10 both sides are long enough (50 and 10): two packs; with 11, one.
trace::Trace criticality_change() {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 5, 1);
  h.kernel("k_a", 10, 40, 7, 1);
  h.call("cudaLaunchKernel", 55, 3, 2);
  h.kernel("k_b", 60, 10, 8, 2);
  h.call("cudaStreamSynchronize", 59, 13, 3);
  h.sync(SyncKind::kStreamSync, 59, 13, 3, 0, /*stream=*/8);
  return h.finish();
}

TEST(Packer, CriticalityChangeIsASoftCut) {
  const trace::Trace t = criticality_change();
  const Packed two = pack_of(t, 10);
  ASSERT_EQ(two.p.packs.size(), 2u);
  EXPECT_FALSE(two.p.packs[0].critical);
  EXPECT_TRUE(two.p.packs[1].critical);
  EXPECT_EQ(two.p.packs[1].starts_at, Cut::kCriticality);
  EXPECT_EQ(two.p.stats.forced_short, 0);
  expect_exact(two);
  const Packed one = pack_of(t, 11);
  ASSERT_EQ(one.p.packs.size(), 1u);
  EXPECT_EQ(one.p.stats.forced_short, 0);  // its span, 60 ns, is >= 11
}

/// Thread 1 launches k_a (stream 7) and waits for it; thread 2 launched k_c behind it on
/// stream 7 earlier, and later launches k_d on stream 8:
///   thread 1: [0,5) launch k_a -> [10, 50); [5,52) cudaStreamSynchronize(7) (record)
///   thread 2: [6,9) launch k_c -> [50, 80) (queued behind k_a); [85,88) launch k_d -> [90,100)
/// The sync cuts after k_a. The pack starting at k_c is anchored to k_a's end (k_c queued
/// behind it); k_d is paced by thread 2, which does not wait for the GPU: an entry boundary.
trace::Trace entry_case() {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 5, 1, 1);
  h.kernel("k_a", 10, 40, 7, 1);
  h.call("cudaStreamSynchronize", 5, 47, 2, 1);
  h.sync(SyncKind::kStreamSync, 5, 47, 2, 0, /*stream=*/7);
  h.call("cudaLaunchKernel", 6, 3, 3, 2);
  h.kernel("k_c", 50, 30, 7, 3);
  h.call("cudaLaunchKernel", 85, 3, 4, 2);
  h.kernel("k_d", 90, 10, 8, 4);
  return h.finish();
}

TEST(Packer, LaunchFromAnotherCpuChainIsAnEntryBoundary) {
  const trace::Trace t = entry_case();
  const Packed r = pack_of(t, 1);
  ASSERT_EQ(r.p.packs.size(), 3u);
  EXPECT_EQ(r.p.packs[1].starts_at, Cut::kHostSync);
  EXPECT_EQ(r.p.packs[1].count, 1u);
  EXPECT_EQ(r.p.packs[2].starts_at, Cut::kEntry);
  EXPECT_EQ(r.p.packs[2].start_ns, 90);
  expect_partition(r);
  expect_exact(r);
}

/// phase_starts on islands 10 ns apart, each 10 ns busy, min_pack 20 (blocks of one island). The
/// expected starts are worked out by hand from the rule: the split with the largest
/// W_L·W_R/(W_L+W_R)·(μ_L − μ_R)² whose sides both span ≥ 20 and differ by ≥ 0.02, then each side.
std::vector<std::size_t> phases_of(const std::vector<double>& sens) {
  std::vector<TimeNs> start, busy;
  for (std::size_t i = 0; i < sens.size(); ++i) start.push_back(static_cast<TimeNs>(10 * i)), busy.push_back(10);
  return pack::phase_starts(start, busy, sens, static_cast<TimeNs>(10 * sens.size()), 20);
}

TEST(Packer, PhaseStartsWhereTheSensitivityChanges) {
  // Two phases: one split at 4 (μ 1 vs 0.2); each side is uniform.
  EXPECT_EQ(phases_of({1, 1, 1, 1, 0.2, 0.2, 0.2, 0.2}), (std::vector<std::size_t>{4}));
  // Three: at 3 and 6 the scores tie (30·60/90 · 0.4² = 3.2); the first wins, then [3, 9) splits at 6.
  EXPECT_EQ(phases_of({1, 1, 1, 0.2, 0.2, 0.2, 1, 1, 1}), (std::vector<std::size_t>{3, 6}));
  // The change at 1 would leave a 10 ns side (< min_pack): the split moves to 2 (μ 0.6 vs 1).
  EXPECT_EQ(phases_of({0.2, 1, 1, 1, 1, 1, 1, 1}), (std::vector<std::size_t>{2}));
  // A contrast below 0.02 is no phase.
  EXPECT_TRUE(phases_of({1, 1, 1, 1, 0.99, 0.99, 0.99, 0.99}).empty());
  EXPECT_TRUE(phases_of({0.5}).empty());
  EXPECT_THROW(pack::phase_starts(std::vector<TimeNs>{0}, std::vector<TimeNs>{}, std::vector<double>{1}, 10, 20),
               std::invalid_argument);
}

/// One thread launches 8 kernels at once onto stream 7; they run back to back from 10 ns, 10 ns
/// each: 4 GEMMs (compute-bound) then 4 elementwise kernels (memory-bound). No sync, no entry, all
/// critical: without sensitivities one pack; with the op classes' priors a phase cut after the
/// GEMMs (min_pack 20: both sides are 40 ns).
trace::Trace gemm_then_elementwise() {
  HandTrace h;
  for (int i = 0; i < 8; ++i) {
    h.call("cudaLaunchKernel", i, 1, i + 1);
    h.kernel(i < 4 ? "ampere_sgemm_128x64_tn" : "vectorized_elementwise_kernel", 10 + 10 * i, 10, 7, i + 1);
  }
  return h.finish();
}

TEST(Packer, PhaseCutBetweenComputeAndMemoryBoundWork) {
  const trace::Trace t = gemm_then_elementwise();
  const Packed plain = pack_of(t, 20 * kNs);
  EXPECT_EQ(plain.p.packs.size(), 1u);
  Packed r;
  r.a = timing::analyze(t, graph::Window{}, {});
  pack::PackOptions o{20 * kNs, "test", model::clock_sensitivity(t)};
  r.p = pack::pack_timeline(t, r.a.graph, r.a.schedule, r.a.node_slack, o);
  r.pg = pack::contract(r.a.graph, r.p);
  ASSERT_EQ(r.p.packs.size(), 2u);
  EXPECT_EQ(r.p.packs[0].count, 4u);
  EXPECT_EQ(r.p.packs[1].starts_at, Cut::kPhase);
  EXPECT_EQ(r.p.stats.cuts[static_cast<int>(Cut::kPhase)], 1);
  expect_partition(r);
  expect_exact(r);
  o.op_sensitivity.pop_back();
  EXPECT_THROW(pack::pack_timeline(t, r.a.graph, r.a.schedule, r.a.node_slack, o), std::invalid_argument);
}

TEST(Packer, RejectsBadMinPack) {
  const trace::Trace t = two_streams();
  const timing::Analysis a = timing::analyze(t, graph::Window{}, {});
  EXPECT_THROW(pack::pack_timeline(t, a.graph, a.schedule, a.node_slack, {0}), std::invalid_argument);
  EXPECT_THROW(pack::pack_timeline(t, a.graph, a.schedule, {}, {1}), std::invalid_argument);
}

TEST(Packer, EmptyTrace) {
  HandTrace h;
  const trace::Trace t = h.finish();
  // The analysis refuses it ("nothing to analyse", exit 2 in the CLI); the packer itself still
  // handles an empty graph.
  EXPECT_THROW(timing::analyze(t, graph::Window{}, {}), InputError);
  const graph::DepGraph g = graph::build_graph(t);
  const timing::Schedule s = timing::replay(g, g.dur);
  const std::vector<TimeNs> sl = timing::slack(g, s, g.dur);
  const pack::Packing p = pack::pack_timeline(t, g, s, sl, {1});
  EXPECT_TRUE(p.packs.empty());
  const auto pg = pack::contract(g, p);
  EXPECT_EQ(pg.packs, 0u);
  EXPECT_EQ(pg.evaluate(std::vector<pack::PackTime>{}).makespan_ns, 0);
}

TEST(Packer, DefaultMinPackComesFromTheCatalog) {
  trace::Trace t = two_streams();
  model::MinPack m = model::min_pack_for(t);
  EXPECT_EQ(m.ns, model::kFallbackMinPackNs);
  EXPECT_NE(m.source.find("default"), std::string::npos);
  t.meta.gpus.push_back({0, "NVIDIA A100-SXM4-80GB"});
  m = model::min_pack_for(t);
  EXPECT_EQ(m.ns, 20'000'000);  // the catalog's figure
  EXPECT_NE(m.source.find("A100"), std::string::npos);
}

TEST(Packer, MinPackIsRequired) {
  const trace::Trace t = two_streams();
  EXPECT_THROW(pack::run_pack(t, graph::Window{}, pack::PackOptions{}), std::invalid_argument);
}

TEST(PackGraph, FactorAndDurationApisCheckTheirSizes) {
  const trace::Trace t = sync_split();
  const Packed r = pack_of(t, 1);
  EXPECT_THROW(r.pg.pack_times(std::vector<double>{1.0}), std::invalid_argument);
  EXPECT_THROW(r.pg.pack_times(std::vector<double>{1.0, 0.0, 1.0}), std::invalid_argument);
  EXPECT_THROW(r.pg.evaluate(std::vector<pack::PackTime>(2)), std::invalid_argument);
  EXPECT_THROW(pack::scaled_op_durations(r.a.graph, r.p, std::vector<double>{1.0}), std::invalid_argument);
}

TEST(PackReport, JsonHasTheFiguresOfTheIssue) {
  const trace::Trace t = sync_split();
  const pack::PackRun run = pack::run_pack(t, graph::Window{}, pack::PackOptions{1, "--min-pack-ms"});
  const nlohmann::json j = output::to_json(t, run);
  EXPECT_EQ(j["ops"], 4);
  EXPECT_EQ(j["packs"], 3);
  EXPECT_DOUBLE_EQ(j["compression_ratio"].get<double>(), 4.0 / 3.0);
  EXPECT_EQ(j["forced_short"], 0);
  EXPECT_EQ(j["contraction_error"], 0.0);
  EXPECT_EQ(j["contraction"]["uniform"].size(), 4u);
  EXPECT_EQ(j["cuts"]["host_sync"], 2);
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["packs"].size(), 3u);
  EXPECT_EQ(j["gpus"][0]["packs"][0]["ops"], 2);
  EXPECT_EQ(j["gpus"][0]["packs"][2]["streams"], 1);
  EXPECT_EQ(j["min_pack_source"], "--min-pack-ms");
}

}  // namespace
}  // namespace emo::testing
