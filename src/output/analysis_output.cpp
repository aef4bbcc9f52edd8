#include "output/analysis_output.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trace/job.h"

namespace emo::output {

using timing::Analysis;
using timing::BoundBy;
using timing::DurationsFrom;
using timing::GpuSlack;
using timing::Interval;
using timing::PathStep;
using timing::TimeBaseCheck;
using timing::WhatIfResult;
using trace::OpKind;

namespace {

std::string kind_of(const trace::Trace& t, std::uint32_t row) {
  if (t.ops.kind[row] == OpKind::kKernel && t.is_collective(row)) return "collective";
  return std::string(trace::op_kind_name(t.ops.kind[row]));
}

/// What the time before the critical path's first op was, by its category.
const char* lead_text(BoundBy::Category c) {
  switch (c) {
    case BoundBy::kBeforeWindow:
      return "before_window — the GPU was still busy with work launched before the window (the CPU "
             "ran ahead of the GPU); not idle";
    case BoundBy::kCpu: return "cpu — untraced CPU work before the first call on the path";
    default: return "idle — the GPU stream waited with nothing recorded to wait for";
  }
}

/// The critical path, step by step: [{id, name, kind, start_ns, dur_ns, device/stream or thread, via}].
nlohmann::json path_json(const trace::Trace& t, const Analysis& a) {
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
  return path;
}

/// Edge counts per type, with the inferred ones per type.
nlohmann::json edges_json(const graph::DepGraph& g) {
  using nlohmann::json;
  json edges = json::object();
  json inferred = json::object();
  for (int e = 0; e < graph::kEdgeTypeCount; ++e) {
    const auto type = static_cast<graph::EdgeType>(e);
    edges[std::string(graph::edge_type_name(type))] = g.stats.edges[e];
    inferred[std::string(graph::edge_type_name(type))] = g.stats.inferred_edges[e];
  }
  edges["inferred"] = inferred;
  return edges;
}

/// The durations_from object, or null when the analysis has none.
nlohmann::json durations_json(const Analysis& a) {
  nlohmann::json durations;
  if (a.durations) {
    const DurationsFrom& d = *a.durations;
    durations = {{"path", d.path},
                 {"window", d.window},
                 {"gpu_ops", d.gpu_ops},
                 {"gpu_matched", d.gpu_matched},
                 {"calls", d.calls},
                 {"calls_matched", d.calls_matched},
                 {"source_gpu_ops", d.source_gpu_ops},
                 {"source_unmatched", d.source_unmatched},
                 {"unmatched", d.unmatched},
                 {"starts_matched", d.starts_matched},
                 {"predicted_makespan_ns", d.predicted_makespan_ns},
                 {"durations_only_makespan_ns", d.durations_only_makespan_ns},
                 {"source_makespan_ns", d.source_makespan_ns},
                 {"error", d.error}};
  }
  return durations;
}

/// The slack of GPU `device` (GpuSlack::slack_ns), or nullopt when the analysis has none for it.
std::optional<TimeNs> gpu_slack_of(const Analysis& a, std::int32_t device) {
  for (const GpuSlack& gs : a.gpus) {
    if (gs.device == device) return gs.slack_ns;
  }
  return std::nullopt;
}


}  // namespace

namespace {

/// The job's figures of `job` alone (no graph): the ranks, and with `a` their slack.
nlohmann::json job_ranks_json(const trace::JobInfo& job, const Analysis* a) {
  using nlohmann::json;
  json ranks = json::array();
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const trace::JobRank& r = job.ranks[i];
    json j = {{"rank", r.rank}, {"file", r.path}, {"device", static_cast<int>(i)}, {"trace_device", r.device},
              {"offset_ns", r.offset_ns}, {"collectives", r.collectives}, {"collectives_matched", r.matched},
              {"wait_in_collectives_ns", r.wait_ns}};
    if (a != nullptr) {
      if (const auto slack = gpu_slack_of(*a, static_cast<std::int32_t>(i))) j["slack_ns"] = *slack;
    }
    ranks.push_back(std::move(j));
  }
  return {{"world_size", job.world_size},
          {"ranks", ranks},
          {"collectives_linked", job.collectives_linked},
          {"match_method", job.match_method},
          {"offset_residual_max_ns", job.residual_max_ns},
          {"offset_residual_median_ns", job.residual_median_ns},
          {"warnings", job.warnings}};
}

std::string job_head_text(const trace::JobInfo& job) {
  return fmt::format("  job           {} ranks of {}; {} collectives linked ({}); clock offsets aligned on "
                     "collective ends, residual median {} max {}\n",
                     job.ranks.size(), job.world_size, job.collectives_linked,
                     job.match_method.empty() ? "none" : job.match_method, format_duration(job.residual_median_ns),
                     format_duration(job.residual_max_ns));
}

}  // namespace

std::vector<RankSegment> rank_segments(const trace::Trace& t, const Analysis& a) {
  std::vector<RankSegment> out;
  for (const PathStep& st : a.path.steps) {
    const std::int32_t r = trace::job_rank_index(t, a.graph.op[st.node]);
    if (r < 0) continue;
    if (out.empty() || out.back().index != r) out.push_back({r, a.schedule.start(st.node), a.schedule.end(st.node), 0});
    out.back().end_ns = std::max(out.back().end_ns, a.schedule.end(st.node));
    ++out.back().ops;
  }
  return out;
}

nlohmann::json job_json(const trace::JobInfo& job) {
  if (job.ranks.empty()) return nlohmann::json();
  return job_ranks_json(job, nullptr);
}

std::string job_text(const trace::JobInfo& job) {
  if (job.ranks.empty()) return "";
  std::string out = job_head_text(job);
  constexpr std::size_t kShown = 16;
  for (std::size_t i = 0; i < job.ranks.size() && i < kShown; ++i) {
    const trace::JobRank& r = job.ranks[i];
    out += fmt::format("  rank {:<8} GPU {}, offset {:+.3f} us, collectives {} of {} matched, waited {} in them ({})\n",
                       r.rank, i, static_cast<double>(r.offset_ns) / 1e3, r.matched, r.collectives,
                       format_duration(r.wait_ns), r.path);
  }
  if (job.ranks.size() > kShown) out += fmt::format("  ... {} more ranks in --json\n", job.ranks.size() - kShown);
  for (const std::string& w : job.warnings) out += "  job warning: " + w + "\n";
  return out;
}

nlohmann::json job_json(const trace::Trace& t, const Analysis& a) {
  using nlohmann::json;
  const trace::JobInfo& job = t.meta.job;
  if (job.ranks.empty()) return json();
  json out = job_ranks_json(job, &a);
  json path = json::array();
  for (const RankSegment& s : rank_segments(t, a)) {
    path.push_back({{"rank", job.ranks[static_cast<std::size_t>(s.index)].rank},
                    {"start_ns", s.start_ns},
                    {"end_ns", s.end_ns},
                    {"ops", s.ops}});
  }
  out["critical_path_by_rank"] = std::move(path);
  return out;
}

std::string job_text(const trace::Trace& t, const Analysis& a) {
  const trace::JobInfo& job = t.meta.job;
  if (job.ranks.empty()) return "";
  std::string out = job_head_text(job);
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const trace::JobRank& r = job.ranks[i];
    const TimeNs slack = gpu_slack_of(a, static_cast<std::int32_t>(i)).value_or(0);
    out += fmt::format("  rank {:<8} GPU {}, offset {:+.3f} us, collectives {} of {} matched, waited {} in them, "
                       "slack {} ({})\n",
                       r.rank, i, static_cast<double>(r.offset_ns) / 1e3, r.matched, r.collectives,
                       format_duration(r.wait_ns), format_duration(slack), r.path);
  }
  const auto segs = rank_segments(t, a);
  std::string path;
  for (std::size_t k = 0; k < segs.size() && k < 12; ++k) {
    path += fmt::format("{}rank {} {}", k ? " → " : "", job.ranks[static_cast<std::size_t>(segs[k].index)].rank,
                        format_duration(segs[k].end_ns - segs[k].start_ns));
  }
  if (segs.size() > 12) path += fmt::format(" → ... ({} stretches)", segs.size());
  out += "  critical path by rank: " + (path.empty() ? std::string("-") : path) + "\n";
  for (const std::string& w : job.warnings) out += "  job warning: " + w + "\n";
  return out;
}

namespace {

}  // namespace

nlohmann::json to_json(const trace::Trace& t, const Analysis& a) {
  using nlohmann::json;
  const graph::DepGraph& g = a.graph;
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
  json bound_path = json::object();
  for (int c = 0; c < BoundBy::kCount; ++c) {
    bound[BoundBy::name(c)] = a.path.share_of_makespan(c);
    bound_path[BoundBy::name(c)] = a.path.share_of_path(c);
  }
  const TimeBaseCheck& tb = a.time_base;
  json what_if = json::array();
  for (const WhatIfResult& w : a.what_ifs) {
    what_if.push_back({{"spec", w.spec},
                       {"makespan_ns", w.makespan_ns},
                       {"change", w.change},
                       {"matched_ops", w.matched_ops}});
  }
  const graph::GraphStats& st = g.stats;
  return {{"path", t.meta.path},
          {"job", job_json(t, a)},
          {"durations_from", durations_json(a)},
          {"window", {{"label", g.window.label},
                      {"begin_ns", g.nodes() ? json(g.window_start_ns) : json()},
                      {"end_ns", g.nodes() ? json(a.schedule.end_ns) : json()}}},
          {"nodes", g.nodes()},
          {"makespan_ns", a.schedule.makespan_ns},
          {"replay_error", a.replay_error},
          {"critical_path_ns", a.path.length_ns},
          {"critical_path", path_json(t, a)},
          {"edges", edges_json(g)},
          {"gpus", gpus},
          {"bound_by", bound},
          {"bound_by_makespan", bound},
          {"bound_by_critical_path", bound_path},
          {"path_lead", {{"ns", a.path.lead_ns}, {"category", BoundBy::name(a.path.lead)}}},
          {"clock_skew_on_path_ns", a.path.skew_ns},
          {"time_base", {{"launches", tb.launches},
                         {"gpu_op_before_call_end", tb.before_call_end},
                         {"max_before_call_end_ns", tb.max_before_call_end_ns},
                         {"gpu_op_before_call_start", tb.before_call_start},
                         {"max_before_call_start_ns", tb.max_before_call_start_ns},
                         {"median_launch_delay_ns", tb.median_delay_ns},
                         {"cpu_gpu_gap_ns", tb.cpu_gpu_gap_ns},
                         {"different_time_bases", tb.different_time_bases}}},
          {"warnings", tb.warnings},
          {"what_if", what_if},
          {"graph", {{"violated_edges", st.violated_edges},
                     {"dropped_inferred_edges", st.dropped_inferred_edges},
                     {"cycle_edges", st.cycle_edges},
                     {"unresolved_syncs", st.unresolved_syncs},
                     {"unknown_event_streams", st.unknown_event_streams},
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
  line(fmt::format("  graph         {} nodes, {} edges ({} inferred from call names or unknown streams, "
                   "{} of them dropped as contradicted by the recorded times); {} recorded edge(s) clamped",
                   g.nodes(), g.edges(), inferred, g.stats.dropped_inferred_edges,
                   g.stats.violated_edges));
  if (g.stats.unknown_event_streams > 0) {
    line(fmt::format("  graph         {} sync records name no event stream: waited for every stream",
                     g.stats.unknown_event_streams));
  }
  line(fmt::format("  makespan      {} (replay error {:.4f} %)", format_duration(a.schedule.makespan_ns),
                   100.0 * a.replay_error));
  {
    std::string from;
    if (a.path.lead_ns > 0) {
      // The path begins at a pinned start; the lead before it is counted in bound_by (over the
      // makespan), not in the path's length.
      from = fmt::format(" (starts {} after the window start: {})", format_duration(a.path.lead_ns),
                         lead_text(a.path.lead));
    }
    line(fmt::format("  critical path {} over {} ops{}", format_duration(a.path.length_ns),
                     a.path.steps.size(), from));
  }
  auto shares = [&](auto share) {
    std::string s;
    for (int c = 0; c < BoundBy::kCount; ++c) {
      const double f = share(c);
      if (f > 0.0005) s += fmt::format("{}{} {:.1f} %", s.empty() ? "" : ", ", BoundBy::name(c), 100 * f);
    }
    return s.empty() ? std::string("-") : s;
  };
  line("  bound by, share of the critical path: " +
       shares([&](int c) { return a.path.share_of_path(c); }));
  line("  bound by, share of the makespan:      " +
       shares([&](int c) { return a.path.share_of_makespan(c); }) +
       (a.path.lead_ns > 0 ? fmt::format(" (the lead before the path is {})", BoundBy::name(a.path.lead)) : ""));
  if (a.path.skew_ns > 0) {
    line(fmt::format("  (the path steps back {} across edges the recorded times contradict — clock skew; "
                     "that time is in no category, so shares are of the total + {})",
                     format_duration(a.path.skew_ns), format_duration(a.path.skew_ns)));
  }
  for (const GpuSlack& gs : a.gpus) {
    line(fmt::format("  GPU {}         busy {}, critical {}, slack {} in {} windows", gs.device,
                     format_duration(gs.busy_ns), format_duration(gs.critical_busy_ns), format_duration(gs.slack_ns),
                     gs.windows.size()));
  }
  out += job_text(t, a);
  for (const std::string& w : a.time_base.warnings) line("  warning: " + w);
  if (a.durations) {
    const DurationsFrom& d = *a.durations;
    line(fmt::format("  durations from {} ({}): {} of {} GPU ops and {} of {} API calls matched (by "
                     "stream or thread, name and order); {} unmatched keep this window's "
                     "durations{}; {} ops of the source window had no counterpart",
                     d.path, d.window, d.gpu_matched, d.gpu_ops, d.calls_matched, d.calls,
                     d.gpu_ops + d.calls - d.gpu_matched - d.calls_matched,
                     d.unmatched.empty() ? "" : fmt::format(" (e.g. {})", d.unmatched.front()),
                     d.source_unmatched));
    line(fmt::format("  predicted     makespan {} with those durations and the source's {} pinned starts "
                     "(state at its window start); the source window recorded {}: error {:+.2f} % "
                     "(durations only, this window's starts: {})",
                     format_duration(d.predicted_makespan_ns), d.starts_matched,
                     format_duration(d.source_makespan_ns), 100.0 * d.error,
                     format_duration(d.durations_only_makespan_ns)));
  }
  for (const WhatIfResult& w : a.what_ifs) {
    line(fmt::format("  what-if       {}: makespan {} ({:+.2f} %), {} ops changed{}", w.spec,
                     format_duration(w.makespan_ns), 100.0 * w.change, w.matched_ops,
                     w.matched_ops == 0 ? " (the spec selects nothing)" : ""));
  }
  return out;
}

}  // namespace emo::output
