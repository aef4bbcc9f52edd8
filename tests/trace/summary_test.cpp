#include "trace/summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
}

TEST(Summary, TextMentionsTheEssentials) {
  const std::string text = to_text(summarize(two_stream_trace()));
  EXPECT_NE(text.find("NVIDIA H100"), std::string::npos);
  EXPECT_NE(text.find("rank/world  1/4"), std::string::npos);
  EXPECT_NE(text.find("0:7  2"), std::string::npos);
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
