#include "opt/pack_problem.h"

#include <algorithm>
#include <climits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "core/units.h"

namespace emo::opt {
namespace {

using graph::DepGraph;

constexpr TimeNs kUnreached = INT64_MIN;

/// Key timepoints: the packs' starts and ends (pack nodes are 0 .. P-1 of the pack graph).
bool is_key(std::uint32_t tp, std::uint32_t packs) { return DepGraph::node_of(tp) < packs; }

}  // namespace

PackProblem build_pack_problem(const pack::PackGraph& pg, const std::vector<std::vector<PackOption>>& options,
                               const std::vector<std::int32_t>& device_of_pack, double idle_power_w,
                               std::span<const double> port_factors) {
  const std::uint32_t P = pg.packs;
  if (options.size() != P || device_of_pack.size() != P)
    throw std::invalid_argument("build_pack_problem: one option list and one device per pack needed");
  if (!port_factors.empty() && port_factors.size() != P)
    throw std::invalid_argument("build_pack_problem: one port factor per pack needed");
  // The fixed part: the pack graph with its port edges' lags at port_factors.
  const DepGraph linearised = port_factors.empty() ? DepGraph{} : pg.graph_at(pg.pack_times(port_factors));
  const DepGraph& g = port_factors.empty() ? pg.g : linearised;
  PackProblem out;
  Problem& prob = out.problem;

  std::map<std::int32_t, int> gpu_index;
  for (std::int32_t d : device_of_pack) {
    if (gpu_index.try_emplace(d, static_cast<int>(gpu_index.size())).second) {
      // placeholder; added in device order below
    }
  }
  int k = 0;
  for (auto& [d, idx] : gpu_index) {
    idx = k++;
    prob.add_gpu(fmt::format("GPU {}", d), idle_power_w);
    out.device_of_gpu.push_back(d);
  }

  // Events: origin, per pack start/work/end, sink.
  const int origin = prob.add_fixed("origin", -1, 0, 0);
  std::vector<int> start_ev(P), end_ev(P);
  out.work_node.resize(P);
  out.gpu_of_pack.resize(P);
  for (std::uint32_t p = 0; p < P; ++p) {
    if (options[p].empty()) throw std::invalid_argument(fmt::format("build_pack_problem: pack {} has no options", p));
    const int gpu = gpu_index.at(device_of_pack[p]);
    std::vector<Option> opts;
    for (const auto& o : options[p]) {
      if (!(o.factor > 0)) throw std::invalid_argument("build_pack_problem: factor must be > 0");
      const double t = ns_to_s(pg.pack_time(p, o.factor).dur_ns);
      opts.push_back({o.clock_mhz, t, std::max(0.0, o.dynamic_energy_j) + idle_power_w * t});
    }
    start_ev[p] = prob.add_fixed(fmt::format("pack {} start", p), -1, 0, 0);
    out.work_node[p] = prob.add_node(fmt::format("pack {}", p), gpu, std::move(opts));
    end_ev[p] = prob.add_fixed(fmt::format("pack {} end", p), -1, 0, 0);
    out.gpu_of_pack[p] = gpu;
    prob.add_edge(start_ev[p], out.work_node[p]);
    prob.add_edge(out.work_node[p], end_ev[p]);
  }
  const int sink = prob.add_fixed("makespan", -1, 0, 0);
  auto event_of = [&](std::uint32_t tp) { return DepGraph::is_end(tp) ? end_ev[DepGraph::node_of(tp)] : start_ev[DepGraph::node_of(tp)]; };

  // Constraint b >= a + L between events; keep the largest L per (a, b).
  std::map<std::pair<int, int>, TimeNs> lag;
  auto constrain = [&](int a, int b, TimeNs l) {
    auto [it, inserted] = lag.try_emplace({a, b}, l);
    if (!inserted) it->second = std::max(it->second, l);
  };

  // One forward pass per source (origin = UINT32_MAX, else a key timepoint) through fixed nodes.
  std::vector<TimeNs> dist(2 * g.nodes(), kUnreached);
  std::vector<std::uint32_t> sources{UINT32_MAX};
  for (std::uint32_t p = 0; p < P; ++p) sources.push_back(DepGraph::start_tp(p)), sources.push_back(DepGraph::end_tp(p));
  for (const std::uint32_t src : sources) {
    std::fill(dist.begin(), dist.end(), kUnreached);
    const int src_ev = src == UINT32_MAX ? origin : event_of(src);
    TimeNs tail = kUnreached;  // longest fixed path from src to any end timepoint
    for (const std::uint32_t tp : g.topo) {
      const std::uint32_t n = DepGraph::node_of(tp);
      TimeNs v = kUnreached;
      if (tp == src) {
        v = 0;
      } else {
        if (src == UINT32_MAX && !DepGraph::is_end(tp)) {
          // Pinned starts (and starts whose every constraint was dropped) hang off the origin.
          bool constrained = false;
          for (std::uint32_t e = g.in_begin[tp]; e < g.in_begin[tp + 1]; ++e) constrained |= g.in_lag[e] != graph::kDroppedLag;
          if (g.release[n] != INT64_MIN) v = g.release[n] - g.window_start_ns;
          else if (!constrained) v = g.rec_start[n] - g.window_start_ns;
        }
        for (std::uint32_t e = g.in_begin[tp]; e < g.in_begin[tp + 1]; ++e) {
          if (g.in_lag[e] == graph::kDroppedLag) continue;
          const std::uint32_t from = g.in_from[e];
          if (from != src && is_key(from, P)) continue;  // paths stop at other pack timepoints
          if (dist[from] == kUnreached) continue;
          v = std::max(v, dist[from] + g.in_lag[e]);
        }
        if (DepGraph::is_end(tp) && n >= P && dist[DepGraph::start_tp(n)] != kUnreached)
          v = std::max(v, dist[DepGraph::start_tp(n)] + g.dur[n]);  // a fixed node's own duration
      }
      if (v == kUnreached) continue;
      if (tp != src && is_key(tp, P)) {
        constrain(src_ev, event_of(tp), v);  // recorded; not propagated further
        continue;
      }
      dist[tp] = v;
      if (DepGraph::is_end(tp)) tail = std::max(tail, v);
    }
    if (src != UINT32_MAX && DepGraph::is_end(src)) tail = std::max<TimeNs>(tail, 0);
    if (tail != kUnreached) constrain(src_ev, sink, tail);
  }

  // When the collapsed form would be larger than the pack graph itself (many packs reached
  // through one long CPU chain: O(P²) constraints), expand the whole pack graph instead: every
  // host node becomes a fixed node between its own start and end events.
  if (lag.size() > 2 * (g.nodes() + g.edges()) + 64) {
    lag.clear();
    out.expanded = true;
    std::vector<int> host_start(g.nodes(), -1), host_end(g.nodes(), -1);
    for (std::uint32_t n = P; n < g.nodes(); ++n) {
      host_start[n] = prob.add_fixed("host start", -1, 0, 0);
      const int work = prob.add_fixed("host", -1, ns_to_s(std::max<TimeNs>(0, g.dur[n])), 0);
      host_end[n] = prob.add_fixed("host end", -1, 0, 0);
      prob.add_edge(host_start[n], work);
      prob.add_edge(work, host_end[n]);
      constrain(host_end[n], sink, 0);
    }
    auto ev = [&](std::uint32_t tp) {
      const std::uint32_t n = DepGraph::node_of(tp);
      if (n < P) return event_of(tp);
      return DepGraph::is_end(tp) ? host_end[n] : host_start[n];
    };
    for (std::uint32_t p = 0; p < P; ++p) constrain(end_ev[p], sink, 0);
    for (std::uint32_t tp = 0; tp < 2 * g.nodes(); ++tp) {
      const std::uint32_t n = DepGraph::node_of(tp);
      bool constrained = false;
      for (std::uint32_t e = g.in_begin[tp]; e < g.in_begin[tp + 1]; ++e) {
        if (g.in_lag[e] == graph::kDroppedLag) continue;
        constrained = true;
        constrain(ev(g.in_from[e]), ev(tp), g.in_lag[e]);
      }
      if (!DepGraph::is_end(tp)) {
        if (g.release[n] != INT64_MIN) constrain(origin, ev(tp), g.release[n] - g.window_start_ns);
        else if (!constrained) constrain(origin, ev(tp), g.rec_start[n] - g.window_start_ns);
      }
    }
  }

  // Materialise: lag <= 0 as a plain edge, > 0 through a fixed node of that duration.
  for (const auto& [ab, l] : lag) {
    const auto [a, b] = ab;
    if (a == b) continue;
    if (l <= 0) {
      out.negative_lags += l < 0;
      prob.add_edge(a, b);
    } else {
      const int mid = prob.add_fixed("lag", -1, ns_to_s(l), 0);
      ++out.lag_nodes;
      prob.add_edge(a, mid);
      prob.add_edge(mid, b);
    }
  }
  return out;
}

}  // namespace emo::opt
