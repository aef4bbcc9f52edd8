// What `emo inspect` reports about one trace: counts per op kind, streams, syncs, collectives,
// time span and the reader's warnings.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trace/trace.h"

namespace emo::trace {

/// GPU ops (kernel, memcpy, memset) that ran on one (device, stream).
struct StreamSummary {
  std::int32_t device = 0;
  std::int64_t stream = 0;
  std::int64_t ops = 0;
  TimeNs busy_ns = 0;  ///< Sum of the ops' durations (ops of one stream do not overlap).
};

struct TraceSummary {
  std::string path;
  std::string format;               ///< trace_format_name()
  std::string gpu;                  ///< GPU name(s) of the devices that ran GPU ops
  std::int32_t rank = -1;
  std::int32_t world_size = -1;
  TimeNs start_ns = 0;              ///< First op start (ns since the trace's epoch).
  TimeNs end_ns = 0;                ///< Last op end.
  TimeNs span_ns = 0;               ///< end_ns - start_ns; 0 for an empty trace.
  std::array<std::int64_t, kOpKindCount> by_kind{};  ///< Indexed by OpKind.
  std::int64_t api_calls = 0;       ///< Runtime + driver calls.
  std::int64_t collectives = 0;
  std::map<std::string, std::int64_t> syncs_by_kind;        ///< sync_kind_name -> count
  std::map<std::string, std::int64_t> sync_calls_by_kind;   ///< API calls by sync_kind_of_api_call
  std::map<std::string, std::int64_t> collectives_by_name;  ///< "allreduce" -> count
  std::vector<StreamSummary> streams;  ///< Sorted by (device, stream).
  std::vector<std::int32_t> gpu_devices;  ///< Devices that ran GPU ops, ascending.
  std::int64_t host_threads = 0;    ///< Distinct (pid, tid) with host ops.
  std::vector<GpuInfo> gpus;
  QuirkCounts quirks;
  std::vector<std::string> warnings;
  /// Step markers in start order: annotations named ProfilerStep#N, and 2021-era framework ops
  /// (category "Operator") of that name. Each is a window (`--annotation ProfilerStep --instance
  /// K`, or `--window ProfilerStep#N`).
  std::vector<std::string> steps;
  /// Annotation names with their counts, most frequent first (ties by name); a NAME#N family
  /// (ProfilerStep#5, ProfilerStep#6, ...) is counted as "NAME#*". Every name, for the JSON;
  /// the text shows the top ones.
  std::vector<std::pair<std::string, std::int64_t>> annotation_names;

  std::int64_t count(OpKind k) const { return by_kind[static_cast<int>(k)]; }
};

/// Summarises a finished trace. O(ops log streams).
TraceSummary summarize(const Trace& trace);

/// The `emo inspect --json` object of one trace: format, gpu, rank, world_size (null when
/// unknown), span_ns, counts {kernel, memcpy, memset, runtime (runtime + driver API calls), sync
/// (sync records), collective, ...}, streams [{device, stream, ops, busy_ns}], warnings [...],
/// steps [name], annotation_names [[name, count]] (top 50), plus detail (syncs by kind,
/// collectives by name, gpus, quirks).
nlohmann::json to_json(const TraceSummary& s);

/// Human-readable multi-line summary.
std::string to_text(const TraceSummary& s);

}  // namespace emo::trace
