// trace::reduce_for_optimize: `emo optimize` gives the same policy (byte for byte) and the same
// JSON figures on the reduced trace as on the whole one, on every shared trace (whole trace, and a
// step window where the trace has steps), through the writers the CLI uses; and it shrinks them.
// Built into emo_output_tests: the proof needs the driver and the output writers.
#include "trace/reduce.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <string>

#include "driver/optimize.h"
#include "model/gpu_catalog.h"
#include "output/optimize_output.h"
#include "policy/policy.h"
#include "test_data.h"
#include "timing/analysis.h"
#include "trace/load.h"
#include "trace/trace_bytes.h"

namespace emo::trace {
namespace {

/// The policy file and the JSON result of `emo optimize` on `t` (window: --annotation ANN
/// --instance 1 when `annotation` is not empty), or the one-line error it stops with.
std::string optimize_outputs(const Trace& t, const std::string& annotation) {
  try {
    const graph::Window w = timing::find_window(t, "", annotation, 1);
    const auto& gpu = model::GpuCatalog::builtin().at("A100-SXM4-80GB");
    const driver::OptimizeResult r = driver::optimize(t, w, gpu, driver::OptimizeOptions{});
    return policy::to_json(r.policy()) + "\n" + output::to_json(r).dump(2);
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

TEST(Reduce, DropsOnlyFrameworkOpsAndGpuAnnotations) {
  Trace t;
  const StringId step = t.strings.intern("ProfilerStep#3"), aten = t.strings.intern("aten::mm");
  const StringId range = t.strings.intern("gpu range"), k = t.strings.intern("gemm");
  const StringId spans = t.strings.intern("Spans"), launch = t.strings.intern("cudaLaunchKernel");
  t.ops.push(OpKind::kFrameworkOp, 0, 100, step, kNone, kNone, 1, 2, kNone, kNone);
  t.ops.push(OpKind::kFrameworkOp, 1, 50, aten, kNone, kNone, 1, 2, kNone, 7);
  t.ops.push(OpKind::kRuntime, 2, 5, launch, kNone, kNone, host_id_of_string(spans), 2, 9, 7);
  t.ops.push(OpKind::kGpuAnnotation, 8, 10, range, 0, 7, kNone, kNone, kNone, kNone);
  t.ops.push(OpKind::kKernel, 9, 10, k, 0, 7, kNone, kNone, 9, kNone);
  t.collectives.op = {4};
  for (auto* v : {&t.collectives.name, &t.collectives.group, &t.collectives.group_ranks, &t.collectives.dtype})
    v->push_back(0);
  t.collectives.group_size = {kNone};
  t.collectives.in_nelems = t.collectives.out_nelems = t.collectives.sequence = {kNone};
  t.collectives.src_rank = t.collectives.dst_rank = {kNone};
  const Trace r = reduce_for_optimize(std::move(t));
  ASSERT_EQ(r.ops.size(), 3u);
  EXPECT_EQ(r.ops.kind, (std::vector<OpKind>{OpKind::kFrameworkOp, OpKind::kRuntime, OpKind::kKernel}));
  EXPECT_EQ(r.collectives.op, (std::vector<std::uint32_t>{2}));
  // Strings kept in their order: "", ProfilerStep#3, gemm, Spans, cudaLaunchKernel.
  ASSERT_EQ(r.strings.size(), 5u);
  EXPECT_EQ(r.strings.view(r.ops.name[0]), "ProfilerStep#3");
  EXPECT_EQ(r.strings.view(r.ops.name[2]), "gemm");
  EXPECT_EQ(r.strings.view(static_cast<StringId>(host_id_string(r.ops.process[1]))), "Spans");
  EXPECT_EQ(r.ops.external_id[1], 7);
}

struct Case {
  const char* file;
  const char* annotation;  ///< "" = the whole trace
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.file << (*c.annotation ? " window " : "") << c.annotation; }

class ReduceSharedTraces : public ::testing::TestWithParam<Case> {};

TEST_P(ReduceSharedTraces, OptimizeGivesTheSameOutputs) {
  EMO_REQUIRE_DATA(path, GetParam().file);
  Trace whole = load_trace(path);
  const std::string expected = optimize_outputs(whole, GetParam().annotation);
  const std::size_t before = to_bytes(whole).size();
  const Trace reduced = reduce_for_optimize(std::move(whole));
  const std::size_t after = to_bytes(reduced).size();
  EXPECT_EQ(optimize_outputs(reduced, GetParam().annotation), expected);
  EXPECT_EQ(expected.rfind("error: ", 0), std::string::npos) << expected;  // a real result was compared
  EXPECT_LE(after, before);
  std::cout << fmt::format("[ reduction ] {} {}: to_bytes {} -> {} bytes ({:.1f} %)\n", GetParam().file,
                           GetParam().annotation, before, after, 100.0 * after / before);
}

INSTANTIATE_TEST_SUITE_P(
    SharedTraces, ReduceSharedTraces,
    ::testing::Values(Case{"kineto/hta_simple_add.json.gz", ""}, Case{"kineto/hta_alexnet.json.gz", ""},
                      Case{"kineto/hta_cuda_event_sync.json.gz", ""},
                      Case{"kineto/hta_cuda_event_sync_multi_stream.json.gz", ""},
                      Case{"kineto/hta_v100_ns_resolution.json.gz", ""},
                      Case{"kineto/hta_v100_ns_resolution.json.gz", "ProfilerStep"},
                      Case{"kineto/hta_nccl_allreduce_rank0.json.gz", ""},
                      Case{"kineto/hta_training_16rank_rank0.json.gz", ""},
                      Case{"kineto/hta_sampled_2rank_rank0.json.gz", ""},
                      Case{"kineto/hta_sampled_2rank_rank1.json.gz", ""}, Case{"kineto/hta_amd_mi250.json.gz", ""},
                      Case{"kineto/hta_triton.json.gz", ""}, Case{"kineto/kineto_resnet50_2021.json.gz", ""},
                      Case{"kineto/kineto_resnet50_2021.json.gz", "ProfilerStep"},
                      Case{"kineto/hta_simple_add_critical_path_overlay.json.gz", ""},
                      Case{"nsys/perlmutter-cloverleaf-cuda.sqlite", ""},
                      Case{"nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite", ""}),
    [](const auto& info) {
      return ::emo::testing::data_file_test_name(info.param.file) + (*info.param.annotation ? "_step1" : "");
    });

}  // namespace
}  // namespace emo::trace
