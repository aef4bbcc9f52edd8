// Reader for Nsight Systems SQLite exports (`nsys export --type sqlite`).
//
// Tables read (each optional; an absent table simply yields no rows of that kind):
//   StringIds (required)                    id -> text for kernel and API call names
//   CUPTI_ACTIVITY_KIND_KERNEL / MEMCPY / MEMSET   GPU ops
//   CUPTI_ACTIVITY_KIND_RUNTIME             CUDA runtime (and driver) API calls
//   CUPTI_ACTIVITY_KIND_CUDA_EVENT          event records (cudaEventRecord correlation, stream)
//   CUPTI_ACTIVITY_KIND_SYNCHRONIZATION     sync records
//   TARGET_INFO_GPU                         GPU properties
//   META_DATA_EXPORT (2024) / EXPORT_META_DATA (2022)   export version
//   ENUM_CUDA_MEMCPY_OPER                   copyKind names (fixed CUPTI mapping when absent)
//
// Schema differences seen between nsys 2022.2 (schema 2.9.1) and 2024.5 (3.13.2): greenContextId
// only in 2024.5; RUNTIME and MEMCPY carry an always-NULL `name` column in 2022.2; MEMSET and
// CUDA_EVENT tables and the ENUM_* tables exist only where the export wrote them. Columns are
// therefore looked up with `pragma table_info` and selected by name, never by position.
//
// Observed quirks handled here:
//   * nsys 2024.5 writes syncType = 1 ("event sync") for every cudaDeviceSynchronize; sync records
//     are classified by the name of the API call with the same correlationId.
//   * API call names carry version suffixes ("cudaDeviceSynchronize_v3020", "..._ptsz").
//   * With CUDA backtraces enabled (2022.2 file), every backtraced API call appears twice in
//     RUNTIME: once as eventClass 0 (the call) and once as eventClass 67
//     (TRACE_PROCESS_EVENT_CUDABACKTRACE, unsuffixed name, slightly wider interval, same
//     correlationId). The eventClass 67/68/69 rows are skipped (counted in quirks.ignored_events).
//   * eventClass 1 (TRACE_PROCESS_EVENT_CUDA_DRIVER) rows, e.g. cuModuleGetLoadingMode, become
//     OpKind::kDriver ops.
//   * CUPTI writes 0xffffffff (uint32 -1) for "no stream" / "no event" in sync records.
//   * TARGET_INFO_GPU.clockRate is in Hz (1410000000 for an A100, whose max SM clock is
//     1410 MHz); it is converted to kHz.
#include "trace/nsys/nsys_reader.h"

#include <sqlite3.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/error.h"

namespace emo::trace {
namespace {

constexpr std::int64_t kCuptiInvalidId = 0xffffffffLL;  ///< CUPTI's uint32 "none".

// ---------------------------------------------------------------------------------------------
// Small pure helpers
// ---------------------------------------------------------------------------------------------

/// Process id packed in an nsys globalPid / globalTid (bits 24..47).
constexpr std::int64_t pid_of_global(std::int64_t global) noexcept {
  return (global >> 24) & 0xffffff;
}
/// Thread id packed in an nsys globalTid (bits 0..23).
constexpr std::int64_t tid_of_global(std::int64_t global) noexcept { return global & 0xffffff; }

/// The call name as Kineto and the CUDA headers spell it: a trailing version suffix is dropped
/// ("cudaLaunchKernel_v7000" -> "cudaLaunchKernel"); "_ptsz"/"_ptds" (per-thread default
/// stream variants) are kept because they change the call's stream semantics.
std::string_view api_call_name(std::string_view name) noexcept {
  const std::size_t us = name.rfind("_v");
  if (us == std::string_view::npos || us + 2 >= name.size()) return name;
  for (std::size_t i = us + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, us);
}

/// Sync kind from the SYNCHRONIZATION.syncType column (ENUM_CUPTI_SYNC_TYPE). Only a fallback:
/// nsys 2024.5 writes 1 (event sync) for cudaDeviceSynchronize.
SyncKind sync_kind_of_type(std::int64_t sync_type) noexcept {
  switch (sync_type) {
    case 1: return SyncKind::kEventSync;
    case 2: return SyncKind::kStreamWaitEvent;
    case 3: return SyncKind::kStreamSync;
    case 4: return SyncKind::kContextSync;
    default: return SyncKind::kUnknown;
  }
}

/// Op name of a sync record, as Kineto names its `cuda_sync` events.
std::string_view sync_op_name(SyncKind kind) noexcept {
  switch (kind) {
    case SyncKind::kStreamSync: return "Stream Sync";
    case SyncKind::kEventSync: return "Event Sync";
    case SyncKind::kContextSync: return "Context Sync";
    case SyncKind::kStreamWaitEvent: return "Stream Wait Event";
    case SyncKind::kUnknown: break;
  }
  return "Unknown Sync";
}

/// CUPTI_ACTIVITY_MEMCPY_KIND names by value, used when ENUM_CUDA_MEMCPY_OPER is absent.
constexpr std::array<std::string_view, 14> kMemcpyKindNames = {
    "CUDA_MEMCPY_KIND_UNKNOWN", "CUDA_MEMCPY_KIND_HTOD",     "CUDA_MEMCPY_KIND_DTOH",
    "CUDA_MEMCPY_KIND_HTOA",    "CUDA_MEMCPY_KIND_ATOH",     "CUDA_MEMCPY_KIND_ATOA",
    "CUDA_MEMCPY_KIND_ATOD",    "CUDA_MEMCPY_KIND_DTOA",     "CUDA_MEMCPY_KIND_DTOD",
    "CUDA_MEMCPY_KIND_HTOH",    "CUDA_MEMCPY_KIND_PTOP",     "CUDA_MEMCPY_KIND_UVM_HTOD",
    "CUDA_MEMCPY_KIND_UVM_DTOH", "CUDA_MEMCPY_KIND_UVM_DTOD",
};

/// Op name of a copy from its enum name: "CUDA_MEMCPY_KIND_HTOD" -> "Memcpy HtoD",
/// "CUDA_MEMCPY_KIND_UVM_DTOH" -> "Memcpy UVM DtoH",
/// "CUDA_MEMCPY_KIND_UNKNOWN" -> "Memcpy Unknown".
std::string memcpy_op_name(std::string_view enum_name) {
  constexpr std::string_view kPrefix = "CUDA_MEMCPY_KIND_";
  if (enum_name.substr(0, kPrefix.size()) == kPrefix) enum_name.remove_prefix(kPrefix.size());
  std::string out = "Memcpy";
  while (!enum_name.empty()) {
    const std::size_t cut = enum_name.find('_');
    const std::string_view token = enum_name.substr(0, cut);
    enum_name = cut == std::string_view::npos ? std::string_view{} : enum_name.substr(cut + 1);
    if (token.empty()) continue;
    out += ' ';
    if (token.size() == 4 && token.substr(1, 2) == "TO") {
      out += token[0];
      out += "to";
      out += token[3];
    } else if (token == "UNKNOWN") {
      out += "Unknown";
    } else {
      out += token;
    }
  }
  return out;
}

/// Duration of [start, end]; negative spans become 0. Counts both quirks.
TimeNs duration(TimeNs start, TimeNs end, QuirkCounts& quirks) noexcept {
  TimeNs dur = 0;
  if (__builtin_sub_overflow(end, start, &dur) || dur < 0) {  // overflow: only garbage input
    ++quirks.negative_duration;
    return 0;
  }
  if (dur == 0) ++quirks.zero_duration;
  return dur;
}

// ---------------------------------------------------------------------------------------------
// SQLite access
// ---------------------------------------------------------------------------------------------

struct DbCloser {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

/// Integer column `i` of the current row, or kNone when NULL.
std::int64_t int_or_none(sqlite3_stmt* s, int i) noexcept {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? kNone : sqlite3_column_int64(s, i);
}

/// An id column (device, stream, event) where CUPTI writes 0xffffffff or a negative value for
/// "none": returns kNone for those.
std::int64_t id_or_none(sqlite3_stmt* s, int i) noexcept {
  const std::int64_t v = int_or_none(s, i);
  return (v < 0 || v == kCuptiInvalidId) ? kNone : v;
}

/// A device id as int32, kNone when absent or out of range.
std::int32_t device_or_none(sqlite3_stmt* s, int i) noexcept {
  const std::int64_t v = id_or_none(s, i);
  return v > INT32_MAX ? static_cast<std::int32_t>(kNone) : static_cast<std::int32_t>(v);
}

/// Text column `i`, "" when NULL.
std::string_view text_or_empty(sqlite3_stmt* s, int i) noexcept {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  if (p == nullptr) return {};
  return {p, static_cast<std::size_t>(sqlite3_column_bytes(s, i))};
}

/// Columns of one table, as reported by `pragma table_info`.
struct TableColumns {
  std::string table;
  std::unordered_set<std::string> names;
  bool has(std::string_view c) const { return names.count(std::string(c)) != 0; }
};

/// A read-only SQLite connection whose errors become emo::InputError naming the file.
class Db {
 public:
  explicit Db(const std::string& path) : path_(path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw InputError(path, "no such file");
    if (std::filesystem::is_directory(path, ec)) throw InputError(path, "is a directory");
    // Builds with SQLITE_USE_URI would read "file:..." as a URI; "./file:..." is always a path.
    const std::string name = path.rfind("file:", 0) == 0 ? "./" + path : path;
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(name.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
    db_.reset(raw);
    if (rc != SQLITE_OK) {
      const char* why = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
      throw InputError(path, fmt::format("cannot open as SQLite: {}", why));
    }
  }

  const std::string& path() const noexcept { return path_; }

  /// Compiles `sql`; throws InputError (e.g. "not an SQLite database") on failure.
  Stmt prepare(const std::string& sql) const {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), static_cast<int>(sql.size()), &raw, nullptr) !=
        SQLITE_OK) {
      sqlite3_finalize(raw);
      fail("preparing a query");
    }
    return Stmt(raw);
  }

  /// Advances `s`: true when a row is ready, false when done; throws on a read error.
  bool step(const Stmt& s, std::string_view what) const {
    const int rc = sqlite3_step(s.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(what);
  }

  /// Names of all tables and views.
  std::unordered_set<std::string> tables() const {
    std::unordered_set<std::string> out;
    Stmt s = prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
    while (step(s, "listing tables")) out.emplace(text_or_empty(s.get(), 0));
    return out;
  }

  /// Columns of `table` (empty set when the table does not exist).
  TableColumns columns(const std::string& table) const {
    TableColumns out{table, {}};
    Stmt s = prepare("SELECT name FROM pragma_table_info(?1)");
    sqlite3_bind_text(s.get(), 1, table.c_str(), static_cast<int>(table.size()), SQLITE_STATIC);
    while (step(s, "reading the columns of " + table)) out.names.emplace(text_or_empty(s.get(), 0));
    return out;
  }

  /// Throws InputError unless `t` has every column of `needed`.
  void require(const TableColumns& t, std::initializer_list<std::string_view> needed) const {
    for (std::string_view c : needed) {
      if (!t.has(c)) {
        throw InputError(path_, fmt::format("table {} lacks column '{}' (unsupported nsys export "
                                            "version?)", t.table, c));
      }
    }
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    const int code = sqlite3_errcode(db_.get());
    if (code == SQLITE_NOTADB) {
      throw InputError(path_, "not an SQLite database (and so not an nsys SQLite export)");
    }
    if (code == SQLITE_CORRUPT) {
      throw InputError(path_, fmt::format("corrupt or truncated SQLite file ({} while {})",
                                          sqlite3_errmsg(db_.get()), what));
    }
    throw InputError(path_, fmt::format("SQLite error while {}: {}", what,
                                        sqlite3_errmsg(db_.get())));
  }

  std::string path_;
  std::unique_ptr<sqlite3, DbCloser> db_;
};

/// `SELECT "c1", NULL, ... FROM "table"`: each wanted column that `t` has, NULL for the others
/// (optional columns; required ones are checked with Db::require first).
std::string select_sql(const TableColumns& t, std::initializer_list<std::string_view> wanted) {
  std::string sql = "SELECT ";
  bool first = true;
  for (std::string_view c : wanted) {
    if (!first) sql += ", ";
    first = false;
    sql += t.has(c) ? fmt::format("\"{}\"", c) : std::string("NULL");
  }
  sql += fmt::format(" FROM \"{}\"", t.table);
  return sql;
}

// ---------------------------------------------------------------------------------------------
// Joining on correlationId
// ---------------------------------------------------------------------------------------------

/// One API call, for joining sync and event records on correlationId.
struct ApiCall {
  std::int64_t correlation;
  std::int64_t pid;  ///< kNone when the export has no globalTid.
  TimeNs start;
  StringId name;
};

/// API calls by correlationId. CUPTI correlation ids are per process, so an export of several
/// processes can repeat them; the pid (from globalTid / globalPid) tells them apart when both
/// sides know it.
class ApiIndex {
 public:
  void add(const ApiCall& call) { calls_.push_back(call); }

  /// Sorts by (correlation, pid), keeping file order among duplicates. Call once, after add().
  void seal() {
    std::stable_sort(calls_.begin(), calls_.end(), [](const ApiCall& a, const ApiCall& b) {
      return std::tie(a.correlation, a.pid) < std::tie(b.correlation, b.pid);
    });
  }

  /// The call with `correlation` in process `pid`; when either side's pid is unknown (kNone),
  /// the first call with that correlation. nullptr when none.
  const ApiCall* find(std::int64_t correlation, std::int64_t pid) const {
    if (correlation == kNone) return nullptr;
    const auto [lo, hi] = std::equal_range(
        calls_.begin(), calls_.end(), correlation, ByCorrelation{});
    const ApiCall* fallback = nullptr;
    for (auto it = lo; it != hi; ++it) {
      if (it->pid == pid) return &*it;
      if (fallback == nullptr && (pid == kNone || it->pid == kNone)) fallback = &*it;
    }
    return fallback;
  }

 private:
  struct ByCorrelation {
    bool operator()(const ApiCall& a, std::int64_t c) const { return a.correlation < c; }
    bool operator()(std::int64_t c, const ApiCall& a) const { return c < a.correlation; }
  };
  std::vector<ApiCall> calls_;
};

// ---------------------------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------------------------

constexpr std::string_view kKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr std::string_view kMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr std::string_view kMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr std::string_view kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr std::string_view kSyncTable = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr std::string_view kEventTable = "CUPTI_ACTIVITY_KIND_CUDA_EVENT";

/// RUNTIME.eventClass values (ENUM_NSYS_EVENT_CLASS).
constexpr std::int64_t kEventClassDriver = 1;
constexpr std::int64_t kEventClassBacktrace = 67;       // ..._CUDABACKTRACE
constexpr std::int64_t kEventClassBacktraceFinish = 69;  // 68 = _START, 69 = _FINISH

/// Reads one export into a Trace; one pass per table, names resolved via preloaded StringIds.
class NsysReader {
 public:
  explicit NsysReader(const std::string& path) : db_(path) {
    trace_.meta.format = TraceFormat::kNsysSqlite;
    trace_.meta.path = path;
  }

  Trace read() {
    tables_ = db_.tables();
    check_is_nsys();
    load_strings();
    read_meta();
    read_gpus();
    read_mpi_rank();
    read_runtime();
    read_kernels();
    read_memcpy();
    read_memset();
    read_event_records();
    read_syncs();
    trace_.finish();
    return std::move(trace_);
  }

 private:
  /// One cudaEventRecord: when its API call started, its correlation and stream.
  struct EventRecord {
    TimeNs start;
    std::int64_t correlation;
    std::int64_t stream;
  };
  /// A StringIds row: its text, interned into trace_.strings on first use.
  struct NsysString {
    std::string text;
    std::optional<StringId> interned;
  };

  bool has_table(std::string_view t) const { return tables_.count(std::string(t)) != 0; }

  void check_is_nsys() const {
    if (!has_table("StringIds")) {
      throw InputError(db_.path(), "SQLite file is not an Nsight Systems export (no StringIds "
                                   "table)");
    }
    const bool any_cupti = std::any_of(tables_.begin(), tables_.end(), [](const std::string& t) {
      return t.rfind("CUPTI_ACTIVITY_KIND_", 0) == 0;
    });
    if (!any_cupti) {
      throw InputError(db_.path(), "nsys export has no CUPTI_ACTIVITY_KIND_* tables (profile "
                                   "taken without CUDA tracing?)");
    }
  }

  /// Preloads StringIds (id -> text); texts are interned lazily by name().
  void load_strings() {
    const TableColumns t = db_.columns("StringIds");
    db_.require(t, {"id", "value"});
    Stmt s = db_.prepare(select_sql(t, {"id", "value"}));
    while (db_.step(s, "reading StringIds")) {
      strings_.try_emplace(sqlite3_column_int64(s.get(), 0),
                           NsysString{std::string(text_or_empty(s.get(), 1)), std::nullopt});
    }
  }

  /// The interned name of StringIds row `id`; "" when NULL or not in StringIds.
  StringId name(std::int64_t id) {
    const auto it = strings_.find(id);
    if (id == kNone || it == strings_.end()) return 0;
    if (!it->second.interned) it->second.interned = trace_.strings.intern(it->second.text);
    return *it->second.interned;
  }

  /// Export version from META_DATA_EXPORT (2024) or EXPORT_META_DATA (2022), if present.
  void read_meta() {
    std::string schema;
    std::string product;
    for (std::string_view table : {"META_DATA_EXPORT", "EXPORT_META_DATA"}) {
      if (!has_table(table)) continue;
      const TableColumns t = db_.columns(std::string(table));
      if (!t.has("name") || !t.has("value")) continue;
      Stmt s = db_.prepare(select_sql(t, {"name", "value"}));
      while (db_.step(s, "reading export metadata")) {
        const std::string_view key = text_or_empty(s.get(), 0);
        if (key == "EXPORT_SCHEMA_VERSION") schema = text_or_empty(s.get(), 1);
        if (key == "EXPORT_PRODUCT_VERSION") product = text_or_empty(s.get(), 1);
      }
    }
    if (!schema.empty() && !product.empty()) {
      trace_.meta.schema = fmt::format("{} (nsys {})", schema, product);
    } else {
      trace_.meta.schema = !schema.empty() ? schema : product;
    }
  }

  /// The process's MPI rank: nsys's MPI tracing (`--trace mpi`) names the rank's thread with
  /// the NVTX text "MPI Rank N" (NVTX_EVENTS, inline `text` or a `textId` into StringIds). One
  /// rank in the file sets meta.rank; several (a report of several ranks' processes) leave it
  /// unknown, with a warning. The world size is not recorded there: it stays unknown (-1), and
  /// linking takes the number of traces given (trace/job.h). Nothing is read when NVTX was not traced.
  void read_mpi_rank() {
    if (!has_table("NVTX_EVENTS")) return;
    const TableColumns t = db_.columns("NVTX_EVENTS");
    std::vector<std::string> cols;
    if (t.has("text")) cols.emplace_back("text");
    if (t.has("textId")) cols.emplace_back("textId");
    if (cols.empty()) return;
    Stmt s = db_.prepare(cols.size() == 2 ? select_sql(t, {"text", "textId"}) : select_sql(t, {cols[0]}));
    std::set<std::int32_t> ranks;
    constexpr std::string_view kPrefix = "MPI Rank ";
    while (db_.step(s, "reading NVTX_EVENTS")) {
      for (int c = 0; c < static_cast<int>(cols.size()); ++c) {
        std::string_view text;
        if (cols[static_cast<std::size_t>(c)] == "text") {
          text = text_or_empty(s.get(), c);
        } else if (sqlite3_column_type(s.get(), c) == SQLITE_INTEGER) {
          const auto it = strings_.find(sqlite3_column_int64(s.get(), c));
          if (it != strings_.end()) text = it->second.text;
        }
        if (!text.starts_with(kPrefix)) continue;
        std::int32_t r = -1;
        const std::string_view num = text.substr(kPrefix.size());
        const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), r);
        if (ec == std::errc() && end == num.data() + num.size() && r >= 0) ranks.insert(r);
      }
    }
    if (ranks.size() == 1) {
      trace_.meta.rank = *ranks.begin();
    } else if (ranks.size() > 1) {
      trace_.warnings.push_back(fmt::format("{} MPI ranks named in one report (NVTX \"MPI Rank N\"): the rank is "
                                            "left unknown (give --ranks)", ranks.size()));
    }
  }

  /// TARGET_INFO_GPU -> meta.gpus, one entry per distinct `id`.
  void read_gpus() {
    if (!has_table("TARGET_INFO_GPU")) return;
    const TableColumns t = db_.columns("TARGET_INFO_GPU");
    db_.require(t, {"id"});
    Stmt s = db_.prepare(select_sql(
        t, {"id", "name", "totalMemory", "computeMajor", "computeMinor", "smCount", "clockRate"}));
    while (db_.step(s, "reading TARGET_INFO_GPU")) {
      GpuInfo g;
      g.device = static_cast<std::int32_t>(sqlite3_column_int64(s.get(), 0));
      g.name = text_or_empty(s.get(), 1);
      g.total_memory_bytes = sqlite3_column_int64(s.get(), 2);
      g.compute_major = sqlite3_column_int(s.get(), 3);
      g.compute_minor = sqlite3_column_int(s.get(), 4);
      g.sm_count = sqlite3_column_int(s.get(), 5);
      // clockRate is in Hz in the exports seen (2022.2, 2024.5). A value below 1e8 cannot be a
      // GPU clock in Hz (100 MHz) and is taken to be kHz already (CUDA's cudaDeviceProp unit).
      const std::int64_t clock = sqlite3_column_int64(s.get(), 6);
      g.clock_rate_khz = clock >= 100'000'000 ? clock / 1000 : clock;
      const bool seen = std::any_of(trace_.meta.gpus.begin(), trace_.meta.gpus.end(),
                                    [&](const GpuInfo& o) { return o.device == g.device; });
      if (!seen) trace_.meta.gpus.push_back(std::move(g));
    }
  }

  /// Reads start/end of columns 0 and 1; false (row counted as ignored) when either is NULL.
  bool read_span(const Stmt& s, TimeNs& start, TimeNs& dur) {
    if (sqlite3_column_type(s.get(), 0) == SQLITE_NULL ||
        sqlite3_column_type(s.get(), 1) == SQLITE_NULL) {
      ++trace_.quirks.ignored_events;
      return false;
    }
    start = sqlite3_column_int64(s.get(), 0);
    dur = duration(start, sqlite3_column_int64(s.get(), 1), trace_.quirks);
    if (!time_in_range(start, dur)) {
      throw InputError(db_.path(), fmt::format("a timestamp is out of range (|t| > {} ns)", kMaxAbsTimeNs));
    }
    return true;
  }

  /// CUDA API calls: kRuntime (or kDriver for eventClass 1) on (pid, tid) from globalTid.
  void read_runtime() {
    if (!has_table(kRuntimeTable)) return;
    const TableColumns t = db_.columns(std::string(kRuntimeTable));
    db_.require(t, {"start", "end", "globalTid", "correlationId"});
    if (!t.has("nameId") && !t.has("name")) db_.require(t, {"nameId"});
    Stmt s = db_.prepare(
        select_sql(t, {"start", "end", "globalTid", "correlationId", "nameId", "name",
                       "eventClass"}));
    while (db_.step(s, "reading CUPTI_ACTIVITY_KIND_RUNTIME")) {
      const std::int64_t event_class = int_or_none(s.get(), 6);
      if (event_class >= kEventClassBacktrace && event_class <= kEventClassBacktraceFinish) {
        ++trace_.quirks.ignored_events;  // duplicate record of a backtraced call
        continue;
      }
      TimeNs start = 0;
      TimeNs dur = 0;
      if (!read_span(s, start, dur)) continue;
      const StringId raw_name = sqlite3_column_type(s.get(), 4) != SQLITE_NULL
                                    ? name(sqlite3_column_int64(s.get(), 4))
                                    : trace_.strings.intern(text_or_empty(s.get(), 5));
      const StringId name_id =
          trace_.strings.intern(api_call_name(trace_.strings.view(raw_name)));
      const std::int64_t gtid = int_or_none(s.get(), 2);
      const std::int64_t pid = gtid == kNone ? kNone : pid_of_global(gtid);
      const std::int64_t corr = int_or_none(s.get(), 3);
      const OpKind kind = event_class == kEventClassDriver ? OpKind::kDriver : OpKind::kRuntime;
      trace_.ops.push(kind, start, dur, name_id, static_cast<std::int32_t>(kNone), kNone, pid,
                      gtid == kNone ? kNone : tid_of_global(gtid), corr, kNone);
      if (corr != kNone) api_calls_.add({corr, pid, start, name_id});
    }
    api_calls_.seal();
  }

  /// Appends one GPU op whose columns 2..5 are deviceId, streamId, correlationId, globalPid.
  void push_gpu_op(const Stmt& s, OpKind kind, TimeNs start, TimeNs dur, StringId name_id) {
    const std::int64_t gpid = int_or_none(s.get(), 5);
    trace_.ops.push(kind, start, dur, name_id, device_or_none(s.get(), 2), id_or_none(s.get(), 3),
                    gpid == kNone ? kNone : pid_of_global(gpid), kNone, int_or_none(s.get(), 4),
                    kNone);
  }

  /// Kernels, named by demangledName (shortName when the export has no demangled names).
  void read_kernels() {
    if (!has_table(kKernelTable)) return;
    const TableColumns t = db_.columns(std::string(kKernelTable));
    db_.require(t, {"start", "end", "deviceId", "streamId", "correlationId"});
    const std::string_view name_col = t.has("shortName") && !t.has("demangledName")
                                          ? "shortName" : "demangledName";
    db_.require(t, {name_col});
    Stmt s = db_.prepare(select_sql(
        t, {"start", "end", "deviceId", "streamId", "correlationId", "globalPid", name_col}));
    while (db_.step(s, "reading CUPTI_ACTIVITY_KIND_KERNEL")) {
      TimeNs start = 0;
      TimeNs dur = 0;
      if (!read_span(s, start, dur)) continue;
      push_gpu_op(s, OpKind::kKernel, start, dur, name(int_or_none(s.get(), 6)));
    }
  }

  /// copyKind -> enum name ("CUDA_MEMCPY_KIND_HTOD"), from ENUM_CUDA_MEMCPY_OPER when the export
  /// has it, else the fixed CUPTI values.
  std::unordered_map<std::int64_t, std::string> memcpy_kind_names() const {
    std::unordered_map<std::int64_t, std::string> out;
    for (std::size_t k = 0; k < kMemcpyKindNames.size(); ++k) {
      out[static_cast<std::int64_t>(k)] = kMemcpyKindNames[k];
    }
    if (!has_table("ENUM_CUDA_MEMCPY_OPER")) return out;
    const TableColumns t = db_.columns("ENUM_CUDA_MEMCPY_OPER");
    if (!t.has("id") || !t.has("name")) return out;
    Stmt s = db_.prepare(select_sql(t, {"id", "name"}));
    while (db_.step(s, "reading ENUM_CUDA_MEMCPY_OPER")) {
      out[sqlite3_column_int64(s.get(), 0)] = text_or_empty(s.get(), 1);
    }
    return out;
  }

  /// Copies, named "Memcpy HtoD", "Memcpy DtoH", ... from copyKind.
  void read_memcpy() {
    if (!has_table(kMemcpyTable)) return;
    const TableColumns t = db_.columns(std::string(kMemcpyTable));
    db_.require(t, {"start", "end", "deviceId", "streamId", "correlationId", "copyKind"});
    const auto kind_names = memcpy_kind_names();
    std::unordered_map<std::int64_t, StringId> op_names;  // copyKind -> interned op name
    Stmt s = db_.prepare(select_sql(
        t, {"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "copyKind"}));
    while (db_.step(s, "reading CUPTI_ACTIVITY_KIND_MEMCPY")) {
      TimeNs start = 0;
      TimeNs dur = 0;
      if (!read_span(s, start, dur)) continue;
      const std::int64_t copy_kind = int_or_none(s.get(), 6);
      auto [it, added] = op_names.try_emplace(copy_kind, 0);
      if (added) {
        const auto known = kind_names.find(copy_kind);
        it->second = trace_.strings.intern(known != kind_names.end()
                                               ? memcpy_op_name(known->second)
                                               : fmt::format("Memcpy kind {}", copy_kind));
      }
      push_gpu_op(s, OpKind::kMemcpy, start, dur, it->second);
    }
  }

  /// Memsets, named "Memset".
  void read_memset() {
    if (!has_table(kMemsetTable)) return;
    const TableColumns t = db_.columns(std::string(kMemsetTable));
    db_.require(t, {"start", "end", "deviceId", "streamId", "correlationId"});
    const StringId name_id = trace_.strings.intern("Memset");
    Stmt s = db_.prepare(
        select_sql(t, {"start", "end", "deviceId", "streamId", "correlationId", "globalPid"}));
    while (db_.step(s, "reading CUPTI_ACTIVITY_KIND_MEMSET")) {
      TimeNs start = 0;
      TimeNs dur = 0;
      if (!read_span(s, start, dur)) continue;
      push_gpu_op(s, OpKind::kMemset, start, dur, name_id);
    }
  }

  /// CUDA_EVENT rows (event records), timed by the start of their cudaEventRecord call (the
  /// table has no timestamp). Records whose call is not in RUNTIME cannot be ordered; skipped.
  void read_event_records() {
    if (!has_table(kEventTable)) return;
    const TableColumns t = db_.columns(std::string(kEventTable));
    db_.require(t, {"correlationId", "eventId", "streamId"});
    Stmt s = db_.prepare(select_sql(t, {"correlationId", "eventId", "streamId", "globalPid"}));
    while (db_.step(s, "reading CUPTI_ACTIVITY_KIND_CUDA_EVENT")) {
      const std::int64_t corr = int_or_none(s.get(), 0);
      const std::int64_t event = id_or_none(s.get(), 1);
      const std::int64_t gpid = int_or_none(s.get(), 3);
      const ApiCall* call = api_calls_.find(corr, gpid == kNone ? kNone : pid_of_global(gpid));
      if (event == kNone || call == nullptr) continue;
      records_by_event_[{call->pid, event}].push_back({call->start, corr, id_or_none(s.get(), 2)});
    }
    for (auto& [event, records] : records_by_event_) {
      std::stable_sort(records.begin(), records.end(), [](const EventRecord& a,
                                                          const EventRecord& b) {
        return a.start < b.start;
      });
    }
  }

  /// The latest record of `event` in process `pid` whose call started at or before `when`, or
  /// nullptr.
  const EventRecord* find_record(std::int64_t pid, std::int64_t event, TimeNs when) const {
    auto it = records_by_event_.find({pid, event});
    if (it == records_by_event_.end() && pid != kNone) it = records_by_event_.find({kNone, event});
    if (it == records_by_event_.end()) return nullptr;
    const auto& records = it->second;
    const auto after = std::upper_bound(
        records.begin(), records.end(), when,
        [](TimeNs t, const EventRecord& r) { return t < r.start; });
    return after == records.begin() ? nullptr : &*(after - 1);
  }

  /// Sync kind of a record: from the API call joined on correlationId, else from syncType.
  SyncKind classify_sync(const ApiCall* call, std::int64_t sync_type) const {
    if (call != nullptr) {
      if (auto kind = sync_kind_of_api_call(trace_.strings.view(call->name))) return *kind;
    }
    return sync_kind_of_type(sync_type);
  }

  /// SYNCHRONIZATION rows -> kSync ops plus Trace::syncs rows.
  void read_syncs() {
    if (!has_table(kSyncTable)) return;
    const TableColumns t = db_.columns(std::string(kSyncTable));
    db_.require(t, {"start", "end", "deviceId", "streamId", "correlationId"});
    Stmt s = db_.prepare(select_sql(t, {"start", "end", "deviceId", "streamId", "correlationId",
                                        "globalPid", "syncType", "eventId"}));
    while (db_.step(s, "reading CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) {
      TimeNs start = 0;
      TimeNs dur = 0;
      if (!read_span(s, start, dur)) continue;
      add_sync(s, start, dur);
    }
  }

  /// One sync row (columns as selected in read_syncs).
  void add_sync(const Stmt& s, TimeNs start, TimeNs dur) {
    const std::int64_t corr = int_or_none(s.get(), 4);
    const std::int64_t gpid = int_or_none(s.get(), 5);
    const std::int64_t pid = gpid == kNone ? kNone : pid_of_global(gpid);
    const ApiCall* call = api_calls_.find(corr, pid);
    const SyncKind kind = classify_sync(call, int_or_none(s.get(), 6));
    const std::int64_t event = id_or_none(s.get(), 7);
    const std::int64_t stream = kind == SyncKind::kContextSync ? kNone : id_or_none(s.get(), 3);
    const std::uint32_t op = trace_.ops.push(
        OpKind::kSync, start, dur, trace_.strings.intern(sync_op_name(kind)),
        device_or_none(s.get(), 2), stream, pid, kNone, corr, kNone);
    const EventRecord* record = nullptr;
    if (event != kNone && (kind == SyncKind::kEventSync || kind == SyncKind::kStreamWaitEvent)) {
      record = call != nullptr ? find_record(call->pid, event, call->start)
                               : find_record(pid, event, start);
    }
    SyncTable& st = trace_.syncs;
    st.op.push_back(op);
    st.kind.push_back(kind);
    st.stream.push_back(stream);
    st.event_stream.push_back(record != nullptr ? record->stream : kNone);
    st.event_record_correlation.push_back(record != nullptr ? record->correlation : kNone);
    st.event_id.push_back(event);
  }

  Db db_;
  Trace trace_;
  std::unordered_set<std::string> tables_;
  std::unordered_map<std::int64_t, NsysString> strings_;
  ApiIndex api_calls_;
  /// Event records by (pid of the recording call, eventId), sorted by start.
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<EventRecord>> records_by_event_;
};

}  // namespace

Trace read_nsys_sqlite(const std::string& path) { return NsysReader(path).read(); }

}  // namespace emo::trace
