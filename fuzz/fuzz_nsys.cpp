// libFuzzer target for the Nsight Systems SQLite reader (emo::trace::read_nsys_sqlite).
//
// Mutating a SQLite file byte by byte mostly yields "file is not a database", so an input is
// taken two ways:
// - starting with the SQLite magic ("SQLite format 3\0"): the bytes are the database file;
// - otherwise: the bytes are an SQL script, run into a fresh database (tables of any shape,
//   values of any type: NULLs, text in integer columns, huge and negative numbers, missing
//   tables and columns), which is then read.
// The SQL runs with ATTACH denied, no VACUUM (any case) and extension loading off (the script can
// write only its own database), a progress-handler cap on steps (no endless recursive CTE) and a
// heap limit.
//
// emo::InputError is the expected answer to bad input and is swallowed; its message must be one
// line that starts with the file name. Anything else is a bug. An accepted trace is summarised as
// `emo inspect` would (summarize, to_text).
//
// Build and run: scripts/fuzz.sh --target nsys [SECONDS].
#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "core/error.h"
#include "trace/nsys/nsys_reader.h"
#include "trace/summary.h"
#include "trace/trace.h"

namespace {

const std::string& db_path() {
  static const std::string path = "/tmp/emo-fuzz-nsys-" + std::to_string(::getpid()) + ".sqlite";
  return path;
}

int deny_escapes(void*, int action, const char*, const char*, const char*, const char*) {
  // ATTACH would let a script create files anywhere; VACUUM (INTO) likewise.
  return action == SQLITE_ATTACH || action == SQLITE_DETACH ? SQLITE_DENY : SQLITE_OK;
}

int stop_long_queries(void* counter) {
  return ++*static_cast<int*>(counter) > 2000 ? 1 : 0;  // callbacks every 1000 VM steps
}

/// Runs `sql` into a fresh database at db_path(); false when nothing could be created.
bool build_from_sql(std::string_view sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path().c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    sqlite3_close_v2(db);
    return false;
  }
  sqlite3_set_authorizer(db, deny_escapes, nullptr);
  int steps = 0;
  sqlite3_progress_handler(db, 1000, stop_long_queries, &steps);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  const std::string text(sql);
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("vacuum") == std::string::npos) {  // VACUUM INTO 'file' writes elsewhere
    sqlite3_exec(db, text.c_str(), nullptr, nullptr, nullptr);  // errors leave a partial DB
  }
  sqlite3_close_v2(db);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sqlite3_hard_heap_limit64(std::int64_t{256} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = db_path();
  std::remove(path.c_str());
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with the NUL
  const bool is_file = size >= sizeof kMagic && std::memcmp(data, kMagic, sizeof kMagic) == 0;
  if (is_file) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else if (!build_from_sql(std::string_view(reinterpret_cast<const char*>(data), size))) {
    return 0;
  }
  try {
    const emo::trace::Trace trace = emo::trace::read_nsys_sqlite(path);
    const emo::trace::TraceSummary summary = emo::trace::summarize(trace);
    if (emo::trace::to_text(summary).empty()) std::abort();
  } catch (const emo::InputError& e) {
    const std::string_view what = e.what();
    if (what.find('\n') != std::string_view::npos || !what.starts_with(path)) {
      std::fprintf(stderr, "bad InputError message: %s\n", e.what());
      std::abort();
    }
  }
  std::remove(path.c_str());
  return 0;
}
