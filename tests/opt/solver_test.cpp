// The fast solver and the MILP against exhaustive enumeration on small instances, and the fast
// solver against the MILP on a few larger ones.
#include "opt/solver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "opt/milp.h"
#include "opt/random_instance.h"

namespace emo::opt {
namespace {

// Minimum energy over every assignment with makespan <= deadline (infinity if none).
double brute_force(const Problem& p, double deadline) {
  const int n = static_cast<int>(p.node_count());
  Assignment a(n, 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    const Schedule s = evaluate(p, a);
    if (s.makespan_s <= deadline + 1e-9) best = std::min(best, s.energy_j);
    int i = 0;
    while (i < n && ++a[i] == static_cast<int>(p.nodes()[i].options.size())) a[i++] = 0;
    if (i == n) break;
  }
  return best;
}

TEST(Solver, TwoPathsKnownOptimum) {
  // Diamond s -> {x, y} -> t on 2 GPUs at 10 W idle. x: fast (1 s, 100 J) or slow (2 s, 60 J);
  // y: fast (2 s, 100 J) or slow (3 s, 70 J). Deadline 2 s: only x may slow down (y's path is
  // critical): energy = 60 + 100 + idle of GPU 0 (2 − 2)·10 + GPU 1 (2 − 2)·10 = 160 J.
  Problem p;
  const int g0 = p.add_gpu("g0", 10), g1 = p.add_gpu("g1", 10);
  const int s = p.add_fixed("s", -1, 0, 0);
  const int x = p.add_node("x", g0, {{1410, 1, 100}, {900, 2, 60}});
  const int y = p.add_node("y", g1, {{1410, 2, 100}, {900, 3, 70}});
  const int t = p.add_fixed("t", -1, 0, 0);
  p.add_edge(s, x), p.add_edge(s, y), p.add_edge(x, t), p.add_edge(y, t);
  FastSolver solver(p);
  EXPECT_DOUBLE_EQ(solver.fastest_makespan_s(), 2);
  const auto at2 = solver.solve(2);
  ASSERT_TRUE(at2);
  EXPECT_NEAR(at2->energy_j, 160, 1e-9);
  EXPECT_EQ(at2->choice[x], 1);
  EXPECT_EQ(at2->choice[y], 0);
  // Deadline 3 s: both slow, C = 3: 60 + 70 + 10·(3−2) + 10·(3−3) = 140 J.
  EXPECT_NEAR(solver.solve(3)->energy_j, 140, 1e-9);
  EXPECT_FALSE(solver.solve(1.5));
  const auto milp = solve_milp(p, 3);
  ASSERT_TRUE(milp);
  EXPECT_NEAR(milp->energy_j, 140, 1e-6);
  EXPECT_TRUE(milp->proven_optimal);
}

TEST(Solver, MatchesEnumerationOnSmallRandomDags) {
  int instances = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    RandomDagSpec spec;
    spec.nodes = 7;
    spec.gpus = 2;
    spec.clocks = 3;
    spec.edge_prob = 0.3;
    const Problem p = random_dag(seed, spec);
    FastSolver solver(p);
    for (double rel : {0.0, 0.05, 0.15, 0.4}) {
      const double deadline = solver.fastest_makespan_s() * (1 + rel);
      const double opt = brute_force(p, deadline);
      const auto fast = solver.solve(deadline);
      ASSERT_TRUE(fast);
      EXPECT_LE(fast->makespan_s, deadline + 1e-9);
      EXPECT_GE(fast->energy_j, opt - 1e-6) << "seed " << seed;
      EXPECT_LE(fast->energy_j, opt * 1.005) << "seed " << seed << " rel " << rel;
      EXPECT_LE(fast->lower_bound_j, opt + 1e-6);
      const auto milp = solve_milp(p, deadline);
      ASSERT_TRUE(milp);
      EXPECT_NEAR(milp->energy_j, opt, 1e-6 * opt) << "seed " << seed << " rel " << rel;
      ++instances;
    }
  }
  EXPECT_EQ(instances, 32);
}

TEST(Solver, WithinHalfAPercentOfTheMilpOnLargerDags) {
  for (std::uint64_t seed = 100; seed < 104; ++seed) {
    RandomDagSpec spec;
    spec.nodes = 40;
    spec.clocks = 6;
    const Problem p = random_dag(seed, spec);
    FastSolver solver(p);
    const double deadline = solver.fastest_makespan_s() * 1.04;
    const auto fast = solver.solve(deadline);
    const auto milp = solve_milp(p, deadline);
    ASSERT_TRUE(fast && milp);
    EXPECT_LE(fast->energy_j, milp->energy_j * 1.005) << "seed " << seed;
    EXPECT_GE(fast->energy_j, milp->lower_bound_j - 1e-6);
  }
}

TEST(Solver, FrontierIsParetoAndSpansFastestToMinimum) {
  RandomDagSpec spec;
  spec.nodes = 30;
  const Problem p = random_dag(7, spec);
  FastSolver solver(p);
  const auto f = solver.frontier(20);
  ASSERT_GE(f.size(), 2u);
  EXPECT_NEAR(f.front().makespan_s, solver.fastest_makespan_s(), 1e-9);
  for (std::size_t k = 1; k < f.size(); ++k) {
    EXPECT_GT(f[k].makespan_s, f[k - 1].makespan_s);
    EXPECT_LT(f[k].energy_j, f[k - 1].energy_j);
  }
  for (const auto& s : f) {
    const Schedule e = evaluate(p, s.choice);  // the plan reproduces the point
    EXPECT_NEAR(e.makespan_s, s.makespan_s, 1e-12);
    EXPECT_NEAR(e.energy_j, s.energy_j, 1e-9);
  }
  EXPECT_THROW(solver.frontier(1), std::invalid_argument);
}

}  // namespace
}  // namespace emo::opt
