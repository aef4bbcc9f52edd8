#include "tracer/pack_matcher.h"

#include <charconv>
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

}  // namespace

std::string to_text(const WatchList& w) {
  std::ostringstream out;
  out << kWatchHeader << "\n" << "marker " << w.marker << "\n";
  for (const auto& g : w.sections) out << "gpu " << g.device << ' ' << g.rank << "\n";
  for (const auto& e : w.entries) {
    out << "pack " << e.device << ' ' << e.pack << ' ' << e.stream << ' ' << e.ordinal << ' ' << e.name << "\n";
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
    if (kind != "pack") return std::nullopt;
    WatchEntry e;
    if (!to_int(word(line), e.device) || !to_int(word(line), e.pack) || !to_int(word(line), e.stream) ||
        !to_int(word(line), e.ordinal)) {
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
  if (!marker_seen_) {
    // Repeating pattern: once every pack of this device has been matched, pack 0's op starts
    // the next iteration.
    const auto last = last_pack_.find(device);
    const auto done = matched_.find(device);
    if (last != last_pack_.end() && done != matched_.end() && done->second >= last->second) {
      for (const auto& e : watch_.entries) {
        if (e.device == device && e.pack == 0 && e.stream == stream && e.name == name) {
          next_iteration();
          break;
        }
      }
    }
  }
  auto key = std::make_tuple(device, std::string(name));
  const std::int64_t ordinal = counts_[key]++;
  for (const auto& e : watch_.entries) {
    if (e.device == device && e.ordinal == ordinal && e.stream == stream && e.name == name) {
      auto [it, inserted] = matched_.try_emplace(device, e.pack);
      if (!inserted) it->second = std::max(it->second, e.pack);
      return PackHit{device, e.pack, iteration_};
    }
  }
  return std::nullopt;
}

}  // namespace emo::tracer
