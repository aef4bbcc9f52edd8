// Tests of the Nsight Systems SQLite reader: real exports (nsys 2024.5 and 2022.2), checked
// against SQL queries run independently on the same files, and small exports built here.
#include "trace/nsys/nsys_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_data.h"
#include "core/error.h"

namespace emo::trace {
namespace {

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A SQLite connection for the test's own queries (read-only) or for building files (write).
class Sql {
 public:
  explicit Sql(const std::string& path, bool write = false) {
    const int flags = write ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) : SQLITE_OPEN_READONLY;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      throw std::runtime_error("cannot open " + path);
    }
  }
  ~Sql() { sqlite3_close_v2(db_); }
  Sql(const Sql&) = delete;
  Sql& operator=(const Sql&) = delete;

  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string msg = err != nullptr ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error("SQL failed: " + msg + " in: " + sql);
    }
  }

  /// Rows of (text of column 0, integer column 1).
  std::vector<std::pair<std::string, std::int64_t>> rows(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("prepare failed: ") + sqlite3_errmsg(db_));
    }
    std::vector<std::pair<std::string, std::int64_t>> out;
    while (sqlite3_step(s) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      out.emplace_back(text != nullptr ? text : "", sqlite3_column_int64(s, 1));
    }
    sqlite3_finalize(s);
    return out;
  }

  /// The integer in the first column of the first row.
  std::int64_t scalar(const std::string& sql) {
    const auto r = rows("SELECT NULL, (" + sql + ")");
    if (r.empty()) throw std::runtime_error("no row: " + sql);
    return r.front().second;
  }

 private:
  sqlite3* db_ = nullptr;
};

std::int64_t count_kind(const Trace& t, OpKind kind) {
  return std::count(t.ops.kind.begin(), t.ops.kind.end(), kind);
}

std::int64_t count_named(const Trace& t, OpKind kind, std::string_view name) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops.kind[i] == kind && t.strings.view(t.ops.name[i]) == name) ++n;
  }
  return n;
}

std::int64_t count_sync_kind(const Trace& t, SyncKind kind) {
  return std::count(t.syncs.kind.begin(), t.syncs.kind.end(), kind);
}

/// Index of the first op of `kind` with correlation `corr`, or -1.
std::int64_t find_op(const Trace& t, OpKind kind, std::int64_t corr) {
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops.kind[i] == kind && t.ops.correlation[i] == corr) return static_cast<std::int64_t>(i);
  }
  return -1;
}

/// Index in t.syncs of the sync record whose op has correlation `corr`, or -1.
std::int64_t find_sync(const Trace& t, std::int64_t corr) {
  for (std::size_t k = 0; k < t.syncs.size(); ++k) {
    if (t.ops.correlation[t.syncs.op[k]] == corr) return static_cast<std::int64_t>(k);
  }
  return -1;
}

/// Reads `path`; passes when it loads or throws emo::InputError, fails on anything else.
void expect_loads_or_input_error(const std::string& path) {
  try {
    (void)read_nsys_sqlite(path);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    std::printf("  (as expected) %s\n", e.what());
  }
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

constexpr const char* kCloverleaf = "nsys/perlmutter-cloverleaf-cuda.sqlite";
constexpr const char* kSaxpy = "nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite";

// ---------------------------------------------------------------------------------------------
// Real data: perlmutter-cloverleaf-cuda.sqlite (nsys 2024.5)
// ---------------------------------------------------------------------------------------------

TEST(NsysRealData, CloverleafCountsMatchSql) {
  EMO_REQUIRE_DATA(path, kCloverleaf);
  const Trace t = read_nsys_sqlite(path);
  Sql sql(path);
  EXPECT_EQ(t.meta.format, TraceFormat::kNsysSqlite);
  EXPECT_EQ(t.meta.path, path);

  const std::int64_t kernels = sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
  const std::int64_t memcpys = sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY");
  const std::int64_t api = sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME");
  const std::int64_t driver =
      sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 1");
  const std::int64_t syncs =
      sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION");
  EXPECT_EQ(kernels, 1312);
  EXPECT_EQ(memcpys, 279);
  EXPECT_EQ(api, 3048);
  EXPECT_EQ(syncs, 1312);

  EXPECT_EQ(count_kind(t, OpKind::kKernel), kernels);
  EXPECT_EQ(count_kind(t, OpKind::kMemcpy), memcpys);
  EXPECT_EQ(count_kind(t, OpKind::kMemset), 0);  // the 2024.5 export has no MEMSET table
  // The RUNTIME table holds runtime and driver calls; eventClass 1 (cuModuleGetLoadingMode) is
  // a driver call.
  EXPECT_EQ(count_kind(t, OpKind::kRuntime) + count_kind(t, OpKind::kDriver), api);
  EXPECT_EQ(count_kind(t, OpKind::kDriver), driver);
  EXPECT_EQ(count_kind(t, OpKind::kSync), syncs);
  EXPECT_EQ(static_cast<std::int64_t>(t.syncs.size()), syncs);
  EXPECT_EQ(t.quirks.ignored_events, 0);
  EXPECT_EQ(t.quirks.gpu_ops_without_launch, 0);
}

TEST(NsysRealData, CloverleafOneStreamAndTimes) {
  EMO_REQUIRE_DATA(path, kCloverleaf);
  const Trace t = read_nsys_sqlite(path);
  Sql sql(path);
  std::set<std::int64_t> streams;
  TimeNs min_kernel = INT64_MAX;
  TimeNs kernel_busy = 0;
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (is_gpu_op(t.ops.kind[i])) streams.insert(t.ops.stream[i]);
    if (t.ops.kind[i] == OpKind::kKernel) {
      min_kernel = std::min(min_kernel, t.ops.start_ns[i]);
      kernel_busy += t.ops.dur_ns[i];
    }
    if (i > 0) {
      EXPECT_LE(t.ops.start_ns[i - 1], t.ops.start_ns[i]);
    }
  }
  const auto sql_streams = sql.rows(
      "SELECT NULL, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION "
      "SELECT NULL, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY");
  ASSERT_EQ(sql_streams.size(), 1u);
  EXPECT_EQ(streams, std::set<std::int64_t>{sql_streams[0].second});
  EXPECT_EQ(min_kernel, sql.scalar("SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  EXPECT_EQ(kernel_busy, sql.scalar("SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
}

TEST(NsysRealData, CloverleafNamesMatchSql) {
  EMO_REQUIRE_DATA(path, kCloverleaf);
  const Trace t = read_nsys_sqlite(path);
  Sql sql(path);
  for (const auto& [name, n] : sql.rows(
           "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
           "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value")) {
    EXPECT_EQ(count_named(t, OpKind::kKernel, name), n) << name;
  }
  // EMO drops the "_vNNNN" version suffix of API names (Kineto spells them without it).
  std::map<std::string, std::int64_t> by_name;
  auto without_version = [](std::string name) {  // "cudaMemcpy_v3020" -> "cudaMemcpy"
    const std::size_t us = name.rfind("_v");
    if (us != std::string::npos && us + 2 < name.size() &&
        name.find_first_not_of("0123456789", us + 2) == std::string::npos) {
      name.resize(us);
    }
    return name;
  };
  for (const auto& [name, n] : sql.rows(
           "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
           "JOIN StringIds s ON s.id = r.nameId WHERE r.eventClass = 0 GROUP BY s.value")) {
    by_name[without_version(name)] += n;
  }
  ASSERT_FALSE(by_name.empty());
  for (const auto& [name, n] : by_name) {
    EXPECT_EQ(count_named(t, OpKind::kRuntime, name), n) << name;
  }
  EXPECT_EQ(count_named(t, OpKind::kMemcpy, "Memcpy HtoD"),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1"));
  EXPECT_EQ(count_named(t, OpKind::kMemcpy, "Memcpy DtoH"),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 2"));
}

TEST(NsysRealData, CloverleafSyncsClassifiedByRuntimeName) {
  EMO_REQUIRE_DATA(path, kCloverleaf);
  const Trace t = read_nsys_sqlite(path);
  Sql sql(path);
  // Independent of the reader: the API call name of each sync record's correlation id.
  std::map<std::int64_t, std::string> call_of_corr;
  for (const auto& [name, corr] : sql.rows(
           "SELECT n.value, s.correlationId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION s "
           "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = s.correlationId "
           "JOIN StringIds n ON n.id = r.nameId")) {
    call_of_corr[corr] = name;
  }
  const std::int64_t device_syncs = sql.scalar(
      "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION s "
      "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = s.correlationId "
      "JOIN StringIds n ON n.id = r.nameId WHERE n.value LIKE 'cudaDeviceSynchronize%'");
  // The quirk this reader exists to handle: syncType says "event sync" for all of them.
  const std::int64_t type1 = sql.scalar(
      "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE syncType = 1");
  EXPECT_EQ(device_syncs, 1312);
  EXPECT_EQ(type1, 1312);

  ASSERT_EQ(t.syncs.size(), 1312u);
  for (std::size_t k = 0; k < t.syncs.size(); ++k) {
    const std::uint32_t op = t.syncs.op[k];
    ASSERT_EQ(t.ops.kind[op], OpKind::kSync);
    const auto call = call_of_corr.find(t.ops.correlation[op]);
    ASSERT_NE(call, call_of_corr.end());
    const bool is_device_sync = call->second.rfind("cudaDeviceSynchronize", 0) == 0;
    EXPECT_EQ(t.syncs.kind[k] == SyncKind::kContextSync, is_device_sync) << call->second;
    if (t.syncs.kind[k] == SyncKind::kContextSync) {
      EXPECT_EQ(t.syncs.stream[k], kNone);
      EXPECT_EQ(t.ops.stream[op], kNone);
      EXPECT_EQ(t.strings.view(t.ops.name[op]), "Context Sync");
    }
    EXPECT_EQ(t.syncs.event_id[k], kNone);  // 0xffffffff in the file
    EXPECT_EQ(t.syncs.event_record_correlation[k], kNone);
  }
  EXPECT_EQ(count_sync_kind(t, SyncKind::kContextSync), device_syncs);
  EXPECT_EQ(count_sync_kind(t, SyncKind::kEventSync), 0);
  EXPECT_EQ(count_sync_kind(t, SyncKind::kStreamSync), 0);
  EXPECT_EQ(count_sync_kind(t, SyncKind::kStreamWaitEvent), 0);
  EXPECT_EQ(count_sync_kind(t, SyncKind::kUnknown), 0);
}

TEST(NsysRealData, CloverleafGpusMetaAndPids) {
  EMO_REQUIRE_DATA(path, kCloverleaf);
  const Trace t = read_nsys_sqlite(path);
  Sql sql(path);
  ASSERT_EQ(static_cast<std::int64_t>(t.meta.gpus.size()),
            sql.scalar("SELECT count(DISTINCT id) FROM TARGET_INFO_GPU"));
  for (std::size_t i = 0; i < t.meta.gpus.size(); ++i) {
    const GpuInfo& g = t.meta.gpus[i];
    EXPECT_EQ(g.device, static_cast<std::int32_t>(i));  // sorted by device
    EXPECT_FALSE(g.name.empty());
    EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(g.total_memory_bytes, 84990623744);
    EXPECT_EQ(g.compute_major, 8);
    EXPECT_EQ(g.compute_minor, 0);
    EXPECT_EQ(g.sm_count, 108);
    EXPECT_EQ(g.clock_rate_khz, 1410000);  // clockRate 1410000000 Hz in the file
  }
  EXPECT_FALSE(t.gpu_name(0).empty());
  EXPECT_NE(t.meta.schema.find("3.13.2"), std::string::npos) << t.meta.schema;
  EXPECT_EQ(t.meta.rank, -1);
  EXPECT_EQ(t.meta.world_size, -1);

  // pid from PROCESSES (nsys's own decoding), compared with the reader's bit decoding.
  const std::int64_t pid = sql.scalar(
      "SELECT pid FROM PROCESSES WHERE globalPid = "
      "(SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1)");
  EXPECT_EQ(pid, 1701896);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    EXPECT_EQ(t.ops.process[i], pid);
    if (is_api_call(t.ops.kind[i])) {
      EXPECT_EQ(t.ops.thread[i], 1701896);  // globalTid 310028055214088: the main thread
      EXPECT_EQ(t.ops.device[i], kNone);
      EXPECT_EQ(t.ops.stream[i], kNone);
    } else {
      EXPECT_EQ(t.ops.thread[i], kNone);
      EXPECT_EQ(t.ops.device[i], 0);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Real data: saxpy (nsys 2022.2, older schema)
// ---------------------------------------------------------------------------------------------

TEST(NsysRealData, SaxpyOlderSchemaCountsMatchSql) {
  EMO_REQUIRE_DATA(path, kSaxpy);
  const Trace t = read_nsys_sqlite(path);
  Sql sql(path);
  EXPECT_EQ(count_kind(t, OpKind::kKernel),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  EXPECT_EQ(count_kind(t, OpKind::kMemcpy),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY"));
  EXPECT_EQ(count_kind(t, OpKind::kMemset),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET"));
  EXPECT_EQ(count_kind(t, OpKind::kSync),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"));
  // Backtraced calls appear twice in RUNTIME (eventClass 0 and 67, same correlationId); the
  // eventClass 67 copies are not API calls of their own.
  const std::int64_t backtrace = sql.scalar(
      "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass BETWEEN 67 AND 69");
  EXPECT_GT(backtrace, 0);
  EXPECT_EQ(count_kind(t, OpKind::kRuntime) + count_kind(t, OpKind::kDriver),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME") - backtrace);
  EXPECT_EQ(count_kind(t, OpKind::kRuntime) + count_kind(t, OpKind::kDriver),
            sql.scalar("SELECT count(DISTINCT correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME"));
  EXPECT_EQ(t.quirks.ignored_events, backtrace);
  EXPECT_EQ(t.quirks.gpu_ops_without_launch, 0);
  EXPECT_TRUE(t.syncs.size() == 0);
}

TEST(NsysRealData, SaxpyNamesGpuAndSchema) {
  EMO_REQUIRE_DATA(path, kSaxpy);
  const Trace t = read_nsys_sqlite(path);
  Sql sql(path);
  EXPECT_EQ(count_named(t, OpKind::kKernel, "saxpy(double *, double *, double *, double, int)"),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  // No ENUM_CUDA_MEMCPY_OPER in 2022.2: the fixed copyKind mapping names the copies.
  EXPECT_EQ(count_named(t, OpKind::kMemcpy, "Memcpy HtoD"),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1"));
  EXPECT_EQ(count_named(t, OpKind::kMemcpy, "Memcpy DtoH"),
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 2"));
  EXPECT_EQ(count_named(t, OpKind::kRuntime, "cudaMemcpy"),  // "_v3020" suffix dropped
            sql.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY"));
  ASSERT_EQ(t.meta.gpus.size(), 1u);
  EXPECT_EQ(t.meta.gpus[0].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(t.meta.gpus[0].clock_rate_khz, 1410000);
  EXPECT_NE(t.meta.schema.find("2.9.1"), std::string::npos) << t.meta.schema;
  // nsys's MPI tracing names the rank's thread "MPI Rank 0" (NVTX_EVENTS.text, counted by SQL).
  EXPECT_EQ(sql.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE text = 'MPI Rank 0'"), 1);
  EXPECT_EQ(t.meta.rank, 0);
  EXPECT_EQ(t.meta.world_size, -1);  // not recorded
}

TEST(NsysRealData, CloverleafHasNoMpiRank) {
  EMO_REQUIRE_DATA(path, kCloverleaf);
  EXPECT_EQ(read_nsys_sqlite(path).meta.rank, -1);
}


TEST(NsysRealData, DamagedCopiesFailCleanly) {
  EMO_REQUIRE_DATA(path, kCloverleaf);
  const std::string bytes = read_file_bytes(path);
  ASSERT_GT(bytes.size(), 1u << 20);
  const auto dir = testing::scratch_dir("nsys-damaged");
  for (std::size_t cut : {std::size_t{100}, std::size_t{4096}, std::size_t{65536},
                          std::size_t{1} << 20}) {
    const auto p = (dir / ("cut" + std::to_string(cut) + ".sqlite")).string();
    write_file(p, bytes.substr(0, cut));
    expect_loads_or_input_error(p);
  }
  // Overwrite a few pages in the middle with garbage.
  std::string corrupt = bytes;
  for (std::size_t i = 8192; i < 8192 + 3 * 4096; ++i) corrupt[i] = static_cast<char>(i * 131);
  const auto p = (dir / "corrupt.sqlite").string();
  write_file(p, corrupt);
  expect_loads_or_input_error(p);
}

// ---------------------------------------------------------------------------------------------
// Hand-built exports
// ---------------------------------------------------------------------------------------------

constexpr std::int64_t kPid = 4242;
constexpr std::int64_t kTid = 4243;
constexpr std::int64_t kGlobalPid = (std::int64_t{1} << 48) | (kPid << 24);
constexpr std::int64_t kGlobalTid = kGlobalPid | kTid;

/// A minimal export: one kernel and its launch, three records of event 5 (streams 3, 7, 9),
/// and four sync records whose syncType is deliberately misleading.
void build_minimal_export(const std::string& path) {
  Sql db(path, /*write=*/true);
  db.exec(R"(
    CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO StringIds VALUES (1, 'my_kernel(float*)'), (2, 'cudaLaunchKernel_v7000'),
      (3, 'cudaEventRecord_v3020'), (4, 'cudaStreamWaitEvent_v3020'),
      (5, 'cudaDeviceSynchronize_ptsz'), (6, 'cudaEventSynchronize_v3020'), (7, 'cudaLaunchKernel');
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
      globalPid INTEGER, demangledName INTEGER, shortName INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL,
      eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT(deviceId INTEGER, contextId INTEGER,
      streamId INTEGER, correlationId INTEGER, globalPid INTEGER, eventId INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
      globalPid INTEGER, syncType INTEGER, eventId INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
      copyKind INTEGER);
  )");
  const std::string gtid = std::to_string(kGlobalTid);
  const std::string gpid = std::to_string(kGlobalPid);
  db.exec("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES "
          "(50, 55, 0, " + gtid + ", 5, 3),"      // record of event 5 on stream 3
          "(100, 110, 0, " + gtid + ", 10, 2),"   // the kernel's launch
          "(99, 111, 67, " + gtid + ", 10, 7),"   // its backtrace duplicate (skipped)
          "(150, 155, 0, " + gtid + ", 11, 3),"   // record of event 5 on stream 7
          "(200, 205, 0, " + gtid + ", 12, 4),"   // cudaStreamWaitEvent
          "(300, 400, 0, " + gtid + ", 13, 5),"   // cudaDeviceSynchronize_ptsz
          "(500, 600, 0, " + gtid + ", 14, 6),"   // cudaEventSynchronize of an unrecorded event
          "(900, 905, 0, " + gtid + ", 30, 3)");  // a later record of event 5 on stream 9
  db.exec("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (120, 180, 0, 1, 7, 10, " + gpid +
          ", 1, 1)");
  db.exec("INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (0, 1, 3, 5, " + gpid + ", 5),"
          "(0, 1, 9, 30, " + gpid + ", 5), (0, 1, 7, 11, " + gpid + ", 5)");
  db.exec("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES "
          "(201, 203, 0, 1, 13, 12, " + gpid + ", 4, 5),"                  // says context sync
          "(301, 399, 0, 1, 4294967295, 13, " + gpid + ", 1, 4294967295),"  // says event sync
          "(501, 599, 0, 1, 4294967295, 14, " + gpid + ", 2, 99),"          // says stream wait
          "(700, 710, 0, 1, 7, 77, " + gpid + ", 3, 4294967295)");          // no API call
  db.exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (800, 790, 0, 7, 40, " + gpid +
          ", 10), (810, 810, 0, 7, 41, " + gpid + ", 1)");
}

TEST(NsysHandBuilt, MinimalExportOps) {
  const auto path = (testing::scratch_dir("nsys-minimal") / "minimal.sqlite").string();
  build_minimal_export(path);
  const Trace t = read_nsys_sqlite(path);
  EXPECT_EQ(count_kind(t, OpKind::kKernel), 1);
  EXPECT_EQ(count_kind(t, OpKind::kRuntime), 7);  // the eventClass 67 duplicate is skipped
  EXPECT_EQ(count_kind(t, OpKind::kSync), 4);
  EXPECT_EQ(count_kind(t, OpKind::kMemcpy), 2);
  EXPECT_EQ(t.quirks.ignored_events, 1);
  EXPECT_TRUE(t.meta.gpus.empty());
  EXPECT_TRUE(t.meta.schema.empty());

  const std::int64_t k = find_op(t, OpKind::kKernel, 10);
  ASSERT_GE(k, 0);
  EXPECT_EQ(t.strings.view(t.ops.name[k]), "my_kernel(float*)");
  EXPECT_EQ(t.ops.start_ns[k], 120);
  EXPECT_EQ(t.ops.dur_ns[k], 60);
  EXPECT_EQ(t.ops.device[k], 0);
  EXPECT_EQ(t.ops.stream[k], 7);
  EXPECT_EQ(t.ops.process[k], kPid);
  EXPECT_EQ(t.ops.thread[k], kNone);

  const std::int64_t launch = find_op(t, OpKind::kRuntime, 10);
  ASSERT_GE(launch, 0);
  EXPECT_EQ(t.strings.view(t.ops.name[launch]), "cudaLaunchKernel");  // "_v7000" dropped
  EXPECT_EQ(t.ops.start_ns[launch], 100);
  EXPECT_EQ(t.ops.device[launch], kNone);
  EXPECT_EQ(t.ops.stream[launch], kNone);

  // Memcpy names without ENUM_CUDA_MEMCPY_OPER, and the duration quirks.
  const std::int64_t p2p = find_op(t, OpKind::kMemcpy, 40);
  ASSERT_GE(p2p, 0);
  EXPECT_EQ(t.strings.view(t.ops.name[p2p]), "Memcpy PtoP");
  EXPECT_EQ(t.ops.dur_ns[p2p], 0);  // end < start
  EXPECT_EQ(t.strings.view(t.ops.name[find_op(t, OpKind::kMemcpy, 41)]), "Memcpy HtoD");
  EXPECT_EQ(t.quirks.negative_duration, 1);
  EXPECT_EQ(t.quirks.zero_duration, 1);
}

TEST(NsysHandBuilt, GlobalTidDecoding) {
  const auto path = (testing::scratch_dir("nsys-gtid") / "minimal.sqlite").string();
  build_minimal_export(path);
  const Trace t = read_nsys_sqlite(path);
  // 0x0001_001092_001093: bits 48+ are nsys's own, pid in bits 24..47, tid in bits 0..23.
  static_assert(kGlobalTid == 281546145665171);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops.kind[i] != OpKind::kRuntime) continue;
    EXPECT_EQ(t.ops.process[i], 4242);
    EXPECT_EQ(t.ops.thread[i], 4243);
  }
}

TEST(NsysHandBuilt, SyncsClassifiedByCallNameNotSyncType) {
  const auto path = (testing::scratch_dir("nsys-syncs") / "minimal.sqlite").string();
  build_minimal_export(path);
  const Trace t = read_nsys_sqlite(path);
  ASSERT_EQ(t.syncs.size(), 4u);

  // cudaStreamWaitEvent with syncType 4 (context sync): classified by name; the event's latest
  // record before the call (corr 11 at 150 on stream 7, not corr 5 at 50 nor corr 30 at 900).
  const std::int64_t wait = find_sync(t, 12);
  ASSERT_GE(wait, 0);
  EXPECT_EQ(t.syncs.kind[wait], SyncKind::kStreamWaitEvent);
  EXPECT_EQ(t.syncs.stream[wait], 13);
  EXPECT_EQ(t.syncs.event_id[wait], 5);
  EXPECT_EQ(t.syncs.event_record_correlation[wait], 11);
  EXPECT_EQ(t.syncs.event_stream[wait], 7);
  const std::uint32_t op = t.syncs.op[wait];
  EXPECT_EQ(t.ops.kind[op], OpKind::kSync);
  EXPECT_EQ(t.strings.view(t.ops.name[op]), "Stream Wait Event");
  EXPECT_EQ(t.ops.stream[op], 13);
  EXPECT_EQ(t.ops.device[op], 0);
  EXPECT_EQ(t.ops.start_ns[op], 201);
  EXPECT_EQ(t.ops.dur_ns[op], 2);

  // cudaDeviceSynchronize_ptsz with syncType 1 (event sync), as nsys 2024.5 writes it.
  const std::int64_t ctx = find_sync(t, 13);
  ASSERT_GE(ctx, 0);
  EXPECT_EQ(t.syncs.kind[ctx], SyncKind::kContextSync);
  EXPECT_EQ(t.syncs.stream[ctx], kNone);
  EXPECT_EQ(t.syncs.event_id[ctx], kNone);
  EXPECT_EQ(t.syncs.event_record_correlation[ctx], kNone);

  // cudaEventSynchronize of an event never recorded: kind by name, no record.
  const std::int64_t ev = find_sync(t, 14);
  ASSERT_GE(ev, 0);
  EXPECT_EQ(t.syncs.kind[ev], SyncKind::kEventSync);
  EXPECT_EQ(t.syncs.event_id[ev], 99);
  EXPECT_EQ(t.syncs.event_record_correlation[ev], kNone);
  EXPECT_EQ(t.syncs.event_stream[ev], kNone);
  EXPECT_EQ(t.syncs.stream[ev], kNone);

  // No API call with that correlation: syncType 3 is used.
  const std::int64_t fallback = find_sync(t, 77);
  ASSERT_GE(fallback, 0);
  EXPECT_EQ(t.syncs.kind[fallback], SyncKind::kStreamSync);
  EXPECT_EQ(t.syncs.stream[fallback], 7);
}

TEST(NsysHandBuilt, EventRecordNotBeforeSyncIsNotUsed) {
  const auto path = (testing::scratch_dir("nsys-late-record") / "late.sqlite").string();
  {
    Sql db(path, /*write=*/true);
    db.exec(R"(
      CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);
      INSERT INTO StringIds VALUES (1, 'cudaEventRecord'), (2, 'cudaStreamWaitEvent_ptsz');
      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId);
      INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (10, 20, 1, 1, 2), (30, 40, 1, 2, 1);
      CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT(streamId, correlationId, eventId);
      INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (3, 2, 8);
      CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start, end, deviceId, streamId,
        correlationId, eventId);
      INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (11, 12, 0, 4, 1, 8);
    )");
  }
  const Trace t = read_nsys_sqlite(path);
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs.kind[0], SyncKind::kStreamWaitEvent);  // no syncType column at all
  EXPECT_EQ(t.syncs.event_id[0], 8);
  EXPECT_EQ(t.syncs.event_record_correlation[0], kNone);  // the only record comes later
  EXPECT_EQ(t.syncs.event_stream[0], kNone);
}

TEST(NsysHandBuilt, CorrelationIdsJoinWithinTheirProcess) {
  // Two processes in one export reuse correlation ids 7, 8 and 9 (CUPTI counts per process).
  const std::int64_t gp_a = (std::int64_t{1} << 48) | (std::int64_t{100} << 24);
  const std::int64_t gp_b = (std::int64_t{1} << 48) | (std::int64_t{200} << 24);
  const auto path = (testing::scratch_dir("nsys-two-procs") / "two.sqlite").string();
  {
    Sql db(path, /*write=*/true);
    db.exec(R"(
      CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);
      INSERT INTO StringIds VALUES (1, 'cudaDeviceSynchronize'), (2, 'cudaStreamSynchronize'),
        (3, 'cudaEventRecord'), (4, 'cudaStreamWaitEvent');
      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId);
      CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT(streamId, correlationId, globalPid, eventId);
      CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start, end, deviceId, streamId,
        correlationId, globalPid, syncType, eventId);
    )");
    const std::string a = std::to_string(gp_a);
    const std::string b = std::to_string(gp_b);
    const std::string ta = std::to_string(gp_a | 101);
    const std::string tb = std::to_string(gp_b | 201);
    db.exec("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (10, 20, " + ta + ", 7, 1), (30, 31, " +
            ta + ", 8, 3), (40, 41, " + ta + ", 9, 4), (12, 22, " + tb + ", 7, 2), (32, 33, " +
            tb + ", 8, 3), (42, 43, " + tb + ", 9, 4)");
    db.exec("INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (11, 8, " + a + ", 1), (22, 8, " +
            b + ", 1)");
    db.exec("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES "
            "(11, 19, 0, 5, 7, " + a + ", 0, 4294967295), (13, 21, 1, 6, 7, " + b +
            ", 0, 4294967295), (40, 41, 0, 5, 9, " + a + ", 0, 1), (42, 43, 1, 6, 9, " + b +
            ", 0, 1)");
  }
  const Trace t = read_nsys_sqlite(path);
  ASSERT_EQ(t.syncs.size(), 4u);
  auto sync_of = [&](std::int64_t corr, std::int64_t pid) -> std::size_t {
    for (std::size_t k = 0; k < t.syncs.size(); ++k) {
      const std::uint32_t op = t.syncs.op[k];
      if (t.ops.correlation[op] == corr && t.ops.process[op] == pid) return k;
    }
    ADD_FAILURE() << "no sync with correlation " << corr << " in process " << pid;
    return 0;
  };
  EXPECT_EQ(t.syncs.kind[sync_of(7, 100)], SyncKind::kContextSync);
  EXPECT_EQ(t.syncs.kind[sync_of(7, 200)], SyncKind::kStreamSync);
  EXPECT_EQ(t.syncs.stream[sync_of(7, 200)], 6);
  const std::size_t wait_a = sync_of(9, 100);
  const std::size_t wait_b = sync_of(9, 200);
  EXPECT_EQ(t.syncs.kind[wait_a], SyncKind::kStreamWaitEvent);
  EXPECT_EQ(t.syncs.event_stream[wait_a], 11);
  EXPECT_EQ(t.syncs.event_record_correlation[wait_a], 8);
  EXPECT_EQ(t.syncs.kind[wait_b], SyncKind::kStreamWaitEvent);
  EXPECT_EQ(t.syncs.event_stream[wait_b], 22);
  EXPECT_EQ(t.syncs.event_record_correlation[wait_b], 8);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops.kind[i] == OpKind::kRuntime) {
      EXPECT_EQ(t.ops.thread[i], t.ops.process[i] + 1);
    }
  }
}

TEST(NsysHandBuilt, MemcpyNamesFromEnumTable) {
  const auto path = (testing::scratch_dir("nsys-enum") / "enum.sqlite").string();
  {
    Sql db(path, /*write=*/true);
    db.exec(R"(
      CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);
      CREATE TABLE ENUM_CUDA_MEMCPY_OPER(id INTEGER, name TEXT, label TEXT);
      INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (11, 'CUDA_MEMCPY_KIND_UVM_HTOD', 'x'),
        (20, 'CUDA_MEMCPY_KIND_DTOD', 'y');
      CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, correlationId,
        copyKind);
      INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1, 2, 0, 7, 1, 11), (3, 4, 0, 7, 2, 20),
        (5, 6, 0, 7, 3, 0), (7, 8, 0, 7, 4, 99), (9, NULL, 0, 7, 5, 1);
    )");
  }
  const Trace t = read_nsys_sqlite(path);
  ASSERT_EQ(t.ops.size(), 4u);  // the row with a NULL end is skipped
  EXPECT_EQ(t.quirks.ignored_events, 1);
  EXPECT_EQ(t.strings.view(t.ops.name[0]), "Memcpy UVM HtoD");
  EXPECT_EQ(t.strings.view(t.ops.name[1]), "Memcpy DtoD");
  EXPECT_EQ(t.strings.view(t.ops.name[2]), "Memcpy Unknown");
  EXPECT_EQ(t.strings.view(t.ops.name[3]), "Memcpy kind 99");
  EXPECT_EQ(t.ops.process[0], kNone);  // no globalPid column
}

TEST(NsysHandBuilt, SqliteButNotNsysIsInputError) {
  const auto path = (testing::scratch_dir("nsys-not-nsys") / "other.sqlite").string();
  {
    Sql db(path, /*write=*/true);
    db.exec("CREATE TABLE foo(a INTEGER); INSERT INTO foo VALUES (1);");
  }
  try {
    (void)read_nsys_sqlite(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find("not an Nsight Systems export"), std::string::npos) << e.what();
    EXPECT_EQ(e.path(), path);
  }
}

TEST(NsysHandBuilt, StringIdsWithoutCuptiTablesIsInputError) {
  const auto path = (testing::scratch_dir("nsys-no-cupti") / "cpu_only.sqlite").string();
  {
    Sql db(path, /*write=*/true);
    db.exec("CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);");
  }
  EXPECT_THROW((void)read_nsys_sqlite(path), InputError);
}

TEST(NsysHandBuilt, MissingColumnIsInputErrorNamingIt) {
  const auto path = (testing::scratch_dir("nsys-missing-col") / "bad.sqlite").string();
  {
    Sql db(path, /*write=*/true);
    db.exec(R"(
      CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, streamId INTEGER,
        correlationId INTEGER, demangledName INTEGER);
      INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 7, 1, 0);
    )");
  }
  try {
    (void)read_nsys_sqlite(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("deviceId"), std::string::npos) << what;
    EXPECT_NE(what.find("CUPTI_ACTIVITY_KIND_KERNEL"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

TEST(NsysHandBuilt, NotSqliteMissingOrEmptyIsInputError) {
  const auto dir = testing::scratch_dir("nsys-not-sqlite");
  const auto text = (dir / "trace.json").string();
  write_file(text, "{\"traceEvents\": []}\n" + std::string(2000, ' '));
  const auto empty = (dir / "empty.sqlite").string();
  write_file(empty, "");
  const auto header_only = (dir / "header.sqlite").string();
  write_file(header_only, std::string("SQLite format 3\0", 16) + std::string(84, '\xff'));
  const auto missing = (dir / "missing.sqlite").string();
  for (const std::string& p : {text, empty, header_only, missing}) {
    try {
      (void)read_nsys_sqlite(p);
      ADD_FAILURE() << "expected InputError for " << p;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
      EXPECT_EQ(e.path(), p);
      std::printf("  (as expected) %s\n", e.what());
    }
  }
}

// The rank from NVTX thread names, inline text or a StringIds id; two ranks in one report: unknown.
TEST(NsysHandBuilt, MpiRankFromNvtxThreadNames) {
  for (const int variant : {0, 1, 2}) {
    const auto path = (testing::scratch_dir("nsys-rank") / ("rank" + std::to_string(variant) + ".sqlite")).string();
    build_minimal_export(path);
    Sql db(path, /*write=*/true);
    db.exec("CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
            "text TEXT, globalTid INTEGER, textId INTEGER)");
    if (variant == 0) db.exec("INSERT INTO NVTX_EVENTS VALUES (10, NULL, 39, 'MPI Rank 5', 1, NULL)");
    if (variant == 1) {
      db.exec("INSERT INTO StringIds VALUES (900, 'MPI Rank 12')");
      db.exec("INSERT INTO NVTX_EVENTS VALUES (10, NULL, 39, NULL, 1, 900), (11, 12, 59, 'MPI Rankless', 1, NULL)");
    }
    if (variant == 2) db.exec("INSERT INTO NVTX_EVENTS VALUES (10, NULL, 39, 'MPI Rank 1', 1, NULL), (11, NULL, 39, 'MPI Rank 2', 2, NULL)");
    const Trace t = read_nsys_sqlite(path);
    EXPECT_EQ(t.meta.rank, variant == 0 ? 5 : variant == 1 ? 12 : -1) << "variant " << variant;
    const bool warned = std::any_of(t.warnings.begin(), t.warnings.end(),
                                    [](const std::string& w) { return w.find("2 MPI ranks") != std::string::npos; });
    EXPECT_EQ(warned, variant == 2);
  }
}

}  // namespace
}  // namespace emo::trace
