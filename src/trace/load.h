// Loading a trace file of any supported format. The format is detected from the content (gzip
// magic, SQLite header, JSON), never from the file name.
#pragma once

#include <string>
#include <string_view>

#include "trace/trace.h"

namespace emo::trace {

/// Formats recognised by detect_format().
enum class DetectedFormat { kJson, kSqlite, kUnknown };

/// Looks at the first bytes of a (decompressed) file: "SQLite format 3\0" -> kSqlite; first
/// non-whitespace byte '{' or '[' -> kJson (after an optional UTF-8 BOM); else kUnknown.
DetectedFormat detect_format(std::string_view head) noexcept;

/// Reads `path` (plain or gzip JSON — Kineto, or EMO's own emo.trace/1 JSON lines — or an nsys
/// SQLite export) into a finished Trace.
/// Throws emo::InputError with a one-line reason for anything that is not a readable trace.
Trace load_trace(const std::string& path);

}  // namespace emo::trace
