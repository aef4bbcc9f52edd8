#include "timing/analysis.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace emo::timing {

using trace::OpKind;

bool is_window_marker(const trace::Trace& t, std::uint32_t row) {
  if (t.ops.kind[row] == OpKind::kAnnotation) return true;
  // 2021-era Kineto traces record the step markers as operators (category "Operator").
  return t.ops.kind[row] == OpKind::kFrameworkOp &&
         t.strings.view(t.ops.name[row]).starts_with("ProfilerStep#");
}

graph::Window find_window(const trace::Trace& t, const std::string& window_name,
                          const std::string& annotation, int instance) {
  graph::Window w;
  if (window_name.empty() && annotation.empty()) return w;
  const std::string& name = window_name.empty() ? annotation : window_name;
  const int wanted = window_name.empty() ? instance : 0;
  int seen = 0;
  std::vector<std::string> available;
  std::set<std::pair<std::string_view, TimeNs>> markers;  // a step recorded twice counts once
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    if (!is_window_marker(t, i)) continue;
    const std::string_view n = t.strings.view(t.ops.name[i]);
    // --annotation ProfilerStep also matches ProfilerStep#N (as HTA does); --window is exact.
    const bool hit = n == name || (window_name.empty() && n.size() > name.size() &&
                                   n.starts_with(name) && n[name.size()] == '#');
    if (hit && !markers.insert({n, t.ops.start_ns[i]}).second) continue;
    if (hit) {
      if (seen++ == wanted) {
        w.begin_ns = t.ops.start_ns[i];
        w.end_ns = t.ops.end_ns(i);
        w.label = window_name.empty() ? fmt::format("{} (instance {})", name, instance) : name;
        return w;
      }
    } else if (available.size() < 8 &&
               std::find(available.begin(), available.end(), n) == available.end()) {
      available.emplace_back(n);
    }
  }
  if (seen > 0) {
    throw InputError(t.meta.path, fmt::format("annotation '{}' has {} instance(s); instance {} "
                                              "asked (0-based)", name, seen, wanted));
  }
  throw InputError(t.meta.path, fmt::format("no annotation named '{}' (some that exist: {}; "
                                            "--annotation NAME --instance K picks NAME#k ranges)", name,
                                            available.empty() ? "none" : fmt::format("{}", fmt::join(available, ", "))));
}

Analysis analyze(const trace::Trace& trace, const graph::Window& window,
                 const std::vector<WhatIf>& what_ifs) {
  Analysis a;
  a.graph = graph::build_graph(trace, window);
  if (a.graph.nodes() == 0) {
    throw InputError(trace.meta.path,
                     fmt::format("nothing to analyse: no GPU op or launching API call in {} ({} "
                                 "events read; an empty trace, CPU ops only, or an overlay EMO "
                                 "wrote?)", window.label, trace.ops.size()));
  }
  a.time_base = check_time_base(trace, a.graph);
  a.schedule = replay(a.graph, a.graph.dur);
  a.replay_error = replay_error(a.graph, a.schedule);
  a.node_slack = slack(a.graph, a.schedule, a.graph.dur);
  a.path = critical_path(trace, a.graph, a.schedule, a.graph.dur);
  a.gpus = gpu_slack(trace, a.graph, a.schedule, a.node_slack);
  for (const WhatIf& w : what_ifs) {
    WhatIfResult r;
    const std::vector<TimeNs> dur = apply_what_if(trace, a.graph, w, &r.matched_ops);
    const Schedule s = replay(a.graph, dur);
    r.spec = w.spec;
    r.makespan_ns = s.makespan_ns;
    r.change = a.schedule.makespan_ns > 0
                   ? static_cast<double>(s.makespan_ns) / static_cast<double>(a.schedule.makespan_ns) - 1.0
                   : 0.0;
    a.what_ifs.push_back(r);
  }
  return a;
}

}  // namespace emo::timing
