#include "timing/analysis.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace emo::timing {

using trace::OpKind;

graph::Window find_window(const trace::Trace& t, const std::string& window_name,
                          const std::string& annotation, int instance) {
  graph::Window w;
  if (window_name.empty() && annotation.empty()) return w;
  const std::string& name = window_name.empty() ? annotation : window_name;
  const int wanted = window_name.empty() ? instance : 0;
  int seen = 0;
  std::vector<std::string> available;
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops.kind[i] != OpKind::kAnnotation) continue;
    const std::string_view n = t.strings.view(t.ops.name[i]);
    // --annotation ProfilerStep also matches ProfilerStep#N (as HTA does); --window is exact.
    const bool hit = n == name || (window_name.empty() && n.size() > name.size() &&
                                   n.starts_with(name) && n[name.size()] == '#');
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

namespace {

std::string kind_of(const trace::Trace& t, std::uint32_t row) {
  if (t.ops.kind[row] == OpKind::kKernel && t.is_collective(row)) return "collective";
  return std::string(trace::op_kind_name(t.ops.kind[row]));
}

double fraction(TimeNs part, TimeNs whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

nlohmann::json to_json(const trace::Trace& t, const Analysis& a) {
  using nlohmann::json;
  const graph::DepGraph& g = a.graph;
  json path = json::array();
  for (const PathStep& st : a.path.steps) {
    const std::uint32_t row = g.op[st.node];
    json j = {{"id", row},
              {"name", t.strings.view(t.ops.name[row])},
              {"kind", kind_of(t, row)},
              {"start_ns", a.schedule.start(st.node)},
              {"dur_ns", a.schedule.end(st.node) - a.schedule.start(st.node)}};
    if (g.gpu[st.node]) {
      j["device"] = t.ops.device[row];
      j["stream"] = t.ops.stream[row];
    } else {
      j["thread"] = t.ops.thread[row];
    }
    j["via"] = st.via_edge ? json(graph::edge_type_name(st.edge)) : json();
    path.push_back(std::move(j));
  }
  json edges = json::object();
  json inferred = json::object();
  for (int e = 0; e < graph::kEdgeTypeCount; ++e) {
    const auto type = static_cast<graph::EdgeType>(e);
    edges[std::string(graph::edge_type_name(type))] = g.stats.edges[e];
    inferred[std::string(graph::edge_type_name(type))] = g.stats.inferred_edges[e];
  }
  edges["inferred"] = inferred;
  json gpus = json::array();
  for (const GpuSlack& gs : a.gpus) {
    json windows = json::array();
    for (const Interval& w : gs.windows) windows.push_back({w.start_ns, w.end_ns});
    gpus.push_back({{"device", gs.device},
                    {"busy_ns", gs.busy_ns},
                    {"critical_busy_ns", gs.critical_busy_ns},
                    {"slack_ns", gs.slack_ns},
                    {"slack_windows", windows}});
  }
  json bound = json::object();
  for (int c = 0; c < BoundBy::kCount; ++c) {
    bound[BoundBy::name(c)] = fraction(a.path.bound_by.ns[c], a.schedule.makespan_ns);
  }
  json what_if = json::array();
  for (const WhatIfResult& w : a.what_ifs) {
    what_if.push_back({{"spec", w.spec},
                       {"makespan_ns", w.makespan_ns},
                       {"change", w.change},
                       {"matched_ops", w.matched_ops}});
  }
  const graph::GraphStats& st = g.stats;
  return {{"path", t.meta.path},
          {"window", {{"label", g.window.label},
                      {"begin_ns", g.nodes() ? json(g.window_start_ns) : json()},
                      {"end_ns", g.nodes() ? json(a.schedule.end_ns) : json()}}},
          {"nodes", g.nodes()},
          {"makespan_ns", a.schedule.makespan_ns},
          {"replay_error", a.replay_error},
          {"critical_path_ns", a.path.length_ns},
          {"critical_path", path},
          {"edges", edges},
          {"gpus", gpus},
          {"bound_by", bound},
          {"what_if", what_if},
          {"graph", {{"violated_edges", st.violated_edges},
                     {"dropped_inferred_edges", st.dropped_inferred_edges},
                     {"cycle_edges", st.cycle_edges},
                     {"unresolved_syncs", st.unresolved_syncs},
                     {"sources", st.sources},
                     {"unexplained_gpu_gap_ns", st.unexplained_gpu_gap_ns}}}};
}

std::string to_text(const trace::Trace& t, const Analysis& a) {
  const graph::DepGraph& g = a.graph;
  std::string out;
  auto line = [&out](const std::string& s) { out += s + '\n'; };
  line(t.meta.path);
  line(fmt::format("  window        {}", g.window.label));
  std::int64_t inferred = 0;
  for (auto v : g.stats.inferred_edges) inferred += v;
  line(fmt::format("  graph         {} nodes, {} edges ({} inferred from call names, {} of them "
                   "dropped as contradicted by the recorded times); {} recorded edge(s) clamped",
                   g.nodes(), g.edges(), inferred, g.stats.dropped_inferred_edges,
                   g.stats.violated_edges));
  line(fmt::format("  makespan      {} (replay error {:.4f} %)", format_duration(a.schedule.makespan_ns),
                   100.0 * a.replay_error));
  {
    std::string from;
    if (!a.path.steps.empty()) {
      // The path begins at a pinned start; before it the thread ran untraced CPU work (or the
      // stream was busy with work from before the window): counted in bound_by, not in length.
      const std::uint32_t first = a.path.steps.front().node;
      const TimeNs lead = a.schedule.start(first) - a.graph.window_start_ns;
      if (lead > 0) {
        from = fmt::format(" (from {} after the window start; before it: {})", format_duration(lead),
                           a.graph.gpu[first] ? "GPU busy with earlier work or idle" : "untraced CPU work");
      }
    }
    line(fmt::format("  critical path {} over {} ops{}", format_duration(a.path.length_ns),
                     a.path.steps.size(), from));
  }
  std::string bound;
  for (int c = 0; c < BoundBy::kCount; ++c) {
    const double f = fraction(a.path.bound_by.ns[c], a.schedule.makespan_ns);
    if (f > 0.0005 || f < -0.0005) bound += fmt::format("{}{} {:.1f} %", bound.empty() ? "" : ", ", BoundBy::name(c), 100 * f);
  }
  line("  bound by      " + bound);
  for (const GpuSlack& gs : a.gpus) {
    line(fmt::format("  GPU {}         busy {}, critical {}, slack {} in {} windows", gs.device,
                     format_duration(gs.busy_ns), format_duration(gs.critical_busy_ns), format_duration(gs.slack_ns),
                     gs.windows.size()));
  }
  for (const WhatIfResult& w : a.what_ifs) {
    line(fmt::format("  what-if       {}: makespan {} ({:+.2f} %), {} ops changed{}", w.spec,
                     format_duration(w.makespan_ns), 100.0 * w.change, w.matched_ops,
                     w.matched_ops == 0 ? " (the spec selects nothing)" : ""));
  }
  return out;
}

}  // namespace emo::timing
