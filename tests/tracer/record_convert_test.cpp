// Conversion of (synthetic) CUPTI activity records into emo.trace/1 lines.
#include "tracer/record_convert.h"

#include <gtest/gtest.h>

namespace emo::tracer {
namespace {

TEST(RecordConvert, KernelDemangledWithDeviceStreamCorrelation) {
  EXPECT_EQ(to_line(KernelRecord{1000, 1500, 0, 7, 12, "_Z6kernelPfi"}),
            R"J({"kind":"kernel","start_ns":1000,"dur_ns":500,"name":"kernel(float*, int)","device":0,"stream":7,"correlation":12})J");
  EXPECT_EQ(demangle("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(demangle("_Znot_a_name"), "_Znot_a_name");
}

TEST(RecordConvert, CopiesAndMemsetsNamedLikeKineto) {
  EXPECT_EQ(to_line(MemcpyRecord{10, 30, 1, 13, 5, 1, 1, 3, 4096}),
            R"J({"kind":"memcpy","start_ns":10,"dur_ns":20,"name":"Memcpy HtoD (Pageable -> Device)","device":1,"stream":13,"correlation":5,"bytes":4096})J");
  EXPECT_EQ(memcpy_name(8, 3, 3), "Memcpy DtoD (Device -> Device)");
  EXPECT_EQ(to_line(MemsetRecord{10, 11, 0, 7, 6, 3, 64}),
            R"J({"kind":"memset","start_ns":10,"dur_ns":1,"name":"Memset (Device)","device":0,"stream":7,"correlation":6,"bytes":64})J");
}

TEST(RecordConvert, ApiCallsDropTheVersionSuffix) {
  EXPECT_EQ(api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(api_name("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync_ptsz");
  EXPECT_EQ(api_name("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(api_name("cuMemAlloc_v2"), "cuMemAlloc");
  EXPECT_EQ(api_name("x_v"), "x_v");
  EXPECT_EQ(to_line(ApiRecord{true, 5, 9, 42, 43, 12, "cuLaunchKernel"}),
            R"J({"kind":"driver","start_ns":5,"dur_ns":4,"name":"cuLaunchKernel","pid":42,"tid":43,"correlation":12})J");
}

TEST(RecordConvert, SyncAndEventRecordsKeepTheEventSyncId) {
  EXPECT_EQ(to_line(SyncRecord{2, 100, 150, 30, 13, 4, 77}),
            R"J({"kind":"sync","sync":"stream_wait_event","start_ns":100,"dur_ns":50,"correlation":30,"stream":13,"event_id":4,"event_sync_id":77})J");
  // Context sync: stream and event do not apply; before CUDA 12.8 there is no sync id.
  EXPECT_EQ(to_line(SyncRecord{4, 100, 90, 31}),
            R"J({"kind":"sync","sync":"context_sync","start_ns":100,"dur_ns":0,"correlation":31,"stream":-1,"event_id":-1,"event_sync_id":-1})J");
  EXPECT_EQ(to_line(CudaEventRecord{4, 29, 0, 7, 77}),
            R"J({"kind":"cuda_event","event_id":4,"correlation":29,"device":0,"stream":7,"event_sync_id":77})J");
  EXPECT_EQ(sync_type_name(1), "event_sync");
  EXPECT_EQ(sync_type_name(3), "stream_sync");
  EXPECT_EQ(sync_type_name(0), "unknown");
}

TEST(RecordConvert, NvtxMarkersPairIntoRanges) {
  MarkerPairer p;
  p.start(5, 100, "ProfilerStep#3", 42, 43);
  p.start(6, 110, "forward", 42, 43);
  EXPECT_FALSE(p.end(99, 120));
  const auto fwd = p.end(6, 150);
  ASSERT_TRUE(fwd);
  EXPECT_EQ(to_line(*fwd), R"J({"kind":"annotation","start_ns":110,"dur_ns":40,"name":"forward","pid":42,"tid":43})J");
  const auto step = p.end(5, 200);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->name, "ProfilerStep#3");
  EXPECT_EQ(p.open(), 0u);
}

TEST(RecordConvert, HeaderGpuAndTrailer) {
  TraceHeader h;
  h.emo_version = "0.1.0";
  h.pid = 42;
  h.command = {"python", "train \"x\".py"};
  EXPECT_EQ(header_line(h),
            R"J({"format":"emo.trace/1","emo_version":"0.1.0","pid":42,"command":["python","train \"x\".py"],"gpus":[]})J");
  EXPECT_EQ(to_line(GpuProps{0, "NVIDIA H200", 150'000'000'000, 9, 0, 132, 1'980'000}),
            R"J({"kind":"gpu","device":0,"name":"NVIDIA H200","total_memory_bytes":150000000000,"compute_major":9,"compute_minor":0,"sm_count":132,"clock_rate_khz":1980000})J");
  EXPECT_EQ(trailer_line(10, 2), R"J({"kind":"end","records":10,"dropped":2})J");
}

TEST(RecordConvert, JsonQuoteEscapesAndRepairsUtf8) {
  EXPECT_EQ(json_quote("a\"b\\c\n"), R"J("a\"b\\c\u000a")J");
  EXPECT_EQ(json_quote("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
  EXPECT_EQ(json_quote("bad\xFFz"), "\"bad\xEF\xBF\xBDz\"");
}

}  // namespace
}  // namespace emo::tracer
