#include "opt/solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <utility>
#include <stdexcept>

#include <coin/ClpSimplex.hpp>

#include "opt/formulation.h"
#include "opt/pareto.h"

namespace emo::opt {
namespace {

constexpr double kTimeEps = 1e-9;  // 1 ns: feasibility tolerance on the deadline

// Forward/backward timing of an assignment: earliest starts, latest finishes for the current
// makespan, and the makespan itself.
struct Timing {
  std::vector<double> d, es, lf;
  double makespan = 0;
  void compute(const Problem& p, const Assignment& a) {
    d = durations(p, a);
    makespan = earliest_starts(p, d, es);
    latest_finishes(p, d, makespan, lf);
  }
  double slack(int i) const { return lf[i] - es[i] - d[i]; }
};

}  // namespace

/// Timing state of an assignment: es = earliest start, tail = longest path after the node's
/// finish; the slack of node i is makespan − tail_i − es_i − d_i. retime() recomputes all of it in
/// O(V + E); slow_down() updates it incrementally (only descendants' es and ancestors' tail can
/// grow), visiting nodes in topological rank order.
class PathTimes {
 public:
  PathTimes(const Problem& p, const std::vector<int>& rank)
      : tail(p.node_count(), 0.0), p_(p), rank_(rank), queued_(p.node_count(), 0) {}
  /// Recomputes every earliest start and tail for durations `dur` (s, per node).
  void retime(std::vector<double> dur) {
    d = std::move(dur);
    makespan = earliest_starts(p_, d, es);
    const auto& order = p_.topo_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) tail[*it] = tail_of(*it);
  }
  /// Node i's duration grows to `new_d` (s): updates the makespan, descendants' starts and
  /// ancestors' tails.
  void slow_down(int i, double new_d);
  double slack(int i) const { return makespan - tail[i] - es[i] - d[i]; }

  std::vector<double> d, es, tail;
  double makespan = 0;

 private:
  double tail_of(int u) const {
    double t = 0;
    for (int e = p_.succ_begin()[u]; e < p_.succ_begin()[u + 1]; ++e) {
      const int v = p_.succ_list()[e];
      t = std::max(t, d[v] + tail[v]);
    }
    return t;
  }
  double es_of(int u) const {
    double t = 0;
    for (int e = p_.pred_begin()[u]; e < p_.pred_begin()[u + 1]; ++e) {
      const int v = p_.pred_list()[e];
      t = std::max(t, es[v] + d[v]);
    }
    return t;
  }
  const Problem& p_;
  const std::vector<int>& rank_;
  std::vector<char> queued_;
};

void PathTimes::slow_down(int i, double new_d) {
  makespan = std::max(makespan, es[i] + new_d + tail[i]);
  d[i] = new_d;
  const auto& sb = p_.succ_begin();
  const auto& sl = p_.succ_list();
  const auto& pb = p_.pred_begin();
  const auto& pl = p_.pred_list();
  // Forward: descendants' earliest starts, in topological order (min-heap on rank).
  std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>> fwd;
  for (int e = sb[i]; e < sb[i + 1]; ++e) {
    if (!queued_[sl[e]]) queued_[sl[e]] = 1, fwd.push({rank_[sl[e]], sl[e]});
  }
  while (!fwd.empty()) {
    const int u = fwd.top().second;
    fwd.pop();
    queued_[u] = 0;
    const double v = es_of(u);
    if (v <= es[u]) continue;
    es[u] = v;
    for (int e = sb[u]; e < sb[u + 1]; ++e) {
      if (!queued_[sl[e]]) queued_[sl[e]] = 1, fwd.push({rank_[sl[e]], sl[e]});
    }
  }
  // Backward: ancestors' tails, in reverse topological order (max-heap on rank).
  std::priority_queue<std::pair<int, int>> bwd;
  for (int e = pb[i]; e < pb[i + 1]; ++e) {
    if (!queued_[pl[e]]) queued_[pl[e]] = 1, bwd.push({rank_[pl[e]], pl[e]});
  }
  while (!bwd.empty()) {
    const int u = bwd.top().second;
    bwd.pop();
    queued_[u] = 0;
    const double v = tail_of(u);
    if (v <= tail[u]) continue;
    tail[u] = v;
    for (int e = pb[u]; e < pb[u + 1]; ++e) {
      if (!queued_[pl[e]]) queued_[pl[e]] = 1, bwd.push({rank_[pl[e]], pl[e]});
    }
  }
}

struct FastSolver::Lp {
  detail::Formulation f;
  ClpSimplex model;
  bool warm = false;
};

FastSolver::FastSolver(const Problem& p, FastSolverOptions options)
    : p_(p), options_(options), pareto_(pareto_options(p)), lp_(std::make_unique<Lp>()) {
  Assignment fast(p.node_count()), cheap(p.node_count());
  time_.resize(p.node_count());
  cost_.resize(p.node_count());
  for (std::size_t i = 0; i < p.node_count(); ++i) {
    for (int k : pareto_[i]) {
      time_[i].push_back(p.nodes()[i].options[k].time_s);
      cost_[i].push_back(p.effective_cost_j(static_cast<int>(i), k));
    }
    fast[i] = pareto_[i].front();
    cheap[i] = pareto_[i].back();
  }
  rank_.assign(p.node_count(), 0);
  for (std::size_t k = 0; k < p.topo_order().size(); ++k) rank_[p.topo_order()[k]] = static_cast<int>(k);
  t_fast_ = evaluate(p, fast).makespan_s;
  t_cheap_ = evaluate(p, cheap).makespan_s;
  lp_->f = detail::build_formulation(p, detail::convex_hull_options(p, pareto_), t_cheap_);
  const auto& f = lp_->f;
  lp_->model.setLogLevel(0);
  lp_->model.loadProblem(f.ncols, f.nrows, f.col_start.data(), f.row_index.data(), f.value.data(),
                         f.col_lb.data(), f.col_ub.data(), f.obj.data(), f.row_lb.data(), f.row_ub.data());
}

FastSolver::~FastSolver() = default;

FastSolver::LpPoint FastSolver::solve_lp(double deadline_s) {
  const auto& f = lp_->f;
  ClpSimplex& m = lp_->model;
  m.setColumnUpper(f.makespan_col, deadline_s);
  // Primal simplex from the previous basis: along an ascending sweep the previous optimum stays
  // feasible (only the bound on C moves up), so few pivots are needed.
  m.primal(0, lp_->warm ? 1 : 0);
  LpPoint pt;
  pt.deadline_s = deadline_s;
  if (m.status() != 0) {
    lp_->warm = false;
    return pt;  // numerical trouble: no bound, caller falls back to the fastest assignment
  }
  lp_->warm = true;
  pt.ok = true;
  pt.bound_j = m.objectiveValue() + f.constant_j;
  pt.slope_j_per_s = m.dualColumnSolution()[f.makespan_col];
  const double* x = m.primalColumnSolution();
  const int n = static_cast<int>(p_.node_count());
  pt.duration_s.assign(n, 0.0);
  for (int i = 0; i < n; ++i) {
    if (f.lambda_col[i].empty()) {
      pt.duration_s[i] = p_.nodes()[i].options[f.allowed[i][0]].time_s;
      continue;
    }
    for (std::size_t k = 0; k < f.lambda_col[i].size(); ++k) {
      pt.duration_s[i] += x[f.lambda_col[i][k]] * p_.nodes()[i].options[f.allowed[i][k]].time_s;
    }
  }
  return pt;
}

Solution FastSolver::round_and_improve(double deadline_s, const std::vector<double>* duration_s,
                                       double bound_j, const std::vector<double>& thresholds,
                                       bool exchanges) const {
  const int n = static_cast<int>(p_.node_count());
  const double deadline = std::max(deadline_s, t_fast_);
  // Threshold roundings of the relaxed durations, each repaired and improved; the best wins.
  // A node whose relaxed duration d lies between Pareto times t_q <= d < t_{q+1} rounds up to
  // q+1 when (d − t_q)/(t_{q+1} − t_q) > θ. θ = 1 ("down") is always feasible; smaller θ may
  // overshoot the deadline, which improve() repairs.
  Solution best;
  best.energy_j = std::numeric_limits<double>::infinity();
  const std::vector<double> thetas = duration_s == nullptr ? std::vector<double>{1.0} : thresholds;
  for (double theta : thetas) {
    Assignment a(n);
    for (int i = 0; i < n; ++i) {
      int q = 0;
      if (duration_s != nullptr) {
        const double d = (*duration_s)[i];
        const auto& t = time_[i];
        while (q + 1 < static_cast<int>(t.size()) && t[q + 1] <= d + kTimeEps) ++q;
        if (q + 1 < static_cast<int>(t.size()) && theta < 1 && (d - t[q]) / (t[q + 1] - t[q]) > theta) ++q;
      }
      a[i] = pareto_[i][q];
    }
    improve(a, deadline, exchanges);
    const Schedule sched = evaluate(p_, a);
    if (sched.makespan_s <= deadline + kTimeEps && sched.energy_j < best.energy_j) {
      best.choice = std::move(a);
      best.makespan_s = sched.makespan_s;
      best.energy_j = sched.energy_j;
    }
  }
  if (best.choice.empty()) {
    // No rounding fitted (the LP's own tolerance can exceed kTimeEps on long makespans, and the
    // repair may find no critical node to speed up): the greedy from every node at its fastest
    // option, which fits any deadline >= t_fast.
    Assignment a(n);
    for (int i = 0; i < n; ++i) a[i] = pareto_[i].front();
    improve(a, deadline, exchanges);
    const Schedule sched = evaluate(p_, a);
    best.choice = std::move(a);
    best.makespan_s = sched.makespan_s;
    best.energy_j = sched.energy_j;
  }
  best.deadline_s = deadline_s;
  best.lower_bound_j = bound_j;
  return best;
}

std::optional<Solution> FastSolver::solve(double deadline_s) {
  if (deadline_s < t_fast_ - kTimeEps) return std::nullopt;
  const LpPoint lp = solve_lp(std::max(deadline_s, t_fast_));
  return round_and_improve(deadline_s, lp.ok ? &lp.duration_s : nullptr,
                           lp.ok ? lp.bound_j : -std::numeric_limits<double>::infinity(),
                           options_.rounding_thresholds, options_.exchanges);
}

void FastSolver::improve(Assignment& a, double deadline_s, bool exchanges) const {
  const int n = static_cast<int>(p_.node_count());
  const double p_tot = p_.total_idle_power_w();
  // Work on positions in each node's Pareto list; time_[i][q], cost_[i][q] are tabulated.
  std::vector<int> pos(n);
  for (int i = 0; i < n; ++i) {
    const auto& l = pareto_[i];
    const auto it = std::find(l.begin(), l.end(), a[i]);
    pos[i] = it == l.end() ? 0 : static_cast<int>(it - l.begin());
  }
  PathTimes pt(p_, rank_);
  auto durations = [&]() {
    std::vector<double> d(n);
    for (int i = 0; i < n; ++i) d[i] = time_[i][pos[i]];
    return d;
  };
  auto total_energy = [&]() {
    double e = p_tot * pt.makespan;
    for (int i = 0; i < n; ++i) e += cost_[i][pos[i]];
    return e;
  };
  pt.retime(durations());
  // Repair: should rounding overshoot the deadline numerically, speed up critical nodes.
  while (pt.makespan > deadline_s + kTimeEps) {
    int best = -1;
    double best_rate = std::numeric_limits<double>::infinity();
    for (int i = 0; i < n; ++i) {
      if (pos[i] == 0 || pt.slack(i) > kTimeEps) continue;
      const double dt = pt.d[i] - time_[i][pos[i] - 1];
      const double rate = (cost_[i][pos[i] - 1] - cost_[i][pos[i]]) / std::max(dt, 1e-15);
      if (rate < best_rate) best_rate = rate, best = i;
    }
    if (best < 0) break;
    --pos[best];
    pt.retime(durations());
  }
  int moves = 0;
  auto greedy = [&]() { moves = greedy_moves(pt, pos, deadline_s, moves); };
  greedy();
  // Pair exchanges (one round): speed a critical node up by one Pareto step, re-run the greedy,
  // keep the result if the total energy fell.
  if (exchanges) {
    double energy = total_energy();
    std::vector<int> critical;
    for (int j = 0; j < n; ++j) {
      if (pos[j] > 0 && pt.slack(j) <= kTimeEps) critical.push_back(j);
    }
    for (int j : critical) {
      if (moves >= options_.max_moves) break;
      if (pos[j] == 0) continue;
      const std::vector<int> saved = pos;
      --pos[j];
      pt.retime(durations());
      greedy();
      const double e = total_energy();
      if (e < energy - 1e-9 && pt.makespan <= deadline_s + kTimeEps) {
        energy = e;
      } else {
        pos = saved;
        pt.retime(durations());
      }
      ++moves;
    }
  }
  for (int i = 0; i < n; ++i) a[i] = pareto_[i][pos[i]];
}

int FastSolver::greedy_moves(PathTimes& pt, std::vector<int>& pos, double deadline_s, int moves) const {
  // The single slower move with the largest exact saving, until none saves energy. Slowing node i
  // by Δt raises the makespan by max(0, Δt − slack_i), which costs P_tot per s.
  const int n = static_cast<int>(p_.node_count());
  const double p_tot = p_.total_idle_power_w();
  while (moves < options_.max_moves) {
    double best_gain = 1e-9;
    int node = -1, to = -1;
    for (int i = 0; i < n; ++i) {
      const int q0 = pos[i];
      const auto& t = time_[i];
      const auto& c = cost_[i];
      const double sl = pt.slack(i);
      for (int q = q0 + 1; q < static_cast<int>(t.size()); ++q) {
        const double inc = std::max(0.0, t[q] - pt.d[i] - sl);
        if (pt.makespan + inc > deadline_s + kTimeEps) break;
        const double gain = c[q0] - c[q] - p_tot * inc;
        if (gain > best_gain) best_gain = gain, node = i, to = q;
      }
    }
    if (node < 0) break;
    pos[node] = to;
    pt.slow_down(node, time_[node][to]);
    ++moves;
  }
  return moves;
}

std::vector<Solution> FastSolver::frontier(int points) {
  if (points < 2) throw std::invalid_argument("frontier: need at least 2 points");
  // The energy minimum first (deadline = the all-cheapest makespan, i.e. unconstrained): its
  // makespan ends the useful range, often well before cheapest_makespan_s().
  std::vector<Solution> out;
  std::optional<Solution> emin = solve(t_cheap_);
  const double t_end = emin ? emin->makespan_s : t_cheap_;
  // LP anchors over [t_fast, t_end]; between two anchors the LP solution is their convex
  // combination (feasible for the interpolated deadline, since every constraint is linear),
  // and the LP value is bounded below by the tangents at both anchors (it is convex in T).
  const int anchors = std::clamp(options_.frontier_anchors, 2, points);
  std::vector<LpPoint> lp;
  for (int a = 0; a < anchors; ++a) lp.push_back(solve_lp(t_fast_ + (t_end - t_fast_) * a / (anchors - 1)));
  std::vector<double> mixed(p_.node_count());
  for (int k = 0; k + 1 < points; ++k) {
    const double t = t_fast_ + (t_end - t_fast_) * k / (points - 1);
    const double pos = (anchors - 1) * static_cast<double>(k) / (points - 1);
    const int a = std::min(static_cast<int>(pos), anchors - 2);
    const double theta = pos - a;  // weight of anchor a+1
    const LpPoint& lo = lp[a];
    const LpPoint& hi = lp[a + 1];
    if (!lo.ok || !hi.ok) {
      if (auto s = solve(t)) out.push_back(std::move(*s));
      continue;
    }
    for (std::size_t i = 0; i < mixed.size(); ++i) {
      mixed[i] = (1 - theta) * lo.duration_s[i] + theta * hi.duration_s[i];
    }
    const double bound = std::max(lo.bound_j + lo.slope_j_per_s * (t - lo.deadline_s),
                                  hi.bound_j + hi.slope_j_per_s * (t - hi.deadline_s));
    out.push_back(round_and_improve(t, &mixed, bound, options_.frontier_rounding_thresholds,
                                    options_.frontier_exchanges));
  }
  if (emin) out.push_back(std::move(*emin));
  return pareto_filter(std::move(out));
}

std::vector<Solution> pareto_filter(std::vector<Solution> points) {
  pareto_filter(points, [](const Solution& s) { return s.makespan_s; }, [](const Solution& s) { return s.energy_j; });
  return points;
}

}  // namespace emo::opt
