// `emo analyze`: graph -> replay -> slack -> critical path -> per-GPU slack, plus what-ifs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "graph/dep_graph.h"
#include "timing/timing.h"
#include "trace/trace.h"

namespace emo::timing {

/// Finds the analysis window. `window_name` "ProfilerStep#N" selects the annotation of that exact
/// name; `annotation` + `instance` (0-based) selects the instance-th annotation of that name (or
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
};

/// Runs the whole analysis of `trace` in `window`.
Analysis analyze(const trace::Trace& trace, const graph::Window& window,
                 const std::vector<WhatIf>& what_ifs);

/// The `emo analyze --json` object: makespan_ns, replay_error, critical_path_ns, critical_path
/// [{id, name, kind, device, stream, start_ns, dur_ns, via}], edges {type: count, inferred:
/// {type: count}}, gpus [{device, busy_ns, critical_busy_ns, slack_ns, slack_windows}], bound_by
/// {category: fraction}, what_if [{spec, makespan_ns, change}], and graph statistics.
nlohmann::json to_json(const trace::Trace& trace, const Analysis& a);

/// Human-readable summary.
std::string to_text(const trace::Trace& trace, const Analysis& a);

}  // namespace emo::timing
