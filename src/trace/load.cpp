#include "trace/load.h"

#include <fmt/format.h>

#include <cstring>

#include "trace/emo/emo_trace_reader.h"
#include "core/error.h"
#include "core/file_io.h"
#include "trace/kineto/kineto_reader.h"
#include "trace/nsys/nsys_reader.h"

namespace emo::trace {

DetectedFormat detect_format(std::string_view head) noexcept {
  static constexpr char kSqliteMagic[] = "SQLite format 3";  // followed by '\0'
  if (head.size() >= sizeof(kSqliteMagic) &&
      std::memcmp(head.data(), kSqliteMagic, sizeof(kSqliteMagic)) == 0) {
    return DetectedFormat::kSqlite;
  }
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  for (char c : head) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return (c == '{' || c == '[') ? DetectedFormat::kJson : DetectedFormat::kUnknown;
  }
  return DetectedFormat::kUnknown;
}

Trace load_trace(const std::string& path) {
  PaddedBuffer raw = read_file(path);
  if (raw.size() == 0) throw InputError(path, "empty file");
  if (detect_format(raw.view()) == DetectedFormat::kSqlite) return read_nsys_sqlite(path);
  PaddedBuffer text;
  if (is_gzip(raw.view())) {
    text = gunzip(raw.view(), path);
    raw = PaddedBuffer();  // free the compressed bytes before parsing
  } else {
    text = std::move(raw);
  }
  switch (detect_format(text.view())) {
    case DetectedFormat::kJson:
      if (is_emo_trace(text.view())) return read_emo_trace(text, path);  // EMO's own tracer
      return read_kineto_json(text, path);
    case DetectedFormat::kSqlite:
      throw InputError(path, "gzip-compressed SQLite is not supported; decompress it first");
    case DetectedFormat::kUnknown:
      break;
  }
  if (text.size() == 0) throw InputError(path, "empty after decompression");
  if (path.ends_with(".nsys-rep") || path.ends_with(".qdrep")) {
    throw InputError(path, fmt::format("an Nsight Systems report is not read directly: run `nsys export "
                                       "--type sqlite {}` and give EMO the .sqlite file it writes", path));
  }
  throw InputError(path, "unrecognised format: expected Kineto/Chrome JSON (plain or gzip), an "
                         "Nsight Systems SQLite export or an emo.trace/1 file");
}

}  // namespace emo::trace
