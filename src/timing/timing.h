// What-if timing, slack and the critical path over a dependency graph (docs/design.md §2).
//
// replay(): every timepoint's time is the max over its constraints, in topological order,
// O(V + E). slack(): the latest finish of each node that keeps the same end of the window
// (backward pass, O(V + E)) minus its earliest finish. The critical path is the chain of tight
// constraints from the last end back to a pinned start.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/algorithms.h"
#include "graph/dep_graph.h"
#include "trace/trace.h"

namespace emo::timing {

using graph::DepGraph;

/// Times of every timepoint (index = timepoint id of DepGraph), and the window's end.
struct Schedule {
  std::vector<TimeNs> time;      ///< size 2 * nodes
  TimeNs end_ns = 0;             ///< Latest end of any node.
  std::uint32_t last_node = 0;   ///< A node ending at end_ns.
  TimeNs makespan_ns = 0;        ///< end_ns - DepGraph::window_start_ns.
  TimeNs start(std::uint32_t n) const { return time[DepGraph::start_tp(n)]; }
  TimeNs end(std::uint32_t n) const { return time[DepGraph::end_tp(n)]; }
};

/// Forward pass with the given intrinsic durations (size nodes; usually DepGraph::dur, or a
/// what-if variant of it) and g's own lags: replay_with. O(V + E).
Schedule replay(const DepGraph& g, std::span<const TimeNs> dur);

/// The forward pass (graph::longest_path, the one longest-path replay) with node durations
/// `dur_of(node)` and edge lags `lag_of(in-CSR edge index)`, both ns: replay() and the pack
/// graph's what-ifs (PackGraph::evaluate). makespan_ns = end_ns - g.window_start_ns (0 for an
/// empty graph). O(V + E); the callables are inlined.
template <class DurOf, class LagOf>
Schedule replay_with(const DepGraph& g, DurOf&& dur_of, LagOf&& lag_of) {
  Schedule s;
  s.time.assign(2 * g.nodes(), 0);
  const graph::ReplayEnd end = graph::longest_path(g, dur_of, lag_of, s.time);
  s.end_ns = end.end_ns;
  s.last_node = end.last_node;
  s.makespan_ns = g.nodes() == 0 ? 0 : s.end_ns - g.window_start_ns;
  return s;
}

/// max over GPU nodes of |replayed end - recorded end| / makespan (0 for an empty graph).
double replay_error(const DepGraph& g, const Schedule& s);

/// Per timepoint (Schedule::time's layout, size 2 × nodes): the latest time it may take that keeps
/// s.end_ns, with node durations `dur` and g's lags (one backward pass, reverse topological order;
/// dropped edges ignored). O(V + E).
std::vector<TimeNs> latest_times(const DepGraph& g, const Schedule& s, std::span<const TimeNs> dur);

/// Per node: latest end that keeps s.end_ns (latest_times), minus the node's end in `s` (>= 0).
/// O(V + E).
std::vector<TimeNs> slack(const DepGraph& g, const Schedule& s, std::span<const TimeNs> dur);

/// Where the makespan goes along the critical path, in ns per category (never negative).
/// cpu: host call time and CPU gaps between calls; gpu_compute: kernels (not collectives) and
/// memsets; communication: collective kernels and memcpys; launch_overhead: API call start to GPU
/// op start; sync_wait: GPU end to the return of a blocking call, and cross-stream event waits;
/// idle: GPU gaps the graph cannot explain (a stream waiting with nothing recorded to wait for).
/// The lead — the window's start to the path's first op (CriticalPath::lead_ns) — counts as cpu
/// when that op is a host call (untraced CPU work before it), as before_window when it is a GPU
/// op of a step window (its stream was still busy with work launched before the window: the CPU
/// ran ahead of the GPU), and as idle when it is a GPU op in a whole-trace window.
/// Edges the recorded times contradict (clock skew) keep a negative lag so that the replay is
/// exact; along the path such a lag is counted in CriticalPath::skew_ns, not in a category, so
/// the categories sum to makespan + skew_ns.
struct BoundBy {
  enum Category {
    kCpu, kGpuCompute, kCommunication, kLaunchOverhead, kSyncWait, kIdle, kBeforeWindow, kCount
  };
  std::array<TimeNs, kCount> ns{};
  static const char* name(int c);
};

/// One step of the critical path: a node, and the edge (type) by which it was reached from
/// the previous step (kNone-like: `via_edge` false for the first).
struct PathStep {
  std::uint32_t node;
  bool via_edge = false;
  graph::EdgeType edge = graph::EdgeType::kStreamOrder;
};

struct CriticalPath {
  std::vector<PathStep> steps;  ///< From the first op to the last, in time order.
  TimeNs length_ns = 0;         ///< End of the last step - start of the first.
  BoundBy bound_by;             ///< Sums to makespan + skew_ns (lead included).
  TimeNs lead_ns = 0;           ///< Window start -> start of the first step (>= 0).
  BoundBy::Category lead = BoundBy::kCpu;  ///< The category the lead is counted in.
  TimeNs skew_ns = 0;           ///< Sum of -lag over negative-lag edges on the path (>= 0).

  /// Share of category c over the makespan: bound_by.ns[c] / (makespan + skew_ns), in [0, 1];
  /// the shares sum to 1. 0 for an empty path.
  double share_of_makespan(int c) const noexcept;
  /// Share of category c over the critical path itself (the lead left out): (bound_by.ns[c] -
  /// the lead when c is its category) / (length_ns + skew_ns), in [0, 1]; the shares sum to 1.
  double share_of_path(int c) const noexcept;
};

/// Walks tight constraints back from s.last_node. `trace` classifies nodes for bound_by.
CriticalPath critical_path(const trace::Trace& trace, const DepGraph& g, const Schedule& s,
                           std::span<const TimeNs> dur);

/// A time interval [start_ns, end_ns).
struct Interval {
  TimeNs start_ns;
  TimeNs end_ns;
};

/// Per GPU: busy time (union of its ops), critical-busy time (union of its zero-slack ops), and
/// the slack windows — busy intervals where only ops with slack run — with their total.
struct GpuSlack {
  std::int32_t device = 0;
  TimeNs busy_ns = 0;
  TimeNs critical_busy_ns = 0;
  TimeNs slack_ns = 0;  ///< Sum of the windows' lengths = busy - critical-busy.
  std::vector<Interval> windows;
};

std::vector<GpuSlack> gpu_slack(const trace::Trace& trace, const DepGraph& g, const Schedule& s,
                                std::span<const TimeNs> node_slack);

/// Duration changes for what-if timing. Spec: RULE[;RULE...], RULE = SELECTOR[@K]:CHANGE.
/// SELECTOR: all | gpu | id=N (trace op row) | corr=N (the GPU op(s) of correlation id N, not
/// the launching call) | name=TEXT | name~REGEX | kind=K (kernel, collective, memcpy, memset,
/// runtime, driver) | stream=S | device=D.
/// @K: only the K-th node the selector matches in the graph (the window), in recorded start
/// order, 0-based; negative K counts from the last (@-1). No K-th match: the rule changes nothing.
/// CHANGE: xF or *F (scale by F >= 0), +DUR, -DUR (add/subtract, floor 0), =DUR (absolute);
/// DUR = number with unit ns|us|ms|s, e.g. "kind=kernel:x1.5", "name~gemm:x1.2", "id=123:+2ms".
/// "+DUR" on a GPU op is the same as a delay of DUR inserted right after it on its stream (a
/// spin kernel enqueued after it): everything that waited for its end waits DUR longer.
/// "corr=812:+2ms" or "name=gemm@3:+2ms" (the 4th gemm of the window) target one instance.
/// Rules apply in order, each to the result of the previous ones.
struct WhatIf {
  std::string spec;
  struct Rule;               ///< Defined in timing.cpp.
  std::vector<Rule> rules;   ///< Use rule_count() outside timing.cpp.
  std::size_t rule_count() const noexcept;
  WhatIf();
  ~WhatIf();
  WhatIf(const WhatIf&);
  WhatIf& operator=(const WhatIf&);
  WhatIf(WhatIf&&) noexcept;
  WhatIf& operator=(WhatIf&&) noexcept;
};

/// Parses a what-if spec. Throws emo::ArgumentError("what_if", SPEC, reason) when malformed.
WhatIf parse_what_if(const std::string& spec);

/// The node durations of `g` with the spec's changes applied. `matched`, when given, receives
/// the number of nodes that at least one rule selected (0 means the spec changed nothing).
std::vector<TimeNs> apply_what_if(const trace::Trace& trace, const DepGraph& g, const WhatIf& w,
                                  std::size_t* matched = nullptr);

}  // namespace emo::timing
