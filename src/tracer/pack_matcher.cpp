#include "tracer/pack_matcher.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

namespace emo::tracer {
namespace {

constexpr std::string_view kWatchHeader = "emo.watch/1";

/// Splits off the next space-separated word of `line` (advancing it).
std::string_view word(std::string_view& line) {
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  const std::size_t end = std::min(line.find(' '), line.size());
  std::string_view w = line.substr(0, end);
  line.remove_prefix(end);
  return w;
}

template <typename T>
bool to_int(std::string_view s, T& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

/// The counting key of a watch entry: the kernel name (kKernel), "" (copies and memsets count
/// together), "KERNELS NAME" (kGraph: the graph's identity).
std::string entry_key(const WatchEntry& e) {
  switch (e.kind) {
    case WatchKind::kKernel: return e.name;
    case WatchKind::kCopy:
    case WatchKind::kMemset: return "";
    case WatchKind::kGraph: return std::to_string(e.graph_kernels) + ' ' + e.name;
  }
  return e.name;
}

bool ends_with_async(std::string_view api) {
  // "Async" ends the name, or precedes a suffix: _v2, _ptsz, _v2_ptsz, _ptds.
  const std::size_t at = api.find("Async");
  return at != std::string_view::npos && (at + 5 == api.size() || api[at + 5] == '_');
}

}  // namespace

std::string_view watch_kind_word(WatchKind k) noexcept {
  switch (k) {
    case WatchKind::kKernel: return "pack";
    case WatchKind::kCopy: return "copy";
    case WatchKind::kMemset: return "memset";
    case WatchKind::kGraph: return "graph";
  }
  return "pack";
}

std::optional<WatchKind> watch_kind_of_api(std::string_view api) noexcept {
  const std::size_t suffix = api.find('_');  // cudaLaunchKernel_v7000, cuMemcpyHtoDAsync_v2, ..._ptsz
  const std::string_view base = api.substr(0, suffix);
  if (base == "cudaLaunchKernel" || base == "cudaLaunchKernelExC" || base == "cuLaunchKernel" ||
      base == "cuLaunchKernelEx") {
    return WatchKind::kKernel;
  }
  if (base == "cudaGraphLaunch" || base == "cuGraphLaunch") return WatchKind::kGraph;
  if (!ends_with_async(api)) return std::nullopt;
  if (base.starts_with("cudaMemcpy") || base.starts_with("cuMemcpy")) return WatchKind::kCopy;
  if (base.starts_with("cudaMemset") || base.starts_with("cuMemsetD")) return WatchKind::kMemset;
  return std::nullopt;
}

std::string to_text(const WatchList& w) {
  std::ostringstream out;
  out << kWatchHeader << "\n" << "marker " << w.marker << "\n";
  for (const auto& g : w.sections) out << "gpu " << g.device << ' ' << g.rank << "\n";
  for (const auto& e : w.entries) {
    out << watch_kind_word(e.kind) << ' ' << e.device << ' ' << e.pack << ' ' << e.stream << ' ' << e.ordinal;
    if (e.kind == WatchKind::kGraph) out << ' ' << e.graph_kernels << ' ' << e.graph_index;
    out << ' ' << e.name << "\n";
  }
  return out.str();
}

std::optional<WatchList> parse_watch_list(std::string_view text) {
  WatchList w;
  bool header = false;
  while (!text.empty()) {
    const std::size_t nl = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(std::min(nl + 1, text.size()));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!header) {
      if (line != kWatchHeader) return std::nullopt;
      header = true;
      continue;
    }
    if (line.starts_with("marker")) {
      line.remove_prefix(6);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      w.marker.assign(line);
      continue;
    }
    if (line.empty()) continue;
    const std::string_view kind = word(line);
    if (kind == "gpu") {
      WatchSection g;
      if (!to_int(word(line), g.device) || !to_int(word(line), g.rank) || !word(line).empty()) return std::nullopt;
      w.sections.push_back(g);
      continue;
    }
    WatchEntry e;
    bool known = false;
    for (WatchKind k : {WatchKind::kKernel, WatchKind::kCopy, WatchKind::kMemset, WatchKind::kGraph}) {
      if (kind == watch_kind_word(k)) {
        e.kind = k;
        known = true;
      }
    }
    if (!known) return std::nullopt;
    if (!to_int(word(line), e.device) || !to_int(word(line), e.pack) || !to_int(word(line), e.stream) ||
        !to_int(word(line), e.ordinal)) {
      return std::nullopt;
    }
    if (e.kind == WatchKind::kGraph && (!to_int(word(line), e.graph_kernels) || !to_int(word(line), e.graph_index))) {
      return std::nullopt;
    }
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    e.name.assign(line);
    w.entries.push_back(std::move(e));
  }
  if (!header) return std::nullopt;
  return w;
}

bool glob_match(std::string_view pattern, std::string_view name) noexcept {
  // Iterative wildcard match with backtracking to the last '*'.
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

PackMatcher::PackMatcher(WatchList watch) : watch_(std::move(watch)) {
  for (const auto& e : watch_.entries) {
    auto [it, inserted] = last_pack_.try_emplace(e.device, e.pack);
    if (!inserted) it->second = std::max(it->second, e.pack);
  }
}

void PackMatcher::next_iteration() {
  counts_.clear();
  matched_.clear();
  ++iteration_;
}

bool PackMatcher::on_range(std::string_view name) {
  if (watch_.marker.empty() || !glob_match(watch_.marker, name)) return false;
  if (!marker_seen_) {
    // From the first marker on, only markers delimit iterations. Ops before it are set-up and
    // warm-up; iterations the repeating pattern found meanwhile keep their numbers.
    marker_seen_ = true;
    const bool matched_any = iteration_ > 0 || !matched_.empty();
    counts_.clear();
    matched_.clear();
    if (matched_any) ++iteration_;
    return true;
  }
  next_iteration();
  return true;
}

std::optional<PackHit> PackMatcher::on_launch(std::int32_t device, std::int64_t stream, std::string_view name) {
  return on_op(WatchKind::kKernel, device, stream, std::string(name));
}

std::optional<PackHit> PackMatcher::on_call(WatchKind kind, std::int32_t device, std::int64_t stream) {
  if (kind != WatchKind::kCopy && kind != WatchKind::kMemset) return std::nullopt;
  return on_op(kind, device, stream, "");
}

std::optional<PackHit> PackMatcher::on_graph_launch(std::int32_t device, std::int64_t stream, const GraphShape& graph) {
  // Each watched identity of this device that the graph has counts this launch once.
  std::set<std::string> identities;
  for (const auto& e : watch_.entries) {
    if (e.device != device || e.kind != WatchKind::kGraph || e.graph_kernels != graph.kernels) continue;
    if (std::find(graph.kernel_names.begin(), graph.kernel_names.end(), e.name) != graph.kernel_names.end()) {
      identities.insert(entry_key(e));
    }
  }
  std::optional<PackHit> first;
  for (const auto& key : identities) {
    const auto hit = on_op(WatchKind::kGraph, device, stream, key);
    if (hit && (!first || hit->pack < first->pack)) first = hit;
  }
  return first;
}

std::optional<PackHit> PackMatcher::on_op(WatchKind kind, std::int32_t device, std::int64_t stream,
                                          const std::string& key) {
  auto matches = [&](const WatchEntry& e) {
    return e.device == device && e.kind == kind && e.stream == stream && entry_key(e) == key;
  };
  if (!marker_seen_) {
    // Repeating pattern: once every pack of this device has been matched, pack 0's op starts
    // the next iteration.
    const auto last = last_pack_.find(device);
    const auto done = matched_.find(device);
    if (last != last_pack_.end() && done != matched_.end() && done->second >= last->second) {
      for (const auto& e : watch_.entries) {
        if (e.pack == 0 && matches(e)) {
          next_iteration();
          break;
        }
      }
    }
  }
  const std::int64_t ordinal = counts_[std::make_tuple(device, kind, key)]++;
  std::optional<PackHit> hit;
  for (const auto& e : watch_.entries) {
    if (e.ordinal != ordinal || !matches(e)) continue;
    // Several packs may share one observed op (a graph launch, a moved start): report the
    // lowest, remember the highest as matched.
    auto [it, inserted] = matched_.try_emplace(device, e.pack);
    if (!inserted) it->second = std::max(it->second, e.pack);
    if (!hit || e.pack < hit->pack) hit = PackHit{device, e.pack, iteration_};
  }
  return hit;
}

}  // namespace emo::tracer
