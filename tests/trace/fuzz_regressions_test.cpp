// Replays the fuzzers' reproducers (fuzz/crashers*) and seeds (fuzz/seeds*) through the Kineto,
// emo.trace/1 and nsys readers in the normal test suite, so that CI runs them under ASan+UBSan without clang.
// Each input must either load or raise InputError, with 4 KiB chunks and in one piece; when both
// reads succeed they must agree.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "trace/emo/emo_trace_reader.h"
#include "trace/kineto/kineto_reader.h"
#include "trace/nsys/nsys_reader.h"

namespace emo::trace {
namespace {

std::vector<std::filesystem::path> inputs() {
  std::vector<std::filesystem::path> out;
  for (const char* sub : {"fuzz/crashers", "fuzz/seeds"}) {
    const auto dir = std::filesystem::path(EMO_SOURCE_DIR) / sub;
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.is_regular_file() && e.path().extension() != ".md") out.push_back(e.path());
    }
  }
  return out;
}

struct Outcome {
  bool ok = false;
  std::string error;
  Trace trace;
};

Outcome read(const PaddedBuffer& src, std::size_t chunk) {
  PaddedBuffer copy(src.size());
  std::memcpy(copy.data(), src.data(), src.size());
  Outcome o;
  try {
    o.trace = read_kineto_json(copy, "input.json", KinetoOptions{chunk, nullptr});
    o.ok = true;
  } catch (const InputError& e) {
    o.error = e.what();
  }
  return o;
}

TEST(FuzzRegressions, EveryReproducerLoadsOrFailsCleanly) {
  const auto files = inputs();
  ASSERT_GE(files.size(), 10u) << "fuzz/crashers and fuzz/seeds should hold the reproducers";
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    const PaddedBuffer src = read_file(path.string());
    const Outcome chunked = read(src, 4096);
    const Outcome whole = read(src, std::size_t{1} << 30);
    if (!chunked.ok) {
      EXPECT_NE(chunked.error.find("input.json: "), std::string::npos);
    }
    if (chunked.ok && whole.ok) {
      EXPECT_EQ(chunked.trace.ops.start_ns, whole.trace.ops.start_ns);
      EXPECT_EQ(chunked.trace.ops.kind, whole.trace.ops.kind);
      EXPECT_EQ(chunked.trace.ops.correlation, whole.trace.ops.correlation);
    }
  }
}

TEST(FuzzRegressions, KnownVerdicts) {
  const auto dir = std::filesystem::path(EMO_SOURCE_DIR) / "fuzz/crashers";
  auto verdict = [&](const char* name, std::size_t chunk) {
    const PaddedBuffer src = read_file((dir / name).string());
    return read(src, chunk).ok;
  };
  // A valid trace with metadata after the events: must load however it is chunked.
  EXPECT_TRUE(verdict("valid-events-then-device-properties.json", 4096));
  EXPECT_TRUE(verdict("valid-events-then-device-properties.json", 1u << 30));
  // Corrupt (two traceEvents, the second truncated): must be rejected however it is chunked.
  EXPECT_FALSE(verdict("invalid-two-traceEvents-accepted-when-chunked.json", 4096));
  EXPECT_FALSE(verdict("invalid-two-traceEvents-accepted-when-chunked.json", 1u << 30));
  for (const char* ub : {"ub-base-time-plus-ts-overflow.json", "ub-ts-plus-dur-overflow.json",
                         "ub-summary-span-overflow.json"}) {
    EXPECT_FALSE(verdict(ub, 4096)) << ub << ": times beyond kMaxAbsTimeNs are rejected";
  }
}

/// Every file of fuzz/seeds-NAME and fuzz/crashers-NAME (the nsys and emo.trace/1 fuzzers).
std::vector<std::filesystem::path> inputs_of(const std::string& name) {
  std::vector<std::filesystem::path> out;
  for (const std::string sub : {"fuzz/seeds-" + name, "fuzz/crashers-" + name}) {
    const auto dir = std::filesystem::path(EMO_SOURCE_DIR) / sub;
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.is_regular_file() && e.path().extension() != ".md") out.push_back(e.path());
    }
  }
  return out;
}

TEST(FuzzRegressions, EmoTraceInputsLoadOrFailCleanly) {
  const auto files = inputs_of("emo");
  ASSERT_GE(files.size(), 1u) << "fuzz/seeds-emo should hold the seeds";
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    const PaddedBuffer src = read_file(path.string());
    try {
      const Trace t = read_emo_trace(src, "input.jsonl");
      EXPECT_GT(t.ops.size(), 0u);
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("input.jsonl: ", 0), 0u) << e.what();
    }
  }
}

TEST(FuzzRegressions, NsysInputsLoadOrFailCleanly) {
  // Seeds are SQL scripts (run into a fresh database here, as fuzz/fuzz_nsys.cpp does) or
  // database files.
  const auto files = inputs_of("nsys");
  ASSERT_GE(files.size(), 4u) << "fuzz/seeds-nsys should hold the seeds";
  const auto scratch = std::filesystem::temp_directory_path() / "emo-fuzz-regressions-nsys";
  std::filesystem::create_directories(scratch);
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    const auto db = scratch / (path.filename().string() + ".sqlite");
    std::filesystem::remove(db);
    if (path.extension() == ".sql") {
      sqlite3* con = nullptr;
      ASSERT_EQ(sqlite3_open(db.c_str(), &con), SQLITE_OK);
      const PaddedBuffer sql = read_file(path.string());
      sqlite3_exec(con, std::string(sql.view()).c_str(), nullptr, nullptr, nullptr);
      sqlite3_close(con);
    } else {
      std::filesystem::copy_file(path, db);
    }
    // The minimal export (the reader test's hand-built one) must load, as SQL and as a file.
    const bool must_load = path.stem() == "minimal";
    try {
      const Trace t = read_nsys_sqlite(db.string());
      if (must_load) EXPECT_EQ(t.quirks.ignored_events + static_cast<std::int64_t>(t.ops.size()) > 0, true);
    } catch (const InputError& e) {
      EXPECT_FALSE(must_load) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(db.string(), 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace emo::trace
