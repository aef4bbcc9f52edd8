#include "trace/summary.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace emo::trace {

namespace {

/// Fills s.steps and s.annotation_names.
void summarize_markers(const Trace& t, TraceSummary& s) {
  std::map<std::string, std::int64_t, std::less<>> names;
  std::vector<std::pair<TimeNs, std::string>> steps;
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const OpKind k = t.ops.kind[i];
    if (k != OpKind::kAnnotation && k != OpKind::kFrameworkOp) continue;
    const std::string_view n = t.strings.view(t.ops.name[i]);
    if (n.starts_with("ProfilerStep#")) steps.emplace_back(t.ops.start_ns[i], std::string(n));
    if (k != OpKind::kAnnotation) continue;
    // NAME#123 -> NAME#*: one entry for a numbered family.
    const std::size_t hash = n.rfind('#');
    const bool numbered = hash != std::string_view::npos && hash + 1 < n.size() &&
                          n.find_first_not_of("0123456789", hash + 1) == std::string_view::npos;
    ++names[numbered ? std::string(n.substr(0, hash)) + "#*" : std::string(n)];
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());  // a step recorded twice
  for (auto& [start, name] : steps) s.steps.push_back(std::move(name));
  s.annotation_names.assign(names.begin(), names.end());
  std::stable_sort(s.annotation_names.begin(), s.annotation_names.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
}

}  // namespace

TraceSummary summarize(const Trace& t) {
  TraceSummary s;
  s.path = t.meta.path;
  s.format = std::string(trace_format_name(t.meta.format));
  s.rank = t.meta.rank;
  s.world_size = t.meta.world_size;
  s.gpus = t.meta.gpus;
  s.quirks = t.quirks;
  s.warnings = t.warnings;

  const OpTable& ops = t.ops;
  std::map<std::pair<std::int32_t, std::int64_t>, StreamSummary> streams;
  std::set<std::pair<std::int64_t, std::int64_t>> threads;
  std::set<std::int32_t> devices;
  TimeNs first = 0, last = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpKind k = ops.kind[i];
    ++s.by_kind[static_cast<int>(k)];
    if (i == 0 || ops.start_ns[i] < first) first = ops.start_ns[i];
    if (i == 0 || ops.end_ns(i) > last) last = ops.end_ns(i);
    if (is_gpu_op(k)) {
      StreamSummary& st = streams[{ops.device[i], ops.stream[i]}];
      ++st.ops;
      st.busy_ns += ops.dur_ns[i];
      devices.insert(ops.device[i]);
    } else if (k != OpKind::kSync && k != OpKind::kGpuAnnotation) {
      threads.insert({ops.process[i], ops.thread[i]});
    }
  }
  if (ops.size() > 0) {
    s.start_ns = first;
    s.end_ns = last;
    s.span_ns = last - first;
  }
  summarize_markers(t, s);
  s.api_calls = s.count(OpKind::kRuntime) + s.count(OpKind::kDriver);
  s.collectives = static_cast<std::int64_t>(t.collectives.size());
  for (auto& [key, st] : streams) {
    st.device = key.first;
    st.stream = key.second;
    s.streams.push_back(st);
  }
  s.gpu_devices.assign(devices.begin(), devices.end());
  s.host_threads = static_cast<std::int64_t>(threads.size());
  for (SyncKind k : t.syncs.kind) ++s.syncs_by_kind[std::string(sync_kind_name(k))];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!is_api_call(ops.kind[i])) continue;
    if (auto k = sync_kind_of_api_call(t.strings.view(ops.name[i]))) {
      ++s.sync_calls_by_kind[std::string(sync_kind_name(*k))];
    }
  }
  for (StringId n : t.collectives.name) ++s.collectives_by_name[std::string(t.strings.view(n))];

  // GPU name: those of the devices that ran GPU ops; else whatever the trace lists.
  std::vector<std::string> names;
  for (std::int32_t d : devices) {
    std::string n(t.gpu_name(d));
    if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  if (names.empty()) {
    for (const GpuInfo& g : t.meta.gpus) {
      if (!g.name.empty() && std::find(names.begin(), names.end(), g.name) == names.end()) {
        names.push_back(g.name);
      }
    }
  }
  s.gpu = fmt::format("{}", fmt::join(names, ", "));
  return s;
}

nlohmann::json to_json(const TraceSummary& s) {
  using nlohmann::json;
  json counts = {
      {"kernel", s.count(OpKind::kKernel)},
      {"memcpy", s.count(OpKind::kMemcpy)},
      {"memset", s.count(OpKind::kMemset)},
      {"runtime", s.api_calls},
      {"runtime_api", s.count(OpKind::kRuntime)},
      {"driver_api", s.count(OpKind::kDriver)},
      {"sync", s.count(OpKind::kSync)},
      {"sync_api_calls", s.quirks.sync_api_calls},
      {"collective", s.collectives},
      {"framework_op", s.count(OpKind::kFrameworkOp)},
      {"annotation", s.count(OpKind::kAnnotation)},
      {"gpu_annotation", s.count(OpKind::kGpuAnnotation)},
  };
  json streams = json::array();
  for (const StreamSummary& st : s.streams) {
    streams.push_back({{"device", st.device},
                       {"stream", st.stream},
                       {"ops", st.ops},
                       {"busy_ns", st.busy_ns}});
  }
  json gpus = json::array();
  for (const GpuInfo& g : s.gpus) {
    gpus.push_back({{"device", g.device},
                    {"name", g.name},
                    {"total_memory_bytes", g.total_memory_bytes},
                    {"compute_capability", fmt::format("{}.{}", g.compute_major, g.compute_minor)},
                    {"sm_count", g.sm_count},
                    {"clock_rate_khz", g.clock_rate_khz > 0 ? json(g.clock_rate_khz) : json()}});
  }
  const QuirkCounts& q = s.quirks;
  json quirks = {{"out_of_order", q.out_of_order},
                 {"zero_duration", q.zero_duration},
                 {"negative_duration", q.negative_duration},
                 {"clamped_children", q.clamped_children},
                 {"max_clamp_ns", q.max_clamp_ns},
                 {"unknown_category", q.unknown_category},
                 {"string_ids", q.string_ids},
                 {"duplicate_gpu_correlation", q.duplicate_gpu_correlation},
                 {"gpu_ops_without_launch", q.gpu_ops_without_launch},
                 {"ignored_events", q.ignored_events},
                 {"sync_api_calls", q.sync_api_calls}};
  auto known = [](std::int32_t v) { return v >= 0 ? json(v) : json(); };
  json annotation_names = json::array();
  for (std::size_t i = 0; i < s.annotation_names.size() && i < 50; ++i) {
    annotation_names.push_back({s.annotation_names[i].first, s.annotation_names[i].second});
  }
  return {{"path", s.path},
          {"format", s.format},
          {"gpu", s.gpu},
          {"rank", known(s.rank)},
          {"world_size", known(s.world_size)},
          {"start_ns", s.start_ns},
          {"end_ns", s.end_ns},
          {"span_ns", s.span_ns},
          {"counts", counts},
          {"syncs_by_kind", s.syncs_by_kind},
          {"sync_api_calls_by_kind", s.sync_calls_by_kind},
          {"collectives_by_name", s.collectives_by_name},
          {"streams", streams},
          {"host_threads", s.host_threads},
          {"gpus", gpus},
          {"quirks", quirks},
          {"steps", s.steps},
          {"annotation_names", annotation_names},
          {"warnings", s.warnings}};
}

namespace {

struct Lines {
  std::string out;
  template <typename... Args>
  void operator()(fmt::format_string<Args...> f, Args&&... args) {
    out += fmt::format(f, std::forward<Args>(args)...);
    out += '\n';
  }
};

std::string join_counts(const std::map<std::string, std::int64_t>& m) {
  std::string out;
  for (const auto& [k, n] : m) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", k, n);
  return out;
}

std::string gpu_line(const TraceSummary& s) {
  std::string line = s.gpu.empty() ? "(not recorded)" : s.gpu;
  if (!s.gpu_devices.empty()) {
    line += fmt::format("; GPU ops on device {}", fmt::join(s.gpu_devices, ", "));
  }
  if (s.gpus.size() > 1) line += fmt::format("; the trace lists {} GPUs", s.gpus.size());
  return line;
}

}  // namespace

std::string to_text(const TraceSummary& s) {
  Lines line;
  line("{}", s.path);
  line("  format      {}", s.format);
  line("  gpu         {}", gpu_line(s));
  line("  rank/world  {}/{}", s.rank < 0 ? "unknown" : std::to_string(s.rank),
       s.world_size < 0 ? "unknown" : std::to_string(s.world_size));
  line("  time span   {} ({} ns, from {} to {})", format_duration(s.span_ns), s.span_ns, s.start_ns,
       s.end_ns);
  std::string collectives;
  if (s.collectives > 0) {
    collectives = fmt::format(" (collectives {}: {})", s.collectives,
                              join_counts(s.collectives_by_name));
  }
  line("  GPU ops     kernel {}{}, memcpy {}, memset {}", s.count(OpKind::kKernel), collectives,
       s.count(OpKind::kMemcpy), s.count(OpKind::kMemset));
  line("  host        runtime API {}, driver API {}, framework ops {}, annotations {}, "
       "threads {}",
       s.count(OpKind::kRuntime), s.count(OpKind::kDriver), s.count(OpKind::kFrameworkOp),
       s.count(OpKind::kAnnotation), s.host_threads);
  if (!s.steps.empty()) {
    line("  steps       {} ({}{}; --annotation ProfilerStep --instance 0..{}, or --window NAME)",
         s.steps.size(), s.steps.front(), s.steps.size() > 1 ? " .. " + s.steps.back() : "",
         s.steps.size() - 1);
  }
  if (!s.annotation_names.empty()) {
    std::string top;
    const std::size_t shown = std::min<std::size_t>(s.annotation_names.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) {
      top += fmt::format("{}{} {}", i ? ", " : "", s.annotation_names[i].first, s.annotation_names[i].second);
    }
    line("  annotation names ({} distinct{}): {}", s.annotation_names.size(),
         shown < s.annotation_names.size() ? fmt::format(", top {}", shown) : "", top);
  }
  line("  syncs       {} sync records{}; {} synchronising API calls{}",
       s.count(OpKind::kSync),
       s.syncs_by_kind.empty() ? "" : " (" + join_counts(s.syncs_by_kind) + ")",
       s.quirks.sync_api_calls,
       s.sync_calls_by_kind.empty() ? "" : " (" + join_counts(s.sync_calls_by_kind) + ")");
  line("  streams     {} with GPU ops:", s.streams.size());
  for (const StreamSummary& st : s.streams) {
    const double share = s.span_ns > 0 ? 100.0 * static_cast<double>(st.busy_ns) /
                                             static_cast<double>(s.span_ns)
                                       : 0.0;
    line("              device {} stream {:<6} {:>8} ops  busy {} ({:.1f} % of the span)",
         st.device, st.stream, st.ops, format_duration(st.busy_ns), share);
  }
  if (s.quirks.ignored_events > 0 || s.quirks.unknown_category > 0) {
    line("  skipped     {} events not modelled (flows, instants, counters, profiler spans), "
         "{} of unknown categories",
         s.quirks.ignored_events, s.quirks.unknown_category);
  }
  if (s.warnings.empty()) {
    line("  warnings    none");
  } else {
    line("  warnings    {}", s.warnings.size());
    for (const std::string& w : s.warnings) line("              - {}", w);
  }
  return line.out;
}

}  // namespace emo::trace
