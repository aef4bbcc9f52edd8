// emo-bench-ingest: how fast EMO turns Kineto JSON into its trace model, against simdjson's own
// DOM parser on the same bytes (the floor any JSON reader is measured against).
//
// Input: $EMO_BENCH_TRACE, else hta_v100_ns_resolution.json.gz from the data directory
// ($EMO_DATA_DIR, else ../shared/data beside the checkout). A gzip file is decompressed once,
// in memory, before any benchmark runs.
//
//   BM_SimdjsonDomParse  simdjson::dom::parser::parse of the JSON bytes (parser reused)
//   BM_EmoKinetoIngest   emo::trace::read_kineto_json on a fresh copy of the bytes (the copy is
//                        made with the timer paused; the reader may modify its buffer)
//   BM_Gunzip            emo::gunzip of the file (only when it is gzip)
//
// Times are process CPU time (MeasureProcessCPUTime), so rates are bytes of *decompressed* JSON
// per CPU second; Google Benchmark also prints wall time. All the usual flags work, e.g.
//   emo-bench-ingest --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//                    --benchmark_format=json
// Extra flag: --emo_chunk_bytes=N sets KinetoOptions::chunk_bytes for BM_EmoKinetoIngest.
#include <benchmark/benchmark.h>

#include "bench_input.h"
#include <simdjson.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "trace/kineto/kineto_reader.h"

#ifndef EMO_DEFAULT_DATA_DIR
#define EMO_DEFAULT_DATA_DIR "../shared/data"
#endif

namespace {

using emo::PaddedBuffer;

struct Input {
  std::string path;
  PaddedBuffer file;  ///< The file as stored (gzip or not).
  PaddedBuffer json;  ///< Decompressed JSON.
  bool gzip = false;
};

Input* g_input = nullptr;
emo::trace::KinetoOptions g_options;

PaddedBuffer copy_of(const PaddedBuffer& b) {
  PaddedBuffer out(b.size());
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

void set_label(benchmark::State& state) {
  state.SetLabel(std::filesystem::path(g_input->path).filename().string());
}

void BM_SimdjsonDomParse(benchmark::State& state) {
  const PaddedBuffer& json = g_input->json;
  simdjson::dom::parser parser;
  if (auto err = parser.allocate(json.size())) {
    state.SkipWithError(simdjson::error_message(err));
    return;
  }
  for (auto _ : state) {
    simdjson::dom::element root;
    if (auto err = parser.parse(json.data(), json.size(), false).get(root)) {
      state.SkipWithError(simdjson::error_message(err));
      break;
    }
    benchmark::DoNotOptimize(root);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
  set_label(state);
}

/// A second, stricter reference: a bare simdjson On-Demand walk of the whole document that visits
/// every event's keys and skips their values (no numbers parsed, nothing stored). It shows how
/// much of EMO's time is the parse itself and how much is building the trace model.
void BM_SimdjsonOnDemandWalk(benchmark::State& state) {
  const PaddedBuffer& json = g_input->json;
  simdjson::ondemand::parser parser;
  for (auto _ : state) {
    std::size_t keys = 0;
    try {
      simdjson::ondemand::document doc =
          parser.iterate(json.data(), json.size(), json.size() + PaddedBuffer::kPadding);
      // Kineto traces are objects with a traceEvents member (the JSON Array form is skipped).
      simdjson::ondemand::array events = doc["traceEvents"].get_array().value();
      for (auto event : events) {
        for (auto field : event.get_object()) {
          benchmark::DoNotOptimize(field.key().value());
          ++keys;
        }
      }
    } catch (const simdjson::simdjson_error& e) {
      state.SkipWithError(e.what());
      break;
    }
    benchmark::DoNotOptimize(keys);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
  set_label(state);
}

void BM_EmoKinetoIngest(benchmark::State& state) {
  const PaddedBuffer& json = g_input->json;
  PaddedBuffer work(json.size());  // allocated once; refilled (untimed) before each run
  std::size_t ops = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(work.data(), json.data(), json.size());
    state.ResumeTiming();
    try {
      emo::trace::Trace trace = emo::trace::read_kineto_json(work, g_input->path, g_options);
      ops = trace.ops.size();
      benchmark::DoNotOptimize(trace.ops.start_ns.data());
      state.PauseTiming();  // freeing the model is not ingest
      { emo::trace::Trace dead = std::move(trace); }
      state.ResumeTiming();
    } catch (const emo::InputError& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
  state.counters["ops"] = benchmark::Counter(static_cast<double>(ops));
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops * state.iterations()),
                                               benchmark::Counter::kIsRate);
  set_label(state);
}

void BM_Gunzip(benchmark::State& state) {
  const PaddedBuffer& file = g_input->file;
  std::size_t out = 0;
  for (auto _ : state) {
    PaddedBuffer json = emo::gunzip(file.view(), g_input->path);
    out = json.size();
    benchmark::DoNotOptimize(json.data());
  }
  // Rate in decompressed bytes, comparable with the parse rates.
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * out));
  state.counters["compressed_bytes"] = benchmark::Counter(static_cast<double>(file.size()));
  set_label(state);
}

/// Removes --emo_chunk_bytes=N from argv (Google Benchmark rejects flags it does not know).
bool take_own_flags(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    constexpr std::string_view kChunk = "--emo_chunk_bytes=";
    if (arg.starts_with(kChunk)) {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(argv[i] + kChunk.size(), &end, 10);
      if (end == argv[i] + kChunk.size() || *end != '\0' || n == 0) {
        std::fprintf(stderr, "emo-bench-ingest: error: bad %s\n", argv[i]);
        return false;
      }
      g_options.chunk_bytes = static_cast<std::size_t>(n);
      continue;
    }
    argv[out++] = argv[i];
  }
  argc = out;
  argv[argc] = nullptr;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!take_own_flags(argc, argv)) return 2;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  Input input;
  input.path = emo::bench::bench_trace_path();
  try {
    input.file = emo::read_file(input.path);
    input.gzip = emo::is_gzip(input.file.view());
    input.json = input.gzip ? emo::gunzip(input.file.view(), input.path) : copy_of(input.file);
    if (!input.gzip) input.file = PaddedBuffer();  // not needed: free it
  } catch (const emo::InputError& e) {
    std::fprintf(stderr, "emo-bench-ingest: error: %s\n", e.what());
    return 2;
  }
  g_input = &input;
  benchmark::AddCustomContext("emo_trace", input.path);
  benchmark::AddCustomContext("emo_json_bytes", std::to_string(input.json.size()));
  benchmark::AddCustomContext("emo_chunk_bytes", std::to_string(g_options.chunk_bytes));

  benchmark::RegisterBenchmark("BM_SimdjsonOnDemandWalk", BM_SimdjsonOnDemandWalk)
      ->Unit(benchmark::kMillisecond)
      ->MeasureProcessCPUTime();
  benchmark::RegisterBenchmark("BM_SimdjsonDomParse", BM_SimdjsonDomParse)
      ->Unit(benchmark::kMillisecond)
      ->MeasureProcessCPUTime();
  benchmark::RegisterBenchmark("BM_EmoKinetoIngest", BM_EmoKinetoIngest)
      ->Unit(benchmark::kMillisecond)
      ->MeasureProcessCPUTime();
  if (input.gzip) {
    benchmark::RegisterBenchmark("BM_Gunzip", BM_Gunzip)
        ->Unit(benchmark::kMillisecond)
        ->MeasureProcessCPUTime();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
