// Issue 32: the policy builder records how `emo run` will observe each pack start — a kernel
// launch, an async copy or memset, a graph launch — numbered as the tracer counts calls; a start
// the tracer cannot follow is moved to the nearest observable op. Hand-made traces, worked out
// by hand; and every shared trace's policy has no unobservable start.
#include "driver/policy_builder.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "graph/hand_trace.h"
#include "model/gpu_catalog.h"
#include "model/pack_options.h"
#include "pack/pack_run.h"
#include "test_data.h"
#include "trace/load.h"

namespace emo::testing {
namespace {

constexpr TimeNs kUs = 1000, kMs = 1'000'000;
using policy::ObservedBy;

const model::GpuSpec& a100() { return model::GpuCatalog::builtin().at("A100-SXM4-80GB"); }

/// Five phases 10 ms apart on stream 7, each ended by cudaStreamSynchronize (so one pack each at
/// min_pack 1 ms); phase p starts with:
///   0: cudaMemcpyAsync -> "Memcpy HtoD (Pinned -> Device)", then kernel k0
///   1: cudaMemcpy (synchronous: not followed) -> a copy at +10 us, then kernel k1 at +150 us
///   2: cudaGraphLaunch -> kernels g_first, g_mid, g_last (one correlation id)
///   3: cudaGraphLaunch of the same graph again
///   4: cudaMemcpyAsync (the iteration's second followed copy), then cudaMemsetAsync, then k4
trace::Trace copies_and_graphs() {
  HandTrace h;
  std::int64_t corr = 1;
  auto sync = [&](TimeNs t, TimeNs end) {
    h.call("cudaStreamSynchronize", t, end - t + 5 * kUs, corr);
    h.sync(trace::SyncKind::kStreamSync, t, end - t + 5 * kUs, corr++, 0, 7);
  };
  auto launch = [&](std::string_view name, TimeNs call, TimeNs start, TimeNs dur) {
    h.call("cudaLaunchKernel", call, 5 * kUs, corr);
    h.kernel(name, start, dur, 7, corr++);
  };
  auto copy = [&](std::string_view api, std::string_view name, TimeNs call, TimeNs start) {
    h.call(api, call, 5 * kUs, corr);
    h.gpu(trace::OpKind::kMemcpy, name, start, 100 * kUs, 7, corr++);
  };
  TimeNs t = 0;
  copy("cudaMemcpyAsync", "Memcpy HtoD (Pinned -> Device)", t, t + 10 * kUs);
  launch("k0", t + 5 * kUs, t + 120 * kUs, 3 * kMs);
  sync(t + 20 * kUs, t + 3120 * kUs);
  t = 10 * kMs;
  copy("cudaMemcpy", "Memcpy HtoD (Pageable -> Device)", t, t + 10 * kUs);
  launch("k1", t + 120 * kUs, t + 150 * kUs, 3 * kMs);
  sync(t + 130 * kUs, t + 3150 * kUs);
  for (int launch_no = 0; launch_no < 2; ++launch_no) {
    t = (20 + 10 * launch_no) * kMs;
    h.call("cudaGraphLaunch", t, 5 * kUs, corr);
    h.kernel("g_first", t + 10 * kUs, 1 * kMs, 7, corr);
    h.kernel("g_mid", t + 1020 * kUs, 1 * kMs, 7, corr);
    h.kernel("g_last", t + 2030 * kUs, 1 * kMs, 7, corr++);
    sync(t + 20 * kUs, t + 3030 * kUs);
  }
  t = 40 * kMs;
  copy("cudaMemcpyAsync", "Memcpy DtoD (Device -> Device)", t, t + 10 * kUs);
  h.call("cudaMemsetAsync", t + 5 * kUs, 5 * kUs, corr);
  h.gpu(trace::OpKind::kMemset, "Memset (Device)", t + 110 * kUs, 50 * kUs, 7, corr++);
  launch("k4", t + 10 * kUs, t + 160 * kUs, 3 * kMs);
  sync(t + 20 * kUs, t + 3160 * kUs);
  trace::Trace tr = h.finish();
  tr.meta.gpus.push_back({0, "NVIDIA A100-SXM4-80GB"});
  return tr;
}

pack::PackRun packs_of(const trace::Trace& t) {
  pack::PackOptions o;
  o.min_pack_ns = 1 * kMs;
  return pack::run_pack(t, graph::Window{}, o);
}

TEST(ObservedStarts, CopiesGraphLaunchesAndAMovedSynchronousCopy) {
  const trace::Trace t = copies_and_graphs();
  const pack::PackRun packs = packs_of(t);
  ASSERT_EQ(packs.packing.packs.size(), 5u);
  // Recorded times as the plan: every predicted offset is the recorded one.
  const policy::Policy p = driver::static_policy(t, packs, a100(), 1410).policy;
  ASSERT_EQ(p.gpus.size(), 1u);
  const auto& k = p.gpus[0].packs;
  ASSERT_EQ(k.size(), 5u);
  // Offsets from the window's origin, the first recorded start: the cudaMemcpyAsync call at 0.
  EXPECT_EQ(k[0].start_offset_ns, 10 * kUs);
  EXPECT_EQ(k[0].start.observed_by, ObservedBy::kCopy);
  EXPECT_EQ(k[0].start.ordinal, 0);
  EXPECT_EQ(k[0].start.stream, 7);
  EXPECT_FALSE(k[0].start.anchor_offset_ns);
  // Pack 1 starts at the synchronous copy (10 ms + 10 us): moved to k1, 140 us later (the
  // previous observable op, k0, is ~10 ms before).
  EXPECT_EQ(k[1].start_offset_ns, 10 * kMs + 10 * kUs);
  EXPECT_EQ(k[1].start.observed_by, ObservedBy::kKernel);
  EXPECT_EQ(k[1].start.op_name, "k1");
  EXPECT_EQ(k[1].start.ordinal, 0);
  EXPECT_EQ(k[1].start.moved_from, "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(k[1].start.anchor_offset_ns, 10 * kMs + 150 * kUs);  // k1's recorded start
  // Packs 2 and 3: the first and second launch of one graph (3 kernels, first g_first), each
  // starting at the launch's first op.
  for (int i : {2, 3}) {
    EXPECT_EQ(k[i].start.observed_by, ObservedBy::kGraph) << i;
    EXPECT_EQ(k[i].start.ordinal, i - 2) << i;
    EXPECT_EQ(k[i].start.graph.kernels, 3) << i;
    EXPECT_EQ(k[i].start.graph.first_kernel, "g_first") << i;
    EXPECT_EQ(k[i].start.graph.index, 0) << i;
    EXPECT_FALSE(k[i].start.anchor_offset_ns) << i;
  }
  // Pack 4: the iteration's second followed copy (the synchronous one does not count).
  EXPECT_EQ(k[4].start.observed_by, ObservedBy::kCopy);
  EXPECT_EQ(k[4].start.ordinal, 1);
  const auto n = policy::observation_counts(p);
  EXPECT_EQ(n[static_cast<std::size_t>(ObservedBy::kNone)], 0);
}

TEST(ObservedStarts, AGpuWithNothingTheTracerFollowsIsUnobservable) {
  // HIP calls only (an AMD trace): nothing to observe, nothing to move to.
  HandTrace h;
  h.call("hipMemcpyWithStream", 0, 5 * kUs, 1);
  h.gpu(trace::OpKind::kMemcpy, "Memcpy HtoD", 10 * kUs, 2 * kMs, 7, 1);
  h.call("hipLaunchKernel", 20 * kUs, 5 * kUs, 2);
  h.kernel("k", 2020 * kUs, 2 * kMs, 7, 2);
  const trace::Trace t = h.finish();
  const policy::Policy p = driver::static_policy(t, packs_of(t), a100(), 1410).policy;
  ASSERT_FALSE(p.gpus.empty());
  for (const auto& k : p.gpus[0].packs) EXPECT_EQ(k.start.observed_by, ObservedBy::kNone);
}

/// The 16-rank training trace launches CUDA graphs (70 cudaGraphLaunch) and has calls named
/// INVALID: every pack start of its policy is still observable.
TEST(ObservedStarts, RealTraceWithGraphLaunchesHasNoUnobservableStart) {
  EMO_REQUIRE_DATA(path, "kineto/hta_training_16rank_rank0.json.gz");
  const trace::Trace t = trace::load_trace(path);
  const pack::PackRun packs = pack::run_pack(t, graph::Window{}, model::pack_options_for(t, std::nullopt, "catalog"));
  const policy::Policy p = driver::static_policy(t, packs, a100(), 1410).policy;
  const auto n = policy::observation_counts(p);
  EXPECT_EQ(n[static_cast<std::size_t>(ObservedBy::kNone)], 0);
  EXPECT_GT(n[static_cast<std::size_t>(ObservedBy::kCopy)] + n[static_cast<std::size_t>(ObservedBy::kMemset)], 0);
}

}  // namespace
}  // namespace emo::testing
