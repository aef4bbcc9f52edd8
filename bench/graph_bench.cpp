// emo-bench-graph: how fast EMO builds the dependency graph of a trace and times it (replay,
// slack, critical path, per-GPU slack windows) — docs/design.md §2, docs/graph.md.
//
// Input: $EMO_BENCH_TRACE (any format load_trace reads), else hta_v100_ns_resolution.json.gz
// from the data directory ($EMO_DATA_DIR, else ../shared/data beside the checkout). The trace is
// loaded once, before any benchmark runs; the whole trace is the window.
//
//   BM_BuildGraph     emo::graph::build_graph(trace)
//   BM_Replay         emo::timing::replay(g, g.dur)             (graph built once, untimed)
//   BM_Slack          emo::timing::slack(g, s, g.dur)           (graph and schedule untimed)
//   BM_CriticalPath   emo::timing::critical_path(trace, g, s, g.dur)
//   BM_GpuSlack       emo::timing::gpu_slack(trace, g, s, node_slack)
//   BM_WhatIf         apply_what_if("kind=kernel:x1.5") + replay: one what-if of `emo analyze`
//   BM_AnalyzeAll     emo::timing::analyze(trace, whole trace, {}): build + replay + replay error
//                     + slack + critical path + gpu_slack, i.e. `emo analyze` minus load/output
//
// Freeing the results is not timed. Times are process CPU time (MeasureProcessCPUTime), so rates
// are per CPU second. Counters on every benchmark: ops (trace.ops.size(), every row of the trace:
// framework ops and annotations included), nodes and edges of the graph, ops/s and nodes/s
// (ops or nodes × iterations / CPU time), graph_bytes (DepGraph::memory_bytes()) and
// trace_bytes (Trace::memory_bytes()). All the usual flags work, e.g.
//   emo-bench-graph --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "bench_input.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/dep_graph.h"
#include "timing/analysis.h"
#include "timing/timing.h"
#include "core/error.h"
#include "trace/load.h"
#include "trace/trace.h"

#ifndef EMO_DEFAULT_DATA_DIR
#define EMO_DEFAULT_DATA_DIR "../shared/data"
#endif

namespace {

using emo::graph::DepGraph;
using emo::TimeNs;
using emo::trace::Trace;

struct Input {
  std::string path;
  Trace trace;
  DepGraph graph;                  ///< Built once, for the benchmarks of the later passes.
  emo::timing::Schedule schedule;  ///< Replay with the recorded durations.
  std::vector<TimeNs> node_slack;
};

Input* g_input = nullptr;

/// The counters every benchmark reports (rates over `state.iterations()`).
void set_counters(benchmark::State& state) {
  const Input& in = *g_input;
  const auto ops = static_cast<double>(in.trace.ops.size());
  const auto nodes = static_cast<double>(in.graph.nodes());
  const auto it = static_cast<double>(state.iterations());
  state.counters["ops"] = benchmark::Counter(ops);
  state.counters["nodes"] = benchmark::Counter(nodes);
  state.counters["edges"] = benchmark::Counter(static_cast<double>(in.graph.edges()));
  state.counters["ops/s"] = benchmark::Counter(ops * it, benchmark::Counter::kIsRate);
  state.counters["nodes/s"] = benchmark::Counter(nodes * it, benchmark::Counter::kIsRate);
  state.counters["graph_bytes"] = benchmark::Counter(static_cast<double>(in.graph.memory_bytes()));
  state.counters["trace_bytes"] = benchmark::Counter(static_cast<double>(in.trace.memory_bytes()));
  state.SetLabel(std::filesystem::path(in.path).filename().string());
}

/// Destroys `v` with the timer paused (freeing is not what is measured).
template <typename T>
void untimed_free(benchmark::State& state, T& v) {
  state.PauseTiming();
  { T dead = std::move(v); }
  state.ResumeTiming();
}

void BM_BuildGraph(benchmark::State& state) {
  for (auto _ : state) {
    DepGraph g = emo::graph::build_graph(g_input->trace);
    benchmark::DoNotOptimize(g.topo.data());
    untimed_free(state, g);
  }
  set_counters(state);
}

void BM_Replay(benchmark::State& state) {
  const DepGraph& g = g_input->graph;
  for (auto _ : state) {
    emo::timing::Schedule s = emo::timing::replay(g, g.dur);
    benchmark::DoNotOptimize(s.end_ns);
    untimed_free(state, s);
  }
  set_counters(state);
}

void BM_Slack(benchmark::State& state) {
  const DepGraph& g = g_input->graph;
  for (auto _ : state) {
    std::vector<TimeNs> sl = emo::timing::slack(g, g_input->schedule, g.dur);
    benchmark::DoNotOptimize(sl.data());
    untimed_free(state, sl);
  }
  set_counters(state);
}

void BM_CriticalPath(benchmark::State& state) {
  const DepGraph& g = g_input->graph;
  for (auto _ : state) {
    emo::timing::CriticalPath p =
        emo::timing::critical_path(g_input->trace, g, g_input->schedule, g.dur);
    benchmark::DoNotOptimize(p.length_ns);
    untimed_free(state, p);
  }
  set_counters(state);
}

void BM_GpuSlack(benchmark::State& state) {
  const DepGraph& g = g_input->graph;
  for (auto _ : state) {
    std::vector<emo::timing::GpuSlack> gs =
        emo::timing::gpu_slack(g_input->trace, g, g_input->schedule, g_input->node_slack);
    benchmark::DoNotOptimize(gs.data());
    untimed_free(state, gs);
  }
  set_counters(state);
}

void BM_WhatIf(benchmark::State& state) {
  const DepGraph& g = g_input->graph;
  const emo::timing::WhatIf w = emo::timing::parse_what_if("kind=kernel:x1.5");
  for (auto _ : state) {
    std::vector<TimeNs> dur = emo::timing::apply_what_if(g_input->trace, g, w);
    emo::timing::Schedule s = emo::timing::replay(g, dur);
    benchmark::DoNotOptimize(s.makespan_ns);
    untimed_free(state, s);
    untimed_free(state, dur);
  }
  set_counters(state);
}

void BM_AnalyzeAll(benchmark::State& state) {
  const emo::graph::Window whole;
  for (auto _ : state) {
    emo::timing::Analysis a = emo::timing::analyze(g_input->trace, whole, {});
    benchmark::DoNotOptimize(a.path.length_ns);
    untimed_free(state, a);
  }
  set_counters(state);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  Input input;
  input.path = emo::bench::bench_trace_path();
  try {
    input.trace = emo::trace::load_trace(input.path);
  } catch (const emo::InputError& e) {
    std::fprintf(stderr, "emo-bench-graph: error: %s\n", e.what());
    return 2;
  }
  input.graph = emo::graph::build_graph(input.trace);
  input.schedule = emo::timing::replay(input.graph, input.graph.dur);
  input.node_slack = emo::timing::slack(input.graph, input.schedule, input.graph.dur);
  g_input = &input;
  benchmark::AddCustomContext("emo_trace", input.path);
  benchmark::AddCustomContext("emo_ops", std::to_string(input.trace.ops.size()));
  benchmark::AddCustomContext("emo_nodes", std::to_string(input.graph.nodes()));
  benchmark::AddCustomContext("emo_edges", std::to_string(input.graph.edges()));
  benchmark::AddCustomContext("emo_makespan_ns", std::to_string(input.schedule.makespan_ns));

  for (auto [name, fn] : {std::pair{"BM_BuildGraph", &BM_BuildGraph}, std::pair{"BM_Replay", &BM_Replay},
                          std::pair{"BM_Slack", &BM_Slack}, std::pair{"BM_CriticalPath", &BM_CriticalPath},
                          std::pair{"BM_GpuSlack", &BM_GpuSlack}, std::pair{"BM_WhatIf", &BM_WhatIf},
                          std::pair{"BM_AnalyzeAll", &BM_AnalyzeAll}}) {
    benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
