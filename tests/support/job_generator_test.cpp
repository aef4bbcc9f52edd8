// Tests of the synthetic job generator (support/job_generator.h) and of emo_make_job, on real
// rank traces of ../shared/data. Expected values come from the source trace itself (its kernel
// durations, its compute time), from the spec (offsets, groups) or from bounds that hold for any
// longest-path replay (monotone, and Lipschitz in the durations), never from the generator's own
// output.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/file_io.h"
#include "graph/dep_graph.h"
#include "support/cli_expect.h"
#include "support/job_generator.h"
#include "test_data.h"
#include "timing/analysis.h"
#include "trace/load.h"

namespace emo::testing {
namespace {

using trace::OpKind;
using trace::Trace;

constexpr const char* kAllreduce = "kineto/hta_nccl_allreduce_rank0.json.gz";
constexpr const char* kTraining = "kineto/hta_training_16rank_rank0.json.gz";

/// The source traces, read once.
const Trace& source(const std::string& path) {
  static std::map<std::string, std::unique_ptr<Trace>> cache;
  auto& t = cache[path];
  if (!t) t = std::make_unique<Trace>(trace::load_trace(path));
  return *t;
}

bool is_compute_kernel(const Trace& t, std::uint32_t i) {
  return t.ops.kind[i] == OpKind::kKernel && !t.is_collective(i);
}

/// (name, duration) of every compute kernel, sorted.
std::vector<std::pair<std::string, TimeNs>> compute_kernels(const Trace& t) {
  std::vector<std::pair<std::string, TimeNs>> out;
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    if (is_compute_kernel(t, i)) out.emplace_back(std::string(t.strings.view(t.ops.name[i])), t.ops.dur_ns[i]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Latest end of a GPU op, the rank's offset removed.
TimeNs gpu_end(const Trace& t, TimeNs offset) {
  TimeNs end = INT64_MIN;
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    if (trace::is_gpu_op(t.ops.kind[i])) end = std::max(end, t.ops.end_ns(i) - offset);
  }
  return end;
}

/// Latest end of a GPU op of any rank (no offsets).
TimeNs job_end(const std::vector<Trace>& job) {
  TimeNs end = INT64_MIN;
  for (const Trace& t : job) end = std::max(end, gpu_end(t, 0));
  return end;
}

TimeNs collective_time(const Trace& t) {
  TimeNs sum = 0;
  for (std::uint32_t op : t.collectives.op) sum += t.ops.dur_ns[op];
  return sum;
}

TEST(JobGenerator, OneRankWithoutJitterKeepsTheSourceComputeKernels) {
  EMO_REQUIRE_DATA(path, kAllreduce);
  const Trace& src = source(path);
  const std::vector<Trace> job = generate_job(src, JobSpec{.ranks = 1, .jitter = 0});
  ASSERT_EQ(job.size(), 1u);
  const auto want = compute_kernels(src);
  ASSERT_GT(want.size(), 100u);
  EXPECT_EQ(compute_kernels(job[0]), want);
  // A collective of one rank takes its transfer time, at most its recorded duration.
  ASSERT_EQ(job[0].collectives.size(), src.collectives.size());
  EXPECT_LE(collective_time(job[0]), collective_time(src));
  EXPECT_EQ(job[0].meta.rank, 0);
  EXPECT_EQ(job[0].meta.world_size, 1);
  EXPECT_EQ(job[0].ops.size(), src.ops.size());
}

/// Checks what every generated job must satisfy: the same collectives on every rank of a group,
/// (group, sequence) unique, each instance ending together on its participants once the offsets
/// are removed, and no collective starting before the previous op on its stream ends.
void check_consistent(const Trace& src, const JobSpec& spec) {
  const JobGenerator gen(src, spec);
  std::map<std::pair<std::string, std::int64_t>, std::vector<std::pair<int, TimeNs>>> ends;
  for (int r = 0; r < spec.ranks; ++r) {
    const Trace t = gen.rank_trace(r);
    ASSERT_EQ(t.meta.rank, r);
    ASSERT_EQ(t.meta.world_size, spec.ranks);
    ASSERT_EQ(t.collectives.size(), src.collectives.size());
    const TimeNs offset = gen.offset_ns(r);
    EXPECT_LE(std::abs(offset), spec.max_offset_ns);
    const int size = spec.group_size > 0 ? spec.group_size : spec.ranks;
    const int first = r / size * size, last = std::min(spec.ranks, first + size);
    std::string members = "[";
    for (int m = first; m < last; ++m) members += (m == first ? "" : ", ") + std::to_string(m);
    members += "]";
    std::map<std::pair<std::int32_t, std::int64_t>, TimeNs> stream_end;  // end of the previous op
    for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
      if (!trace::is_gpu_op(t.ops.kind[i])) continue;
      TimeNs& prev = stream_end.try_emplace({t.ops.device[i], t.ops.stream[i]}, INT64_MIN).first->second;
      if (t.is_collective(i)) {
        EXPECT_GE(t.ops.start_ns[i], prev) << "rank " << r << " op " << i;
      }
      prev = std::max(prev, t.ops.end_ns(i));
    }
    for (std::size_t c = 0; c < t.collectives.size(); ++c) {
      const std::string group(t.strings.view(t.collectives.group[c]));
      ASSERT_EQ(group, "g" + std::to_string(r / size));
      ASSERT_EQ(t.strings.view(t.collectives.group_ranks[c]), members);
      ASSERT_EQ(t.collectives.group_size[c], last - first);
      ends[{group, t.collectives.sequence[c]}].emplace_back(r, t.ops.end_ns(t.collectives.op[c]) - offset);
    }
  }
  for (const auto& [key, parts] : ends) {
    const int size = spec.group_size > 0 ? spec.group_size : spec.ranks;
    const int k = std::stoi(key.first.substr(1));
    ASSERT_EQ(static_cast<int>(parts.size()), std::min(spec.ranks, (k + 1) * size) - k * size)
        << key.first << " seq " << key.second;
    for (const auto& [rank, end] : parts) {
      EXPECT_NEAR(static_cast<double>(end), static_cast<double>(parts[0].second), 1000.0)
          << key.first << " seq " << key.second << " rank " << rank;
    }
  }
}

TEST(JobGenerator, CollectivesEndTogetherOnEveryParticipant) {
  EMO_REQUIRE_DATA(path, kAllreduce);
  check_consistent(source(path), JobSpec{.ranks = 4, .straggler = 2, .max_offset_ns = 200'000, .seed = 11});
}

TEST(JobGenerator, GroupsOfTwoOnTheTrainingTrace) {
  EMO_REQUIRE_DATA(path, kTraining);
  // Groups [0, 1], [2, 3], [4].
  check_consistent(source(path), JobSpec{.ranks = 5, .straggler = 3, .max_offset_ns = 50'000, .seed = 5, .group_size = 2});
}

/// A job of 4 identical ranks (no jitter) with and without a 10 % straggler (rank 1), and the
/// straggler alone (1 rank, 10 % slower) and a plain rank alone.
void check_straggler(const Trace& src) {
  JobSpec spec{.ranks = 4, .jitter = 0};
  const std::vector<Trace> even = generate_job(src, spec);
  spec.straggler = 1;
  const std::vector<Trace> slow = generate_job(src, spec);
  const Trace solo_even = std::move(generate_job(src, JobSpec{.ranks = 1, .jitter = 0})[0]);
  const Trace solo_slow = std::move(generate_job(src, JobSpec{.ranks = 1, .straggler = 0, .jitter = 0})[0]);
  for (int r : {0, 2, 3}) {
    EXPECT_GT(collective_time(slow[r]), collective_time(even[r])) << "rank " << r << " waits longer";
  }
  TimeNs compute = 0;  // the source's compute time: the straggler adds at most 10 % of it
  for (std::uint32_t i = 0; i < src.ops.size(); ++i) {
    if (is_compute_kernel(src, i)) compute += src.ops.dur_ns[i];
  }
  const TimeNs end_even = job_end(even), end_slow = job_end(slow);
  // Identical ranks arrive together: the job ends as one rank alone does.
  for (int r = 0; r < 4; ++r) EXPECT_EQ(gpu_end(even[r], 0), gpu_end(solo_even, 0)) << "rank " << r;
  // Coupling only adds waits: the job grows at least as much as the straggler alone does, and
  // by at most the 10 % of all its compute (+ the rounding of each kernel's 10 %).
  const TimeNs solo_growth = gpu_end(solo_slow, 0) - gpu_end(solo_even, 0);
  EXPECT_GE(end_slow - end_even, solo_growth);
  EXPECT_LE(end_slow - end_even, compute / 10 + static_cast<TimeNs>(src.ops.size()));
  std::printf("straggler on %s: job end +%lld ns, straggler alone +%lld ns, 10 %% of compute %lld ns\n",
              src.meta.path.c_str(), static_cast<long long>(end_slow - end_even),
              static_cast<long long>(solo_growth), static_cast<long long>(compute / 10));
}

TEST(JobGenerator, AStragglerMakesTheOthersWaitAndTheJobLonger) {
  EMO_REQUIRE_DATA(path, kAllreduce);
  check_straggler(source(path));
}

TEST(JobGenerator, AStragglerOnTheTrainingTrace) {
  EMO_REQUIRE_DATA(path, kTraining);
  check_straggler(source(path));
}

TEST(JobGenerator, ProfilerStepWindowsStillHoldTheirCalls) {
  EMO_REQUIRE_DATA(path, kAllreduce);
  const std::vector<Trace> job = generate_job(source(path), JobSpec{.ranks = 2, .straggler = 1, .max_offset_ns = 100'000});
  for (const Trace& t : job) {
    const graph::Window w = timing::find_window(t, "", "ProfilerStep", 0);
    const graph::DepGraph g = graph::build_graph(t, w);
    EXPECT_GT(g.nodes(), 100u) << w.label;
    // Nesting kept on every host thread: finish() had nothing to clamp.
    EXPECT_EQ(t.quirks.clamped_children, 0);
  }
}

/// Correlation ids of the API calls each ProfilerStep annotation holds (same thread, inside it),
/// in step order (a clock offset moves both alike).
std::vector<std::set<std::int64_t>> calls_per_step(const Trace& t) {
  std::vector<std::pair<std::string, std::uint32_t>> steps;
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    const std::string_view name = t.strings.view(t.ops.name[i]);
    if (t.ops.kind[i] == OpKind::kAnnotation && name.starts_with("ProfilerStep#")) steps.emplace_back(name, i);
  }
  std::sort(steps.begin(), steps.end());
  std::vector<std::set<std::int64_t>> out;
  for (const auto& [name, a] : steps) {
    std::set<std::int64_t>& calls = out.emplace_back();
    for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
      if (trace::is_api_call(t.ops.kind[i]) && t.ops.thread[i] == t.ops.thread[a] && t.ops.process[i] == t.ops.process[a] &&
          t.ops.start_ns[i] >= t.ops.start_ns[a] && t.ops.end_ns(i) <= t.ops.end_ns(a)) {
        calls.insert(t.ops.correlation[i]);
      }
    }
  }
  return out;
}

TEST(JobGenerator, ProfilerStepsHoldTheSameCallsAsInTheSource) {
  EMO_REQUIRE_DATA(path, kTraining);
  const Trace& src = source(path);
  const auto want = calls_per_step(src);
  ASSERT_GE(want.size(), 2u);
  ASSERT_GT(want[0].size(), 100u);
  const std::vector<Trace> job = generate_job(src, JobSpec{.ranks = 2, .straggler = 0, .max_offset_ns = 80'000});
  for (const Trace& t : job) EXPECT_EQ(calls_per_step(t), want) << "rank " << t.meta.rank;
}

TEST(JobGenerator, JitterHasTheRequestedSpread) {
  EMO_REQUIRE_DATA(path, kTraining);
  const Trace& src = source(path);
  // Kernels with a correlation id of their own pair the source with the generated trace.
  auto by_correlation = [](const Trace& t) {
    std::map<std::int64_t, std::vector<std::uint32_t>> m;
    for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
      if (is_compute_kernel(t, i) && t.ops.correlation[i] != trace::kNone) m[t.ops.correlation[i]].push_back(i);
    }
    return m;
  };
  const double jitter = 0.05;
  const std::vector<Trace> job = generate_job(src, JobSpec{.ranks = 1, .jitter = jitter, .seed = 21});
  const auto a = by_correlation(src), b = by_correlation(job[0]);
  double sum = 0, sum2 = 0;
  int n = 0;
  for (const auto& [corr, rows] : a) {
    const auto it = b.find(corr);
    if (rows.size() != 1 || it == b.end() || it->second.size() != 1) continue;
    const TimeNs d0 = src.ops.dur_ns[rows[0]];
    if (d0 < 10'000) continue;  // ≥ 10 µs: rounding to the ns is negligible
    const double ratio = static_cast<double>(job[0].ops.dur_ns[it->second[0]]) / static_cast<double>(d0);
    sum += ratio;
    sum2 += ratio * ratio;
    ++n;
  }
  ASSERT_GT(n, 500);
  const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  EXPECT_NEAR(mean, 1.0, 4 * jitter / std::sqrt(n));
  EXPECT_NEAR(sd, jitter, 0.1 * jitter) << n << " kernels";
}

TEST(JobGenerator, RejectsBadSpecs) {
  EMO_REQUIRE_DATA(path, kAllreduce);
  const Trace& src = source(path);
  for (auto bad : {JobSpec{.ranks = 0}, JobSpec{.ranks = 2, .straggler = 2}, JobSpec{.ranks = 2, .jitter = -1},
                   JobSpec{.ranks = 2, .group_size = -1}}) {
    EXPECT_THROW((JobGenerator{src, bad}), std::invalid_argument) << describe(bad);
  }
}

TEST(MakeJob, WritesLabelledRankFilesThatLoadBack) {
  EMO_REQUIRE_DATA(path, kAllreduce);
  const auto dir = scratch_dir("make-job");
  const std::string out = (dir / "job").string(), log = (dir / "log").string();
  const std::string cmd = std::string(EMO_MAKE_JOB) + " " + path + " " + out +
                          " --ranks 3 --straggler 1 --slowdown 0.2 --max-offset-us 150 --group-size 2 --seed 9 > " + log;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_NE(read_file(log).view().find("SYNTHETIC job: 3 ranks"), std::string_view::npos);
  JobSpec spec{.ranks = 3, .straggler = 1, .straggler_slowdown = 0.2, .max_offset_ns = 150'000, .seed = 9,
               .group_size = 2};
  const JobGenerator gen(source(path), spec);
  for (int r = 0; r < 3; ++r) {
    const std::string file = out + "/rank0000" + std::to_string(r) + ".json.gz";
    const Trace t = trace::load_trace(file);
    EXPECT_EQ(t.meta.rank, r);
    EXPECT_EQ(t.meta.world_size, 3);
    const std::string text(read_maybe_gzip(file).view());
    EXPECT_NE(text.find("\"emo_synthetic\""), std::string::npos);
    EXPECT_NE(text.find("\"offset_ns\": " + std::to_string(gen.offset_ns(r))), std::string::npos);
    const Trace want = gen.rank_trace(r);
    ASSERT_EQ(t.ops.size(), want.ops.size());
    EXPECT_EQ(t.ops.start_ns, want.ops.start_ns);
    EXPECT_EQ(t.ops.dur_ns, want.ops.dur_ns);
    ASSERT_EQ(t.collectives.size(), want.collectives.size());
    for (std::size_t c = 0; c < t.collectives.size(); ++c) {
      EXPECT_EQ(t.strings.view(t.collectives.group[c]), r < 2 ? "g0" : "g1");
      EXPECT_EQ(t.strings.view(t.collectives.group_ranks[c]), r < 2 ? "[0, 1]" : "[2]");
      EXPECT_EQ(t.collectives.group_size[c], r < 2 ? 2 : 1);
      EXPECT_EQ(t.collectives.sequence[c], want.collectives.sequence[c]);
    }
  }
}

TEST(MakeJob, BadArgumentsExitTwoWithOneLine) {
  expect_exit_two_with_one_line(EMO_MAKE_JOB,
                                {"", "a b", "a b --ranks 0", "a b --ranks 2 --straggler 5", "a b --ranks x",
                                 "a b --ranks 2 --bogus 1", "a b --ranks 2 --jitter", "--bogus", "-x a b --ranks 2"},
                                scratch_dir("make-job-bad"));
}

TEST(MakeJob, HelpPrintsUsageOnStdoutAndExitsZero) {
  const auto dir = scratch_dir("make-job-help");
  for (const char* args : {"--help", "-h", "a b --ranks 2 --help"}) {
    const std::string out = (dir / "out").string(), err = (dir / "err").string();
    const std::string cmd = std::string(EMO_MAKE_JOB) + " " + args + " > " + out + " 2> " + err;
    const int rc = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(rc)) << cmd;
    EXPECT_EQ(WEXITSTATUS(rc), 0) << cmd << ": " << read_file(err).view();
    EXPECT_TRUE(read_file(out).view().starts_with("usage: emo_make_job SOURCE_TRACE OUT_DIR --ranks N")) << cmd;
    EXPECT_TRUE(read_file(err).view().empty()) << cmd << ": " << read_file(err).view();
  }
}

}  // namespace
}  // namespace emo::testing
