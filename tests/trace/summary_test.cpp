#include "trace/summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace emo::trace {
namespace {

Trace two_stream_trace() {
  Trace t;
  t.meta.path = "hand.json";
  t.meta.rank = 1;
  t.meta.world_size = 4;
  t.meta.gpus.push_back({0, "NVIDIA H100", 0, 9, 0, 132, 0});
  t.meta.gpus.push_back({1, "NVIDIA H100", 0, 9, 0, 132, 0});
  const StringId k = t.strings.intern("k");
  t.ops.push(OpKind::kRuntime, 0, 5, k, kNone, kNone, 10, 11, 1, kNone);
  t.ops.push(OpKind::kDriver, 1, 5, k, kNone, kNone, 10, 12, 2, kNone);
  t.ops.push(OpKind::kKernel, 10, 100, k, 0, 7, kNone, kNone, 1, kNone);
  t.ops.push(OpKind::kKernel, 20, 100, k, 0, 7, kNone, kNone, 3, kNone);
  t.ops.push(OpKind::kMemcpy, 30, 1000, k, 1, 9, kNone, kNone, 2, kNone);
  const auto sync = t.ops.push(OpKind::kSync, 40, 1, k, 0, 7, kNone, kNone, 4, kNone);
  t.syncs.op.push_back(sync);
  t.syncs.kind.push_back(SyncKind::kStreamSync);
  t.syncs.stream.push_back(7);
  t.syncs.event_stream.push_back(kNone);
  t.syncs.event_record_correlation.push_back(kNone);
  t.syncs.event_id.push_back(kNone);
  t.finish();
  return t;
}

TEST(Summary, CountsStreamsSpanAndWarnings) {
  const TraceSummary s = summarize(two_stream_trace());
  EXPECT_EQ(s.count(OpKind::kKernel), 2);
  EXPECT_EQ(s.api_calls, 2);
  EXPECT_EQ(s.count(OpKind::kSync), 1);
  EXPECT_EQ(s.span_ns, 1030);  // first start 0, last end 30 + 1000
  ASSERT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.streams[0].device, 0);
  EXPECT_EQ(s.streams[0].stream, 7);
  EXPECT_EQ(s.streams[0].ops, 2);
  EXPECT_EQ(s.streams[0].busy_ns, 200);
  EXPECT_EQ(s.gpu_devices, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(s.streams[1].device, 1);
  EXPECT_EQ(s.host_threads, 2);
  EXPECT_EQ(s.gpu, "NVIDIA H100");
  EXPECT_EQ(s.syncs_by_kind.at("stream_sync"), 1);
  // correlation 3 has no API call
  EXPECT_EQ(s.quirks.gpu_ops_without_launch, 1);
  ASSERT_EQ(s.warnings.size(), 1u);
}

TEST(Summary, JsonHasTheDocumentedKeys) {
  const nlohmann::json j = to_json(summarize(two_stream_trace()));
  for (const char* key : {"format", "gpu", "rank", "world_size", "span_ns", "counts", "streams",
                          "warnings"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"kernel", "memcpy", "memset", "runtime", "sync", "collective"}) {
    EXPECT_TRUE(j["counts"].contains(key)) << key;
  }
  EXPECT_EQ(j["counts"]["runtime"], 2);
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["world_size"], 4);
  EXPECT_EQ(j["streams"][1]["stream"], 9);
  EXPECT_EQ(j["streams"][1]["ops"], 1);
  EXPECT_TRUE(j["warnings"].is_array());
  EXPECT_EQ(j["streams"][1]["busy_ns"], 1000);
  EXPECT_TRUE(j["gpus"][0]["clock_rate_khz"].is_null()) << "unknown clock is null, not 0";
}

TEST(Summary, UnknownRankIsNullInJson) {
  Trace t;
  t.finish();
  const nlohmann::json j = to_json(summarize(t));
  EXPECT_TRUE(j["rank"].is_null());
  EXPECT_TRUE(j["world_size"].is_null());
}

TEST(Summary, SyncCallsWithoutSyncRecordsAreCountedAndWarned) {
  Trace t;
  const StringId sync = t.strings.intern("cudaStreamSynchronize");
  const StringId launch = t.strings.intern("cudaLaunchKernel");
  t.ops.push(OpKind::kRuntime, 0, 5, sync, kNone, kNone, 1, 1, 1, kNone);
  t.ops.push(OpKind::kRuntime, 10, 5, launch, kNone, kNone, 1, 1, 2, kNone);
  t.ops.push(OpKind::kRuntime, 20, 5, sync, kNone, kNone, 1, 1, 3, kNone);
  t.finish();
  const TraceSummary s = summarize(t);
  EXPECT_EQ(s.quirks.sync_api_calls, 2);
  EXPECT_EQ(to_json(s)["counts"]["sync_api_calls"], 2);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("no sync records, but 2 synchronising API calls"), std::string::npos)
      << s.warnings[0];
}

TEST(Summary, StepsAndAnnotationNamesWithCounts) {
  // Steps: 2021 "Operator" step markers and annotations alike, in start order; annotation names
  // counted with NAME#N families folded into NAME#*, most frequent first.
  Trace t;
  auto op = [&](OpKind kind, TimeNs start, const char* name) {
    t.ops.push(kind, start, 10, t.strings.intern(name), kNone, kNone, 1, 1, kNone, kNone);
  };
  op(OpKind::kFrameworkOp, 200, "ProfilerStep#8");
  op(OpKind::kFrameworkOp, 100, "ProfilerStep#7");
  op(OpKind::kFrameworkOp, 150, "aten::conv2d");
  op(OpKind::kAnnotation, 300, "forward");
  op(OpKind::kAnnotation, 400, "forward");
  op(OpKind::kAnnotation, 500, "nccl:all_reduce#12");
  op(OpKind::kAnnotation, 600, "nccl:all_reduce#13");
  op(OpKind::kAnnotation, 700, "nccl:all_reduce#14");
  op(OpKind::kAnnotation, 800, "backward");
  t.meta.path = "steps.json";
  t.finish();
  const TraceSummary s = summarize(t);
  EXPECT_EQ(s.steps, (std::vector<std::string>{"ProfilerStep#7", "ProfilerStep#8"}));
  ASSERT_EQ(s.annotation_names.size(), 3u);
  EXPECT_EQ(s.annotation_names[0], (std::pair<std::string, std::int64_t>{"nccl:all_reduce#*", 3}));
  EXPECT_EQ(s.annotation_names[1], (std::pair<std::string, std::int64_t>{"forward", 2}));
  EXPECT_EQ(s.annotation_names[2], (std::pair<std::string, std::int64_t>{"backward", 1}));
  const std::string text = to_text(s);
  EXPECT_NE(text.find("steps       2 (ProfilerStep#7 .. ProfilerStep#8; --annotation ProfilerStep --instance 0..1"),
            std::string::npos) << text;
  EXPECT_NE(text.find("annotation names (3 distinct): nccl:all_reduce#* 3, forward 2, backward 1"),
            std::string::npos) << text;
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["annotation_names"][0][0], "nccl:all_reduce#*");
  EXPECT_EQ(j["annotation_names"][0][1], 3);
}

TEST(SyncKindOfApiCall, CudaDriverHipAndSuffixes) {
  EXPECT_EQ(sync_kind_of_api_call("cudaDeviceSynchronize"), SyncKind::kContextSync);
  EXPECT_EQ(sync_kind_of_api_call("cudaDeviceSynchronize_v3020"), SyncKind::kContextSync);
  EXPECT_EQ(sync_kind_of_api_call("cuCtxSynchronize"), SyncKind::kContextSync);
  EXPECT_EQ(sync_kind_of_api_call("hipStreamSynchronize"), SyncKind::kStreamSync);
  EXPECT_EQ(sync_kind_of_api_call("cudaEventSynchronize"), SyncKind::kEventSync);
  EXPECT_EQ(sync_kind_of_api_call("cudaStreamWaitEvent_ptsz"), SyncKind::kStreamWaitEvent);
  EXPECT_EQ(sync_kind_of_api_call("cudaLaunchKernel"), std::nullopt);
  EXPECT_EQ(sync_kind_of_api_call("cudaStreamSynchronizeX"), std::nullopt);
}

TEST(Summary, TextMentionsTheEssentials) {
  const std::string text = to_text(summarize(two_stream_trace()));
  EXPECT_NE(text.find("NVIDIA H100"), std::string::npos);
  EXPECT_NE(text.find("rank/world  1/4"), std::string::npos);
  EXPECT_NE(text.find("device 0 stream 7"), std::string::npos) << text;
  EXPECT_NE(text.find("the trace lists 2 GPUs"), std::string::npos) << text;
}

TEST(Summary, EmptyTrace) {
  Trace t;
  t.finish();
  const TraceSummary s = summarize(t);
  EXPECT_EQ(s.span_ns, 0);
  EXPECT_TRUE(s.streams.empty());
}

}  // namespace
}  // namespace emo::trace
