// The dependency graph of a trace (docs/design.md §2): what orders GPU work.
//
// Nodes are the ops that take time on a resource: GPU ops (kernel, memcpy, memset; collectives
// are kernels) on a (device, stream), and host API calls (runtime, driver) on a (process,
// thread). Each node has two timepoints, its start S and its end E; timepoint ids are
// 2*node (S) and 2*node+1 (E). A node's end is E = max(S + dur, constraints into E).
//
// Edges constrain a timepoint: to >= from + lag. Lags are recorded gaps, so that replaying the
// trace with its own durations reproduces its own timestamps (see build_graph for the rule).
#pragma once

#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace emo::graph {


/// Why one timepoint waits for another.
enum class EdgeType : std::uint8_t {
  kStreamOrder,   ///< E(previous op on the stream) -> S(op).
  kProgramOrder,  ///< E(previous call on the CPU thread) -> S(call); lag = CPU time between them.
  kNesting,       ///< S(parent call) -> S(nested call) and E(nested) -> E(parent).
  kLaunch,        ///< S(API call) -> S(GPU op of the same correlation id).
  kHostSync,      ///< E(GPU op) -> E(blocking call): stream/device/event sync, blocking memcpy.
  kEventWait,     ///< E(op before cudaEventRecord on stream A) -> S(first op after the
                  ///< cudaStreamWaitEvent on stream B).
  kCollective,    ///< Linked traces (trace/job.h): a collective ends when its last participant
                  ///< has arrived and the transfer is done. S(participant) -> E(hub) with lag T,
                  ///< E(hub) -> E(participant), the hub being its first participant.
};
inline constexpr int kEdgeTypeCount = 7;
/// "stream_order", "program_order", "nesting", "launch", "host_sync", "event_wait", "collective".
std::string_view edge_type_name(EdgeType t) noexcept;

/// Lag of an edge dropped to break a cycle: ignored by every pass.
inline constexpr TimeNs kDroppedLag = INT64_MIN;

/// Counts describing how the graph was built.
struct GraphStats {
  std::array<std::int64_t, kEdgeTypeCount> edges{};           ///< Per type, inferred included.
  std::array<std::int64_t, kEdgeTypeCount> inferred_edges{};  ///< Per type: from call names.
  std::int64_t violated_edges = 0;   ///< Recorded dependencies the times contradict (clock
                                     ///< skew); lag clamped.
  std::int64_t dropped_inferred_edges = 0;  ///< Inferred waits the times contradict: dropped.
  std::int64_t cycle_edges = 0;      ///< Dropped to break cycles (equal-time ties).
  std::int64_t unresolved_syncs = 0; ///< Sync records whose call or ops were not found.
  std::int64_t unknown_event_streams = 0;  ///< Event-sync and stream-wait records that name no
                                           ///< event stream: resolved as waiting for every
                                           ///< stream of the device (edges flagged inferred).
  std::int64_t sources = 0;          ///< Start timepoints with no incoming edge (pinned).
  TimeNs unexplained_gpu_gap_ns = 0; ///< GPU waits the graph cannot explain (kept as delays).
};

/// A time window of the trace: ops whose API call (or, for GPU ops without one, the op
/// itself) starts in [begin_ns, end_ns) belong to it. The default is the whole trace.
struct Window {
  TimeNs begin_ns = INT64_MIN;
  TimeNs end_ns = INT64_MAX;
  std::string label = "whole trace";
};

/// The graph. Columns indexed by node; edges in CSR form grouped by target timepoint.
struct DepGraph {
  // --- nodes ---
  std::vector<std::uint32_t> op;        ///< Row in trace::OpTable.
  std::vector<TimeNs> dur;              ///< Intrinsic duration: the S -> E lag.
  std::vector<TimeNs> rec_start;        ///< Recorded start (trace).
  std::vector<TimeNs> rec_end;          ///< Recorded end (trace).
  std::vector<std::uint8_t> gpu;        ///< 1 for GPU ops.
  std::vector<TimeNs> release;          ///< Pinned start of source nodes, else INT64_MIN.

  // --- edges into timepoint t: in_from[in_begin[t] .. in_begin[t+1]) ---
  std::vector<std::uint32_t> in_begin;  ///< size 2*nodes + 1
  std::vector<std::uint32_t> in_from;   ///< Source timepoint.
  std::vector<TimeNs> in_lag;
  std::vector<EdgeType> in_type;
  std::vector<std::uint8_t> in_inferred;

  /// Timepoints in a topological order (S before E of a node; every edge forward).
  std::vector<std::uint32_t> topo;

  Window window;
  TimeNs window_start_ns = 0;  ///< The makespan's origin: the window's begin, or for the whole
                               ///< trace the earliest recorded start of a node.
  GraphStats stats;

  std::size_t nodes() const noexcept { return op.size(); }
  std::size_t edges() const noexcept { return in_from.size(); }
  static constexpr std::uint32_t start_tp(std::uint32_t node) noexcept { return 2 * node; }
  static constexpr std::uint32_t end_tp(std::uint32_t node) noexcept { return 2 * node + 1; }
  static constexpr std::uint32_t node_of(std::uint32_t tp) noexcept { return tp / 2; }
  static constexpr bool is_end(std::uint32_t tp) noexcept { return (tp & 1u) != 0; }
  /// Bytes held, for memory accounting.
  std::size_t memory_bytes() const noexcept;
  /// Gives back the columns' unused capacity (build_graph grows them as it goes: about a quarter
  /// more than their size on a rank of the generated jobs, 3.8 MB held for 2.9 MB used). For a
  /// graph kept for long (job::ThreadRankWorker keeps every rank's). Copies each column once.
  void shrink_to_fit();
};

/// Builds the graph of `trace` restricted to `window`.
///
/// Lags (so that the replay is exact): for each timepoint, each incoming edge has a physical lag
/// (0 for every type but program order and nesting, whose lag is the recorded CPU gap). The
/// binding edge — the one whose recorded source time + lag is latest — also takes the remaining
/// gap up to the recorded time: a launch latency, a sync call's return latency, or a wait the
/// graph cannot explain. Edges the recorded times contradict (source later than target) get
/// their lag clamped and are counted. A blocking call's intrinsic duration, when it waited, is
/// its return latency (recorded end - latest end it waited for); otherwise its recorded duration.
/// Start timepoints without incoming edges are pinned to their recorded start (`release`).
///
/// Sync edges come from the trace's sync records where they exist (records of query calls,
/// cudaEventQuery, are ignored: a query does not wait); an event-sync or stream-wait record that
/// names no event stream (not recorded: Kineto's `wait_on_stream` absent or -1, an nsys row whose
/// cudaEventRecord was not found) waits, flagged inferred, for the last op launched before the
/// cudaEventRecord (before the wait call when that is unknown too) on every stream of the device
/// (`stats.unknown_event_streams` counts them); sync calls without a record are resolved
/// from their names (sync_kind_of_api_call), conservatively: a stream or event sync whose stream
/// is unknown waits for every stream of every device. Synchronous device-to-host copies wait for
/// their copy. Name-based edges are flagged inferred; an inferred edge the recorded times
/// contradict is dropped (the wait did not happen). Host threads that neither launch GPU work nor
/// block on it are left out. In a window, a stream busy with work launched before it gives its
/// first op a release time. See docs/graph.md. O(ops log ops + edges).
DepGraph build_graph(const trace::Trace& trace, const Window& window = {});

}  // namespace emo::graph
