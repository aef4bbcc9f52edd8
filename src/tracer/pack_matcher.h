// Recognising pack starts in a running program (docs/runtime.md), in plain C++ so that it is
// tested without CUDA: the tracer library feeds it kernel launches and NVTX ranges, and it says
// which launches start a pack of the clock policy.
//
// `emo run` hands the tracer the policy's pack starts as a *watch list*, a small text file (the
// tracer does not parse JSON; runtime::watch_list_of() writes it from a policy):
//   emo.watch/1
//   marker ProfilerStep#*
//   pack 0 3 7 2 ampere_sgemm_128x64_nn
// i.e. `pack DEVICE PACK_INDEX STREAM ORDINAL NAME` (NAME is the rest of the line), and the
// iteration marker (an NVTX range name, '*' matches any run of characters; empty = none).
// A line `gpu DEVICE RANK` per policy section gives its distributed rank (-1 = none): a process
// of a job follows the section of its rank (tracer/process_identity.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace emo::tracer {

/// One pack start to recognise.
struct WatchEntry {
  std::int32_t device = 0;
  std::int32_t pack = 0;       ///< Index in the GPU's pack list.
  std::int64_t stream = 0;
  std::int64_t ordinal = 0;    ///< Ops of that name on that device before it, in the iteration.
  std::string name;
};

/// A policy section and its rank (policy::GpuPolicy device and rank).
struct WatchSection {
  std::int32_t device = 0;
  std::int32_t rank = -1;      ///< -1: not a job's section.
  bool operator==(const WatchSection&) const = default;
};

struct WatchList {
  std::string marker;          ///< Iteration marker pattern, "" = none.
  std::vector<WatchEntry> entries;
  std::vector<WatchSection> sections;  ///< Empty in lists written before issue 17.
};

/// Text form (above).
std::string to_text(const WatchList& w);
/// Parses the text form. Returns nullopt for text that is not an emo.watch/1 list (the tracer
/// then only records and says so on stderr).
std::optional<WatchList> parse_watch_list(std::string_view text);

/// True when `name` matches `pattern`, where '*' stands for any run of characters.
/// glob_match("ProfilerStep#*", "ProfilerStep#12") == true.
bool glob_match(std::string_view pattern, std::string_view name) noexcept;

/// A recognised pack start.
struct PackHit {
  std::int32_t device = 0;
  std::int32_t pack = 0;
  std::int64_t iteration = 0;  ///< From 0.
};

/// Counts ops per (device, name) within the current iteration and matches launches against a
/// watch list. Iterations advance on an NVTX range whose name matches the marker. With no
/// marker, or before the first one is seen (PyTorch emits ProfilerStep#N as NVTX only under
/// the profiler), they advance when pack 0's op is launched again after the last pack of the
/// iteration has been matched (a repeating pattern; counting starts at the program's first op).
class PackMatcher {
 public:
  explicit PackMatcher(WatchList watch);

  /// An NVTX range (push or start) named `name` began. Returns true when it starts an iteration.
  bool on_range(std::string_view name);
  /// A GPU op `name` was launched on (`device`, `stream`). Returns the pack it starts, if any.
  std::optional<PackHit> on_launch(std::int32_t device, std::int64_t stream, std::string_view name);

  std::int64_t iteration() const noexcept { return iteration_; }
  const WatchList& watch() const noexcept { return watch_; }

 private:
  void next_iteration();

  WatchList watch_;
  std::map<std::tuple<std::int32_t, std::string>, std::int64_t, std::less<>> counts_;
  std::map<std::int32_t, std::int32_t> last_pack_;  ///< device -> last pack index in the list
  std::map<std::int32_t, std::int32_t> matched_;    ///< device -> highest pack matched this iteration
  std::int64_t iteration_ = 0;
  bool marker_seen_ = false;
};

}  // namespace emo::tracer
