// job::load_traces: the traces in the order given, the same whatever the thread count, and the
// error of the lowest-index failing file, whatever the thread count and timing.
#include "job/load_job.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_data.h"
#include "trace/load.h"
#include "trace/reduce.h"
#include "trace/trace_bytes.h"

namespace emo::job {
namespace {

/// The InputError's path of load_traces, or "" when it succeeds.
std::string failing_path(const std::vector<std::string>& paths, int threads) {
  try {
    (void)load_traces(paths, {threads, true});
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.path();
  }
  return "";
}

TEST(LoadTraces, InOrderAndTheSameOnAnyThreadCount) {
  EMO_REQUIRE_DATA(a, "kineto/hta_sampled_2rank_rank0.json.gz");
  EMO_REQUIRE_DATA(b, "kineto/hta_triton.json.gz");
  EMO_REQUIRE_DATA(c, "kineto/hta_sampled_2rank_rank1.json.gz");
  EMO_REQUIRE_DATA(d, "nsys/perlmutter-cloverleaf-cuda.sqlite");
  const std::vector<std::string> paths = {a, b, c, d, a};
  // Expected: each file loaded on its own, one after the other (independent of load_traces).
  std::vector<std::string> expected, expected_whole;
  for (const auto& p : paths) {
    expected.push_back(trace::to_bytes(trace::reduce_for_optimize(trace::load_trace(p))));
    expected_whole.push_back(trace::to_bytes(trace::load_trace(p)));
  }
  for (const int threads : {0, 1, 2, 3, 8}) {
    const auto got = load_traces(paths, {threads, true});
    ASSERT_EQ(got.size(), paths.size());
    for (std::size_t i = 0; i < paths.size(); ++i) {
      EXPECT_EQ(got[i].meta.path, paths[i]);
      EXPECT_EQ(trace::to_bytes(got[i]), expected[i]) << "threads " << threads << ", file " << i;
    }
  }
  const auto whole = load_traces(paths, {2, false});
  for (std::size_t i = 0; i < paths.size(); ++i) EXPECT_EQ(trace::to_bytes(whole[i]), expected_whole[i]);
  EXPECT_TRUE(load_traces({}, {}).empty());
}

TEST(LoadTraces, ThrowsTheLowestIndexError) {
  EMO_REQUIRE_DATA(good, "kineto/hta_sampled_2rank_rank0.json.gz");
  const auto dir = ::emo::testing::scratch_dir("load_job");
  const std::string garbage = (dir / "garbage.json").string(), missing = (dir / "missing.json").string();
  std::ofstream(garbage) << "{\"traceEvents\": [ {";
  // The bad files come after slow good ones, and the later bad file fails fast: still the first.
  for (const int threads : {1, 2, 4, 8}) {
    for (int repeat = 0; repeat < 3; ++repeat) {
      EXPECT_EQ(failing_path({good, good, garbage, good, missing}, threads), garbage) << threads;
      EXPECT_EQ(failing_path({good, missing, good, garbage}, threads), missing) << threads;
      EXPECT_EQ(failing_path({garbage}, threads), garbage) << threads;
    }
  }
  EXPECT_THROW((void)load_traces({good}, {-1, true}), ArgumentError);
}

#ifndef EMO_TEST_WITH_MPI
TEST(LoadTracesMpi, WithoutMpiSaysSo) {
  try {
    MpiShare share;
    (void)load_own_traces_mpi({"x.json"}, {}, share);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.problem(), "emo was built without MPI");
  }
}
#endif

}  // namespace
}  // namespace emo::job
