// The exact reference: the problem of problem.h as a mixed-integer linear program, solved with
// COIN-OR CBC (Debian coinor-libcbc-dev). Meant for small instances (tens to a few hundred
// nodes); CBC's time grows quickly with the number of nodes and options.
//
// Formulation (opt/formulation.h): one binary λ_ik per node and Pareto option, one start S_i per
// node, the makespan C <= deadline;
//   min Σ c_ik λ_ik + P_tot·C  s.t.  Σ_k λ_ik = 1,  S_j >= S_i + Σ_k t_ik λ_ik (edges),
//                                    C >= S_i + Σ_k t_ik λ_ik (sinks).
// Only Pareto options in (time, effective cost) are offered: a dominated option can always be
// swapped for its dominator without raising energy or makespan, so the optimum is unchanged.
#pragma once

#include <optional>

#include "opt/problem.h"

namespace emo::opt {

struct MilpOptions {
  double time_limit_s = 60;     ///< CBC wall-clock limit
  double relative_gap = 1e-6;   ///< stop when (best − bound)/best is below this
};

struct MilpResult {
  Assignment choice;         ///< best assignment found
  double makespan_s = 0;     ///< its makespan (recomputed, not CBC's C)
  double energy_j = 0;       ///< its energy (recomputed with problem.h's formula)
  double lower_bound_j = 0;  ///< CBC's best bound on the optimum energy
  bool proven_optimal = false;
  double seconds = 0;        ///< CBC wall time
};

/// Minimum energy with makespan <= deadline_s. Returns nullopt when CBC proves the deadline
/// infeasible (deadline below the all-fastest makespan) or finds no solution within its limit.
std::optional<MilpResult> solve_milp(const Problem& p, double deadline_s, const MilpOptions& options = {});

}  // namespace emo::opt
