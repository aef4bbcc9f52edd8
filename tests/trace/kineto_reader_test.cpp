// Hand-built Kineto traces, one per quirk of real files, with known answers.
#include "trace/kineto/kineto_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "trace/kineto/kineto_writer.h"

namespace emo::trace {
namespace {

using ::testing::HasSubstr;

PaddedBuffer buffer_of(const std::string& text) {
  PaddedBuffer b(text.size());
  std::memcpy(b.data(), text.data(), text.size());
  return b;
}

Trace parse(const std::string& text, std::size_t chunk_bytes = 8u << 20,
            KinetoStats* stats = nullptr) {
  PaddedBuffer b = buffer_of(text);
  return read_kineto_json(b, "test.json", KinetoOptions{chunk_bytes, stats});
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::size_t count_kind(const Trace& t, OpKind k) {
  std::size_t n = 0;
  for (OpKind x : t.ops.kind) n += x == k;
  return n;
}

// A kernel, its launch, and a cpu_op, in the current category names.
const char* kSmall = R"({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920,
                        "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 100.5, "dur": 20,
     "args": {"External id": 7, "Input Dims": [[2, 2], [2, 2]]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11,
     "ts": 105, "dur": 5, "args": {"External id": 7, "cbid": 211, "correlation": 42}},
    {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 112.25,
     "dur": 30.001, "args": {"External id": 7, "device": 0, "stream": 7, "correlation": 42}},
    {"ph": "s", "id": 42, "pid": 10, "tid": 11, "ts": 105, "cat": "ac2g", "name": "ac2g"},
    {"name": "thread_name", "ph": "M", "pid": 10, "tid": 11, "args": {"name": "main"}}
  ],
  "traceName": "small.json"
})";

TEST(KinetoReader, SmallTraceRowsAndMetadata) {
  const Trace t = parse(kSmall);
  ASSERT_EQ(t.ops.size(), 3u);
  EXPECT_EQ(t.meta.rank, 3);
  EXPECT_EQ(t.meta.world_size, 8);
  EXPECT_EQ(t.meta.backend, "nccl");
  ASSERT_EQ(t.meta.gpus.size(), 1u);
  EXPECT_EQ(t.meta.gpus[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(t.meta.gpus[0].sm_count, 108);
  // Sorted by start: cpu_op (100.5 us), launch (105 us), kernel (112.25 us).
  EXPECT_EQ(t.ops.kind[0], OpKind::kFrameworkOp);
  EXPECT_EQ(t.ops.start_ns[0], 100500);
  EXPECT_EQ(t.ops.dur_ns[0], 20000);
  EXPECT_EQ(t.ops.process[0], 10);
  EXPECT_EQ(t.ops.thread[0], 11);
  EXPECT_EQ(t.ops.external_id[0], 7);
  EXPECT_EQ(t.ops.kind[1], OpKind::kRuntime);
  EXPECT_EQ(t.ops.correlation[1], 42);
  EXPECT_EQ(t.ops.kind[2], OpKind::kKernel);
  EXPECT_EQ(t.strings.view(t.ops.name[2]), "gemm_kernel");
  EXPECT_EQ(t.ops.start_ns[2], 112250);
  EXPECT_EQ(t.ops.dur_ns[2], 30001);
  EXPECT_EQ(t.ops.device[2], 0);
  EXPECT_EQ(t.ops.stream[2], 7);
  EXPECT_EQ(t.ops.process[2], kNone);
  EXPECT_EQ(t.quirks.out_of_order, 0);
  EXPECT_EQ(t.quirks.gpu_ops_without_launch, 0);
  EXPECT_EQ(t.quirks.ignored_events, 1);  // the flow event
  EXPECT_TRUE(t.warnings.empty()) << t.warnings.front();
}

TEST(KinetoReader, MetadataAfterTraceEvents) {
  const Trace t = parse(R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 3, "ts": 5, "dur": 1,
       "args": {"device": 1, "stream": 3, "correlation": 1}}],
    "distributedInfo": {"rank": 1, "world_size": 2},
    "deviceProperties": [{"id": 1, "name": "NVIDIA H100"}],
    "baseTimeNanoseconds": 1700000000000000000})");
  EXPECT_EQ(t.meta.rank, 1);
  EXPECT_EQ(t.meta.world_size, 2);
  EXPECT_EQ(t.gpu_name(1), "NVIDIA H100");
  // baseTimeNanoseconds is added to every timestamp, wherever it appears.
  EXPECT_EQ(t.ops.start_ns[0], 1700000000000005000LL);
}

TEST(KinetoReader, ExactTimestampsOfEpochMicroseconds) {
  const Trace t = parse(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k",
      "pid": 0, "tid": 7, "ts": 1712195495519689.047, "dur": 4.928,
      "args": {"device": 0, "stream": 7, "correlation": 1}}]})");
  EXPECT_EQ(t.ops.start_ns[0], 1712195495519689047LL);
  EXPECT_EQ(t.ops.dur_ns[0], 4928);
}

TEST(KinetoReader, Categories2021Era) {
  const Trace t = parse(R"({"traceEvents": [
    {"ph": "X", "cat": "Operator", "name": "aten::add", "pid": 25738, "tid": "25738", "ts": 1, "dur": 9},
    {"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 25738, "tid": "25738", "ts": 2,
     "dur": 3, "args": {"cbid": 41, "correlation": 34417, "external id": 537}},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": "stream 7", "ts": 4, "dur": 2,
     "args": {"device": 0, "context": 1, "stream": 7, "correlation": 34417}},
    {"ph": "X", "cat": "Memset", "name": "Memset", "pid": 0, "tid": "stream 9 ", "ts": 6, "dur": 1,
     "args": {"correlation": 5}},
    {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 8, "dur": 1,
     "args": {"device": 0, "stream": 7, "correlation": 6}}]})");
  EXPECT_EQ(count_kind(t, OpKind::kFrameworkOp), 1u);
  EXPECT_EQ(count_kind(t, OpKind::kRuntime), 1u);
  EXPECT_EQ(count_kind(t, OpKind::kMemcpy), 1u);
  EXPECT_EQ(count_kind(t, OpKind::kMemset), 1u);
  EXPECT_EQ(count_kind(t, OpKind::kKernel), 1u);
  EXPECT_EQ(t.ops.thread[0], 25738);  // "25738" as a string
  EXPECT_EQ(t.ops.external_id[1], 537);  // lower-case "external id"
  // The memset has no args.stream/device: stream from tid "stream 9 ", device from pid.
  EXPECT_EQ(t.ops.stream[3], 9);
  EXPECT_EQ(t.ops.device[3], 0);
  EXPECT_GT(t.quirks.string_ids, 0);
  EXPECT_EQ(t.quirks.gpu_ops_without_launch, 2);  // memset and kernel have no runtime call
}

TEST(KinetoReader, RocmHipCallsStringStreamsAndBaseTime) {
  const Trace t = parse(R"({"deviceProperties": [{"id": 0, "name": "AMD Radeon Graphics"}],
    "traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 5, "tid": 5,
     "ts": 4203669603752.847, "dur": 11.502, "args": {"stream": "0x0", "correlation": 118}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 5, "tid": 5,
     "ts": 4203669603760.0, "dur": 1, "args": {"stream": "0x7f3a", "correlation": 119}},
    {"ph": "X", "cat": "kernel", "name": "elementwise", "pid": 2, "tid": 0,
     "ts": 4203669603800.5, "dur": 3, "args": {"device": 2, "stream": 0, "correlation": 118}}],
    "displayTimeUnit": "ms", "baseTimeNanoseconds": 1735632360000000000})");
  EXPECT_EQ(count_kind(t, OpKind::kRuntime), 2u);
  EXPECT_EQ(t.strings.view(t.ops.name[0]), "hipLaunchKernel");
  EXPECT_EQ(t.ops.start_ns[0], 1735632360000000000LL + 4203669603752847LL);
  EXPECT_EQ(t.ops.device[2], 2);
  EXPECT_EQ(t.quirks.string_ids, 2);
  EXPECT_EQ(t.quirks.gpu_ops_without_launch, 0);
}

TEST(KinetoReader, DriverApiLaunch) {
  const Trace t = parse(R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 1, "tid": 1, "ts": 10,
     "dur": 47.768, "args": {"cbid": 307, "correlation": 35}},
    {"ph": "X", "cat": "kernel", "name": "triton_poi_fused", "pid": 0, "tid": 7, "ts": 50,
     "dur": 1.76, "args": {"device": 0, "stream": 7, "correlation": 35}}]})");
  EXPECT_EQ(t.ops.kind[0], OpKind::kDriver);
  EXPECT_TRUE(is_api_call(t.ops.kind[0]));
  EXPECT_EQ(t.quirks.gpu_ops_without_launch, 0);
}

TEST(KinetoReader, CudaSyncRecordsWithWaitOnArgs) {
  const Trace t = parse(R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 24, "ts": 1,
     "dur": 2, "args": {"cuda_sync_kind": "Stream Wait Event", "wait_on_stream": 20,
     "wait_on_cuda_event_record_corr_id": 1385, "wait_on_cuda_event_id": 19, "stream": 24,
     "correlation": 1389, "device": 0, "context": 1}},
    {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": -1, "ts": 3, "dur": 4,
     "args": {"cuda_sync_kind": "Event Sync", "wait_on_stream": -1,
     "wait_on_cuda_event_record_corr_id": -1, "wait_on_cuda_event_id": 9, "stream": -1,
     "correlation": 24, "device": 0}},
    {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": 7, "ts": 8, "dur": 1,
     "args": {"stream": 4294967295, "correlation": 30, "device": 0}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 9, "dur": 1,
     "args": {"cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": 31, "device": 0}}]})");
  ASSERT_EQ(t.syncs.size(), 4u);
  EXPECT_EQ(t.syncs.kind[0], SyncKind::kStreamWaitEvent);
  EXPECT_EQ(t.syncs.stream[0], 24);
  EXPECT_EQ(t.syncs.event_stream[0], 20);
  EXPECT_EQ(t.syncs.event_record_correlation[0], 1385);
  EXPECT_EQ(t.syncs.event_id[0], 19);
  EXPECT_EQ(t.syncs.kind[1], SyncKind::kEventSync);
  EXPECT_EQ(t.syncs.stream[1], kNone);
  EXPECT_EQ(t.syncs.event_record_correlation[1], kNone);
  EXPECT_EQ(t.syncs.event_stream[1], kNone);  // "wait_on_stream": -1 (issue 31: unknown)
  EXPECT_EQ(t.syncs.event_stream[3], kNone);  // no wait_on_stream at all
  EXPECT_EQ(t.syncs.kind[2], SyncKind::kContextSync);  // from the name: no cuda_sync_kind
  EXPECT_EQ(t.syncs.stream[2], kNone);                 // 4294967295 is uint32 -1
  EXPECT_EQ(t.syncs.kind[3], SyncKind::kStreamSync);
  EXPECT_EQ(t.syncs.stream[3], 7);
  for (std::uint32_t row : t.syncs.op) EXPECT_EQ(t.ops.kind[row], OpKind::kSync);
}

TEST(KinetoReader, CollectiveMetadataAndNameFallback) {
  const Trace t = parse(R"J({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)",
     "pid": 0, "tid": 40, "ts": 1, "dur": 2636.669, "args": {"device": 0, "stream": 40,
     "correlation": 1, "Collective name": "allreduce", "In msg nelems": 6637568,
     "Out msg nelems": 6637568, "Group size": 2, "dtype": "Float", "Process Group Name": "0",
     "Process Group Ranks": "[0, 1]", "Seq": 12}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long)",
     "pid": 0, "tid": 84, "ts": 5, "dur": 1, "args": {"device": 0, "stream": 84, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "not_a_collective", "pid": 0, "tid": 7, "ts": 6, "dur": 1,
     "args": {"device": 0, "stream": 7, "correlation": 3}}]})J");
  ASSERT_EQ(t.collectives.size(), 2u);
  EXPECT_EQ(t.strings.view(t.collectives.name[0]), "allreduce");
  EXPECT_EQ(t.collectives.group_size[0], 2);
  EXPECT_EQ(t.collectives.in_nelems[0], 6637568);
  EXPECT_EQ(t.strings.view(t.collectives.group[0]), "0");
  EXPECT_EQ(t.strings.view(t.collectives.group_ranks[0]), "[0, 1]");
  EXPECT_EQ(t.strings.view(t.collectives.dtype[0]), "Float");
  EXPECT_EQ(t.collectives.sequence[0], 12);
  EXPECT_EQ(t.strings.view(t.collectives.name[1]), "sendrecv");
  EXPECT_EQ(t.collectives.group_size[1], kNone);
  for (std::size_t c = 0; c < 2; ++c) {  // no "Src Rank" / "Dst Rank": not recorded
    EXPECT_EQ(t.collectives.src_rank[c], kNone);
    EXPECT_EQ(t.collectives.dst_rank[c], kNone);
  }
}

// Point-to-point ops: PyTorch writes the peer's global rank on the record_param_comms CPU op of a
// send ("Dst Rank") or recv ("Src Rank"), and Kineto copies those args onto the NCCL kernel the
// op launched, where the reader takes them (a CPU op is never a collective row). A kernel may
// also carry both; a negative rank is taken as not recorded. The writer writes them back.
TEST(KinetoReader, PointToPointSrcAndDstRanks) {
  const Trace t = parse(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1, "dur": 3,
     "args": {"External id": 5, "Collective name": "send", "Process Group Name": "0",
     "Process Group Ranks": "[0, 1, 2]", "Group size": 3, "Dst Rank": 2}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long)", "pid": 0,
     "tid": 84, "ts": 5, "dur": 2, "args": {"device": 0, "stream": 84, "correlation": 1, "External id": 5,
     "Collective name": "send", "Process Group Name": "0", "Process Group Ranks": "[0, 1, 2]", "Group size": 3,
     "Dst Rank": 2}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long)", "pid": 0,
     "tid": 84, "ts": 8, "dur": 2, "args": {"device": 0, "stream": 84, "correlation": 2,
     "Collective name": "recv", "Src Rank": 1}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long)", "pid": 0,
     "tid": 84, "ts": 11, "dur": 2, "args": {"device": 0, "stream": 84, "correlation": 3,
     "Collective name": "send", "Src Rank": 0, "Dst Rank": 7}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long)", "pid": 0,
     "tid": 84, "ts": 14, "dur": 2, "args": {"device": 0, "stream": 84, "correlation": 4,
     "Collective name": "recv", "Src Rank": -1}}]})J");
  ASSERT_EQ(t.collectives.size(), 4u);  // the kernels; the CPU op is no collective
  const CollectiveTable& c = t.collectives;
  EXPECT_EQ(c.src_rank, (std::vector<std::int32_t>{-1, 1, 0, -1}));
  EXPECT_EQ(c.dst_rank, (std::vector<std::int32_t>{2, -1, 7, -1}));
  EXPECT_EQ(t.strings.view(c.name[0]), "send");
  EXPECT_EQ(t.strings.view(c.group_ranks[0]), "[0, 1, 2]");
  EXPECT_EQ(c.sequence[0], kNone);  // no Seq on these p2p ops

  const Trace back = parse(to_kineto_json(t));
  EXPECT_EQ(back.collectives.src_rank, c.src_rank);
  EXPECT_EQ(back.collectives.dst_rank, c.dst_rank);
}

TEST(KinetoReader, UnsortedEventsAreSortedAndSideTablesFollow) {
  const Trace t = parse(R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 30, "dur": 1,
     "args": {"stream": 7, "correlation": 3, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_Broadcast_RING", "pid": 0, "tid": 7,
     "ts": 20, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "first", "pid": 0, "tid": 7, "ts": 10, "dur": 1,
     "args": {"device": 0, "stream": 7, "correlation": 1}}]})");
  EXPECT_EQ(t.quirks.out_of_order, 2);
  EXPECT_EQ(t.ops.start_ns[0], 10000);
  EXPECT_EQ(t.ops.start_ns[2], 30000);
  EXPECT_EQ(t.ops.kind[t.syncs.op[0]], OpKind::kSync);
  EXPECT_EQ(t.ops.start_ns[t.syncs.op[0]], 30000);
  EXPECT_EQ(t.strings.view(t.ops.name[t.collectives.op[0]]), "ncclKernel_Broadcast_RING");
  EXPECT_THAT(t.warnings.front(), HasSubstr("not sorted"));
}

TEST(KinetoReader, ChildPokingPastParentIsClamped) {
  // The runtime call ends 0.25 us after its cpu_op parent: clamped. The second pair overlaps by
  // 5 us, more than the tolerance: not a nesting quirk, left alone.
  const Trace t = parse(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "parent", "pid": 1, "tid": 1, "ts": 100, "dur": 10},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
     "ts": 105, "dur": 5.25, "args": {"correlation": 9}},
    {"ph": "X", "cat": "cpu_op", "name": "p2", "pid": 1, "tid": 1, "ts": 200, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "c2", "pid": 1, "tid": 1, "ts": 205, "dur": 10}]})");
  EXPECT_EQ(t.quirks.clamped_children, 1);
  EXPECT_EQ(t.quirks.max_clamp_ns, 250);
  EXPECT_EQ(t.ops.end_ns(1), t.ops.end_ns(0));
  EXPECT_EQ(t.ops.dur_ns[3], 10000);
  EXPECT_THAT(t.warnings.front(), HasSubstr("clamped"));
}

TEST(KinetoReader, DuplicatedCorrelationsAndGpuOpsWithoutLaunch) {
  const Trace t = parse(R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 1,
     "dur": 1, "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 3, "dur": 1,
     "args": {"device": 0, "stream": 7, "correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 4, "dur": 1,
     "args": {"device": 0, "stream": 7, "correlation": 5}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "orphan", "pid": 0, "tid": 7, "ts": 6, "dur": 1,
     "args": {"device": 0, "stream": 7, "correlation": 77}}]})");
  EXPECT_EQ(t.quirks.duplicate_gpu_correlation, 2);
  EXPECT_EQ(t.quirks.gpu_ops_without_launch, 1);
  ASSERT_EQ(t.warnings.size(), 2u);
}

TEST(KinetoReader, ZeroAndNegativeDurations) {
  const Trace t = parse(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "z", "pid": 1, "tid": 1, "ts": 1, "dur": 0},
    {"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": 2, "dur": -3}]})");
  EXPECT_EQ(t.quirks.zero_duration, 1);
  EXPECT_EQ(t.quirks.negative_duration, 1);
  EXPECT_EQ(t.ops.dur_ns[1], 0);
}

TEST(KinetoReader, JsonArrayFormAndUnknownCategories) {
  const Trace t = parse(R"J([
    {"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "x",
     "ts": 1, "dur": 100},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0,
     "dur": 50}])J");
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops.kind[0], OpKind::kAnnotation);
  EXPECT_EQ(t.quirks.unknown_category, 1);
  EXPECT_EQ(t.quirks.ignored_events, 2);
}

TEST(KinetoReader, NonNumericHostIdsAreStableAndDistinct) {
  const Trace t = parse(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": "main", "tid": -3, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": "main", "tid": "worker", "ts": 2, "dur": 1}]})");
  const StringId main_id = t.strings.find("main");
  ASSERT_NE(main_id, StringTable::kNotFound);
  EXPECT_EQ(t.ops.process[0], host_id_of_string(main_id));
  EXPECT_EQ(t.ops.process[1], t.ops.process[0]);
  EXPECT_EQ(t.ops.thread[0], -3);  // a numeric negative tid stays itself
  EXPECT_EQ(t.strings.view(static_cast<StringId>(host_id_string(t.ops.thread[1]))), "worker");
  EXPECT_EQ(host_id_string(-3), -1);
}

TEST(KinetoReader, EscapedNamesAreUnescaped) {
  const Trace t = parse(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op",
      "name": "a\"b\\c\u00e9", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})");
  EXPECT_EQ(t.strings.view(t.ops.name[0]), "a\"b\\c\xc3\xa9");
}

// ---- chunking: the events array is split into pieces; results must not depend on where ------

std::string many_events(int n) {
  // Names and args contain the "},{" pattern that the fast cut looks for, inside strings and
  // inside nested objects, so that some fast cuts land in the wrong place and must be redone.
  std::string s = R"({"schemaVersion": 1, "traceEvents": [)";
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += ",\n";
    s += fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": "op}},{{{}", "pid": 1, "tid": {}, "ts": {}.{:03d},)"
        R"( "dur": 1.5, "args": {{"correlation": {}, "device": 0, "stream": 7,)"
        R"( "nested": [{{"a": 1}},  {{"b": "}} , {{"}}], "External id": {}}}}})",
        i % 3 == 0 ? "kernel" : "cpu_op", i, i % 4, 1000 + i, i % 1000, i, i);
  }
  s += R"(], "distributedInfo": {"rank": 0, "world_size": 1}})";
  return s;
}

TEST(KinetoReader, ChunkBoundariesDoNotChangeTheResult) {
  const std::string text = many_events(3000);
  const Trace whole = parse(text, 64u << 20);
  ASSERT_EQ(whole.ops.size(), 3000u);
  std::size_t recuts = 0;
  for (std::size_t chunk : {4096u, 5000u, 65536u}) {
    KinetoStats stats;
    const Trace t = parse(text, chunk, &stats);
    EXPECT_GT(stats.chunks, text.size() / chunk / 2) << chunk;
    recuts += stats.recut_chunks;
    ASSERT_EQ(t.ops.size(), whole.ops.size()) << chunk;
    EXPECT_EQ(t.ops.start_ns, whole.ops.start_ns) << chunk;
    EXPECT_EQ(t.ops.correlation, whole.ops.correlation) << chunk;
    EXPECT_EQ(t.ops.kind, whole.ops.kind) << chunk;
    EXPECT_EQ(t.meta.world_size, 1);
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
      ASSERT_EQ(t.strings.view(t.ops.name[i]), whole.strings.view(whole.ops.name[i]));
    }
  }
  EXPECT_GT(recuts, 0u) << "the input is built so that some fast cuts must be redone";
}

TEST(KinetoReader, ChunkedParseStillReportsErrorsInLaterChunks) {
  std::string text = many_events(2000);
  const std::string good = "\"ts\": 2900.900";
  const std::size_t at = text.find(good);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, good.size(), "\"ts\": \"x\"");
  try {
    parse(text, 4096);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("traceEvents[1900]"));
    EXPECT_THAT(e.what(), HasSubstr("'ts' is not a number"));
  }
}

// ---- bad input: one line, names the file and the problem -------------------------------------

TEST(KinetoReaderErrors, Malformed) {
  EXPECT_THAT(error_of(""), HasSubstr("empty"));
  EXPECT_THAT(error_of("   \n"), HasSubstr("empty"));
  EXPECT_THAT(error_of("{\"traceEvents\": [{\"ph\": \"X\""), HasSubstr("test.json: "));
  EXPECT_THAT(error_of("{\"traceEvents\": [{\"ph\": \"X\""), HasSubstr("not closed"));
  EXPECT_THAT(error_of("{\"traceEvents\": [{\"ph\": \"X\",}]}"), HasSubstr("invalid JSON"));
  EXPECT_THAT(error_of("{\"traceEvents\": []} trailing"), HasSubstr("after the end"));
  EXPECT_THAT(error_of("{\"schemaVersion\": 1}"), HasSubstr("no 'traceEvents'"));
  EXPECT_THAT(error_of("{\"traceEvents\": {}}"), HasSubstr("not an array"));
  EXPECT_THAT(error_of("{\"traceEvents\": [1]}"), HasSubstr("traceEvents[0]: event is not a JSON object"));
  EXPECT_THAT(error_of("[1, 2, 3]"), HasSubstr("traceEvents[0]: event is not a JSON object"));
  EXPECT_THAT(error_of("\"just a string\""), HasSubstr("not a trace"));
}

TEST(KinetoReaderErrors, WrongTypesAndMissingFields) {
  auto ev = [](const std::string& fields) {
    return "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", " + fields +
           "}]}";
  };
  EXPECT_THAT(error_of(ev("\"ts\": \"12\", \"dur\": 1")), HasSubstr("'ts' is not a number"));
  EXPECT_THAT(error_of(ev("\"ts\": 1, \"dur\": [1]")), HasSubstr("'dur' is not a number"));
  EXPECT_THAT(error_of(ev("\"dur\": 1")), HasSubstr("no 'ts'"));
  EXPECT_THAT(error_of(ev("\"ts\": 1")), HasSubstr("no 'dur'"));
  EXPECT_THAT(error_of(ev("\"ts\": 1, \"dur\": 1, \"pid\": {}")), HasSubstr("'pid'"));
  EXPECT_THAT(error_of(ev("\"ts\": 1, \"dur\": 1, \"args\": 3")), HasSubstr("'args' is not an object"));
  EXPECT_THAT(error_of(ev("\"ts\": 1, \"dur\": 1, \"args\": {\"correlation\": \"x\"}")),
              HasSubstr("args.correlation"));
  EXPECT_THAT(error_of("{\"traceEvents\": [{\"cat\": \"kernel\", \"ts\": 1, \"dur\": 1}]}"),
              HasSubstr("no 'ph'"));
  EXPECT_THAT(error_of("{\"traceEvents\": [{\"ph\": 7}]}"), HasSubstr("'ph' is not a string"));
  EXPECT_THAT(error_of("{\"traceEvents\": [], \"distributedInfo\": {\"rank\": \"zero\"}}"),
              HasSubstr("distributedInfo.rank"));
  // Stop 50: beyond 32 bits the value was wrapped (world size 2^32 + 4 read as 4, rank 2^32 + 1
  // as 1); a rank below -1 read as "no rank" (-1 is "unknown", as EMO's own writer writes it).
  EXPECT_THAT(error_of("{\"traceEvents\": [], \"distributedInfo\": {\"world_size\": 4294967300}}"),
              HasSubstr("'distributedInfo.world_size' is 4294967300, outside 1 to 2147483647"));
  EXPECT_THAT(error_of("{\"traceEvents\": [], \"distributedInfo\": {\"rank\": 4294967297}}"),
              HasSubstr("'distributedInfo.rank' is 4294967297"));
  EXPECT_THAT(error_of("{\"traceEvents\": [], \"distributedInfo\": {\"rank\": -2}}"),
              HasSubstr("'distributedInfo.rank' is -2, outside 0 to"));
  EXPECT_THAT(error_of("{\"traceEvents\": [], \"distributedInfo\": {\"world_size\": 0}}"),
              HasSubstr("'distributedInfo.world_size' is 0"));
  EXPECT_THAT(error_of("{\"traceEvents\": [], \"deviceProperties\": {}}"),
              HasSubstr("deviceProperties"));
  EXPECT_THAT(error_of("{\"traceEvents\": [], \"deviceProperties\": [{\"name\": 5}]}"),
              HasSubstr("deviceProperties"));
}

TEST(KinetoReaderErrors, TimesOutOfRange) {
  auto ev = [](const std::string& ts, const std::string& dur, const std::string& extra = "") {
    return "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"k\", \"ts\": " +
           ts + ", \"dur\": " + dur + "}]" + extra + "}";
  };
  EXPECT_THAT(error_of(ev("9000000000000000", "1")), HasSubstr("out of range"));  // 9e18 ns
  EXPECT_THAT(error_of(ev("1", "4000000000000000")), HasSubstr("out of range"));
  EXPECT_THAT(error_of(ev("2000000000000000", "1", ", \"baseTimeNanoseconds\": 2000000000000000000")),
              HasSubstr("baseTimeNanoseconds"));
  EXPECT_EQ(error_of(ev("1712195495519689.047", "1")), "(no error)");
}

TEST(KinetoReaderErrors, InvalidUtf8IsRejected) {
  EXPECT_THAT(error_of("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"\xff\xfe\"}]}"),
              HasSubstr("invalid JSON"));
}

}  // namespace
}  // namespace emo::trace
