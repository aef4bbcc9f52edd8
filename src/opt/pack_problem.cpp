#include "opt/pack_problem.h"

#include <algorithm>
#include <climits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "core/units.h"
#include "graph/algorithms.h"

namespace emo::opt {
namespace {

using graph::DepGraph;

constexpr TimeNs kUnreached = INT64_MIN;
/// Constraints b >= a + L between events of the problem, the largest L per (a, b).
class Lags {
 public:
  void constrain(int a, int b, TimeNs l) {
    auto [it, inserted] = lag_.try_emplace({a, b}, l);
    if (!inserted) it->second = std::max(it->second, l);
  }
  std::size_t size() const { return lag_.size(); }
  void clear() { lag_.clear(); }
  const std::map<std::pair<int, int>, TimeNs>& all() const { return lag_; }

 private:
  std::map<std::pair<int, int>, TimeNs> lag_;
};

/// The problem's events: the origin, per pack its start, work node and end, and the makespan sink.
struct Events {
  int origin = 0, sink = 0;
  std::vector<int> start, end;
  /// The event of a key timepoint.
  int of(std::uint32_t tp) const { return DepGraph::is_end(tp) ? end[DepGraph::node_of(tp)] : start[DepGraph::node_of(tp)]; }
};

/// One problem GPU per distinct CUDA device, in device order (out.device_of_gpu); returns each
/// device's index.
std::map<std::int32_t, int> add_gpus(const std::vector<std::int32_t>& device_of_pack, double idle_power_w, PackProblem& out) {
  std::map<std::int32_t, int> gpu_index;
  for (std::int32_t d : device_of_pack) gpu_index.try_emplace(d, 0);
  int k = 0;
  for (auto& [d, idx] : gpu_index) {
    idx = k++;
    out.problem.add_gpu(fmt::format("GPU {}", d), idle_power_w);
    out.device_of_gpu.push_back(d);
  }
  return gpu_index;
}

/// The events and each pack's work node (its options' time at pack_time(p, factor), energy with
/// idle power over that time), start → work → end.
Events add_events(const pack::PackGraph& pg, const std::vector<std::vector<PackOption>>& options,
                  std::span<const std::vector<TimeNs>> option_dur_ns, const std::vector<std::int32_t>& device_of_pack,
                  double idle_power_w, PackProblem& out) {
  const std::uint32_t P = pg.packs;
  const std::map<std::int32_t, int> gpu_index = add_gpus(device_of_pack, idle_power_w, out);
  Problem& prob = out.problem;
  Events ev;
  ev.origin = prob.add_fixed("origin", -1, 0, 0);
  ev.start.resize(P), ev.end.resize(P);
  out.work_node.resize(P);
  out.gpu_of_pack.resize(P);
  for (std::uint32_t p = 0; p < P; ++p) {
    if (options[p].empty()) throw std::invalid_argument(fmt::format("build_pack_problem: pack {} has no options", p));
    const int gpu = gpu_index.at(device_of_pack[p]);
    if (!option_dur_ns.empty() && option_dur_ns[p].size() != options[p].size())
      throw std::invalid_argument(fmt::format("build_pack_problem: pack {}: {} durations for {} options", p,
                                              option_dur_ns[p].size(), options[p].size()));
    std::vector<Option> opts;
    for (std::size_t k = 0; k < options[p].size(); ++k) {
      const PackOption& o = options[p][k];
      if (!(o.factor > 0)) throw std::invalid_argument("build_pack_problem: factor must be > 0");
      const double t = ns_to_s(option_dur_ns.empty() ? pg.pack_time(p, o.factor).dur_ns : option_dur_ns[p][k]);
      opts.push_back({o.clock_mhz, t, std::max(0.0, o.dynamic_energy_j) + idle_power_w * t});
    }
    ev.start[p] = prob.add_fixed(fmt::format("pack {} start", p), -1, 0, 0);
    out.work_node[p] = prob.add_node(fmt::format("pack {}", p), gpu, std::move(opts));
    ev.end[p] = prob.add_fixed(fmt::format("pack {} end", p), -1, 0, 0);
    out.gpu_of_pack[p] = gpu;
    prob.add_edge(ev.start[p], out.work_node[p]);
    prob.add_edge(out.work_node[p], ev.end[p]);
  }
  ev.sink = prob.add_fixed("makespan", -1, 0, 0);
  return ev;
}

/// The collapsed form: longest fixed paths (graph::KeptPaths) from the origin (the replay's own
/// sources, relative to the window's start) and from each key timepoint, through fixed nodes,
/// stopping at key timepoints: each key timepoint reached a lag from the source's event, the
/// longest path to a fixed node's end a lag to the sink (from a pack's end at least 0).
void collapsed_lags(const DepGraph& g, std::uint32_t P, const Events& ev, Lags& lag) {
  std::vector<std::uint8_t> key(2 * g.nodes(), 0);
  for (std::uint32_t p = 0; p < P; ++p) key[DepGraph::start_tp(p)] = key[DepGraph::end_tp(p)] = 1;
  graph::KeptPaths paths(
      g, graph::timepoint_arcs(g, [&](std::uint32_t k) { return g.in_lag[k]; },
                               [&](std::uint32_t n) { return n >= P ? g.dur[n] : kUnreached; }),
      std::move(key), graph::AtKept::kStop);
  auto from = [&](std::uint32_t src, int src_ev, TimeNs origin_ns) {
    TimeNs tail = paths.pass(src, origin_ns, [&](std::uint32_t tp, TimeNs v) { lag.constrain(src_ev, ev.of(tp), v); });
    if (src != graph::KeptPaths::kSources && DepGraph::is_end(src)) tail = std::max<TimeNs>(tail, 0);
    if (tail != kUnreached) lag.constrain(src_ev, ev.sink, tail);
  };
  from(graph::KeptPaths::kSources, ev.origin, g.window_start_ns);
  for (std::uint32_t p = 0; p < P; ++p) {
    from(DepGraph::start_tp(p), ev.start[p], 0);
    from(DepGraph::end_tp(p), ev.end[p], 0);
  }
}

/// The expanded form: every host node a fixed node between its own start and end events, every
/// live edge a lag, the replay's own sources lags from the origin.
void expanded_lags(const DepGraph& g, std::uint32_t P, const Events& ev, Problem& prob, Lags& lag) {
  std::vector<int> host_start(g.nodes(), -1), host_end(g.nodes(), -1);
  for (std::uint32_t n = P; n < g.nodes(); ++n) {
    host_start[n] = prob.add_fixed("host start", -1, 0, 0);
    const int work = prob.add_fixed("host", -1, ns_to_s(std::max<TimeNs>(0, g.dur[n])), 0);
    host_end[n] = prob.add_fixed("host end", -1, 0, 0);
    prob.add_edge(host_start[n], work);
    prob.add_edge(work, host_end[n]);
    lag.constrain(host_end[n], ev.sink, 0);
  }
  auto event = [&](std::uint32_t tp) {
    const std::uint32_t n = DepGraph::node_of(tp);
    if (n < P) return ev.of(tp);
    return DepGraph::is_end(tp) ? host_end[n] : host_start[n];
  };
  for (std::uint32_t p = 0; p < P; ++p) lag.constrain(ev.end[p], ev.sink, 0);
  for (std::uint32_t tp = 0; tp < 2 * g.nodes(); ++tp) {
    for (std::uint32_t e = g.in_begin[tp]; e < g.in_begin[tp + 1]; ++e) {
      if (g.in_lag[e] != graph::kDroppedLag) lag.constrain(event(g.in_from[e]), event(tp), g.in_lag[e]);
    }
    if (const TimeNs r = graph::replay_source_ns(g, tp); r != INT64_MIN) lag.constrain(ev.origin, event(tp), r - g.window_start_ns);
  }
}

/// Adds each lag to the problem: <= 0 as a plain edge, > 0 through a fixed node of that duration.
void materialise(const Lags& lag, PackProblem& out) {
  for (const auto& [ab, l] : lag.all()) {
    const auto [a, b] = ab;
    if (a == b) continue;
    if (l <= 0) {
      out.negative_lags += l < 0;
      out.problem.add_edge(a, b);
    } else {
      const int mid = out.problem.add_fixed("lag", -1, ns_to_s(l), 0);
      ++out.lag_nodes;
      out.problem.add_edge(a, mid);
      out.problem.add_edge(mid, b);
    }
  }
}

}  // namespace

PackProblem build_pack_problem(const pack::PackGraph& pg, const std::vector<std::vector<PackOption>>& options,
                               const std::vector<std::int32_t>& device_of_pack, double idle_power_w,
                               std::span<const double> port_factors, std::span<const std::vector<TimeNs>> option_dur_ns) {
  const std::uint32_t P = pg.packs;
  if (options.size() != P || device_of_pack.size() != P)
    throw std::invalid_argument("build_pack_problem: one option list and one device per pack needed");
  if (!port_factors.empty() && port_factors.size() != P)
    throw std::invalid_argument("build_pack_problem: one port factor per pack needed");
  if (!option_dur_ns.empty() && option_dur_ns.size() != P)
    throw std::invalid_argument("build_pack_problem: one duration list per pack needed");
  // The fixed part: the pack graph with its port edges' lags at port_factors.
  const DepGraph linearised = port_factors.empty() ? DepGraph{} : pg.graph_at(pg.pack_times(port_factors));
  const DepGraph& g = port_factors.empty() ? pg.g : linearised;
  PackProblem out;
  const Events ev = add_events(pg, options, option_dur_ns, device_of_pack, idle_power_w, out);
  Lags lag;
  collapsed_lags(g, P, ev, lag);
  // When the collapsed form would be larger than the pack graph itself (many packs reached
  // through one long CPU chain: O(P²) constraints), expand the whole pack graph instead.
  if (lag.size() > 2 * (g.nodes() + g.edges()) + 64) {
    lag.clear();
    out.expanded = true;
    expanded_lags(g, P, ev, out.problem, lag);
  }
  materialise(lag, out);
  return out;
}

}  // namespace emo::opt
