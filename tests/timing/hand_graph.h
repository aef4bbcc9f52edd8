// A hand-built dependency graph for the timing tests (ports_test.cpp, job_path_test.cpp,
// ports_property_test.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "graph/dep_graph.h"

namespace emo::timing {

using graph::DepGraph;
inline constexpr auto S = DepGraph::start_tp;  ///< Node n's start timepoint.
inline constexpr auto E = DepGraph::end_tp;    ///< Its end timepoint.
inline constexpr TimeNs kNo = INT64_MIN;       ///< No release.

/// Gives `g` (its nodes set) the in-edges `edges` (from timepoint, to timepoint, lag) in CSR form
/// and the topological order S0 E0 S1 E1 ... (the edges must go forward in it).
inline void add_edges(graph::DepGraph& g, const std::vector<std::tuple<std::uint32_t, std::uint32_t, TimeNs>>& edges) {
  const auto n = static_cast<std::uint32_t>(g.nodes());
  g.in_begin.assign(2 * n + 1, 0);
  for (std::uint32_t tp = 0; tp < 2 * n; ++tp) {
    g.in_begin[tp] = static_cast<std::uint32_t>(g.in_from.size());
    for (const auto& [from, to, lag] : edges) {
      if (to != tp) continue;
      g.in_from.push_back(from);
      g.in_lag.push_back(lag);
      g.in_type.push_back(graph::EdgeType::kStreamOrder);
      g.in_inferred.push_back(0);
    }
    g.topo.push_back(tp);
  }
  g.in_begin[2 * n] = static_cast<std::uint32_t>(g.in_from.size());
}

/// A graph of GPU nodes with durations `dur`, releases `release` (kNo: none) and edges (from
/// timepoint, to timepoint, lag); timepoints in the order S0 E0 S1 E1 ... (the edges go forward).
inline graph::DepGraph hand_graph(const std::vector<TimeNs>& dur, const std::vector<TimeNs>& release,
                                   const std::vector<std::tuple<std::uint32_t, std::uint32_t, TimeNs>>& edges) {
  graph::DepGraph g;
  const std::uint32_t n = static_cast<std::uint32_t>(dur.size());
  g.dur = dur;
  g.release = release;
  g.window_start_ns = INT64_MAX;
  for (std::uint32_t i = 0; i < n; ++i) {
    g.op.push_back(i);
    g.gpu.push_back(1);
    g.rec_start.push_back(release[i] == kNo ? 0 : release[i]);
    g.rec_end.push_back(g.rec_start.back() + dur[i]);
    if (release[i] != kNo) g.window_start_ns = std::min(g.window_start_ns, release[i]);
  }
  add_edges(g, edges);
  return g;
}

}  // namespace emo::timing
