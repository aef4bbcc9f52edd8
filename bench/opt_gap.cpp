// emo-bench-opt-gap: the fast solver's optimality gap against the exact MILP (CBC) on random
// DAGs and small 1F1B pipelines (<= 200 nodes). Prints a markdown table and the max/median gap.
//   emo-bench-opt-gap [DATA_DIR] [--quick]
// DATA_DIR (default: EMO_DATA_DIR or ../shared/data) supplies the Perseus stage profile for the
// pipeline instances (skipped when absent). --quick: fewer, smaller instances.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "model/measurements.h"
#include "opt/milp.h"
#include "opt/pipeline.h"
#include "opt/random_instance.h"
#include "opt/solver.h"

using namespace emo;

namespace {

struct Instance {
  std::string name;
  opt::Problem problem;
  double rel_deadline;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Keeps every `step`-th measured clock from the top (1410, 1335, ... for step 5).
model::MeasurementSet subsample(model::MeasurementSet set, int step) {
  for (auto& op : set.ops) {
    std::vector<model::ClockPoint> kept;
    for (int k = static_cast<int>(op.points.size()) - 1, j = 0; k >= 0; --k, ++j) {
      if (j % step == 0) kept.push_back(op.points[k]);
    }
    std::reverse(kept.begin(), kept.end());
    op.points = std::move(kept);
  }
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = std::getenv("EMO_DATA_DIR") ? std::getenv("EMO_DATA_DIR") : EMO_DEFAULT_DATA_DIR;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") quick = true; else data = argv[i];
  }
  const double rels[] = {0.0, 0.03, 0.08, 0.15};
  std::vector<Instance> inst;
  const std::vector<int> sizes = quick ? std::vector<int>{20, 30, 40} : std::vector<int>{20, 40, 60, 80, 100, 120, 150, 200};
  int r = 0;
  for (int n : sizes) {
    for (int rep = 0; rep < 2; ++rep, ++r) {
      opt::RandomDagSpec spec;
      spec.nodes = n;
      spec.gpus = 2 + (r % 3);
      spec.clocks = 5 + (r % 4);
      spec.edge_prob = std::min(0.3, 4.0 / n);
      inst.push_back({"random n" + std::to_string(n) + " s" + std::to_string(r), opt::random_dag(1000 + r, spec),
                      rels[r % 4]});
    }
  }
  const std::string profile = data + "/perseus/stage_profile/gpt3-175b+a100_sxm_bf16.csv";
  if (std::filesystem::exists(profile)) {
    const auto full = model::load_measurements(profile);
    const auto sub = subsample(full, 5);  // 8 clocks: 1410, 1335, ..., 885
    std::vector<std::pair<int, int>> shapes = {{4, 4}, {4, 8}, {8, 4}, {8, 6}};
    if (quick) shapes = {{4, 3}, {4, 4}};
    for (auto [s, m] : shapes) {
      model::MeasurementSet set = sub;
      std::erase_if(set.ops, [&](const model::OpMeasurements& op) {
        return std::atoi(op.op.c_str() + 6) >= s;  // "stage N ..."
      });
      for (double rel : {0.01, 0.05}) {
        inst.push_back({"1F1B " + std::to_string(s) + "x" + std::to_string(m), opt::build_pipeline(set, {s, m, 83.64}).problem, rel});
      }
    }
  } else {
    std::fprintf(stderr, "note: %s missing, pipeline instances skipped\n", profile.c_str());
  }

  std::printf("| instance | nodes | options | T/T_fast | MILP energy (J) | proven | fast energy (J) | gap %% | MILP s | fast s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<double> gaps;
  for (auto& in : inst) {
    const opt::Problem& p = in.problem;
    std::size_t opts = 0;
    for (const auto& nd : p.nodes()) opts = std::max(opts, nd.options.size());
    auto t0 = std::chrono::steady_clock::now();
    opt::FastSolver fast(p);
    const double deadline = fast.fastest_makespan_s() * (1 + in.rel_deadline);
    const auto fs = fast.solve(deadline);
    const double fast_s = seconds_since(t0);
    opt::MilpOptions mo;
    mo.time_limit_s = quick ? 20 : 120;
    const auto ms = opt::solve_milp(p, deadline, mo);
    if (!fs || !ms) {
      std::printf("| %s | %zu | %zu | %.2f | no solution | | | | | |\n", in.name.c_str(), p.node_count(), opts, 1 + in.rel_deadline);
      continue;
    }
    const double gap = 100 * (fs->energy_j / ms->energy_j - 1);
    gaps.push_back(gap);
    std::printf("| %s | %zu | %zu | %.2f | %.3f | %s | %.3f | %.3f | %.2f | %.3f |\n", in.name.c_str(), p.node_count(), opts,
                1 + in.rel_deadline, ms->energy_j, ms->proven_optimal ? "yes" : "no", fs->energy_j, gap, ms->seconds, fast_s);
    std::fflush(stdout);
  }
  if (gaps.empty()) return 1;
  std::vector<double> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  std::printf("\n%zu instances: gap (fast vs MILP) max %.3f %%, median %.3f %%, min %.3f %% (target <= 0.5 %%)\n",
              gaps.size(), sorted.back(), median, sorted.front());
  return 0;
}
