// Reader for EMO's own trace format, `emo.trace/1` (JSON lines written by the CUPTI tracer,
// libemo_tracer.so; format in docs/tracer.md and src/tracer/record_convert.h).
#pragma once

#include <string>
#include <string_view>

#include "core/file_io.h"
#include "trace/trace.h"

namespace emo::trace {

/// True when the first line of `head` is an emo.trace/1 header ({"format":"emo.trace/1",...}).
bool is_emo_trace(std::string_view head) noexcept;

/// Parses an emo.trace/1 document held in `text`; `path` names it in errors. Returns a finished
/// Trace: kernels, copies, memsets, runtime/driver calls, NVTX ranges (annotations) and sync
/// records; each event wait or event sync gets the stream and correlation of its cudaEventRecord
/// (by the CUDA ≥ 12.8 event-sync id where the record has one, else the latest record of that
/// event id with a smaller correlation id). A missing trailer (the program did not exit
/// normally) becomes a warning. Throws emo::InputError "FILE: line N: problem" for invalid
/// JSON, a header that is not emo.trace/1, or a record with a missing or mistyped field.
Trace read_emo_trace(const PaddedBuffer& text, const std::string& path);

}  // namespace emo::trace
