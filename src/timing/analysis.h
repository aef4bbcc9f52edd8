// `emo analyze`: graph -> replay -> slack -> critical path -> per-GPU slack, plus what-ifs.
#pragma once

#include <optional>
#include <string>
#include <vector>


#include "graph/dep_graph.h"
#include "timing/durations_from.h"
#include "timing/time_base.h"
#include "timing/timing.h"
#include "trace/trace.h"

namespace emo::timing {

/// True when trace row `row` can delimit a window: an annotation (user_annotation, NVTX range),
/// or a framework op named ProfilerStep#N (how 2021-era Kineto traces record their steps,
/// category "Operator").
bool is_window_marker(const trace::Trace& trace, std::uint32_t row);

/// Finds the analysis window among the window markers (is_window_marker). `window_name`
/// "ProfilerStep#N" selects the marker of that exact name; `annotation` + `instance` (0-based) selects the instance-th annotation of that name (or
/// of NAME#k, so "ProfilerStep" finds the ProfilerStep#k ranges, as HTA does). With
/// neither, the whole trace. Throws emo::InputError naming the trace when nothing matches.
graph::Window find_window(const trace::Trace& trace, const std::string& window_name,
                          const std::string& annotation, int instance);

struct WhatIfResult {
  std::string spec;
  TimeNs makespan_ns = 0;
  double change = 0.0;  ///< makespan_ns / baseline - 1
  std::size_t matched_ops = 0;  ///< Graph nodes the spec selected.
};

struct Analysis {
  graph::DepGraph graph;
  Schedule schedule;             ///< Replay with the recorded durations.
  std::vector<TimeNs> node_slack;
  double replay_error = 0.0;
  CriticalPath path;
  std::vector<GpuSlack> gpus;
  std::vector<WhatIfResult> what_ifs;
  TimeBaseCheck time_base;       ///< Clock skew / time-base checks of the launch pairs.
  /// `emo analyze --durations-from`: this graph replayed with another window's durations (set by
  /// the caller with durations_from(); shown by to_text and to_json when present).
  std::optional<DurationsFrom> durations;
};

/// Runs the whole analysis of `trace` in `window`. Throws emo::InputError "FILE: nothing to
/// analyse: ..." when the window holds no GPU op and no API call (an empty trace, a trace of
/// CPU ops only, or an overlay EMO wrote).
Analysis analyze(const trace::Trace& trace, const graph::Window& window,
                 const std::vector<WhatIf>& what_ifs);

}  // namespace emo::timing
