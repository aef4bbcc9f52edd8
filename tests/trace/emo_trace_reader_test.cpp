// EMO's own trace format: synthetic CUPTI records -> emo.trace/1 lines (tracer/record_convert.h)
// -> the trace model (trace/emo/emo_trace_reader.h), content detection in load_trace, and the
// round trip through Kineto JSON (trace/kineto/kineto_writer.h -> the Kineto reader).
#include "trace/emo/emo_trace_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "test_data.h"
#include "trace/kineto/kineto_reader.h"
#include "trace/kineto/kineto_writer.h"
#include "trace/load.h"
#include "tracer/record_convert.h"

namespace emo::trace {
namespace {

using namespace emo::tracer;

PaddedBuffer buffer(const std::string& s) {
  PaddedBuffer b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

/// A small program's trace: two streams, a cross-stream event wait (CUDA 12.8 sync id), an event
/// sync without a sync id (older CUDA: resolved by event id), a context sync, an NVTX range.
std::string synthetic(bool trailer = true) {
  TraceHeader h;
  h.emo_version = "0.1.0";
  h.pid = 42;
  h.command = {"./app"};
  std::vector<std::string> lines = {header_line(h)};
  lines.push_back(to_line(GpuProps{0, "NVIDIA H200", 150'000'000'000, 9, 0, 132, 1'980'000}));
  lines.push_back(to_line(ApiRecord{false, 1000, 1100, 42, 43, 1, "cudaMemcpyAsync"}));
  lines.push_back(to_line(MemcpyRecord{1200, 2200, 0, 7, 1, 1, 2, 3, 1 << 20}));
  lines.push_back(to_line(ApiRecord{false, 1150, 1250, 42, 43, 2, "cudaLaunchKernel"}));
  lines.push_back(to_line(KernelRecord{2300, 5300, 0, 7, 2, "_Z4gemmPfS_i"}));
  lines.push_back(to_line(ApiRecord{false, 1300, 1310, 42, 43, 3, "cudaEventRecord"}));
  lines.push_back(to_line(CudaEventRecord{9, 3, 0, 7, 500}));
  lines.push_back(to_line(ApiRecord{false, 1320, 1330, 42, 43, 4, "cudaStreamWaitEvent"}));
  lines.push_back(to_line(SyncRecord{2, 1320, 1330, 4, 13, 9, 500}));
  lines.push_back(to_line(ApiRecord{true, 1340, 1400, 42, 43, 5, "cuLaunchKernel"}));
  lines.push_back(to_line(KernelRecord{5300, 6300, 0, 13, 5, "relu"}));
  lines.push_back(to_line(ApiRecord{false, 1410, 1420, 42, 43, 6, "cudaEventRecord"}));
  lines.push_back(to_line(CudaEventRecord{9, 6, 0, 13}));  // reused event, no sync id
  lines.push_back(to_line(ApiRecord{false, 1430, 6400, 42, 43, 7, "cudaEventSynchronize"}));
  lines.push_back(to_line(SyncRecord{1, 1430, 6400, 7, kInvalidId, 9}));
  lines.push_back(to_line(ApiRecord{false, 6500, 6600, 42, 43, 8, "cudaMemsetAsync"}));
  lines.push_back(to_line(MemsetRecord{6700, 6710, 0, 7, 8, 3, 64}));
  lines.push_back(to_line(ApiRecord{false, 6800, 6900, 42, 43, 9, "cudaDeviceSynchronize"}));
  lines.push_back(to_line(SyncRecord{4, 6800, 6900, 9}));
  lines.push_back(to_line(RangeRecord{900, 7000, 42, 43, "ProfilerStep#0"}));
  if (trailer) lines.push_back(trailer_line(static_cast<std::int64_t>(lines.size()) - 1, 0));
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

std::size_t count(const Trace& t, OpKind k) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < t.ops.size(); ++i) n += t.ops.kind[i] == k ? 1 : 0;
  return n;
}

std::int64_t row_named(const Trace& t, std::string_view name) {
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (t.strings.view(t.ops.name[i]) == name) return static_cast<std::int64_t>(i);
  }
  return -1;
}

TEST(EmoTraceReader, ReadsEveryRecordKind) {
  const Trace t = read_emo_trace(buffer(synthetic()), "app.jsonl");
  EXPECT_EQ(t.meta.format, TraceFormat::kEmoTrace);
  EXPECT_EQ(trace_format_name(t.meta.format), "emo-trace");
  ASSERT_EQ(t.meta.gpus.size(), 1u);
  EXPECT_EQ(t.meta.gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(t.meta.gpus[0].sm_count, 132);
  EXPECT_EQ(count(t, OpKind::kKernel), 2u);
  EXPECT_EQ(count(t, OpKind::kMemcpy), 1u);
  EXPECT_EQ(count(t, OpKind::kMemset), 1u);
  EXPECT_EQ(count(t, OpKind::kRuntime), 8u);
  EXPECT_EQ(count(t, OpKind::kDriver), 1u);
  EXPECT_EQ(count(t, OpKind::kAnnotation), 1u);
  EXPECT_EQ(count(t, OpKind::kSync), 3u);
  EXPECT_TRUE(t.warnings.empty()) << t.warnings.front();
  const auto gemm = row_named(t, "gemm(float*, float*, int)");
  ASSERT_GE(gemm, 0);
  EXPECT_EQ(t.ops.start_ns[gemm], 2300);
  EXPECT_EQ(t.ops.dur_ns[gemm], 3000);
  EXPECT_EQ(t.ops.device[gemm], 0);
  EXPECT_EQ(t.ops.stream[gemm], 7);
  EXPECT_EQ(t.ops.correlation[gemm], 2);
  const auto launch = row_named(t, "cudaLaunchKernel");
  EXPECT_EQ(t.ops.process[launch], 42);
  EXPECT_EQ(t.ops.thread[launch], 43);
  EXPECT_GE(row_named(t, "Memcpy HtoD (Pinned -> Device)"), 0);
}

TEST(EmoTraceReader, EventWaitsFindTheirRecordBySyncIdOrEventId) {
  const Trace t = read_emo_trace(buffer(synthetic()), "app.jsonl");
  ASSERT_EQ(t.syncs.size(), 3u);
  bool wait = false, event_sync = false, ctx = false;
  for (std::size_t i = 0; i < t.syncs.size(); ++i) {
    switch (t.syncs.kind[i]) {
      case SyncKind::kStreamWaitEvent:  // by CUDA 12.8's event-sync id 500
        wait = true;
        EXPECT_EQ(t.syncs.stream[i], 13);
        EXPECT_EQ(t.syncs.event_stream[i], 7);
        EXPECT_EQ(t.syncs.event_record_correlation[i], 3);
        EXPECT_EQ(t.syncs.event_id[i], 9);
        break;
      case SyncKind::kEventSync:  // no sync id: the latest record of event 9 before it
        event_sync = true;
        EXPECT_EQ(t.syncs.stream[i], kNone);
        EXPECT_EQ(t.syncs.event_stream[i], 13);
        EXPECT_EQ(t.syncs.event_record_correlation[i], 6);
        break;
      case SyncKind::kContextSync:
        ctx = true;
        EXPECT_EQ(t.syncs.event_record_correlation[i], kNone);
        break;
      default:
        ADD_FAILURE() << "unexpected sync kind";
    }
  }
  EXPECT_TRUE(wait && event_sync && ctx);
}

TEST(EmoTraceReader, MissingTrailerIsAWarning) {
  const Trace t = read_emo_trace(buffer(synthetic(false)), "app.jsonl");
  ASSERT_FALSE(t.warnings.empty());
  EXPECT_NE(t.warnings.back().find("did not exit normally"), std::string::npos);
}

TEST(EmoTraceReader, ErrorsNameTheLine) {
  auto error = [](const std::string& text) {
    try {
      read_emo_trace(buffer(text), "bad.jsonl");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string header = R"J({"format":"emo.trace/1","pid":1})J";
  EXPECT_EQ(error(R"J({"format":"other"})J" "\n"), "bad.jsonl: line 1: not an emo.trace/1 header");
  EXPECT_EQ(error(header + "\n" + R"J({"kind":"kernel","start_ns":1,"dur_ns":2,"name":"k","device":0})J" "\n"),
            "bad.jsonl: line 2: missing 'stream'");
  EXPECT_EQ(error(header + "\n" + R"J({"kind":"kernel","start_ns":"soon"})J" "\n"),
            "bad.jsonl: line 2: 'start_ns' is not an integer");
  EXPECT_EQ(error(header + "\n[1]\n"), "bad.jsonl: line 2: not a JSON object");
  const std::string truncated = header + "\n" + R"J({"kind":"runtime","start_ns":1,"dur)J";
  EXPECT_NE(error(truncated).find("bad.jsonl:"), std::string::npos);
  EXPECT_EQ(error(truncated).find('\n'), std::string::npos);
}

TEST(EmoTraceReader, DetectedByContentInLoadTrace) {
  const std::string head = std::string(R"J({"format":"emo.trace/1","pid":1})J") + "\n{}";
  EXPECT_TRUE(is_emo_trace(head));
  EXPECT_FALSE(is_emo_trace(R"J({"traceEvents":[]})J"));
  EXPECT_FALSE(is_emo_trace("{\n \"format\": \"emo.trace/1\"}"));  // a pretty-printed object is not JSON lines
  const std::string path = ::testing::TempDir() + "emo_trace_" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(path) << synthetic();
  const Trace t = load_trace(path);
  EXPECT_EQ(t.meta.format, TraceFormat::kEmoTrace);
  EXPECT_EQ(t.meta.path, path);
  std::remove(path.c_str());
}

TEST(KinetoWriter, RoundTripThroughTheKinetoReader) {
  const Trace a = read_emo_trace(buffer(synthetic()), "app.jsonl");
  const std::string json = to_kineto_json(a);
  PaddedBuffer buf = buffer(json);
  const Trace b = read_kineto_json(buf, "app.json");
  ASSERT_EQ(b.ops.size(), a.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    SCOPED_TRACE(std::string(a.strings.view(a.ops.name[i])));
    EXPECT_EQ(b.ops.kind[i], a.ops.kind[i]);
    EXPECT_EQ(b.ops.start_ns[i], a.ops.start_ns[i]);
    EXPECT_EQ(b.ops.dur_ns[i], a.ops.dur_ns[i]);
    EXPECT_EQ(b.strings.view(b.ops.name[i]), a.strings.view(a.ops.name[i]));
    EXPECT_EQ(b.ops.correlation[i], a.ops.correlation[i]);
    if (is_gpu_op(a.ops.kind[i])) {
      EXPECT_EQ(b.ops.device[i], a.ops.device[i]);
      EXPECT_EQ(b.ops.stream[i], a.ops.stream[i]);
    } else if (a.ops.kind[i] != OpKind::kSync) {
      EXPECT_EQ(b.ops.process[i], a.ops.process[i]);
      EXPECT_EQ(b.ops.thread[i], a.ops.thread[i]);
    }
  }
  ASSERT_EQ(b.syncs.size(), a.syncs.size());
  for (std::size_t i = 0; i < a.syncs.size(); ++i) {
    EXPECT_EQ(b.syncs.kind[i], a.syncs.kind[i]);
    EXPECT_EQ(b.syncs.stream[i], a.syncs.stream[i]);
    EXPECT_EQ(b.syncs.event_stream[i], a.syncs.event_stream[i]);
    EXPECT_EQ(b.syncs.event_record_correlation[i], a.syncs.event_record_correlation[i]);
    EXPECT_EQ(b.syncs.event_id[i], a.syncs.event_id[i]);
  }
  ASSERT_EQ(b.meta.gpus.size(), 1u);
  EXPECT_EQ(b.meta.gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(b.meta.gpus[0].sm_count, 132);
}

TEST(KinetoWriter, RealKinetoTracesSurviveTheRoundTrip) {
  // Shared traces with event syncs, collectives, ROCm string ids and base time: each one is
  // required (a loud skip without the data, a failure under CI=true; EMO_DATA_DIR overrides).
  for (const char* name : {"kineto/hta_cuda_event_sync_multi_stream.json.gz", "kineto/hta_nccl_allreduce_rank0.json.gz",
                           "kineto/hta_amd_mi250.json.gz", "kineto/hta_triton.json.gz"}) {
    EMO_REQUIRE_DATA(file, name);
    SCOPED_TRACE(name);
    const Trace a = load_trace(file);
    PaddedBuffer buf = buffer(to_kineto_json(a));
    const Trace b = read_kineto_json(buf, "round-trip.json");
    ASSERT_EQ(b.ops.size(), a.ops.size());
    EXPECT_EQ(b.syncs.size(), a.syncs.size());
    EXPECT_EQ(b.collectives.size(), a.collectives.size());
    EXPECT_EQ(b.meta.rank, a.meta.rank);
    EXPECT_EQ(b.meta.gpus.size(), a.meta.gpus.size());
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
      ASSERT_EQ(b.ops.kind[i], a.ops.kind[i]) << i;
      ASSERT_EQ(b.ops.start_ns[i], a.ops.start_ns[i]) << i;
      ASSERT_EQ(b.ops.dur_ns[i], a.ops.dur_ns[i]) << i;
      ASSERT_EQ(b.strings.view(b.ops.name[i]), a.strings.view(a.ops.name[i])) << i;
      ASSERT_EQ(b.ops.correlation[i], a.ops.correlation[i]) << i;
    }
    for (std::size_t i = 0; i < a.syncs.size(); ++i) {
      ASSERT_EQ(b.syncs.kind[i], a.syncs.kind[i]) << i;
      ASSERT_EQ(b.syncs.event_record_correlation[i], a.syncs.event_record_correlation[i]) << i;
    }
  }
}

}  // namespace
}  // namespace emo::trace
