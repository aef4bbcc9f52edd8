// Every shared Kineto trace loads, and the counts of ../shared/data/SOURCES.md are reproduced.
// SOURCES.md counted with a plain JSON reader, independently of EMO; its table is the reference.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <ostream>
#include <string>

#include "test_data.h"
#include "core/file_io.h"
#include "trace/kineto/kineto_reader.h"
#include "trace/load.h"
#include "trace/summary.h"

namespace emo::trace {
namespace {

struct Expected {
  const char* file;
  std::int64_t kernel, memcpy, memset;
  std::int64_t runtime;  ///< SOURCES.md "runtime" column: cuda_runtime events only
  std::int64_t driver;   ///< cuda_driver events (not a SOURCES.md column; counted here by hand)
  std::int64_t cuda_sync;
  int stream_pairs;      ///< -1 where SOURCES.md gives "-"
  int rank, world;       ///< -1 where unknown
  std::int64_t collectives;  ///< NCCL kernels, per SOURCES.md's descriptions; -1 if not stated
};

void PrintTo(const Expected& e, std::ostream* os) { *os << e.file; }

// From the table in ../shared/data/SOURCES.md.
const Expected kExpected[] = {
    {"hta_simple_add.json.gz", 79, 16, 3, 331, 0, 41, 2, 0, -1, 0},
    {"hta_alexnet.json.gz", 79, 16, 3, 361, 0, 41, 2, 0, -1, 0},
    {"hta_cuda_event_sync.json.gz", 4, 1, 0, 12, 0, 4, 1, 0, -1, 0},
    {"hta_cuda_event_sync_multi_stream.json.gz", 3, 0, 3, 39, 0, 5, 3, 0, -1, 0},
    {"hta_v100_ns_resolution.json.gz", 4350, 1600, 145, 15329, 0, 0, 1, 0, 1, 0},
    {"hta_nccl_allreduce_rank0.json.gz", 2700, 960, 114, 8740, 0, 0, 2, 0, 2, 21},
    {"hta_training_16rank_rank0.json.gz", 6080, 1390, 277, 33924, 0, 0, 6, 0, 16, 80},
    {"hta_sampled_2rank_rank0.json.gz", 1154, 40, 10, 1204, 0, 0, 5, 0, 128, -1},
    {"hta_sampled_2rank_rank1.json.gz", 1104, 40, 10, 1154, 0, 0, 5, 1, 128, -1},
    {"hta_amd_mi250.json.gz", 14, 2, 0, 21, 0, 0, 1, -1, -1, 0},
    {"hta_triton.json.gz", 1, 0, 0, 1, 1, 0, 1, -1, -1, 0},
    {"kineto_resnet50_2021.json.gz", 8772, 12, 312, 11923, 0, 0, -1, -1, -1, 0},
    {"hta_simple_add_critical_path_overlay.json.gz", 79, 16, 3, 331, 0, 41, 2, 0, -1, 0},
};

class KinetoRealData : public ::testing::TestWithParam<Expected> {};

TEST_P(KinetoRealData, ReproducesSourcesCounts) {
  const Expected& e = GetParam();
  EMO_REQUIRE_DATA(path, std::string("kineto/") + e.file);
  const Trace t = load_trace(path);
  const TraceSummary s = summarize(t);
  EXPECT_EQ(s.format, "kineto-json");
  EXPECT_EQ(s.count(OpKind::kKernel), e.kernel);
  EXPECT_EQ(s.count(OpKind::kMemcpy), e.memcpy);
  EXPECT_EQ(s.count(OpKind::kMemset), e.memset);
  EXPECT_EQ(s.count(OpKind::kRuntime), e.runtime);
  EXPECT_EQ(s.count(OpKind::kDriver), e.driver);
  EXPECT_EQ(s.api_calls, e.runtime + e.driver);
  EXPECT_EQ(s.count(OpKind::kSync), e.cuda_sync);
  EXPECT_EQ(static_cast<std::int64_t>(t.syncs.size()), e.cuda_sync);
  if (e.stream_pairs >= 0) {
    EXPECT_EQ(static_cast<int>(s.streams.size()), e.stream_pairs);
  }
  EXPECT_EQ(s.rank, e.rank);
  EXPECT_EQ(s.world_size, e.world);
  if (e.collectives >= 0) {
    EXPECT_EQ(s.collectives, e.collectives);
  }
  EXPECT_GT(s.span_ns, 0);
  std::int64_t stream_ops = 0;
  for (const auto& st : s.streams) stream_ops += st.ops;
  EXPECT_EQ(stream_ops, e.kernel + e.memcpy + e.memset);
  // Ops are sorted by start after loading.
  for (std::size_t i = 1; i < t.ops.size(); ++i) ASSERT_LE(t.ops.start_ns[i - 1], t.ops.start_ns[i]);
}

INSTANTIATE_TEST_SUITE_P(SharedTraces, KinetoRealData, ::testing::ValuesIn(kExpected),
                         [](const auto& info) { return ::emo::testing::data_file_test_name(info.param.file); });

TEST(KinetoRealDataDetail, QuirksOfThe16RankTrace) {
  EMO_REQUIRE_DATA(path, "kineto/hta_training_16rank_rank0.json.gz");
  const Trace t = load_trace(path);
  // SOURCES.md: "has duplicated GPU correlation ids and GPU ops without a runtime call".
  EXPECT_GT(t.quirks.duplicate_gpu_correlation, 0);
  EXPECT_GT(t.quirks.gpu_ops_without_launch, 0);
  EXPECT_EQ(t.gpu_name(0), "NVIDIA A100-SXM4-80GB");
}

TEST(KinetoRealDataDetail, SampledTracesAreUnsorted) {
  EMO_REQUIRE_DATA(path, "kineto/hta_sampled_2rank_rank0.json.gz");
  EXPECT_GT(load_trace(path).quirks.out_of_order, 0);
}

TEST(KinetoRealDataDetail, NsResolutionTimestampsKeepTheirFraction) {
  EMO_REQUIRE_DATA(path, "kineto/hta_v100_ns_resolution.json.gz");
  const Trace t = load_trace(path);
  std::size_t with_fraction = 0;
  for (TimeNs s : t.ops.start_ns) with_fraction += (s % 1000) != 0;
  EXPECT_GT(with_fraction, t.ops.size() / 2) << "fractional-µs timestamps must not be rounded";
}

TEST(KinetoRealDataDetail, EventSyncMultiStreamWaitRecords) {
  EMO_REQUIRE_DATA(path, "kineto/hta_cuda_event_sync_multi_stream.json.gz");
  const Trace t = load_trace(path);
  // HTA's critical path uses the stream-wait-event from the kernel of correlation 27 on stream 20
  // to stream 24; the record must say which event record it waits for.
  bool found = false;
  for (std::size_t i = 0; i < t.syncs.size(); ++i) {
    if (t.syncs.kind[i] == SyncKind::kStreamWaitEvent) {
      found = true;
      EXPECT_EQ(t.syncs.stream[i], 24);
      EXPECT_EQ(t.syncs.event_stream[i], 20);
      EXPECT_EQ(t.syncs.event_record_correlation[i], 1385);
    }
  }
  EXPECT_TRUE(found);
}

TEST(KinetoRealDataDetail, SmallChunksGiveTheSameTrace) {
  EMO_REQUIRE_DATA(path, "kineto/hta_nccl_allreduce_rank0.json.gz");
  PaddedBuffer a = read_maybe_gzip(path);
  PaddedBuffer b(a.size());
  std::memcpy(b.data(), a.data(), a.size());
  const Trace big = read_kineto_json(a, path);
  const Trace small = read_kineto_json(b, path, KinetoOptions{16 * 1024});
  EXPECT_EQ(big.ops.start_ns, small.ops.start_ns);
  EXPECT_EQ(big.ops.dur_ns, small.ops.dur_ns);
  EXPECT_EQ(big.ops.correlation, small.ops.correlation);
  EXPECT_EQ(big.collectives.op, small.collectives.op);
  EXPECT_EQ(big.strings.size(), small.strings.size());
}

}  // namespace
}  // namespace emo::trace
