#include "runtime/progress_protocol.h"

#include <algorithm>
#include <charconv>

namespace emo::runtime {

tracer::WatchList watch_list_of(const policy::Policy& p) {
  tracer::WatchList w;
  w.marker = p.iteration_marker;
  for (const auto& g : p.gpus) {
    w.sections.push_back({g.device, g.rank});
    for (const auto& k : g.packs) {
      tracer::WatchEntry e{g.device, k.index, k.start.stream, k.start.ordinal, k.start.op_name};
      switch (k.start.observed_by) {
        case policy::ObservedBy::kNone: continue;  // refused by run_policy
        case policy::ObservedBy::kKernel: e.kind = tracer::WatchKind::kKernel; break;
        case policy::ObservedBy::kCopy: e.kind = tracer::WatchKind::kCopy; break;
        case policy::ObservedBy::kMemset: e.kind = tracer::WatchKind::kMemset; break;
        case policy::ObservedBy::kGraph:
          e.kind = tracer::WatchKind::kGraph;
          e.name = k.start.graph.first_kernel;
          e.graph_kernels = k.start.graph.kernels;
          e.graph_index = k.start.graph.index;
          break;
      }
      w.entries.push_back(std::move(e));
    }
  }
  return w;
}

std::optional<PackStarted> parse_progress_line(std::string_view line, std::int64_t now_ns) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.starts_with("P ")) return std::nullopt;
  line.remove_prefix(2);
  std::int64_t v[5] = {0, 0, 0, now_ns, 0};
  int n = 0;
  while (!line.empty()) {
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty()) break;
    if (n == 5) return std::nullopt;
    const auto r = std::from_chars(line.data(), line.data() + line.size(), v[n]);
    if (r.ec != std::errc() || (r.ptr != line.data() + line.size() && *r.ptr != ' ')) return std::nullopt;
    line.remove_prefix(static_cast<std::size_t>(r.ptr - line.data()));
    ++n;
  }
  if (n < 3 || v[0] < 0 || v[0] > 1 << 20 || v[1] < 0 || v[1] > 1 << 30 || v[2] < 0 || v[4] < 0) return std::nullopt;
  return PackStarted{static_cast<std::int32_t>(v[0]), static_cast<std::int32_t>(v[1]), v[2], v[3], v[4]};
}

namespace {

/// Splits off the next space-separated word of `line`.
std::string_view next_word(std::string_view& line) {
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  const std::size_t end = std::min(line.find(' '), line.size());
  const std::string_view w = line.substr(0, end);
  line.remove_prefix(end);
  return w;
}

template <typename T>
bool whole_int(std::string_view s, T& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

std::optional<ProcessHello> parse_hello_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.starts_with("H ")) return std::nullopt;
  line.remove_prefix(2);
  ProcessHello h;
  if (!whole_int(next_word(line), h.pid) || !whole_int(next_word(line), h.rank) ||
      !whole_int(next_word(line), h.device)) {
    return std::nullopt;
  }
  const std::string_view id = next_word(line);
  if (id.empty() || !next_word(line).empty() || h.pid <= 0 || h.rank < -1 || h.device < 0) return std::nullopt;
  if (id != "-") h.gpu_id.assign(id);
  return h;
}

}  // namespace emo::runtime
