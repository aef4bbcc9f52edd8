// emo-bench-pack: how fast EMO packs a trace and contracts it (docs/design.md §3, docs/packing.md).
//
// Input: $EMO_BENCH_TRACE (any format load_trace reads), else hta_v100_ns_resolution.json.gz
// from the data directory. The trace is loaded and analysed (graph, replay, slack) once,
// before any benchmark runs; the whole trace is the window; min_pack 20 ms.
//
//   BM_PackTimeline     emo::pack::pack_timeline(trace, g, s, slack)
//   BM_Contract         emo::pack::contract(g, packing)               (packing untimed)
//   BM_Pack             pack_timeline + contract: "packing" in the speed target
//   BM_EvaluateFactors  PackGraph::evaluate_factors(x1.3 per pack): one pack-graph what-if
//   BM_RunPack          emo::pack::run_pack: analysis + packing + contraction + the exactness
//                       check (4 uniform and 8 per-pack cases), i.e. `emo pack` minus load/output
//
// Times are process CPU time. Counters: ops (trace rows), gpu_ops, packs, nodes (op graph),
// pack_nodes, pack_edges.
#include <benchmark/benchmark.h>

#include "bench_input.h"

#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>

#include "pack/pack_graph.h"
#include "pack/packer.h"
#include "pack/pack_run.h"
#include "timing/analysis.h"
#include "core/error.h"
#include "trace/load.h"

#ifndef EMO_DEFAULT_DATA_DIR
#define EMO_DEFAULT_DATA_DIR "../shared/data"
#endif

namespace {

using emo::TimeNs;

struct Input {
  std::string path;
  emo::trace::Trace trace;
  emo::timing::Analysis analysis;
  emo::pack::Packing packing;
  emo::pack::PackGraph pack_graph;
};

Input* g_in = nullptr;
constexpr TimeNs kMinPack = 20'000'000;

void set_counters(benchmark::State& state) {
  const Input& in = *g_in;
  state.counters["ops"] = static_cast<double>(in.trace.ops.size());
  state.counters["gpu_ops"] = static_cast<double>(in.packing.nodes.size());
  state.counters["packs"] = static_cast<double>(in.packing.packs.size());
  state.counters["nodes"] = static_cast<double>(in.analysis.graph.nodes());
  state.counters["pack_nodes"] = static_cast<double>(in.pack_graph.nodes());
  state.counters["pack_edges"] = static_cast<double>(in.pack_graph.g.edges());
  state.SetLabel(std::filesystem::path(in.path).filename().string());
}

template <typename T>
void untimed_free(benchmark::State& state, T& v) {
  state.PauseTiming();
  { T dead = std::move(v); }
  state.ResumeTiming();
}

emo::pack::Packing pack_once() {
  const emo::timing::Analysis& a = g_in->analysis;
  return emo::pack::pack_timeline(g_in->trace, a.graph, a.schedule, a.node_slack, {kMinPack});
}

void BM_PackTimeline(benchmark::State& state) {
  for (auto _ : state) {
    emo::pack::Packing p = pack_once();
    benchmark::DoNotOptimize(p.packs.data());
    untimed_free(state, p);
  }
  set_counters(state);
}

void BM_Contract(benchmark::State& state) {
  for (auto _ : state) {
    emo::pack::PackGraph pg = emo::pack::contract(g_in->analysis.graph, g_in->packing);
    benchmark::DoNotOptimize(pg.g.topo.data());
    untimed_free(state, pg);
  }
  set_counters(state);
}

void BM_Pack(benchmark::State& state) {
  for (auto _ : state) {
    emo::pack::Packing p = pack_once();
    emo::pack::PackGraph pg = emo::pack::contract(g_in->analysis.graph, p);
    benchmark::DoNotOptimize(pg.g.topo.data());
    untimed_free(state, pg);
    untimed_free(state, p);
  }
  set_counters(state);
}

void BM_EvaluateFactors(benchmark::State& state) {
  const std::vector<double> f(g_in->packing.packs.size(), 1.3);
  for (auto _ : state) {
    emo::timing::Schedule s = g_in->pack_graph.evaluate_factors(f);
    benchmark::DoNotOptimize(s.makespan_ns);
    untimed_free(state, s);
  }
  set_counters(state);
}

void BM_RunPack(benchmark::State& state) {
  for (auto _ : state) {
    emo::pack::PackRun r = emo::pack::run_pack(g_in->trace, {}, emo::pack::PackOptions{kMinPack, "bench"});
    benchmark::DoNotOptimize(r.contraction.contraction_error);
    untimed_free(state, r);
  }
  set_counters(state);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  Input in;
  in.path = emo::bench::bench_trace_path();
  try {
    in.trace = emo::trace::load_trace(in.path);
  } catch (const emo::InputError& e) {
    std::fprintf(stderr, "emo-bench-pack: error: %s\n", e.what());
    return 2;
  }
  in.analysis = emo::timing::analyze(in.trace, {}, {});
  g_in = &in;
  in.packing = pack_once();
  in.pack_graph = emo::pack::contract(in.analysis.graph, in.packing);
  benchmark::AddCustomContext("emo_trace", in.path);
  benchmark::AddCustomContext("emo_ops", std::to_string(in.trace.ops.size()));
  benchmark::AddCustomContext("emo_packs", std::to_string(in.packing.packs.size()));
  for (auto [name, fn] : {std::pair{"BM_PackTimeline", &BM_PackTimeline}, std::pair{"BM_Contract", &BM_Contract},
                          std::pair{"BM_Pack", &BM_Pack}, std::pair{"BM_EvaluateFactors", &BM_EvaluateFactors},
                          std::pair{"BM_RunPack", &BM_RunPack}}) {
    benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
