// The fast solver: minimum energy under a deadline, and the energy–latency Pareto frontier, for
// instances of thousands of nodes (a 96-microbatch, 8-stage pipeline has 1536 nodes × 38 clocks).
//
// Per deadline T (docs/optimizer.md has the derivation and complexity):
//  1. Relaxation. The LP of opt/formulation.h over each node's lower convex hull of
//     (time, effective cost) options, solved by dual simplex (COIN-OR Clp). Its optimum is a
//     lower bound on the true optimum (reported as Solution::lower_bound_j). Along a frontier
//     only the bound on C changes, so each solve warm-starts from the previous basis.
//  2. Rounding. θ-threshold roundings of the LP durations between adjacent Pareto options (θ = 1:
//     every duration rounds down, so the makespan stays <= the LP's <= T; smaller θ round some
//     up and are repaired by speeding up critical nodes). Each is improved (3.); the best wins.
//  3. Improvement. Repeated best single-node move to a slower Pareto option, with the
//     exact makespan change max(0, Δt − slack_i) from a forward/backward pass, until no move
//     saves energy; then one round of pair exchanges (speed one critical node up a step, re-run
//     the greedy, keep it if energy fell). Every step keeps makespan <= T.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "opt/problem.h"

namespace emo::opt {

/// One point: the chosen option per node, its makespan and energy.
struct Solution {
  double deadline_s = 0;     ///< the deadline it was solved for
  double makespan_s = 0;     ///< <= deadline_s
  double energy_j = 0;       ///< problem.h's formula, at makespan_s
  double lower_bound_j = 0;  ///< LP bound on the optimum energy for this deadline
  Assignment choice;         ///< option index per node (Problem::nodes() order)
};

struct FastSolverOptions {
  int max_moves = 1'000'000;  ///< cap on improvement moves per deadline
  bool exchanges = true;            ///< solve(): one round of pair exchanges after the greedy
  bool frontier_exchanges = false;  ///< the same for each frontier() point (costly, ~0.02 %)
  /// Rounding thresholds θ tried per deadline by solve() (1 = round every duration down).
  std::vector<double> rounding_thresholds = {1.0, 0.5, 0.25, 0.75};
  /// The same for each point of frontier() (fewer: a frontier solves many deadlines).
  std::vector<double> frontier_rounding_thresholds = {1.0, 0.5};
  int frontier_anchors = 1 << 30;  ///< exact LP solves along a frontier (the rest interpolate)
  /// solve_within (opt/pack_search.h) also polishes from every pack at option 0 (the baseline) and
  /// from the best static plan, beside the solver's plan, each start a third of its work; false
  /// leaves that start out (the decomposed solve's per-rank solves leave out the static one:
  /// job::rank_options).
  bool polish_from_max = true;
  bool polish_from_static = true;
  /// With polish_from_max: that start only where the target is the plan at every pack's option 0
  /// itself (its exact makespan + kRoundingNs), the target at which the problem's linearised port
  /// edges leave the solver least room; above it the solver's polished plan is kept alone (the
  /// decomposed solve's per-rank solves, whose targets lie within their own share, a tenth of
  /// the job's target, of that plan's makespan: job::rank_options; measured there,
  /// docs/multi-rank.md "Decomposed solve" step 2).
  bool polish_from_max_at_baseline_only = false;
  /// solve_within's limit at the floor (a target at or below every pack at option 0's makespan):
  /// the target itself, without kRoundingNs (opt::search_limit_ns). Set by the driver where the
  /// target planned at is exactly +0 % — a latency target of +0 %, and the target ladder's +0 %
  /// step of every looser target (since stop 42), so that the ladder's steps for a target are a
  /// prefix of those for a looser one and a looser target never saves less: a plan predicted
  /// over the baseline is then a predicted miss. (Until stop 41 the ladder's +0 % step kept the
  /// tolerance; with the rate-rule local search that broke Promises.GeneratedJobsOfEveryMode,
  /// and the 4 × 8 pipeline at +1 % measures 13.90 % with the floor exact against 13.41 %
  /// without; docs/multi-rank.md "Since stop 42".)
  bool exact_floor = false;
};

/// Holds the relaxation of one problem; solve() may be called for many deadlines (warm starts).
/// Not thread-safe. Throws std::invalid_argument when the problem has a cycle.
class PathTimes;  // solver.cpp: incremental earliest starts and tails of an assignment

class FastSolver {
 public:
  explicit FastSolver(const Problem& p, FastSolverOptions options = {});
  /// The options it was made with.
  const FastSolverOptions& options() const { return options_; }
  ~FastSolver();
  FastSolver(const FastSolver&) = delete;
  FastSolver& operator=(const FastSolver&) = delete;

  /// Makespan with every node at its fastest option: the smallest feasible deadline.
  double fastest_makespan_s() const { return t_fast_; }
  /// Makespan with every node at its least-cost option: beyond it energy cannot fall further.
  double cheapest_makespan_s() const { return t_cheap_; }

  /// Minimum-energy assignment with makespan <= deadline_s; nullopt if deadline_s is below
  /// fastest_makespan_s().
  std::optional<Solution> solve(double deadline_s);

  /// The Pareto frontier: first the energy minimum (solved with no binding deadline), then
  /// `points` − 1 deadlines evenly spaced from fastest_makespan_s() up to the minimum's makespan
  /// (points >= 2, else std::invalid_argument). The LP is solved exactly at
  /// FastSolverOptions::frontier_anchors of them; in between, the relaxed durations are the
  /// convex combination of the two nearest anchors' (feasible: the constraints are linear) and
  /// the bound is the larger of their tangents (the LP value is convex in the deadline). Keeps only points that no other point dominates,
  /// sorted by ascending makespan, so energy strictly falls along it. Cost: `points` solve()s.
  std::vector<Solution> frontier(int points);

 private:
  struct Lp;
  const Problem& p_;
  FastSolverOptions options_;
  std::vector<std::vector<int>> pareto_;
  std::vector<std::vector<double>> time_, cost_;  // per node, per Pareto position
  std::vector<int> rank_;                          // position of each node in topo_order()
  std::unique_ptr<Lp> lp_;
  double t_fast_ = 0, t_cheap_ = 0;
  /// The LP relaxation at one deadline: its optimum (a lower bound), the slope dV/dT (the
  /// reduced cost of C, J/s, <= 0) and each node's relaxed duration.
  struct LpPoint {
    bool ok = false;
    double deadline_s = 0, bound_j = 0, slope_j_per_s = 0;
    std::vector<double> duration_s;
  };
  LpPoint solve_lp(double deadline_s);
  Solution round_and_improve(double deadline_s, const std::vector<double>* duration_s, double bound_j,
                             const std::vector<double>& thresholds, bool exchanges) const;
  void improve(Assignment& a, double deadline_s, bool exchanges) const;
  /// improve()'s greedy phase: the single slower move with the largest exact saving, until none
  /// saves energy or options_.max_moves is reached; returns the updated move count.
  int greedy_moves(PathTimes& pt, std::vector<int>& pos, double deadline_s, int moves) const;
};

/// Keeps the points that no other point dominates (makespan and energy both <=, one <), sorted
/// by ascending makespan.
std::vector<Solution> pareto_filter(std::vector<Solution> points);

}  // namespace emo::opt
