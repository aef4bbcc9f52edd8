// Hand-made traces for the graph and timing tests: a few API calls, GPU ops and sync records with
// chosen times, so that every edge, lag, slack and critical path can be worked out on paper.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dep_graph.h"
#include "timing/timing.h"
#include "trace/trace.h"

namespace emo::testing {

using graph::DepGraph;
using graph::EdgeType;
using trace::kNone;
using trace::OpKind;
using trace::SyncKind;

inline constexpr std::int64_t kPid = 100;

/// Builds a trace row by row. Host calls are on process kPid, thread `tid` (default 1).
struct HandTrace {
  trace::Trace t;

  /// A runtime (or driver) API call [start, start + dur).
  void call(std::string_view name, TimeNs start, TimeNs dur, std::int64_t corr,
            std::int64_t tid = 1, OpKind kind = OpKind::kRuntime) {
    t.ops.push(kind, start, dur, t.strings.intern(name), kNone, kNone, kPid, tid, corr, kNone);
  }
  /// A GPU op (kernel, memcpy, memset) on (device, stream).
  void gpu(OpKind kind, std::string_view name, TimeNs start, TimeNs dur, std::int64_t stream,
           std::int64_t corr, std::int32_t device = 0) {
    t.ops.push(kind, start, dur, t.strings.intern(name), device, stream, kNone, kNone, corr, kNone);
  }
  void kernel(std::string_view name, TimeNs start, TimeNs dur, std::int64_t stream,
              std::int64_t corr, std::int32_t device = 0) {
    gpu(OpKind::kKernel, name, start, dur, stream, corr, device);
  }
  /// A sync record (Kineto `cuda_sync`) of the API call with correlation `corr`.
  void sync(SyncKind kind, TimeNs start, TimeNs dur, std::int64_t corr, std::int32_t device = 0,
            std::int64_t stream = kNone, std::int64_t event_stream = kNone,
            std::int64_t record_corr = kNone) {
    const auto row = t.ops.push(OpKind::kSync, start, dur, t.strings.intern("sync"), device,
                                stream, kNone, kNone, corr, kNone);
    t.syncs.op.push_back(row);
    t.syncs.kind.push_back(kind);
    t.syncs.stream.push_back(stream);
    t.syncs.event_stream.push_back(event_stream);
    t.syncs.event_record_correlation.push_back(record_corr);
    t.syncs.event_id.push_back(kNone);
  }
  void annotation(std::string_view name, TimeNs start, TimeNs dur, std::int64_t tid = 1) {
    t.ops.push(OpKind::kAnnotation, start, dur, t.strings.intern(name), kNone, kNone, kPid, tid,
               kNone, kNone);
  }
  trace::Trace finish() {
    t.meta.path = "hand.json";
    t.finish();
    return std::move(t);
  }
};

/// Row of the op of `kind` class with correlation `corr` (GPU op if gpu, else API call).
inline std::uint32_t row_of(const trace::Trace& t, std::int64_t corr, bool gpu) {
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    const bool is_gpu = trace::is_gpu_op(t.ops.kind[i]);
    if (t.ops.correlation[i] == corr && (gpu ? is_gpu : trace::is_api_call(t.ops.kind[i]))) {
      return i;
    }
  }
  ADD_FAILURE() << "no " << (gpu ? "GPU op" : "API call") << " with correlation " << corr;
  return UINT32_MAX;
}

/// Graph node of trace row `row`, or UINT32_MAX (with a failure) when it is not a node.
inline std::uint32_t node_of_row(const DepGraph& g, std::uint32_t row) {
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (g.op[n] == row) return n;
  }
  ADD_FAILURE() << "trace row " << row << " is not a graph node";
  return UINT32_MAX;
}
inline std::uint32_t api_node(const trace::Trace& t, const DepGraph& g, std::int64_t corr) {
  return node_of_row(g, row_of(t, corr, false));
}
inline std::uint32_t gpu_node(const trace::Trace& t, const DepGraph& g, std::int64_t corr) {
  return node_of_row(g, row_of(t, corr, true));
}
inline bool has_node(const DepGraph& g, std::uint32_t row) {
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (g.op[n] == row) return true;
  }
  return false;
}

/// One edge of the graph, as the tests look at it.
struct EdgeView {
  std::uint32_t from_tp;
  std::uint32_t to_tp;
  TimeNs lag;
  EdgeType type;
  bool inferred;
};

inline std::vector<EdgeView> all_edges(const DepGraph& g) {
  std::vector<EdgeView> out;
  for (std::uint32_t t = 0; t + 1 < g.in_begin.size(); ++t) {
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) {
      out.push_back({g.in_from[k], t, g.in_lag[k], g.in_type[k], g.in_inferred[k] != 0});
    }
  }
  return out;
}

/// The edges from timepoint `from` to timepoint `to`.
inline std::vector<EdgeView> edges_between(const DepGraph& g, std::uint32_t from, std::uint32_t to) {
  std::vector<EdgeView> out;
  for (const EdgeView& e : all_edges(g)) {
    if (e.from_tp == from && e.to_tp == to) out.push_back(e);
  }
  return out;
}

/// Expects exactly one edge from -> to, of `type`, with `lag` and the given inferred flag.
inline void expect_edge(const DepGraph& g, std::uint32_t from, std::uint32_t to, EdgeType type,
                        TimeNs lag, bool inferred = false) {
  const auto es = edges_between(g, from, to);
  ASSERT_EQ(es.size(), 1u) << "edges from tp " << from << " to tp " << to;
  EXPECT_EQ(es[0].type, type) << graph::edge_type_name(es[0].type);
  EXPECT_EQ(es[0].lag, lag) << graph::edge_type_name(type);
  EXPECT_EQ(es[0].inferred, inferred) << graph::edge_type_name(type);
}

inline std::int64_t count(const DepGraph& g, EdgeType type) {
  return g.stats.edges[static_cast<int>(type)];
}
inline std::int64_t count_inferred(const DepGraph& g, EdgeType type) {
  return g.stats.inferred_edges[static_cast<int>(type)];
}

/// Replaying with the graph's own durations reproduces every recorded start and end.
inline void expect_exact_replay(const DepGraph& g) {
  const timing::Schedule s = timing::replay(g, g.dur);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    EXPECT_EQ(s.start(n), g.rec_start[n]) << "start of node " << n << " (row " << g.op[n] << ")";
    EXPECT_EQ(s.end(n), g.rec_end[n]) << "end of node " << n << " (row " << g.op[n] << ")";
  }
  EXPECT_EQ(timing::replay_error(g, s), 0.0);
}

}  // namespace emo::testing

namespace emo::testing {

/// The reference case. One CPU thread (pid 100, tid 1):
///   [0,10)   cudaLaunchKernel corr 1 -> k_short on stream 8, [12, 52)    (launch latency 12)
///   [15,25)  cudaLaunchKernel corr 2 -> k_long  on stream 7, [30, 130)   (launch latency 15)
///   [30,130) cudaDeviceSynchronize corr 3 (returns the moment k_long ends)
/// with a Context Sync record for corr 3 when `with_record`. k_long is critical; k_short has
/// 130 - 52 = 78 ns of slack; GPU 0 is busy [12, 130) and only k_short runs in [12, 30).
inline trace::Trace two_streams(bool with_record = true) {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 10, 1);
  h.kernel("k_short", 12, 40, 8, 1);
  h.call("cudaLaunchKernel", 15, 10, 2);
  h.kernel("k_long", 30, 100, 7, 2);
  h.call("cudaDeviceSynchronize", 30, 100, 3);
  if (with_record) h.sync(SyncKind::kContextSync, 30, 100, 3, 0);
  return h.finish();
}

/// Cross-stream wait. One thread:
///   [0,5)    cudaLaunchKernel corr 1 -> kA on stream 20, [10, 110)
///   [10,15)  cudaEventRecord corr 2 (records after kA on stream 20)
///   [20,25)  cudaStreamWaitEvent corr 3 (stream 24 waits for that event)
///   [30,35)  cudaMemsetAsync corr 4 -> mB memset on stream 24, [112, 122)
///   [40,125) cudaStreamSynchronize corr 5 (stream 24)
/// With records (Stream Wait Event, Stream Sync) when `with_records`.
inline trace::Trace stream_wait(bool with_records = true) {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 5, 1);
  h.kernel("kA", 10, 100, 20, 1);
  h.call("cudaEventRecord", 10, 5, 2);
  h.call("cudaStreamWaitEvent", 20, 5, 3);
  h.call("cudaMemsetAsync", 30, 5, 4);
  h.gpu(OpKind::kMemset, "mB", 112, 10, 24, 4);
  h.call("cudaStreamSynchronize", 40, 85, 5);
  if (with_records) {
    h.sync(SyncKind::kStreamWaitEvent, 20, 1, 3, 0, /*stream=*/24, /*event_stream=*/20,
           /*record_corr=*/2);
    h.sync(SyncKind::kStreamSync, 40, 85, 5, 0, /*stream=*/24);
  }
  return h.finish();
}

/// A blocking copy, then a kernel on the same stream:
///   [0,50)  cudaMemcpy corr 1 -> memcpy on stream 7, [10, 45)
///   [55,60) cudaLaunchKernel corr 2 -> k on stream 7, [62, 80)
/// A synchronous device-to-host copy (the host waits for the copy to end), then a kernel.
inline trace::Trace blocking_copy() {
  HandTrace h;
  h.call("cudaMemcpy", 0, 50, 1);
  h.gpu(OpKind::kMemcpy, "Memcpy DtoH", 10, 35, 7, 1);
  h.call("cudaLaunchKernel", 55, 5, 2);
  h.kernel("k", 62, 18, 7, 2);
  return h.finish();
}

}  // namespace emo::testing
