// The one Pareto filter of EMO: keep the points of a time–cost set that no other point beats in
// both time and cost (lower is better in both).
//
//   {(1 s, 9 J), (2 s, 9 J), (2 s, 5 J), (3 s, 6 J)} → {(1 s, 9 J), (2 s, 5 J)}
#pragma once

#include <algorithm>
#include <vector>

namespace emo::opt {

/// Sorts `points` by ascending time (ties: ascending cost) and keeps each point whose cost is
/// below every kept point's cost by more than `eps` — the lower-left staircase, ascending time,
/// strictly falling cost. `time(p)` and `cost(p)` return doubles. O(n log n). Never throws
/// beyond what the callables throw.
template <class T, class TimeOf, class CostOf>
void pareto_filter(std::vector<T>& points, TimeOf time, CostOf cost, double eps = 1e-9) {
  std::stable_sort(points.begin(), points.end(), [&](const T& a, const T& b) {
    const double ta = time(a), tb = time(b);
    return ta != tb ? ta < tb : cost(a) < cost(b);
  });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (kept == 0 || cost(points[i]) < cost(points[kept - 1]) - eps) {
      if (kept != i) points[kept] = std::move(points[i]);
      ++kept;
    }
  }
  points.erase(points.begin() + static_cast<std::ptrdiff_t>(kept), points.end());
}

}  // namespace emo::opt
