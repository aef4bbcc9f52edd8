// A second replay of an op graph, written for the tests (issue 14, part 6): its own topological
// order (Kahn over the graph's edge lists, not DepGraph::topo) and its own duration scaling
// (std::llround(dur x factor) per GPU op of a pack), so that replay and contraction errors are
// recomputed without timing::replay, pack::scaled_op_durations, pack::scale_ns or
// pack::check_contraction. Semantics, from the definition in graph/dep_graph.h: a start is the
// latest of its pinned release and (source + lag) over its edges; an end is the latest of
// start + duration and its edges; dropped edges (kDroppedLag) count for nothing; a start with no
// constraint at all keeps its recorded start.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/dep_graph.h"

namespace emo::testing {

/// Time of every timepoint (2 x nodes) of `g` with durations `dur`; a failure when the edges hold
/// a cycle (some timepoint never becomes ready).
inline std::vector<TimeNs> replay_by_hand(const graph::DepGraph& g, const std::vector<TimeNs>& dur) {
  const std::size_t T = 2 * g.nodes();
  // Out-edges in CSR form, the S -> E edge of every node included (index UINT32_MAX marks it).
  std::vector<std::uint32_t> indeg(T, 0), out_begin(T + 1, 0);
  for (std::uint32_t to = 0; to < T; ++to) {
    for (std::uint32_t k = g.in_begin[to]; k < g.in_begin[to + 1]; ++k) {
      if (g.in_lag[k] == graph::kDroppedLag) continue;
      ++out_begin[g.in_from[k] + 1];
      ++indeg[to];
    }
  }
  for (std::uint32_t n = 0; n < g.nodes(); ++n) ++out_begin[2 * n + 1], ++indeg[2 * n + 1];
  for (std::size_t t = 0; t < T; ++t) out_begin[t + 1] += out_begin[t];
  std::vector<std::uint32_t> out_to(out_begin[T]);
  std::vector<std::uint32_t> fill(out_begin.begin(), out_begin.end() - 1);
  for (std::uint32_t to = 0; to < T; ++to) {
    for (std::uint32_t k = g.in_begin[to]; k < g.in_begin[to + 1]; ++k) {
      if (g.in_lag[k] != graph::kDroppedLag) out_to[fill[g.in_from[k]]++] = to;
    }
  }
  for (std::uint32_t n = 0; n < g.nodes(); ++n) out_to[fill[2 * n]++] = 2 * n + 1;

  std::vector<TimeNs> time(T, INT64_MIN);
  std::vector<std::uint32_t> ready;
  for (std::uint32_t t = 0; t < T; ++t)
    if (indeg[t] == 0) ready.push_back(t);
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::uint32_t t = ready.back();
    ready.pop_back();
    const std::uint32_t n = t / 2;
    TimeNs v = (t % 2 == 1) ? time[t - 1] + dur[n] : g.release[n];
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) {
      if (g.in_lag[k] != graph::kDroppedLag) v = std::max(v, time[g.in_from[k]] + g.in_lag[k]);
    }
    if (v == INT64_MIN) v = g.rec_start[n];
    time[t] = v;
    ++done;
    for (std::uint32_t k = out_begin[t]; k < out_begin[t + 1]; ++k)
      if (--indeg[out_to[k]] == 0) ready.push_back(out_to[k]);
  }
  EXPECT_EQ(done, T) << "the graph's edges hold a cycle";
  return time;
}

/// Latest end of any node minus the window's start (0 for an empty graph).
inline TimeNs makespan_by_hand(const graph::DepGraph& g, const std::vector<TimeNs>& time) {
  if (g.nodes() == 0) return 0;
  TimeNs end = INT64_MIN;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) end = std::max(end, time[2 * n + 1]);
  return end - g.window_start_ns;
}

/// The op graph's durations with every GPU op of pack p scaled by factors[p] (rounded to the ns);
/// `pack_of` maps a node to its pack, or any value >= factors.size() for none.
inline std::vector<TimeNs> durations_at(const graph::DepGraph& g, const std::vector<std::uint32_t>& pack_of,
                                        const std::vector<double>& factors) {
  std::vector<TimeNs> dur = g.dur;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (g.gpu[n] && pack_of[n] < factors.size())
      dur[n] = static_cast<TimeNs>(std::llround(static_cast<double>(g.dur[n]) * factors[pack_of[n]]));
  }
  return dur;
}

/// Per-pack factor vectors for the contraction checks: uniform x1.1 and x2, then `cases` draws
/// from {1, 1.1, 1.3, 2} per pack (a fixed 64-bit LCG, so that a failure reproduces).
inline std::vector<std::vector<double>> factor_cases(std::size_t packs, int cases, std::uint64_t seed) {
  std::vector<std::vector<double>> out{std::vector<double>(packs, 1.1), std::vector<double>(packs, 2.0)};
  constexpr double kChoices[] = {1.0, 1.1, 1.3, 2.0};
  std::uint64_t x = seed * 2 + 1;
  for (int c = 0; c < cases; ++c) {
    std::vector<double> f(packs);
    for (double& v : f) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      v = kChoices[(x >> 33) % 4];
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace emo::testing
