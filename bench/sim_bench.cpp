// emo-bench-sim: how fast the simulated device runs one rank's graph — the cost inside every
// evaluation run of `emo optimize` and, the decomposed job solve, of every rank's static clocks
// (docs/simulated-device.md, docs/multi-rank.md "How far it scales").
//
// Input: $EMO_BENCH_TRACE, else kineto/hta_training_16rank_rank0.json.gz from the data directory
// ($EMO_DATA_DIR, else ../shared/data beside the checkout): the rank the generated jobs are built
// on (docs/synthetic-jobs.md). Loaded and its graph built once, untimed; simulated A100-SXM4-80GB.
//
//   BM_StaticRun_PerNode    the reference: each GPU node's duration and power at one clock from its
//                           own ground truth, SimDevice::true_time_ns / true_power_w per node (two
//                           pow per node: how runtime::StaticSimRuns and run_on_sim did it before
//                           stop 40)
//   BM_StaticRun            runtime::StaticSimRuns::run: the same, each distinct truth (op kind and
//                           name) evaluated once per clock
//   BM_RunOnSim             runtime::run_on_sim at one clock, no requests (one replay)
//
// Before any benchmark runs, the two static runs are compared node by node at every clock the GPU
// supports; a difference exits with status 1 (the benchmark would compare different work). Times
// are process CPU time; counters: nodes, and nodes/s. Ratios: BM_StaticRun_PerNode / BM_StaticRun
// in the same run (docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "graph/dep_graph.h"
#include "model/gpu_catalog.h"
#include "runtime/sim_device.h"
#include "runtime/sim_run.h"
#include "trace/load.h"
#include "trace/trace.h"

#ifndef EMO_DEFAULT_DATA_DIR
#define EMO_DEFAULT_DATA_DIR "../shared/data"
#endif

namespace {

using emo::TimeNs;

std::string input_path() {
  if (const char* t = std::getenv("EMO_BENCH_TRACE"); t != nullptr && *t != '\0') return t;
  std::filesystem::path dir = EMO_DEFAULT_DATA_DIR;
  if (const char* env = std::getenv("EMO_DATA_DIR"); env != nullptr && *env != '\0') dir = env;
  return (dir / "kineto" / "hta_training_16rank_rank0.json.gz").string();
}

struct Input {
  emo::trace::Trace trace;
  emo::graph::DepGraph graph;
  emo::runtime::SimDevice device;
  std::vector<double> clocks_mhz;
};

Input* g_input = nullptr;

/// The reference: every GPU node's truth looked up per node (kernels cached by name, as before),
/// its noise drawn as runtime::run_on_sim draws it, its duration and power above idle per node.
class PerNodeStaticRuns {
 public:
  explicit PerNodeStaticRuns(const Input& in) : in_(in), truth_(in.graph.nodes()), noise_(in.graph.nodes(), 1.0) {
    const auto& g = in.graph;
    std::unordered_map<emo::StringId, emo::runtime::OpTruth> kernel_truth;
    std::mt19937_64 rng(emo::runtime::SimRunOptions{}.seed);
    std::normal_distribution<double> z(0.0, 1.0);
    const double sd = in.device.options().ground_truth.noise.time_sd;
    for (std::size_t i = 0; i < g.nodes(); ++i) {
      if (!g.gpu[i]) continue;
      const auto row = g.op[i];
      const auto name = in.trace.ops.name[row];
      const bool kernel = in.trace.ops.kind[row] == emo::trace::OpKind::kKernel;
      if (auto it = kernel ? kernel_truth.find(name) : kernel_truth.end(); it != kernel_truth.end()) {
        truth_[i] = it->second;
      } else {
        truth_[i] = in.device.truth({std::string(in.trace.strings.view(name)), in.trace.ops.kind[row], 0, 0, g.dur[i]});
        if (kernel) kernel_truth.emplace(name, truth_[i]);
      }
      noise_[i] = std::exp(sd * z(rng));
    }
  }
  double run(double clock_mhz, std::vector<TimeNs>& dur) const {
    const auto& g = in_.graph;
    dur.assign(g.dur.begin(), g.dur.end());
    double above_idle_j = 0;
    for (std::size_t i = 0; i < g.nodes(); ++i) {
      if (!g.gpu[i]) continue;
      if (g.dur[i] > 0)
        dur[i] = std::max<TimeNs>(1, std::llround(in_.device.true_time_ns(truth_[i], g.dur[i], clock_mhz) * noise_[i]));
      above_idle_j += (in_.device.true_power_w(truth_[i], clock_mhz) - in_.device.gpu().idle_power_w) *
                      static_cast<double>(dur[i]) * 1e-9;
    }
    return above_idle_j;
  }

 private:
  const Input& in_;
  std::vector<emo::runtime::OpTruth> truth_;
  std::vector<double> noise_;
};

void counters(benchmark::State& state) {
  const auto nodes = static_cast<double>(g_input->graph.nodes());
  state.counters["nodes"] = nodes;
  state.counters["nodes/s"] = benchmark::Counter(nodes, benchmark::Counter::kIsIterationInvariantRate);
}

/// One static run per iteration of `runs` (either kind), the clocks taken in turn.
template <typename Runs>
void time_static_runs(benchmark::State& state, const Runs& runs) {
  std::vector<TimeNs> dur;
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(runs.run(g_input->clocks_mhz[k++ % g_input->clocks_mhz.size()], dur));
    benchmark::ClobberMemory();
  }
  counters(state);
}

void BM_StaticRun_PerNode(benchmark::State& state) { time_static_runs(state, PerNodeStaticRuns(*g_input)); }

void BM_StaticRun(benchmark::State& state) {
  time_static_runs(state, emo::runtime::StaticSimRuns(g_input->trace, g_input->graph, g_input->device));
}

void BM_RunOnSim(benchmark::State& state) {
  const auto& g = g_input->graph;
  std::size_t k = 0;
  for (auto _ : state) {
    const std::vector<double> clock(g.nodes(), g_input->clocks_mhz[k++ % g_input->clocks_mhz.size()]);
    benchmark::DoNotOptimize(emo::runtime::run_on_sim(g_input->trace, g, g_input->device, clock).energy_j);
  }
  counters(state);
}

BENCHMARK(BM_StaticRun_PerNode)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StaticRun)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RunOnSim)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

/// Exits with status 1 unless the reference and StaticSimRuns agree on every node at every clock.
void check_same_work(const Input& in) {
  const PerNodeStaticRuns reference(in);
  const emo::runtime::StaticSimRuns runs(in.trace, in.graph, in.device);
  std::vector<TimeNs> a, b;
  for (const double f : in.clocks_mhz) {
    const double ea = reference.run(f, a), eb = runs.run(f, b);
    if (a != b || ea != eb) {
      std::fprintf(stderr, "emo-bench-sim: the reference and StaticSimRuns differ at %.0f MHz\n", f);
      std::exit(1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = input_path();
  try {
    emo::trace::Trace t = emo::trace::load_trace(path);
    emo::graph::DepGraph g = emo::graph::build_graph(t);
    const auto& gpu = emo::model::GpuCatalog::builtin().at("A100-SXM4-80GB");
    static Input input{std::move(t), std::move(g), emo::runtime::SimDevice(gpu), gpu.sm_clocks_mhz};
    g_input = &input;
  } catch (const emo::InputError& e) {
    std::fprintf(stderr, "emo-bench-sim: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "emo-bench-sim: %s: %s\n", path.c_str(), e.what());
    return 2;
  }
  check_same_work(*g_input);
  std::printf("input: %s, %zu graph nodes, %zu clocks\n", path.c_str(), g_input->graph.nodes(), g_input->clocks_mhz.size());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
