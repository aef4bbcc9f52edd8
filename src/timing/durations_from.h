// What-if with measured durations: the graph of one window replayed with the durations another
// window (of the same or another trace) recorded for the same ops. Traces hold natural
// experiments — the same ops run again in the next step with different durations — so
// predicting step B's makespan from step A's graph with B's durations checks, without a GPU, the
// claim the method rests on: that the graph turns new durations into the right makespan.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "graph/dep_graph.h"
#include "trace/trace.h"

namespace emo::timing {

/// The result of durations_from().
struct DurationsFrom {
  std::string path;                  ///< The source trace.
  std::string window;                ///< The source window's label.
  std::size_t gpu_ops = 0;           ///< GPU nodes of the target graph.
  std::size_t gpu_matched = 0;       ///< ... that got a source duration.
  std::size_t calls = 0;             ///< API-call nodes of the target graph.
  std::size_t calls_matched = 0;     ///< ... that got a source duration.
  std::size_t source_gpu_ops = 0;    ///< GPU nodes of the source window's graph.
  std::size_t source_unmatched = 0;  ///< Source nodes no target node matched.
  std::vector<std::string> unmatched;  ///< Up to 5 examples of target ops without a match.
  std::vector<TimeNs> dur;    ///< The target graph's node durations, matched ones replaced.
  std::size_t starts_matched = 0;    ///< Pinned starts (sources) taken from the source window.
  TimeNs predicted_makespan_ns = 0;  ///< Replay with `dur` and the source's pinned starts.
  TimeNs durations_only_makespan_ns = 0;  ///< Replay with `dur`, the target's own starts.
  TimeNs source_makespan_ns = 0;     ///< The source window's own (recorded) makespan.
  double error = 0.0;                ///< predicted / source - 1 (0 when the source is empty).
};

/// Replays `target` (a graph of `target_trace`) with the intrinsic durations that `source_trace`
/// recorded in `source_window` for the same ops. Ops are matched by resource (GPU ops: device and
/// stream; API calls: process and thread), name and order within the window: the k-th op of that
/// resource and name in the target takes the duration of the k-th in the source. An op without a
/// counterpart keeps its own duration (and is reported); the graph's lags (CPU gaps, launch
/// latencies, waits it cannot explain) stay the target's. The pinned starts — the state at the
/// window's start: a thread's first call after untraced CPU work, a stream still busy with work
/// launched before the window — are boundary conditions, not something the window's graph
/// predicts: for matched nodes they are taken from the source, as offsets from its window start
/// (predicted_makespan_ns); durations_only_makespan_ns keeps the target's. The source window's
/// makespan comes from its own graph (its replay reproduces the recording). Throws
/// emo::InputError naming the source trace when its window holds nothing to analyse. O((V + V')
/// log V).
DurationsFrom durations_from(const trace::Trace& target_trace, const graph::DepGraph& target,
                             const trace::Trace& source_trace, const graph::Window& source_window);

}  // namespace emo::timing
