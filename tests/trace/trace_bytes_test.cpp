// trace::to_bytes / from_bytes: every shared trace round-trips to an equal Trace (every column,
// side table, string, meta field and quirk); truncated or corrupted bytes throw InputError.
#include "trace/trace_bytes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "test_data.h"
#include "trace/load.h"

namespace emo::trace {
namespace {

void expect_same_meta(const TraceMeta& a, const TraceMeta& b) {
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.base_time_ns, b.base_time_ns);
  EXPECT_EQ(a.schema, b.schema);
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (std::size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuInfo &x = a.gpus[i], &y = b.gpus[i];
    EXPECT_EQ(std::tie(x.device, x.name, x.total_memory_bytes, x.compute_major, x.compute_minor, x.sm_count,
                       x.clock_rate_khz),
              std::tie(y.device, y.name, y.total_memory_bytes, y.compute_major, y.compute_minor, y.sm_count,
                       y.clock_rate_khz));
  }
  const JobInfo &j = a.job, &k = b.job;
  EXPECT_EQ(std::tie(j.world_size, j.collectives_linked, j.match_method, j.residual_max_ns, j.residual_median_ns,
                     j.warnings),
            std::tie(k.world_size, k.collectives_linked, k.match_method, k.residual_max_ns, k.residual_median_ns,
                     k.warnings));
  ASSERT_EQ(j.ranks.size(), k.ranks.size());
  for (std::size_t i = 0; i < j.ranks.size(); ++i) {
    const JobRank &x = j.ranks[i], &y = k.ranks[i];
    EXPECT_EQ(std::tie(x.rank, x.path, x.device, x.offset_ns, x.collectives, x.matched, x.wait_ns),
              std::tie(y.rank, y.path, y.device, y.offset_ns, y.collectives, y.matched, y.wait_ns));
  }
}

void expect_same_quirks(const QuirkCounts& a, const QuirkCounts& b) {
  EXPECT_EQ(std::tie(a.out_of_order, a.zero_duration, a.negative_duration, a.clamped_children, a.max_clamp_ns,
                     a.unknown_category, a.string_ids, a.duplicate_gpu_correlation, a.gpu_ops_without_launch,
                     a.ignored_events, a.sync_api_calls),
            std::tie(b.out_of_order, b.zero_duration, b.negative_duration, b.clamped_children, b.max_clamp_ns,
                     b.unknown_category, b.string_ids, b.duplicate_gpu_correlation, b.gpu_ops_without_launch,
                     b.ignored_events, b.sync_api_calls));
}

/// Field by field, each against the original (not through to_bytes again).
void expect_same_trace(const Trace& a, const Trace& b) {
  expect_same_meta(a.meta, b.meta);
  ASSERT_EQ(a.strings.size(), b.strings.size());
  for (StringId s = 0; s < a.strings.size(); ++s) ASSERT_EQ(a.strings.view(s), b.strings.view(s)) << s;
  const OpTable &o = a.ops, &p = b.ops;
  EXPECT_EQ(o.kind, p.kind);
  EXPECT_EQ(o.start_ns, p.start_ns);
  EXPECT_EQ(o.dur_ns, p.dur_ns);
  EXPECT_EQ(o.name, p.name);
  EXPECT_EQ(o.device, p.device);
  EXPECT_EQ(o.stream, p.stream);
  EXPECT_EQ(o.process, p.process);
  EXPECT_EQ(o.thread, p.thread);
  EXPECT_EQ(o.correlation, p.correlation);
  EXPECT_EQ(o.external_id, p.external_id);
  const SyncTable &s = a.syncs, &t = b.syncs;
  EXPECT_EQ(std::tie(s.op, s.kind, s.stream, s.event_stream, s.event_record_correlation, s.event_id),
            std::tie(t.op, t.kind, t.stream, t.event_stream, t.event_record_correlation, t.event_id));
  const CollectiveTable &c = a.collectives, &d = b.collectives;
  EXPECT_EQ(std::tie(c.op, c.name, c.group, c.group_ranks, c.group_size, c.in_nelems, c.out_nelems, c.dtype,
                     c.sequence, c.src_rank, c.dst_rank, c.match),
            std::tie(d.op, d.name, d.group, d.group_ranks, d.group_size, d.in_nelems, d.out_nelems, d.dtype,
                     d.sequence, d.src_rank, d.dst_rank, d.match));
  expect_same_quirks(a.quirks, b.quirks);
  EXPECT_EQ(a.warnings, b.warnings);
}

/// A small trace with every field set to something other than its default, job info and
/// collective matches included (no shared trace has those: they come from trace/job.h linking).
Trace hand_trace() {
  Trace t;
  t.meta = {TraceFormat::kNsysSqlite, "job/rank3.sqlite", 3, 8, "nccl", 1'700'000'000'123'456'789, {}, "2024.5", {}};
  t.meta.gpus.push_back({1, "NVIDIA H100 80GB HBM3", 85'000'000'000, 9, 0, 132, 1'980'000});
  t.meta.job.world_size = 8;
  t.meta.job.ranks.push_back({3, "job/rank3.sqlite", 1, -42, 7, 6, 1'234});
  t.meta.job.collectives_linked = 6;
  t.meta.job.match_method = "process group + sequence";
  t.meta.job.residual_max_ns = 900;
  t.meta.job.residual_median_ns = 12;
  t.meta.job.warnings = {"rank 5: no trace"};
  const StringId k = t.strings.intern("ncclKernel_AllReduce"), launch = t.strings.intern("cudaLaunchKernel");
  const StringId sync = t.strings.intern("cudaStreamSynchronize"), spans = t.strings.intern("Spans");
  t.ops.push(OpKind::kRuntime, 100, 20, launch, kNone, kNone, host_id_of_string(spans), 77, 5, kNone);
  t.ops.push(OpKind::kKernel, 130, 500, k, 1, 7, kNone, kNone, 5, 9);
  t.ops.push(OpKind::kSync, 140, 600, sync, 1, 7, 11, 77, 6, kNone);
  t.syncs.op = {2};
  t.syncs.kind = {SyncKind::kStreamWaitEvent};
  t.syncs.stream = {7};
  t.syncs.event_stream = {8};
  t.syncs.event_record_correlation = {4};
  t.syncs.event_id = {99};
  CollectiveTable& c = t.collectives;
  c.op = {1};
  c.name = {t.strings.intern("allreduce")};
  c.group = {t.strings.intern("0")};
  c.group_ranks = {t.strings.intern("[0, 1, 2, 3]")};
  c.group_size = {4};
  c.in_nelems = {1 << 20};
  c.out_nelems = {1 << 20};
  c.dtype = {t.strings.intern("Float")};
  c.sequence = {17};
  c.src_rank = {3};
  c.dst_rank = {6};
  c.match = {123};
  t.quirks = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  t.warnings = {"a warning", "é ünïcode"};
  return t;
}

TEST(TraceBytes, HandTraceRoundTripsWithJobAndMatches) {
  const Trace t = hand_trace();
  const std::string bytes = to_bytes(t);
  EXPECT_EQ(bytes.substr(0, 8), "EMOTRACE");
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]), kTraceBytesVersion);  // little-endian u32
  expect_same_trace(t, from_bytes(bytes, "x"));
}

TEST(TraceBytes, PointToPointRanksRoundTrip) {
  // hand_trace's allreduce recording a send from rank 3 to rank 6, and a second collective kernel
  // that records neither (kNone = -1): both columns come back row by row.
  Trace t = hand_trace();
  const std::size_t one = to_bytes(t).size();
  t.ops.push(OpKind::kKernel, 700, 10, t.strings.intern("ncclKernel_AllReduce"), 1, 7, kNone, kNone, 7, kNone);
  CollectiveTable& c = t.collectives;
  c.op.push_back(3);
  for (auto* v : {&c.name, &c.group, &c.group_ranks, &c.dtype}) v->push_back(0);
  for (auto* v : {&c.group_size, &c.src_rank, &c.dst_rank}) v->push_back(static_cast<std::int32_t>(kNone));
  for (auto* v : {&c.in_nelems, &c.out_nelems, &c.sequence, &c.match}) v->push_back(kNone);
  const std::string bytes = to_bytes(t);
  // The op: 7 × 8 + 1 + 4 + 4 = 65 bytes; the collective: op 4, four strings 16, group size and
  // the two ranks 12, in/out nelems and sequence 24, match 8 = 64 bytes.
  EXPECT_EQ(bytes.size(), one + 65 + 64);
  const Trace b = from_bytes(bytes, "x");
  EXPECT_EQ(b.collectives.src_rank, (std::vector<std::int32_t>{3, -1}));
  EXPECT_EQ(b.collectives.dst_rank, (std::vector<std::int32_t>{6, -1}));
  expect_same_trace(t, b);
}

/// The problem of the InputError that from_bytes throws, or "" when it returns.
std::string problem_of(std::string_view bytes) {
  try {
    (void)from_bytes(bytes, "rank3.bin");
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "rank3.bin");
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.problem();
  }
  return "";
}

TEST(TraceBytes, EveryTruncationThrows) {
  const std::string bytes = to_bytes(hand_trace());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_NE(problem_of(std::string_view(bytes).substr(0, n)), "") << "truncated to " << n;
  }
  EXPECT_NE(problem_of(bytes + "x"), "");
}

TEST(TraceBytes, EveryFlippedByteThrows) {
  const std::string bytes = to_bytes(hand_trace());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (const unsigned char mask : {0x01, 0x80, 0xff}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      EXPECT_NE(problem_of(bad), "") << "byte " << i << " ^ " << int(mask);
    }
  }
}

TEST(TraceBytes, NamesWhatIsWrong) {
  std::string bytes = to_bytes(hand_trace());
  EXPECT_NE(problem_of("").find("shorter than its header"), std::string::npos);
  std::string other = bytes;
  other[0] = 'X';
  EXPECT_NE(problem_of(other).find("magic"), std::string::npos);
  other = bytes;
  other[8] = 1;  // version 1: no src_rank / dst_rank columns
  EXPECT_NE(problem_of(other).find("version 1, this emo reads version 2"), std::string::npos);
  other[8] = 3;
  EXPECT_NE(problem_of(other).find("version 3"), std::string::npos);
  other = bytes;
  other.back() ^= 1;
  EXPECT_NE(problem_of(other).find("checksum"), std::string::npos);
}

class SharedTraceBytes : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedTraceBytes, RoundTripsEveryField) {
  EMO_REQUIRE_DATA(path, GetParam());
  const Trace t = load_trace(path);
  const std::string bytes = to_bytes(t);
  expect_same_trace(t, from_bytes(bytes, path));
  // Truncations at 64 offsets spread over the whole file, and flipped bytes there, all throw.
  for (std::size_t k = 0; k < 64; ++k) {
    const std::size_t at = k * (bytes.size() - 1) / 63;
    EXPECT_NE(problem_of(std::string_view(bytes).substr(0, at)), "") << "truncated to " << at;
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    EXPECT_NE(problem_of(bad), "") << "flipped byte " << at;
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedTraces, SharedTraceBytes,
    ::testing::Values("kineto/hta_simple_add.json.gz", "kineto/hta_alexnet.json.gz",
                      "kineto/hta_cuda_event_sync.json.gz", "kineto/hta_cuda_event_sync_multi_stream.json.gz",
                      "kineto/hta_v100_ns_resolution.json.gz", "kineto/hta_nccl_allreduce_rank0.json.gz",
                      "kineto/hta_training_16rank_rank0.json.gz", "kineto/hta_sampled_2rank_rank0.json.gz",
                      "kineto/hta_sampled_2rank_rank1.json.gz", "kineto/hta_amd_mi250.json.gz",
                      "kineto/hta_triton.json.gz", "kineto/kineto_resnet50_2021.json.gz",
                      "kineto/hta_simple_add_critical_path_overlay.json.gz", "nsys/perlmutter-cloverleaf-cuda.sqlite",
                      "nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"),
    [](const auto& info) { return ::emo::testing::data_file_test_name(info.param); });

}  // namespace
}  // namespace emo::trace
