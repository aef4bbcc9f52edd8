// Reader for PyTorch profiler / Kineto Chrome-trace JSON.
//
// Handles the current categories (kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver,
// cpu_op, user_annotation, gpu_user_annotation, cuda_sync) and the 2021-era ones (Kernel, Memcpy,
// Memset, Runtime, Operator); ROCm traces (hip* calls, string stream ids "0x0",
// baseTimeNanoseconds); metadata before or after traceEvents; the JSON Array form (a bare list
// of events). Timestamps are parsed exactly from the decimal text into integer ns.
//
// Speed: the events array is cut into chunks of about 8 MiB at event boundaries and each chunk
// is parsed with simdjson On-Demand, so the parser's index stays small (bench/ measures it).
#pragma once

#include <string>
#include <string_view>

#include "core/file_io.h"
#include "trace/trace.h"

namespace emo::trace {

/// How the events array was cut (for tests and benchmarks).
struct KinetoStats {
  std::size_t chunks = 0;        ///< Slices parsed successfully.
  std::size_t recut_chunks = 0;  ///< Fast cuts that landed inside a string or nested object and
                                 ///< were redone at an exact boundary.
};

struct KinetoOptions {
  /// Target size of the slices of the events array handed to simdjson (bytes).
  std::size_t chunk_bytes = 8u << 20;
  /// When set, receives how the events array was cut.
  KinetoStats* stats = nullptr;
};

/// Parses Kineto JSON held in `json` (which it may modify in place: a few bytes at chunk
/// boundaries are overwritten). `path` names the file in errors. Returns a finished Trace.
/// Throws emo::InputError: invalid JSON, no `traceEvents`, wrong field types, missing `ts`/`dur`
/// on complete events, non-numeric timestamps.
Trace read_kineto_json(PaddedBuffer& json, const std::string& path,
                       const KinetoOptions& options = {});

}  // namespace emo::trace
