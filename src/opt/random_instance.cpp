#include "opt/random_instance.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace emo::opt {
namespace {

// Uniform double in [lo, hi) from the top 53 bits: identical across standard libraries.
double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

Problem random_dag(std::uint64_t seed, const RandomDagSpec& spec) {
  if (spec.nodes < 2 || spec.gpus < 1 || spec.clocks < 1) throw std::invalid_argument("random_dag: bad spec");
  std::mt19937_64 rng(seed);
  Problem p;
  for (int g = 0; g < spec.gpus; ++g) p.add_gpu("gpu " + std::to_string(g), spec.idle_power_w);
  std::vector<int> last_on_gpu(spec.gpus, -1);
  constexpr double kFmax = 1410;
  for (int i = 0; i < spec.nodes; ++i) {
    if (uniform(rng, 0, 1) < spec.fixed_share) {
      p.add_fixed("host " + std::to_string(i), -1, uniform(rng, 0.5e-3, 10e-3), 0);
      continue;
    }
    const int g = static_cast<int>(rng() % static_cast<std::uint64_t>(spec.gpus));
    const double t_mem = uniform(rng, 0.5e-3, 20e-3), t_comp = uniform(rng, 0.5e-3, 20e-3);
    const double ps = uniform(rng, 50, 90), pd = uniform(rng, 100, 300), gamma = uniform(rng, 2, 3);
    std::vector<Option> opts;
    for (int k = 0; k < spec.clocks; ++k) {
      const double f = kFmax - 60.0 * k;
      const double t = t_mem + t_comp * kFmax / f;
      opts.push_back({f, t, (ps + pd * std::pow(f / kFmax, gamma)) * t});
    }
    const int id = p.add_node("kernel " + std::to_string(i), g, std::move(opts));
    if (last_on_gpu[g] >= 0) p.add_edge(last_on_gpu[g], id);
    last_on_gpu[g] = id;
  }
  for (int i = 0; i < spec.nodes; ++i) {
    for (int j = i + 1; j < spec.nodes; ++j) {
      if (uniform(rng, 0, 1) < spec.edge_prob) p.add_edge(i, j);
    }
  }
  return p;
}

}  // namespace emo::opt
