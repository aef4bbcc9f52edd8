// emo_make_job: writes a SYNTHETIC multi-rank job, for tests and benchmarks of multi-rank linking
// and optimisation. Not a recording of a real job: see docs/synthetic-jobs.md for what is made up.
//
//   emo_make_job SOURCE_TRACE OUT_DIR --ranks N [--straggler R] [--slowdown 0.10] [--jitter 0.01]
//                [--max-offset-us 200] [--group-size G] [--seed S] [--threads 2]
//     (--mode dp, the default: N data-parallel copies of the real rank; support/job_generator.h)
//   emo_make_job SOURCE_TRACE OUT_DIR --mode pipeline|pipeline-interleaved [--stages 4]
//                [--microbatches 8] [--virtual-stages 2] [--dp 1] [--forward-ms 13] ...
//     (a made-up pipeline-parallel job built on the real rank's kernels; support/pipeline_job.h)
//
// Writes OUT_DIR/rank00000.json.gz ... (Kineto JSON, gzip), one per rank, each with
// distributedInfo (rank, world size), the collectives' process group, its ranks and sequence
// numbers (point-to-point kernels: Src Rank, Dst Rank), and a top-level "emo_synthetic" object
// saying how it was made (EMO's Kineto reader ignores it). Prints "SYNTHETIC job: ...".
// -h/--help prints the usage on stdout and exits 0.
// Exit codes: 0 done; 2 bad arguments (one line on stderr); 1 a trace that cannot be read or an
// output that cannot be written (one line on stderr).
#include <libdeflate.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_text.h"
#include "support/job_generator.h"
#include "support/pipeline_job.h"
#include "trace/kineto/kineto_writer.h"
#include "trace/load.h"

namespace {

using emo::TimeNs;
using emo::testing::JobSpec;
using emo::testing::PipelineSpec;

/// libdeflate level: 3 writes ~2x faster than 6 for ~10 % more bytes (writing is most of the time).
constexpr int kGzipLevel = 3;

enum class Mode { kDp, kPipeline, kInterleaved, kTp, kMoe };

struct Args {
  std::string source, out_dir;
  Mode mode = Mode::kDp;
  JobSpec spec;               ///< --mode dp.
  PipelineSpec pipe{.jitter = 0.01};  ///< --mode pipeline, pipeline-interleaved (jitter as dp's).
  int layer_kernels = 6;      ///< Kernels of the source per layer of a pass.
  std::string gpu_name;       ///< Overrides the source's GPU name.
  std::vector<std::string> dp_only, pipeline_only;  ///< Options given that only one mode takes.
  int threads = 2;  ///< Ranks written at a time.
  bool help = false;  ///< -h/--help: print kUsage and exit 0 (the other arguments are not checked).
};

struct BadArgs : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class T>
T parse_number(std::string_view flag, std::string_view text) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw BadArgs(fmt::format("{} takes a number, not '{}'", flag, text));
  return v;
}

double parse_double(std::string_view flag, std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v == v))
    throw BadArgs(fmt::format("{} takes a number, not '{}'", flag, text));
  return v;
}

/// "1,1,1,1.5" -> {1, 1, 1, 1.5}.
std::vector<double> parse_list(std::string_view flag, std::string_view text) {
  std::vector<double> out;
  std::size_t i = 0;
  while (i <= text.size()) {
    const std::size_t comma = std::min(text.find(',', i), text.size());
    out.push_back(parse_double(flag, text.substr(i, comma - i)));
    i = comma + 1;
  }
  return out;
}

TimeNs ms_to_ns(double ms) { return std::llround(ms * 1e6); }

constexpr const char* kUsage =
    "usage: emo_make_job SOURCE_TRACE OUT_DIR --ranks N [--straggler R] [--slowdown 0.10] [--jitter 0.01]\n"
    "                    [--max-offset-us 200] [--group-size G] [--seed S] [--threads 2]\n"
    "       emo_make_job SOURCE_TRACE OUT_DIR --mode pipeline|pipeline-interleaved [--stages 4] [--microbatches 8]\n"
    "                    [--virtual-stages 2] [--dp 1] [--iterations 1] [--forward-ms 13] [--backward-ratio 2]\n"
    "                    [--stage-scale 1,1,1,1.5 | --last-stage-scale 1.5] [--layers 2] [--layer-kernels 6]\n"
    "                    [--p2p-us 100] [--allreduce-ms 5] [--slow-replica R --replica-slowdown 0.06]\n"
    "                    [--straggler R] [--slowdown 0.10] [--jitter 0.01] [--max-offset-us 0] [--seed S]\n"
    "                    [--tp T] [--moe] [--gpu-name NAME] [--threads 2]\n"
    "       emo_make_job SOURCE_TRACE OUT_DIR --mode tp|moe [pipeline options]\n"
    "Writes a SYNTHETIC job as OUT_DIR/rank00000.json.gz ... (Kineto JSON, gzip), one per rank; not a recording\n"
    "of a real job (docs/synthetic-jobs.md).\n"
    "  --mode dp (default): N data-parallel copies of the real rank SOURCE_TRACE, coupled at its collectives.\n"
    "  --mode pipeline: a 1F1B pipeline of S stages (one rank each) x M micro-batches, times x dp replicas\n"
    "    (rank = stage x dp + replica); each pass is --layers layers of the source's --layer-kernels kernels of\n"
    "    largest total time, scaled to --forward-ms (x the stage's scale; backward x --backward-ratio);\n"
    "    activations and gradients sent between neighbouring stages (SendRecv kernels with Src/Dst Rank, each\n"
    "    taking --p2p-us once both ends are posted); with --dp > 1 a gradient all-reduce per stage group\n"
    "    (--allreduce-ms) at the end of each iteration; --slow-replica makes one replica's kernels slower.\n"
    "  --mode pipeline-interleaved: Megatron's interleaved 1F1B, --virtual-stages chunks per rank (default 2;\n"
    "    micro-batches a multiple of the stages).\n"
    "  --tp T [--tp-allreduce-us 200]: T tensor-parallel ranks per stage, an all-reduce over them after each layer\n"
    "    (rank = (stage x dp + replica) x T + t). --mode tp: the same with --stages 1 --tp 4 unless given.\n"
    "  --moe [--expert-share 0.5] [--expert-imbalance 0.5] [--all-to-all-us 300]: each layer also dispatches\n"
    "    (all-to-all) to experts over the stage's data-parallel group and combines back; one rank of the group,\n"
    "    turning with layer and micro-batch, has (1 + imbalance) x the expert time. --mode moe: the same with\n"
    "    --stages 1 --dp 4 unless given.\n"
    "Exit codes: 0 done; 2 bad arguments; 1 a trace that cannot be read or an output that cannot be written.\n";

/// Options that only --mode dp takes; false when `arg` is not one of them.
bool parse_dp_option(Args& a, std::string_view arg, const std::function<std::string_view()>& value) {
  if (arg == "--ranks") {
    a.spec.ranks = parse_number<int>(arg, value());
  } else if (arg == "--group-size") {
    a.spec.group_size = parse_number<int>(arg, value());
  } else {
    return false;
  }
  a.dp_only.emplace_back(arg);
  return true;
}

/// Options that only the pipeline modes take; false when `arg` is not one of them.
bool parse_pipeline_option(Args& a, std::string_view arg, const std::function<std::string_view()>& value) {
  PipelineSpec& p = a.pipe;
  if (arg == "--stages") p.stages = parse_number<int>(arg, value());
  else if (arg == "--microbatches") p.microbatches = parse_number<int>(arg, value());
  else if (arg == "--virtual-stages") p.virtual_stages = parse_number<int>(arg, value());
  else if (arg == "--dp") p.dp = parse_number<int>(arg, value());
  else if (arg == "--iterations") p.iterations = parse_number<int>(arg, value());
  else if (arg == "--layers") p.layers = parse_number<int>(arg, value());
  else if (arg == "--layer-kernels") a.layer_kernels = parse_number<int>(arg, value());
  else if (arg == "--forward-ms") p.forward_ns = ms_to_ns(parse_double(arg, value()));
  else if (arg == "--backward-ratio") p.backward_ratio = parse_double(arg, value());
  else if (arg == "--stage-scale") p.stage_scale = parse_list(arg, value());
  else if (arg == "--last-stage-scale") p.stage_scale = {-parse_double(arg, value())};  // expanded in parse_args
  else if (arg == "--p2p-us") p.p2p_ns = std::llround(parse_double(arg, value()) * 1e3);
  else if (arg == "--allreduce-ms") p.allreduce_ns = ms_to_ns(parse_double(arg, value()));
  else if (arg == "--slow-replica") p.slow_replica = parse_number<int>(arg, value());
  else if (arg == "--replica-slowdown") p.replica_slowdown = parse_double(arg, value());
  else if (arg == "--gpu-name") a.gpu_name = value();
  else if (arg == "--tp") p.tp = parse_number<int>(arg, value());
  else if (arg == "--tp-allreduce-us") p.tp_allreduce_ns = std::llround(parse_double(arg, value()) * 1e3);
  else if (arg == "--moe") p.moe = true;
  else if (arg == "--expert-share") p.expert_share = parse_double(arg, value());
  else if (arg == "--expert-imbalance") p.expert_imbalance = parse_double(arg, value());
  else if (arg == "--all-to-all-us") p.all_to_all_ns = std::llround(parse_double(arg, value()) * 1e3);
  else return false;
  a.pipeline_only.emplace_back(arg);
  return true;
}

/// Options that every mode takes; false when `arg` is not one of them.
bool parse_common_option(Args& a, std::string_view arg, const std::function<std::string_view()>& value) {
  if (arg == "--straggler") {
    a.spec.straggler = a.pipe.straggler = parse_number<int>(arg, value());
  } else if (arg == "--slowdown") {
    a.spec.straggler_slowdown = a.pipe.straggler_slowdown = parse_double(arg, value());
  } else if (arg == "--jitter") {
    a.spec.jitter = a.pipe.jitter = parse_double(arg, value());
  } else if (arg == "--max-offset-us") {
    a.spec.max_offset_ns = a.pipe.max_offset_ns = std::llround(parse_double(arg, value()) * 1000.0);
  } else if (arg == "--seed") {
    a.spec.seed = a.pipe.seed = parse_number<std::uint64_t>(arg, value());
  } else if (arg == "--threads") {
    a.threads = parse_number<int>(arg, value());
    if (a.threads < 1) throw BadArgs("--threads must be >= 1");
  } else if (arg == "--mode") {
    const std::string_view m = value();
    if (m == "dp") a.mode = Mode::kDp;
    else if (m == "pipeline") a.mode = Mode::kPipeline;
    else if (m == "pipeline-interleaved") a.mode = Mode::kInterleaved;
    else if (m == "tp") a.mode = Mode::kTp;
    else if (m == "moe") a.mode = Mode::kMoe;
    else throw BadArgs(fmt::format("--mode takes dp, pipeline, pipeline-interleaved, tp or moe, not '{}'", m));
  } else {
    return false;
  }
  return true;
}

/// Checks that go with the mode: --ranks for dp, no option of the other mode; expands
/// --last-stage-scale; the interleaved default of 2 chunks.
void check_mode(Args& a) {
  if (a.mode == Mode::kDp) {
    if (!a.pipeline_only.empty())
      throw BadArgs(fmt::format("{} needs --mode pipeline, pipeline-interleaved, tp or moe", a.pipeline_only[0]));
    if (std::find(a.dp_only.begin(), a.dp_only.end(), "--ranks") == a.dp_only.end()) throw BadArgs("--ranks N is required");
    return;
  }
  if (!a.dp_only.empty()) throw BadArgs(fmt::format("{} is for --mode dp (a pipeline job has stages x dp ranks)", a.dp_only[0]));
  PipelineSpec& p = a.pipe;
  auto given = [&](std::string_view flag) {
    return std::find(a.pipeline_only.begin(), a.pipeline_only.end(), flag) != a.pipeline_only.end();
  };
  if (a.mode == Mode::kInterleaved && !given("--virtual-stages")) p.virtual_stages = 2;
  if ((a.mode == Mode::kTp || a.mode == Mode::kMoe) && !given("--stages")) p.stages = 1;
  if (a.mode == Mode::kTp && !given("--tp")) p.tp = 4;
  if (a.mode == Mode::kMoe && !given("--dp")) p.dp = 4;
  if (a.mode == Mode::kMoe) p.moe = true;
  if (a.mode != Mode::kInterleaved && p.virtual_stages != 1) throw BadArgs("--virtual-stages needs --mode pipeline-interleaved");
  if (a.mode == Mode::kInterleaved && p.virtual_stages < 2) throw BadArgs("--mode pipeline-interleaved needs --virtual-stages >= 2");
  if (p.stages < 1) throw BadArgs("--stages must be >= 1");
  if (p.stage_scale.size() == 1 && p.stage_scale[0] < 0) {  // --last-stage-scale F
    const double last = -p.stage_scale[0];
    p.stage_scale.assign(static_cast<std::size_t>(p.stages), 1.0);
    p.stage_scale.back() = last;
  }
  if (a.layer_kernels < 1) throw BadArgs("--layer-kernels must be >= 1");
}

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string_view> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      a.help = true;
      return a;
    }
    if (!arg.starts_with("-") || arg == "-") {
      positional.push_back(arg);
      continue;
    }
    // The option's value: the next argument (taken only by a known option).
    const std::function<std::string_view()> value = [&]() -> std::string_view {
      if (i + 1 >= argc) throw BadArgs(fmt::format("{} needs a value", arg));
      return argv[++i];
    };
    if (!parse_common_option(a, arg, value) && !parse_dp_option(a, arg, value) && !parse_pipeline_option(a, arg, value))
      throw BadArgs(fmt::format("unknown option {} (see emo_make_job --help)", arg));
  }
  if (positional.size() != 2) throw BadArgs("usage: emo_make_job SOURCE_TRACE OUT_DIR --ranks N [options]");
  check_mode(a);
  a.source = positional[0];
  a.out_dir = positional[1];
  return a;
}

/// The "emo_synthetic" member that labels every output of --mode dp.
std::string label(const Args& a, const emo::testing::JobGenerator& gen, int rank) {
  const JobSpec& s = a.spec;
  return fmt::format(
      "  \"emo_synthetic\": {{\"note\": {}, \"source\": {}, \"seed\": {}, \"ranks\": {}, \"rank\": {}, "
      "\"straggler\": {}, \"straggler_slowdown\": {}, \"jitter\": {}, \"max_offset_ns\": {}, "
      "\"group_size\": {}, \"offset_ns\": {}}},\n",
      emo::json_quote("SYNTHETIC: derived by emo_make_job from one real rank trace; not a recording"),
      emo::json_quote(a.source), s.seed, s.ranks, rank, s.straggler, s.straggler_slowdown, s.jitter,
      s.max_offset_ns, s.group_size, gen.offset_ns(rank));
}

std::string_view mode_name(Mode m) {
  switch (m) {
    case Mode::kDp: return "dp";
    case Mode::kPipeline: return "pipeline";
    case Mode::kInterleaved: return "pipeline-interleaved";
    case Mode::kTp: return "tp";
    case Mode::kMoe: return "moe";
  }
  return "?";
}

/// The "emo_synthetic" member that labels every output of the pipeline modes.
std::string pipeline_label(const Args& a, const emo::testing::PipelineJob& job, int rank) {
  const PipelineSpec& s = job.spec();
  std::string layer;
  for (const auto& k : job.source().layer) layer += fmt::format("{}{}", layer.empty() ? "" : ", ", emo::json_quote(k.name));
  return fmt::format(
      "  \"emo_synthetic\": {{\"note\": {}, \"mode\": {}, \"source\": {}, \"spec\": {}, \"layer_kernels\": [{}], "
      "\"rank\": {}, \"stage\": {}, \"replica\": {}, \"offset_ns\": {}}},\n",
      emo::json_quote("SYNTHETIC: a pipeline-parallel job made up by emo_make_job; kernel names, their relative "
                      "durations and the host's launch timing taken from one real rank trace; not a recording"),
      emo::json_quote(mode_name(a.mode)), emo::json_quote(a.source),
      emo::json_quote(emo::testing::describe(s)), layer, rank, job.stage_of(rank), job.replica_of(rank),
      job.offset_ns(rank));
}

std::string gzip(const std::string& text) {
  std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)> c(libdeflate_alloc_compressor(kGzipLevel),
                                                                                   &libdeflate_free_compressor);
  if (!c) throw std::runtime_error("out of memory (libdeflate)");
  std::string out(libdeflate_gzip_compress_bound(c.get(), text.size()), '\0');
  out.resize(libdeflate_gzip_compress(c.get(), text.data(), text.size(), out.data(), out.size()));
  if (out.empty()) throw std::runtime_error("gzip compression failed");
  return out;
}

/// One rank's trace and its label member.
using RankWriter = std::function<std::pair<emo::trace::Trace, std::string>(int)>;

/// Writes rank r's file; returns its size in bytes.
std::uintmax_t write_rank(const std::string& out_dir, const RankWriter& make, int r) {
  const auto [trace, member] = make(r);
  std::string json = emo::trace::to_kineto_json(trace);
  json.insert(json.find('{') + 2, member);  // after "{\n": a top-level member
  const std::string gz = gzip(json);
  const std::string path = fmt::format("{}/rank{:05d}.json.gz", out_dir, r);
  std::ofstream f(path, std::ios::binary);
  f.write(gz.data(), static_cast<std::streamsize>(gz.size()));
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write", path));
  return gz.size();
}

/// Writes ranks 0 .. ranks-1, `threads` ranks at a time; returns the bytes written. Rethrows the
/// first error of any worker.
std::uintmax_t write_job(const std::string& out_dir, int ranks, int threads, const RankWriter& make) {
  std::filesystem::create_directories(out_dir);
  std::atomic<int> next{0};
  std::atomic<std::uintmax_t> bytes{0};
  std::mutex m;
  std::exception_ptr error;
  auto work = [&] {
    for (int r; (r = next++) < ranks;) {
      try {
        bytes += write_rank(out_dir, make, r);
      } catch (...) {
        const std::lock_guard lock(m);
        if (!error) error = std::current_exception();
        next = ranks;
      }
    }
  };
  std::vector<std::thread> workers;
  for (int w = 1; w < threads; ++w) workers.emplace_back(work);
  work();
  for (std::thread& w : workers) w.join();
  if (error) std::rethrow_exception(error);
  return bytes;
}

/// Wall-clock seconds of the three phases.
struct Timings {
  double load_s = 0, replay_s = 0, write_s = 0;
};

void print_written(const Args& a, int ranks, std::uintmax_t bytes, const Timings& t) {
  fmt::print("wrote {}/rank00000.json.gz .. rank{:05d}.json.gz: {:.1f} MB; read the source in {:.2f} s, "
             "replayed the job in {:.2f} s, wrote the ranks in {:.2f} s ({} threads)\n",
             a.out_dir, ranks - 1, static_cast<double>(bytes) / 1e6, t.load_s, t.replay_s, t.write_s, a.threads);
}

void print_summary(const Args& a, const emo::testing::JobGenerator& gen, std::uintmax_t bytes, const Timings& t) {
  fmt::print("SYNTHETIC job: {} ranks derived from {} ({}); not a recording of a real job\n", a.spec.ranks,
             a.source, emo::testing::describe(a.spec));
  std::string offsets;
  for (int r = 0; r < a.spec.ranks; ++r) offsets += fmt::format("{}{}", r ? " " : "", gen.offset_ns(r));
  fmt::print("clock offsets (ns, added to each rank's timestamps, rank 0 first): {}\n", offsets);
  fmt::print("job span without offsets: {:.3f} ms\n", static_cast<double>(gen.span_ns()) / 1e6);
  print_written(a, a.spec.ranks, bytes, t);
}

void print_pipeline_summary(const Args& a, const emo::testing::PipelineJob& job, std::uintmax_t bytes, const Timings& t) {
  const PipelineSpec& s = job.spec();
  fmt::print("SYNTHETIC job: {} ranks, a made-up {} pipeline ({} stages x {} micro-batches{}, {} replica(s), "
             "tensor-parallel {}{}) on the kernels of {} ({}); not a recording of a real job\n",
             job.ranks(), s.virtual_stages > 1 ? "interleaved 1F1B" : "1F1B", s.stages, s.microbatches,
             s.virtual_stages > 1 ? fmt::format(", {} chunks per rank", s.virtual_stages) : "", s.dp, s.tp,
             s.moe ? ", MoE" : "", a.source, emo::testing::describe(s));
  fmt::print("GPU {}; host: launch call {} ns, CPU gap {} ns; {} point-to-point transfers, {} collectives\n",
             job.source().gpu.name, job.source().host.launch_ns, job.source().host.gap_ns, job.transfers(),
             job.collectives());
  std::string busy;
  for (int r = 0; r < std::min(job.ranks(), 16); ++r)
    busy += fmt::format("{}{:.1f}", r ? " " : "", 100.0 * static_cast<double>(job.compute_ns(r)) / static_cast<double>(job.span_ns()));
  fmt::print("job span without offsets: {:.3f} ms; compute busy % of the span by rank{}: {}\n",
             static_cast<double>(job.span_ns()) / 1e6, job.ranks() > 16 ? " (first 16)" : "", busy);
  print_written(a, job.ranks(), bytes, t);
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void make_dp_job(const Args& a, const emo::trace::Trace& source, Timings& t) {
  auto t0 = Clock::now();
  const emo::testing::JobGenerator gen(source, a.spec);
  t.replay_s = seconds_since(t0);
  t0 = Clock::now();
  const std::uintmax_t bytes = write_job(a.out_dir, a.spec.ranks, a.threads, [&](int r) {
    return std::make_pair(gen.rank_trace(r), label(a, gen, r));
  });
  t.write_s = seconds_since(t0);
  print_summary(a, gen, bytes, t);
}

void make_pipeline_job(const Args& a, const emo::trace::Trace& source, Timings& t) {
  auto t0 = Clock::now();
  emo::testing::JobSource src = emo::testing::job_source(source, a.layer_kernels);
  if (!a.gpu_name.empty()) src.gpu.name = a.gpu_name;
  const emo::testing::PipelineJob job(std::move(src), a.pipe);
  t.replay_s = seconds_since(t0);
  t0 = Clock::now();
  const std::uintmax_t bytes = write_job(a.out_dir, job.ranks(), a.threads, [&](int r) {
    return std::make_pair(job.rank_trace(r), pipeline_label(a, job, r));
  });
  t.write_s = seconds_since(t0);
  print_pipeline_summary(a, job, bytes, t);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  try {
    a = parse_args(argc, argv);
    if (a.help) {
      fmt::print("{}", kUsage);
      return 0;
    }
    const JobSpec& s = a.spec;
    if (a.mode == Mode::kDp) {
      if (s.ranks < 1) throw BadArgs("--ranks must be >= 1");
      if (s.straggler < -1 || s.straggler >= s.ranks) throw BadArgs("--straggler must be a rank of the job");
      if (s.straggler_slowdown < 0 || s.jitter < 0 || s.max_offset_ns < 0 || s.group_size < 0)
        throw BadArgs("--slowdown, --jitter, --max-offset-us and --group-size must be >= 0");
    } else {
      // The spec's own check, one line (the source's kernels are checked once it is read).
      emo::testing::JobSource probe;
      probe.layer = {{"k", 1.0}};
      try {
        emo::testing::PipelineJob::check(a.pipe, probe);
      } catch (const std::invalid_argument& e) {
        throw BadArgs(e.what());
      }
    }
  } catch (const BadArgs& e) {
    fmt::print(stderr, "emo_make_job: error: {}\n", e.what());
    return 2;
  }
  try {
    Timings t;
    const auto t0 = Clock::now();
    const emo::trace::Trace source = emo::trace::load_trace(a.source);
    t.load_s = seconds_since(t0);
    if (a.mode == Mode::kDp) make_dp_job(a, source, t);
    else make_pipeline_job(a, source, t);
  } catch (const std::exception& e) {
    fmt::print(stderr, "emo_make_job: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
