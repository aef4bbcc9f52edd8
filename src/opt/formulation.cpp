#include "opt/formulation.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace emo::opt::detail {

Formulation build_formulation(const Problem& p, const std::vector<std::vector<int>>& allowed,
                              double deadline_s) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Formulation f;
  const int n = static_cast<int>(p.node_count());
  f.allowed = allowed;
  f.lambda_col.assign(n, {});
  f.start_col.assign(n, -1);
  std::vector<double> fixed_t(n, 0.0);
  auto add_col = [&](double lb, double ub, double c) {
    f.col_lb.push_back(lb);
    f.col_ub.push_back(ub);
    f.obj.push_back(c);
    return f.ncols++;
  };
  for (int i = 0; i < n; ++i) {
    f.start_col[i] = add_col(0, kInf, 0);
    if (allowed[i].size() == 1) {
      fixed_t[i] = p.nodes()[i].options[allowed[i][0]].time_s;
      f.constant_j += p.effective_cost_j(i, allowed[i][0]);
    } else {
      for (int k : allowed[i]) f.lambda_col[i].push_back(add_col(0, 1, p.effective_cost_j(i, k)));
    }
  }
  f.makespan_col = add_col(0, deadline_s, p.total_idle_power_w());

  // Rows as (row, col, value) triplets, then converted to CSC.
  std::vector<std::vector<std::pair<int, double>>> cols(f.ncols);
  auto add_row = [&](double lb, double ub) {
    f.row_lb.push_back(lb);
    f.row_ub.push_back(ub);
    return f.nrows++;
  };
  auto minus_duration = [&](int row, int i) {
    for (std::size_t k = 0; k < f.lambda_col[i].size(); ++k) {
      cols[f.lambda_col[i][k]].emplace_back(row, -p.nodes()[i].options[allowed[i][k]].time_s);
    }
  };
  for (int i = 0; i < n; ++i) {
    if (f.lambda_col[i].empty()) continue;
    const int r = add_row(1, 1);
    for (int c : f.lambda_col[i]) cols[c].emplace_back(r, 1.0);
  }
  const auto& sb = p.succ_begin();
  const auto& sl = p.succ_list();
  for (int i = 0; i < n; ++i) {
    for (int e = sb[i]; e < sb[i + 1]; ++e) {
      const int j = sl[e];
      const int r = add_row(fixed_t[i], kInf);
      cols[f.start_col[j]].emplace_back(r, 1.0);
      cols[f.start_col[i]].emplace_back(r, -1.0);
      minus_duration(r, i);
    }
    if (sb[i] == sb[i + 1]) {
      const int r = add_row(fixed_t[i], kInf);
      cols[f.makespan_col].emplace_back(r, 1.0);
      cols[f.start_col[i]].emplace_back(r, -1.0);
      minus_duration(r, i);
    }
  }
  f.col_start.assign(1, 0);
  for (auto& c : cols) {
    std::sort(c.begin(), c.end());
    for (const auto& [r, v] : c) {
      f.row_index.push_back(r);
      f.value.push_back(v);
    }
    f.col_start.push_back(static_cast<int>(f.row_index.size()));
  }
  return f;
}

std::vector<std::vector<int>> convex_hull_options(const Problem& p,
                                                  const std::vector<std::vector<int>>& pareto) {
  std::vector<std::vector<int>> hull(pareto.size());
  for (std::size_t i = 0; i < pareto.size(); ++i) {
    const int ii = static_cast<int>(i);
    auto& h = hull[i];
    for (int k : pareto[i]) {
      const double tk = p.nodes()[i].options[k].time_s, ck = p.effective_cost_j(ii, k);
      // Pop while the last hull point lies on or above the segment from the one before it to k.
      while (h.size() >= 2) {
        const int a = h[h.size() - 2], b = h.back();
        const double ta = p.nodes()[i].options[a].time_s, ca = p.effective_cost_j(ii, a);
        const double tb = p.nodes()[i].options[b].time_s, cb = p.effective_cost_j(ii, b);
        const double cross = (tb - ta) * (ck - ca) - (cb - ca) * (tk - ta);
        if (cross <= 0) {
          h.pop_back();
        } else {
          break;
        }
      }
      h.push_back(k);
    }
  }
  return hull;
}

}  // namespace emo::opt::detail
