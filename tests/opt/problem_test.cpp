#include "opt/problem.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace emo::opt {
namespace {

TEST(Problem, EnergyFormulaMatchesTheWorkedExample) {
  // problem.h: 2 GPUs at 80 W, A (1 s, 200 J) on GPU 0, B (2 s, 300 J) on GPU 1, no edge.
  Problem p;
  const int g0 = p.add_gpu("g0", 80), g1 = p.add_gpu("g1", 80);
  p.add_fixed("A", g0, 1, 200);
  p.add_fixed("B", g1, 2, 300);
  const Schedule s = evaluate(p, {0, 0});
  EXPECT_DOUBLE_EQ(s.makespan_s, 2);
  EXPECT_DOUBLE_EQ(s.energy_j, 580);
}

TEST(Problem, EdgesDelayAndHostNodesCostNoIdlePower) {
  Problem p;
  const int g = p.add_gpu("g", 50);
  const int a = p.add_fixed("kernel", g, 1, 100);
  const int h = p.add_fixed("host", -1, 0.5, 0);
  const int b = p.add_fixed("kernel2", g, 1, 100);
  p.add_edge(a, h);
  p.add_edge(h, b);
  const Schedule s = evaluate(p, {0, 0, 0});
  EXPECT_DOUBLE_EQ(s.makespan_s, 2.5);
  EXPECT_DOUBLE_EQ(s.start_s[b], 1.5);
  EXPECT_DOUBLE_EQ(s.energy_j, 200 + 50 * 0.5);  // the GPU idles while the host works
}

TEST(Problem, RejectsBadInput) {
  Problem p;
  EXPECT_THROW(p.add_gpu("g", -1), std::invalid_argument);
  const int g = p.add_gpu("g", 10);
  EXPECT_THROW(p.add_node("x", g, {}), std::invalid_argument);
  EXPECT_THROW(p.add_node("x", 3, {{1000, 1, 1}}), std::invalid_argument);
  EXPECT_THROW(p.add_node("x", g, {{1000, -1, 1}}), std::invalid_argument);
  const int a = p.add_fixed("a", g, 1, 1), b = p.add_fixed("b", g, 1, 1);
  EXPECT_THROW(p.add_edge(a, a), std::invalid_argument);
  EXPECT_THROW(p.add_edge(a, 7), std::invalid_argument);
  p.add_edge(a, b);
  p.add_edge(b, a);
  EXPECT_THROW(p.topo_order(), std::invalid_argument);
  EXPECT_THROW(evaluate(p, {0, 0}), std::invalid_argument);
}

TEST(Problem, ParetoOptionsDropDominatedOnes) {
  Problem p;
  const int g = p.add_gpu("g", 100);
  // effective costs (E − 100·t): 1 s/150 J → 50; 1.2 s/140 J → 20; 1.1 s/170 J → 60 (dominated
  // by the first); 1.5 s/175 J → 25 (dominated by the second: slower and dearer).
  p.add_node("k", g, {{1410, 1.0, 150}, {1200, 1.2, 140}, {1300, 1.1, 170}, {1000, 1.5, 175}});
  const auto par = pareto_options(p);
  ASSERT_EQ(par.size(), 1u);
  EXPECT_EQ(par[0], (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(p.effective_cost_j(0, 1), 20);
}

}  // namespace
}  // namespace emo::opt
