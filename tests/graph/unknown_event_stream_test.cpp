// Issue 31: a sync record that names no event stream (Kineto `cuda_sync` "Event Sync" or "Stream
// Wait Event" without `wait_on_stream`, an nsys SYNCHRONIZATION row whose cudaEventRecord was not
// found) waits, conservatively, for every stream of the device; a stream id that is recorded but
// runs nothing still adds no edge. Every expected edge, lag and slack below is worked by hand from
// the times written next to the rows.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <utility>

#include "graph/dep_graph.h"
#include "graph/hand_trace.h"
#include "output/analysis_output.h"
#include "test_data.h"
#include "timing/analysis.h"
#include "trace/nsys/nsys_reader.h"

namespace emo::testing {
namespace {

constexpr auto S = DepGraph::start_tp;
constexpr auto E = DepGraph::end_tp;
constexpr TimeNs kUs = 1000;
constexpr TimeNs kMs = 1000 * kUs;
using timing::BoundBy;

/// The trace, one thread, one stream:
///   [0, 5) µs      cudaLaunchKernel corr 1 -> GEMM on stream 7, [10, 1010) µs (1 ms)
///   [6, 8) µs      cudaEventRecord corr 2 (after the GEMM's launch)
///   [9, 1012) µs   cudaEventSynchronize corr 3 (1.003 ms): returns 2 µs after the GEMM ends
/// with its "Event Sync" record naming the record's correlation and `event_stream` (kNone: the
/// record has no `wait_on_stream`).
trace::Trace gemm_then_event_sync(std::int64_t event_stream) {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 5 * kUs, 1);
  h.kernel("ampere_sgemm_128x64_tn", 10 * kUs, kMs, 7, 1);
  h.call("cudaEventRecord", 6 * kUs, 2 * kUs, 2);
  h.call("cudaEventSynchronize", 9 * kUs, 1003 * kUs, 3);
  h.sync(SyncKind::kEventSync, 9 * kUs, 1003 * kUs, 3, 0, kNone, event_stream, /*record_corr=*/2);
  return h.finish();
}

/// What `emo analyze` must say of gemm_then_event_sync whether the event stream is recorded (7)
/// or not (kNone): the sync waits for the GEMM, so the trace is GPU-bound and the GEMM has no
/// slack. By hand: makespan 1012 µs from the launch's start; path launch call -> GEMM (launch
/// overhead 10 µs) -> 1000 µs of GEMM -> the sync's return 2 µs later; gpu_compute 1000/1012 =
/// 98.8 % of the makespan.
void expect_gpu_bound(std::int64_t event_stream) {
  const trace::Trace t = gemm_then_event_sync(event_stream);
  const timing::Analysis a = timing::analyze(t, {}, {});
  const DepGraph& g = a.graph;
  const bool unknown = event_stream == kNone;
  const auto gemm = gpu_node(t, g, 1), sync = api_node(t, g, 3);
  expect_edge(g, E(gemm), E(sync), EdgeType::kHostSync, 2 * kUs, /*inferred=*/unknown);
  EXPECT_EQ(g.stats.unknown_event_streams, unknown ? 1 : 0);
  EXPECT_EQ(count_inferred(g, EdgeType::kHostSync), unknown ? 1 : 0);
  EXPECT_EQ(g.stats.dropped_inferred_edges, 0);
  expect_exact_replay(g);
  EXPECT_EQ(a.schedule.makespan_ns, 1012 * kUs);
  EXPECT_EQ(a.node_slack[gemm], 0);
  EXPECT_EQ(a.path.bound_by.ns[BoundBy::kGpuCompute], kMs);
  EXPECT_EQ(a.path.bound_by.ns[BoundBy::kSyncWait], 2 * kUs);
  EXPECT_NEAR(a.path.share_of_makespan(BoundBy::kGpuCompute), 1000.0 / 1012.0, 1e-12);
  ASSERT_EQ(a.gpus.size(), 1u);
  EXPECT_EQ(a.gpus[0].busy_ns, kMs);
  EXPECT_EQ(a.gpus[0].critical_busy_ns, kMs);
  EXPECT_EQ(a.gpus[0].slack_ns, 0);
  const std::string text = output::to_text(t, a);
  const std::string line = "1 sync records name no event stream: waited for every stream";
  EXPECT_EQ(text.find(line) != std::string::npos, unknown) << text;
  EXPECT_NE(text.find("gpu_compute 98.8 %"), std::string::npos) << text;
}

TEST(UnknownEventStream, EventSyncWithoutEventStreamWaitsForTheGemm) { expect_gpu_bound(kNone); }

TEST(UnknownEventStream, EventSyncWithItsStreamIsTheSameButNotInferred) { expect_gpu_bound(7); }

TEST(UnknownEventStream, EventStreamThatRunsNothingAddsNoEdge) {
  // Stream 21 is recorded but runs nothing: nothing to wait for (as before issue 31), so the sync
  // is CPU time and the GEMM ends 2 µs before the window's end with nothing after it: slack
  // 2 µs, the whole 1 ms of GPU busy time a slack window.
  const trace::Trace t = gemm_then_event_sync(21);
  const timing::Analysis a = timing::analyze(t, {}, {});
  const DepGraph& g = a.graph;
  EXPECT_EQ(count(g, EdgeType::kHostSync), 0);
  EXPECT_EQ(g.stats.unknown_event_streams, 0);
  expect_exact_replay(g);
  EXPECT_EQ(a.node_slack[gpu_node(t, g, 1)], 2 * kUs);
  ASSERT_EQ(a.gpus.size(), 1u);
  EXPECT_EQ(a.gpus[0].slack_ns, kMs);
  EXPECT_EQ(output::to_text(t, a).find("name no event stream"), std::string::npos);
}

TEST(UnknownEventStream, EventSyncWaitsForEveryStreamUpToTheRecord) {
  // Two streams on one thread:
  //   [0, 5) µs    launch corr 1 -> GEMM on stream 7, [10, 1010)
  //   [5, 8) µs    launch corr 2 -> k2 on stream 8, [12, 812)
  //   [8, 10) µs   cudaEventRecord corr 3
  //   [10, 13) µs  launch corr 4 -> k3 on stream 8, [812, 912): launched after the record
  //   [13, 1012) µs cudaEventSynchronize corr 5, its record naming no event stream
  // The sync waits for the last op launched before the record on both streams (GEMM binding,
  // 2 µs return latency; k2 lag 0), not for k3. k3 ends 100 µs before the window's end with
  // nothing after it, so it and k2 before it on stream 8 have 100 µs of slack; the GEMM none.
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 5 * kUs, 1);
  h.kernel("ampere_sgemm_128x64_tn", 10 * kUs, kMs, 7, 1);
  h.call("cudaLaunchKernel", 5 * kUs, 3 * kUs, 2);
  h.kernel("vectorized_elementwise_kernel", 12 * kUs, 800 * kUs, 8, 2);
  h.call("cudaEventRecord", 8 * kUs, 2 * kUs, 3);
  h.call("cudaLaunchKernel", 10 * kUs, 3 * kUs, 4);
  h.kernel("reduce_kernel", 812 * kUs, 100 * kUs, 8, 4);
  h.call("cudaEventSynchronize", 13 * kUs, 999 * kUs, 5);
  h.sync(SyncKind::kEventSync, 13 * kUs, 999 * kUs, 5, 0, kNone, kNone, /*record_corr=*/3);
  const trace::Trace t = h.finish();
  const timing::Analysis a = timing::analyze(t, {}, {});
  const DepGraph& g = a.graph;
  const auto gemm = gpu_node(t, g, 1), k2 = gpu_node(t, g, 2), k3 = gpu_node(t, g, 4);
  const auto sync = api_node(t, g, 5);
  expect_edge(g, E(gemm), E(sync), EdgeType::kHostSync, 2 * kUs, /*inferred=*/true);
  expect_edge(g, E(k2), E(sync), EdgeType::kHostSync, 0, /*inferred=*/true);
  EXPECT_TRUE(edges_between(g, E(k3), E(sync)).empty());
  EXPECT_EQ(count_inferred(g, EdgeType::kHostSync), 2);
  EXPECT_EQ(g.stats.unknown_event_streams, 1);
  expect_exact_replay(g);
  EXPECT_EQ(a.node_slack[gemm], 0);
  EXPECT_EQ(a.node_slack[k2], 100 * kUs);
  EXPECT_EQ(a.node_slack[k3], 100 * kUs);
}

/// A stream wait: ka on stream 7 [10, 60) and kb on stream 9 [12, 40) launched before the
/// cudaEventRecord at [8, 10); cudaStreamWaitEvent [10, 12) makes stream 8 wait; kc on stream 8
/// launched at [12, 15) starts at 60, when ka ends. The record names the waiting stream 8 and
/// `event_stream`.
trace::Trace stream_wait(std::int64_t event_stream, std::int64_t waiting_stream = 8) {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 5, 1);
  h.kernel("ka", 10, 50, 7, 1);
  h.call("cudaLaunchKernel", 5, 3, 2);
  h.kernel("kb", 12, 28, 9, 2);
  h.call("cudaEventRecord", 8, 2, 3);
  h.call("cudaStreamWaitEvent", 10, 2, 4);
  h.sync(SyncKind::kStreamWaitEvent, 10, 2, 4, 0, waiting_stream, event_stream, /*record_corr=*/3);
  h.call("cudaLaunchKernel", 12, 3, 5);
  h.kernel("kc", 60, 20, 8, 5);
  return h.finish();
}

TEST(UnknownEventStream, StreamWaitWithoutEventStreamWaitsForEveryOtherStream) {
  const trace::Trace t = stream_wait(kNone);
  const DepGraph g = graph::build_graph(t);
  const auto ka = gpu_node(t, g, 1), kb = gpu_node(t, g, 2), kc = gpu_node(t, g, 5);
  expect_edge(g, E(ka), S(kc), EdgeType::kEventWait, 0, /*inferred=*/true);  // binding: ends at 60
  expect_edge(g, E(kb), S(kc), EdgeType::kEventWait, 0, /*inferred=*/true);
  EXPECT_EQ(count(g, EdgeType::kEventWait), 2);
  EXPECT_EQ(g.stats.unknown_event_streams, 1);
  expect_exact_replay(g);

  const trace::Trace known = stream_wait(7);
  const DepGraph gk = graph::build_graph(known);
  expect_edge(gk, E(gpu_node(known, gk, 1)), S(gpu_node(known, gk, 5)), EdgeType::kEventWait, 0);
  EXPECT_EQ(count(gk, EdgeType::kEventWait), 1);
  EXPECT_EQ(gk.stats.unknown_event_streams, 0);
}

TEST(UnknownEventStream, StreamWaitOnStreamsThatRunNothingAddsNoEdge) {
  for (const auto& [event_stream, waiting] : {std::pair<std::int64_t, std::int64_t>{21, 8}, {kNone, 21}}) {
    const trace::Trace t = stream_wait(event_stream, waiting);
    const DepGraph g = graph::build_graph(t);
    EXPECT_EQ(count(g, EdgeType::kEventWait), 0) << event_stream << " " << waiting;
    EXPECT_EQ(g.stats.unknown_event_streams, 0);
    expect_exact_replay(g);
  }
}

// --- nsys -------------------------------------------------------------------------------------

constexpr std::int64_t kNsysPid = 4242;
constexpr std::int64_t kGlobalPid = (std::int64_t{1} << 48) | (kNsysPid << 24);
constexpr std::int64_t kGlobalTid = kGlobalPid | 4243;

/// The trace as an nsys export (ns): the GEMM launched at [0, 5000) runs [10000, 1010000)
/// on stream 7; cudaEventRecord [6000, 8000); cudaEventSynchronize [9000, 1012000) with its
/// SYNCHRONIZATION row (syncType 1, event 5, stream 4294967295 = none). With `record`, the
/// CUDA_EVENT table holds the record of event 5 on stream 7; without it the event's stream and
/// record are unknown, and the sync waits for what was launched before the wait call.
std::string nsys_export(const std::string& name, bool record) {
  const std::string path = (scratch_dir("unknown-event-stream") / name).string();
  std::filesystem::remove(path);
  const std::string gtid = std::to_string(kGlobalTid), gpid = std::to_string(kGlobalPid);
  const std::string sql =
      "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO StringIds VALUES (1, 'ampere_sgemm_128x64_tn'), (2, 'cudaLaunchKernel_v7000'),"
      "  (3, 'cudaEventRecord_v3020'), (4, 'cudaEventSynchronize_v3020');"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL,"
      "  deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,"
      "  globalPid INTEGER, demangledName INTEGER, shortName INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL,"
      "  eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT(deviceId INTEGER, contextId INTEGER,"
      "  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, eventId INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start INTEGER NOT NULL, end INTEGER NOT NULL,"
      "  deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,"
      "  globalPid INTEGER, syncType INTEGER, eventId INTEGER);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (0, 5000, 0, " + gtid + ", 1, 2),"
      "  (6000, 8000, 0, " + gtid + ", 2, 3), (9000, 1012000, 0, " + gtid + ", 3, 4);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10000, 1010000, 0, 1, 7, 1, " + gpid + ", 1, 1);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES"
      "  (9500, 1011500, 0, 1, 4294967295, 3, " + gpid + ", 1, 5);" +
      (record ? "INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (0, 1, 7, 2, " + gpid + ", 5);" : "");
  sqlite3* db = nullptr;
  char* err = nullptr;
  const bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
                  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK;
  const std::string why = err != nullptr ? err : (db != nullptr ? sqlite3_errmsg(db) : "open failed");
  sqlite3_free(err);
  sqlite3_close(db);
  if (!ok) ADD_FAILURE() << path << ": " << why;
  return path;
}

TEST(UnknownEventStream, NsysSyncRowWithoutItsEventRecordWaitsForEveryStream) {
  for (const bool record : {false, true}) {
    SCOPED_TRACE(record ? "record of event 5 on stream 7" : "no record of event 5");
    const trace::Trace t = trace::read_nsys_sqlite(nsys_export(record ? "with.sqlite" : "without.sqlite", record));
    ASSERT_EQ(t.syncs.size(), 1u);
    EXPECT_EQ(t.syncs.kind[0], SyncKind::kEventSync);
    EXPECT_EQ(t.syncs.event_stream[0], record ? 7 : kNone);
    const timing::Analysis a = timing::analyze(t, {}, {});
    const DepGraph& g = a.graph;
    // Same edge and figures as the Kineto trace of the issue: only the flag and count differ.
    expect_edge(g, E(gpu_node(t, g, 1)), E(api_node(t, g, 3)), EdgeType::kHostSync, 2 * kUs, !record);
    EXPECT_EQ(g.stats.unknown_event_streams, record ? 0 : 1);
    expect_exact_replay(g);
    EXPECT_EQ(a.node_slack[gpu_node(t, g, 1)], 0);
    ASSERT_EQ(a.gpus.size(), 1u);
    EXPECT_EQ(a.gpus[0].slack_ns, 0);
  }
}

}  // namespace
}  // namespace emo::testing
