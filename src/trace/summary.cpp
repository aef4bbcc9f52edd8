#include "trace/summary.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace emo::trace {

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
  std::map<std::pair<std::int32_t, std::int64_t>, std::int64_t> streams;
  std::set<std::pair<std::int64_t, std::int64_t>> threads;
  std::set<std::int32_t> devices;
  TimeNs first = 0, last = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpKind k = ops.kind[i];
    ++s.by_kind[static_cast<int>(k)];
    if (i == 0 || ops.start_ns[i] < first) first = ops.start_ns[i];
    if (i == 0 || ops.end_ns(i) > last) last = ops.end_ns(i);
    if (is_gpu_op(k)) {
      ++streams[{ops.device[i], ops.stream[i]}];
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
  s.api_calls = s.count(OpKind::kRuntime) + s.count(OpKind::kDriver);
  s.collectives = static_cast<std::int64_t>(t.collectives.size());
  for (auto [key, n] : streams) s.streams.push_back({key.first, key.second, n});
  s.host_threads = static_cast<std::int64_t>(threads.size());
  for (SyncKind k : t.syncs.kind) ++s.syncs_by_kind[std::string(sync_kind_name(k))];
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
      {"collective", s.collectives},
      {"framework_op", s.count(OpKind::kFrameworkOp)},
      {"annotation", s.count(OpKind::kAnnotation)},
      {"gpu_annotation", s.count(OpKind::kGpuAnnotation)},
  };
  json streams = json::array();
  for (const StreamSummary& st : s.streams) {
    streams.push_back({{"device", st.device}, {"stream", st.stream}, {"ops", st.ops}});
  }
  json gpus = json::array();
  for (const GpuInfo& g : s.gpus) {
    gpus.push_back({{"device", g.device},
                    {"name", g.name},
                    {"total_memory_bytes", g.total_memory_bytes},
                    {"compute_capability", fmt::format("{}.{}", g.compute_major, g.compute_minor)},
                    {"sm_count", g.sm_count},
                    {"clock_rate_khz", g.clock_rate_khz}});
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
                 {"ignored_events", q.ignored_events}};
  return {{"path", s.path},
          {"format", s.format},
          {"gpu", s.gpu},
          {"rank", s.rank},
          {"world_size", s.world_size},
          {"start_ns", s.start_ns},
          {"end_ns", s.end_ns},
          {"span_ns", s.span_ns},
          {"counts", counts},
          {"syncs_by_kind", s.syncs_by_kind},
          {"collectives_by_name", s.collectives_by_name},
          {"streams", streams},
          {"host_threads", s.host_threads},
          {"gpus", gpus},
          {"quirks", quirks},
          {"warnings", s.warnings}};
}

namespace {

std::string format_span(TimeNs ns) {
  if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
  if (ns >= 1'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.3f} us", static_cast<double>(ns) / 1e3);
}

struct Lines {
  std::string out;
  template <typename... Args>
  void operator()(fmt::format_string<Args...> f, Args&&... args) {
    out += fmt::format(f, std::forward<Args>(args)...);
    out += '\n';
  }
};

}  // namespace

std::string to_text(const TraceSummary& s) {
  Lines line;
  line("{}", s.path);
  line("  format      {}", s.format);
  line("  gpu         {}", s.gpu.empty() ? "(not recorded)" : s.gpu);
  line("  rank/world  {}/{}", s.rank < 0 ? "?" : std::to_string(s.rank),
       s.world_size < 0 ? "?" : std::to_string(s.world_size));
  line("  time span   {} ({} ns, from {} to {})", format_span(s.span_ns), s.span_ns, s.start_ns,
       s.end_ns);
  line("  ops         kernel {}  memcpy {}  memset {}  runtime {} (driver {})  sync {}  "
       "collective {}",
       s.count(OpKind::kKernel), s.count(OpKind::kMemcpy), s.count(OpKind::kMemset), s.api_calls,
       s.count(OpKind::kDriver), s.count(OpKind::kSync), s.collectives);
  line("              framework ops {}  annotations {}  gpu annotations {}  host threads {}",
       s.count(OpKind::kFrameworkOp), s.count(OpKind::kAnnotation),
       s.count(OpKind::kGpuAnnotation), s.host_threads);
  if (!s.syncs_by_kind.empty()) {
    std::string parts;
    for (const auto& [k, n] : s.syncs_by_kind) parts += fmt::format("  {} {}", k, n);
    line("  syncs      {}", parts);
  }
  if (!s.collectives_by_name.empty()) {
    std::string parts;
    for (const auto& [k, n] : s.collectives_by_name) parts += fmt::format("  {} {}", k, n);
    line("  collectives{}", parts);
  }
  line("  streams     {} (device:stream ops)", s.streams.size());
  for (const StreamSummary& st : s.streams) {
    line("              {}:{}  {}", st.device, st.stream, st.ops);
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
