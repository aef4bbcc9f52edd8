// emo_make_job: writes a SYNTHETIC N-rank job derived from one real rank trace (issue 16), for
// tests and benchmarks of multi-rank linking and optimisation. Not a recording of a real job:
// see tests/support/job_generator.h and docs/synthetic-jobs.md for what is made up.
//
//   emo_make_job SOURCE_TRACE OUT_DIR --ranks N [--straggler R] [--slowdown 0.10] [--jitter 0.01]
//                [--max-offset-us 200] [--group-size G] [--seed S] [--threads 2]
//
// Writes OUT_DIR/rank00000.json.gz ... (Kineto JSON, gzip), one per rank, each with
// distributedInfo (rank, world size), the collectives' process group, its ranks and sequence
// numbers, and a top-level "emo_synthetic" object saying how it was made (EMO's Kineto reader
// ignores it). Prints "SYNTHETIC job: ..." with the ranks' clock offsets.
// -h/--help prints the usage on stdout and exits 0.
// Exit codes: 0 done; 2 bad arguments (one line on stderr); 1 a trace that cannot be read or an
// output that cannot be written (one line on stderr).
#include <libdeflate.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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
#include "trace/kineto/kineto_writer.h"
#include "trace/load.h"

namespace {

using emo::TimeNs;
using emo::testing::JobSpec;

/// libdeflate level: 3 writes ~2x faster than 6 for ~10 % more bytes (writing is most of the time).
constexpr int kGzipLevel = 3;

struct Args {
  std::string source, out_dir;
  JobSpec spec;
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

constexpr const char* kUsage =
    "usage: emo_make_job SOURCE_TRACE OUT_DIR --ranks N [--straggler R] [--slowdown 0.10] [--jitter 0.01]\n"
    "                    [--max-offset-us 200] [--group-size G] [--seed S] [--threads 2]\n"
    "Writes a SYNTHETIC N-rank job derived from one real rank trace: OUT_DIR/rank00000.json.gz ...\n"
    "(Kineto JSON, gzip), one per rank; not a recording of a real job (docs/synthetic-jobs.md).\n"
    "Exit codes: 0 done; 2 bad arguments; 1 a trace that cannot be read or an output that cannot be written.\n";

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string_view> positional;
  bool have_ranks = false;
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
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) throw BadArgs(fmt::format("{} needs a value", arg));
      return argv[++i];
    };
    if (arg == "--ranks") {
      a.spec.ranks = parse_number<int>(arg, value());
      have_ranks = true;
    } else if (arg == "--straggler") {
      a.spec.straggler = parse_number<int>(arg, value());
    } else if (arg == "--slowdown") {
      a.spec.straggler_slowdown = parse_double(arg, value());
    } else if (arg == "--jitter") {
      a.spec.jitter = parse_double(arg, value());
    } else if (arg == "--max-offset-us") {
      a.spec.max_offset_ns = std::llround(parse_double(arg, value()) * 1000.0);
    } else if (arg == "--group-size") {
      a.spec.group_size = parse_number<int>(arg, value());
    } else if (arg == "--threads") {
      a.threads = parse_number<int>(arg, value());
      if (a.threads < 1) throw BadArgs("--threads must be >= 1");
    } else if (arg == "--seed") {
      a.spec.seed = parse_number<std::uint64_t>(arg, value());
    } else {
      throw BadArgs(fmt::format("unknown option {} (see emo_make_job --help)", arg));
    }
  }
  if (positional.size() != 2) throw BadArgs("usage: emo_make_job SOURCE_TRACE OUT_DIR --ranks N [options]");
  if (!have_ranks) throw BadArgs("--ranks N is required");
  a.source = positional[0];
  a.out_dir = positional[1];
  return a;
}

/// The "emo_synthetic" member that labels every output.
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

std::string gzip(const std::string& text) {
  std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)> c(libdeflate_alloc_compressor(kGzipLevel),
                                                                                   &libdeflate_free_compressor);
  if (!c) throw std::runtime_error("out of memory (libdeflate)");
  std::string out(libdeflate_gzip_compress_bound(c.get(), text.size()), '\0');
  out.resize(libdeflate_gzip_compress(c.get(), text.data(), text.size(), out.data(), out.size()));
  if (out.empty()) throw std::runtime_error("gzip compression failed");
  return out;
}

/// Writes rank r's file; returns its size in bytes.
std::uintmax_t write_rank(const Args& a, const emo::testing::JobGenerator& gen, int r) {
  std::string json = emo::trace::to_kineto_json(gen.rank_trace(r));
  json.insert(json.find('{') + 2, label(a, gen, r));  // after "{\n": a top-level member
  const std::string gz = gzip(json);
  const std::string path = fmt::format("{}/rank{:05d}.json.gz", a.out_dir, r);
  std::ofstream f(path, std::ios::binary);
  f.write(gz.data(), static_cast<std::streamsize>(gz.size()));
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write", path));
  return gz.size();
}

/// Writes every rank, `a.threads` ranks at a time; returns the bytes written. Rethrows the first
/// error of any worker.
std::uintmax_t write_job(const Args& a, const emo::testing::JobGenerator& gen) {
  std::filesystem::create_directories(a.out_dir);
  std::atomic<int> next{0};
  std::atomic<std::uintmax_t> bytes{0};
  std::mutex m;
  std::exception_ptr error;
  auto work = [&] {
    for (int r; (r = next++) < a.spec.ranks;) {
      try {
        bytes += write_rank(a, gen, r);
      } catch (...) {
        const std::lock_guard lock(m);
        if (!error) error = std::current_exception();
        next = a.spec.ranks;
      }
    }
  };
  std::vector<std::thread> workers;
  for (int w = 1; w < a.threads; ++w) workers.emplace_back(work);
  work();
  for (std::thread& w : workers) w.join();
  if (error) std::rethrow_exception(error);
  return bytes;
}

/// Wall-clock seconds of the three phases.
struct Timings {
  double load_s = 0, replay_s = 0, write_s = 0;
};

void print_summary(const Args& a, const emo::testing::JobGenerator& gen, std::uintmax_t bytes, const Timings& t) {
  fmt::print("SYNTHETIC job: {} ranks derived from {} ({}); not a recording of a real job\n", a.spec.ranks,
             a.source, emo::testing::describe(a.spec));
  std::string offsets;
  for (int r = 0; r < a.spec.ranks; ++r) offsets += fmt::format("{}{}", r ? " " : "", gen.offset_ns(r));
  fmt::print("clock offsets (ns, added to each rank's timestamps, rank 0 first): {}\n", offsets);
  fmt::print("job span without offsets: {:.3f} ms\n", static_cast<double>(gen.span_ns()) / 1e6);
  fmt::print("wrote {}/rank00000.json.gz .. rank{:05d}.json.gz: {:.1f} MB; read the source in {:.2f} s, "
             "replayed the job in {:.2f} s, wrote the ranks in {:.2f} s ({} threads)\n",
             a.out_dir, a.spec.ranks - 1, static_cast<double>(bytes) / 1e6, t.load_s, t.replay_s, t.write_s,
             a.threads);
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
    if (s.ranks < 1) throw BadArgs("--ranks must be >= 1");
    if (s.straggler < -1 || s.straggler >= s.ranks) throw BadArgs("--straggler must be a rank of the job");
    if (s.straggler_slowdown < 0 || s.jitter < 0 || s.max_offset_ns < 0 || s.group_size < 0)
      throw BadArgs("--slowdown, --jitter, --max-offset-us and --group-size must be >= 0");
  } catch (const BadArgs& e) {
    fmt::print(stderr, "emo_make_job: error: {}\n", e.what());
    return 2;
  }
  try {
    using Clock = std::chrono::steady_clock;
    auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
    Timings t;
    auto t0 = Clock::now();
    const emo::trace::Trace source = emo::trace::load_trace(a.source);
    t.load_s = seconds_since(t0);
    t0 = Clock::now();
    const emo::testing::JobGenerator gen(source, a.spec);
    t.replay_s = seconds_since(t0);
    t0 = Clock::now();
    const std::uintmax_t bytes = write_job(a, gen);
    t.write_s = seconds_since(t0);
    print_summary(a, gen, bytes, t);
  } catch (const std::exception& e) {
    fmt::print(stderr, "emo_make_job: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
