// The linear program shared by the exact MILP (milp.cpp) and the fast solver's relaxation
// (solver.cpp). Internal to emo_opt.
//
// Variables: λ_ik ∈ [0,1] per node i and allowed option k (binary in the MILP), S_i >= 0 per
// node (start, s), C (makespan, s) with C <= deadline.
//   minimise   Σ_ik c_ik λ_ik + P_tot·C                       (c_ik: Problem::effective_cost_j)
//   subject to Σ_k λ_ik = 1                                    for every node with choices
//              S_j − S_i − Σ_k t_ik λ_ik >= t_i^fixed          for every edge i→j
//              C − S_i − Σ_k t_ik λ_ik >= t_i^fixed            for every node without successors
// Nodes whose allowed set has a single option are constants (t_i^fixed, c_i^fixed).
#pragma once

#include <vector>

#include "opt/problem.h"

namespace emo::opt::detail {

struct Formulation {
  int ncols = 0, nrows = 0;
  std::vector<double> col_lb, col_ub, obj, row_lb, row_ub;
  std::vector<int> col_start, row_index;  // CSC matrix
  std::vector<double> value;
  std::vector<std::vector<int>> lambda_col;  ///< per node: column of each allowed option (empty: fixed)
  std::vector<std::vector<int>> allowed;     ///< per node: the allowed option indices
  std::vector<int> start_col;                ///< per node
  int makespan_col = -1;
  double constant_j = 0;  ///< Σ effective cost of single-option nodes
};

/// Builds the LP for `allowed[i]` (option indices of node i, non-empty) and the deadline.
Formulation build_formulation(const Problem& p, const std::vector<std::vector<int>>& allowed,
                              double deadline_s);

/// Per node, the allowed options on the lower convex hull of (time, effective cost) of `pareto`
/// (sorted by ascending time): the only ones an LP optimum uses.
std::vector<std::vector<int>> convex_hull_options(const Problem& p,
                                                  const std::vector<std::vector<int>>& pareto);

}  // namespace emo::opt::detail
