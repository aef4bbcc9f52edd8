// The input trace of EMO's benchmarks, shared by emo-bench-ingest and emo-bench-graph.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace emo::bench {

/// $EMO_BENCH_TRACE, else hta_v100_ns_resolution.json.gz in the data dir ($EMO_DATA_DIR, else
/// ../shared/data beside the checkout, compiled in as EMO_DEFAULT_DATA_DIR).
inline std::string bench_trace_path() {
  if (const char* t = std::getenv("EMO_BENCH_TRACE"); t != nullptr && *t != '\0') return t;
  std::filesystem::path dir = EMO_DEFAULT_DATA_DIR;
  if (const char* env = std::getenv("EMO_DATA_DIR"); env != nullptr && *env != '\0') dir = env;
  return (dir / "kineto" / "hta_v100_ns_resolution.json.gz").string();
}

}  // namespace emo::bench
