// Packing and contraction on every shared Kineto and nsys trace (../shared/data, SOURCES.md):
// a partition of every GPU's ops, the recording reproduced by the pack graph, and the
// exactness figures of docs/packing.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "graph/independent_replay.h"
#include "model/gpu_catalog.h"
#include "model/pack_options.h"
#include "pack/catalog_min_pack.h"
#include "pack/pack_run.h"
#include "test_data.h"
#include "trace/load.h"

namespace emo::testing {
namespace {

/// Every GPU op packed once; the pack graph at the recorded durations reproduces the recording;
/// the contraction is exact (to the ns) at every uniform and per-pack factor; a pack shorter
/// than min_pack is its device's only pack (a timeline shorter than min_pack).
void check_trace(const std::filesystem::path& path) {
  SCOPED_TRACE(path.filename().string());
  const trace::Trace t = trace::load_trace(path.string());
  pack::ContractionOptions o;
  o.per_pack_cases = 16;
  // As `emo pack` and `emo optimize` pack: the catalog's min_pack and the phase cuts.
  const pack::PackRun r = pack::run_pack(t, graph::Window{}, model::pack_options_for(t, std::nullopt, "catalog"), o);
  const graph::DepGraph& g = r.analysis.graph;
  std::size_t gpu_ops = 0;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) gpu_ops += g.gpu[n];
  EXPECT_EQ(r.packing.nodes.size(), gpu_ops);
  EXPECT_EQ(r.pack_schedule.makespan_ns, r.analysis.schedule.makespan_ns);
  std::map<std::int32_t, int> packs_of_device;
  for (const auto& p : r.packing.packs) ++packs_of_device[p.device];
  for (std::uint32_t p = 0; p < r.packing.packs.size(); ++p) {
    EXPECT_EQ(r.pack_schedule.start(p), r.packing.packs[p].start_ns);
    EXPECT_EQ(r.pack_schedule.end(p), r.packing.packs[p].end_ns);
    if (r.packing.packs[p].forced_short) {
      EXPECT_EQ(packs_of_device[r.packing.packs[p].device], 1) << "pack " << p;
    }
  }
  EXPECT_EQ(r.contraction.uniform_error, 0.0);
  EXPECT_EQ(r.contraction.per_pack_error, 0.0);
  // The same exactness recomputed here (independent_replay.h): the op graph replayed with each
  // GPU op scaled by its pack's factor against the pack graph at those factors, and the op
  // graph at its own durations ending every GPU op where the trace recorded it.
  const std::vector<TimeNs> recorded = replay_by_hand(g, g.dur);
  std::size_t off = 0;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) off += g.gpu[n] && recorded[graph::DepGraph::end_tp(n)] != g.rec_end[n];
  EXPECT_EQ(off, 0u) << "GPU ops whose replayed end is not the recorded one";
  for (const std::vector<double>& f : factor_cases(r.packing.packs.size(), 4, 1)) {
    const TimeNs op = makespan_by_hand(g, replay_by_hand(g, durations_at(g, r.packing.pack_of, f)));
    EXPECT_EQ(r.pack_graph.evaluate_factors(f).makespan_ns, op) << ::testing::PrintToString(f);
  }
  EXPECT_EQ(r.pack_graph.cycle_edges, 0);
  // Port edges stay within a small multiple of the op graph's edges.
  EXPECT_LE(r.pack_graph.port_edges(), g.edges());
}

/// check_trace on every file of `dir` whose name ends with `suffix`; returns how many.
int check_every_trace(const std::string& dir, std::string_view suffix) {
  int traces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.path().filename().string().ends_with(suffix)) continue;
    check_trace(entry.path());
    ++traces;
  }
  return traces;
}

TEST(PackRealTraces, EveryKinetoTrace) {
  EMO_REQUIRE_DATA(dir, "kineto");
  EXPECT_GE(check_every_trace(dir, ".json.gz"), 12);
}

TEST(PackRealTraces, EveryNsysTrace) {
  EMO_REQUIRE_DATA(dir, "nsys");
  EXPECT_GE(check_every_trace(dir, ".sqlite"), 2);
}

/// GPU-bound V100 training: its 6,095 GPU ops in very few packs.
TEST(PackRealTraces, V100PacksCompress) {
  EMO_REQUIRE_DATA(path, "kineto/hta_v100_ns_resolution.json.gz");
  const trace::Trace t = trace::load_trace(path);
  const pack::PackRun r = pack::run_pack(t, graph::Window{}, catalog_min_pack(t));
  EXPECT_EQ(r.packing.nodes.size(), 6095u);
  EXPECT_LE(r.packing.packs.size(), 5u);
  EXPECT_EQ(r.packing.min_pack_ns, 20'000'000);  // V100's catalog figure
  EXPECT_EQ(r.contraction.contraction_error, 0.0);
}

/// The same trace with the phase cuts (issue 15): the GPU-bound stretch that made one pack is cut
/// where its mix of compute- and memory-bound kernels changes — every pack at least min_pack, the
/// contraction still exact.
TEST(PackRealTraces, V100PhaseCuts) {
  EMO_REQUIRE_DATA(path, "kineto/hta_v100_ns_resolution.json.gz");
  const trace::Trace t = trace::load_trace(path);
  const pack::PackRun r = pack::run_pack(t, graph::Window{}, model::pack_options_for(t, std::nullopt, "catalog"));
  EXPECT_GE(r.packing.packs.size(), 4u);
  EXPECT_EQ(r.packing.stats.cuts[static_cast<int>(pack::Cut::kPhase)],
            static_cast<std::int64_t>(r.packing.packs.size()) - 1);
  EXPECT_EQ(r.packing.stats.forced_short, 0);
  EXPECT_EQ(r.contraction.contraction_error, 0.0);
}

}  // namespace
}  // namespace emo::testing
