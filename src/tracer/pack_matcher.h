// Recognising pack starts in a running program (docs/runtime.md), in plain C++ so that it is
// tested without CUDA: the tracer library feeds it kernel launches and NVTX ranges, and it says
// which launches start a pack of the clock policy.
//
// `emo run` hands the tracer the policy's pack starts as a *watch list*, a small text file (the
// tracer does not parse JSON; runtime::watch_list_of() writes it from a policy):
//   emo.watch/1
//   marker ProfilerStep#*
//   pack 0 3 7 2 ampere_sgemm_128x64_nn
//   copy 0 0 7 0 Memcpy HtoD (Pageable -> Device)
//   memset 0 4 7 1 Memset (Device)
//   graph 0 5 7 0 12 3 void gemv2T_kernel<...>
// i.e. `KIND DEVICE PACK_INDEX STREAM ORDINAL [KERNELS INDEX] NAME` (NAME is the rest of the line)
// per pack start, by how it is observed (issue 32, docs/runtime.md "How pack starts are seen"):
//   pack    a kernel launch (cudaLaunchKernel*, cuLaunchKernel*); ORDINAL counts the iteration's
//           launches of kernels named NAME on the device;
//   copy    a copy call (cudaMemcpy*Async, cuMemcpy*Async); ORDINAL counts the iteration's copy
//           calls on the device, whatever their name (NAME is only for people);
//   memset  a memset call (cudaMemsetAsync, cuMemsetD*Async); as copy;
//   graph   a graph launch (cudaGraphLaunch, cuGraphLaunch) of a graph with KERNELS kernel nodes,
//           one of them named NAME (graph handles differ between runs: this is its identity);
//           ORDINAL counts the iteration's launches of graphs of that identity on the device;
//           INDEX is the pack's first op's position among the launch's GPU ops (for people: the
//           runtime plans the pack at the launch's start plus its predicted offset).
// And the iteration marker (an NVTX range name, '*' matches any run of characters; empty = none).
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

/// How the tracer sees an op start: the API call family that enqueues it (docs/runtime.md).
enum class WatchKind : std::uint8_t {
  kKernel,  ///< cudaLaunchKernel*, cudaLaunchKernelExC*, cuLaunchKernel*, cuLaunchKernelEx*.
  kCopy,    ///< cudaMemcpy*Async*, cuMemcpy*Async*.
  kMemset,  ///< cudaMemset*Async*, cuMemsetD*Async*.
  kGraph,   ///< cudaGraphLaunch*, cuGraphLaunch*: an anchor for the ops inside the graph.
};
/// The watch-list word of `k`: "pack" (kernel launch), "copy", "memset", "graph".
std::string_view watch_kind_word(WatchKind k) noexcept;

/// The family of a CUDA runtime or driver API call named `api` (without CUPTI's version suffix:
/// "cudaMemcpyAsync", "cuMemcpyHtoDAsync_v2" and "cudaLaunchKernel_ptsz" are all accepted), or
/// nullopt for a call the tracer does not follow (synchronous copies and memsets, cooperative
/// launches, HIP calls, ...). The tracer enables its callbacks by this rule and the policy
/// builder classifies a trace's launches by it, so both count the same calls.
/// watch_kind_of_api("cudaMemcpyAsync") == kCopy; watch_kind_of_api("cudaMemcpy") == nullopt.
std::optional<WatchKind> watch_kind_of_api(std::string_view api) noexcept;

/// One pack start to recognise.
struct WatchEntry {
  std::int32_t device = 0;
  std::int32_t pack = 0;       ///< Index in the GPU's pack list.
  std::int64_t stream = 0;     ///< Stream of the call (the graph launch's stream for kGraph).
  std::int64_t ordinal = 0;    ///< Calls of its key on that device before it, in the iteration.
  std::string name;            ///< Kernel name (kKernel, the key); a kernel of the graph (kGraph); for people (copy, memset).
  WatchKind kind = WatchKind::kKernel;
  std::int64_t graph_kernels = 0;  ///< kGraph: kernel nodes of the graph.
  std::int64_t graph_index = 0;    ///< kGraph: the pack's first op among the launch's GPU ops.
};

/// What the tracer knows of a launched CUDA graph (from its instantiation): its kernel nodes'
/// count and their (demangled) names.
struct GraphShape {
  std::int64_t kernels = 0;
  std::vector<std::string> kernel_names;
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
  /// A kernel `name` was launched on (`device`, `stream`). Returns the pack it starts, if any.
  std::optional<PackHit> on_launch(std::int32_t device, std::int64_t stream, std::string_view name);
  /// A copy (kCopy) or memset (kMemset) call on (`device`, `stream`). Returns the pack it starts.
  std::optional<PackHit> on_call(WatchKind kind, std::int32_t device, std::int64_t stream);
  /// A graph of shape `graph` was launched on (`device`, `stream`). It counts once for each
  /// watched identity (KERNELS, NAME) it has (kernel count equal, a kernel named NAME). Returns
  /// the lowest pack whose start it anchors (several packs may start inside one launch: the
  /// runtime plans the others from the same anchor).
  std::optional<PackHit> on_graph_launch(std::int32_t device, std::int64_t stream, const GraphShape& graph);

  std::int64_t iteration() const noexcept { return iteration_; }
  const WatchList& watch() const noexcept { return watch_; }

 private:
  void next_iteration();
  /// One call of `kind` with key `key` on (`device`, `stream`): counts it and matches it.
  std::optional<PackHit> on_op(WatchKind kind, std::int32_t device, std::int64_t stream, const std::string& key);

  WatchList watch_;
  std::map<std::tuple<std::int32_t, WatchKind, std::string>, std::int64_t, std::less<>> counts_;
  std::map<std::int32_t, std::int32_t> last_pack_;  ///< device -> last pack index in the list
  std::map<std::int32_t, std::int32_t> matched_;    ///< device -> highest pack matched this iteration
  std::int64_t iteration_ = 0;
  bool marker_seen_ = false;
};

}  // namespace emo::tracer
