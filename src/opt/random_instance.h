// Random problem instances for tests and benchmarks (solver gap against the MILP), reproducible
// from a seed (std::mt19937_64 with hand-rolled draws, so equal on every platform).
#pragma once

#include <cstdint>

#include "opt/problem.h"

namespace emo::opt {

struct RandomDagSpec {
  int nodes = 30;             ///< total nodes, >= 2
  int gpus = 3;               ///< nodes are spread over this many GPUs
  int clocks = 6;             ///< options per optimisable node (clocks 1410 MHz down in steps)
  double edge_prob = 0.15;    ///< each forward pair (i<j) gets an edge with this probability
  double fixed_share = 0.15;  ///< share of nodes with one fixed option (host work, no GPU)
  double idle_power_w = 80;   ///< per GPU
};

/// A random DAG: nodes in a random order, edges only forward (so acyclic), each GPU's nodes also
/// chained in that order (a stream). Optimisable nodes get `clocks` options from the standard
/// model t(f) = t_mem + t_comp·f_max/f, P(f) = P_s + P_d·(f/f_max)^γ with random t_mem, t_comp
/// (0.5–20 ms), P_s (50–90 W), P_d (100–300 W), γ (2–3).
Problem random_dag(std::uint64_t seed, const RandomDagSpec& spec);

}  // namespace emo::opt
