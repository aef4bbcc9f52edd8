#include "opt/milp.h"

#include <chrono>

#include <coin/Cbc_C_Interface.h>

#include "opt/formulation.h"

namespace emo::opt {

std::optional<MilpResult> solve_milp(const Problem& p, double deadline_s, const MilpOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const detail::Formulation f = detail::build_formulation(p, pareto_options(p), deadline_s);
  Cbc_Model* model = Cbc_newModel();
  Cbc_loadProblem(model, f.ncols, f.nrows, f.col_start.data(), f.row_index.data(), f.value.data(),
                  f.col_lb.data(), f.col_ub.data(), f.obj.data(), f.row_lb.data(), f.row_ub.data());
  for (const auto& cols : f.lambda_col) {
    for (int c : cols) Cbc_setInteger(model, c);
  }
  Cbc_setLogLevel(model, 0);
  Cbc_setMaximumSeconds(model, options.time_limit_s);
  Cbc_setAllowableFractionGap(model, options.relative_gap);
  Cbc_setAllowableGap(model, 1e-7);
  Cbc_setParameter(model, "threads", "1");
  Cbc_solve(model);
  std::optional<MilpResult> out;
  const double* x = Cbc_getColSolution(model);
  if (x != nullptr && Cbc_numberSavedSolutions(model) > 0 && !Cbc_isProvenInfeasible(model)) {
    MilpResult r;
    r.choice.assign(p.node_count(), 0);
    for (std::size_t i = 0; i < p.node_count(); ++i) {
      if (f.lambda_col[i].empty()) {
        r.choice[i] = f.allowed[i][0];
        continue;
      }
      double best = -1;
      for (std::size_t k = 0; k < f.lambda_col[i].size(); ++k) {
        if (x[f.lambda_col[i][k]] > best) {
          best = x[f.lambda_col[i][k]];
          r.choice[i] = f.allowed[i][k];
        }
      }
    }
    const Schedule s = evaluate(p, r.choice);
    r.makespan_s = s.makespan_s;
    r.energy_j = s.energy_j;
    r.lower_bound_j = Cbc_getBestPossibleObjValue(model) + f.constant_j;
    r.proven_optimal = Cbc_isProvenOptimal(model) != 0;
    out = std::move(r);
  }
  Cbc_deleteModel(model);
  if (out) out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace emo::opt
