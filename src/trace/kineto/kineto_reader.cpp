// Kineto JSON reader. Layout of the work:
//   1. JsonScanner walks the top-level object member by member (small, scalar). Members other
//      than `traceEvents` are parsed with nlohmann-json (deviceProperties, distributedInfo, ...).
//   2. The `traceEvents` array is cut into chunks of ~KinetoOptions::chunk_bytes at event
//      boundaries and each chunk is parsed by simdjson On-Demand as its own array: the separator
//      before the chunk is overwritten with '[' and the one after it with ']'. A cut is found
//      by looking for "}" , "{" (whitespace allowed) after the target size. Such a pattern can
//      sit inside a string or a nested object; simdjson then fails on that chunk (unclosed
//      string or unbalanced brackets), the chunk's rows are rolled back, and the chunk is cut
//      again at an exact boundary found by the scalar scanner. So the heuristic is only ever a
//      speed-up, never a source of wrong rows.
//   3. Each event's fields are read in any order into EventFields, then turned into rows.
#include "trace/kineto/kineto_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_integer.h"
#include "trace/kineto/json_scan.h"

namespace emo::trace {
namespace {

namespace od = simdjson::ondemand;
using kineto::JsonScanner;
using kineto::ScanError;

/// Event categories EMO models, current and 2021-era names folded together.
enum class Category : std::uint8_t {
  kAbsent,
  kKernel,
  kMemcpy,
  kMemset,
  kRuntime,
  kDriver,
  kCpuOp,
  kUserAnnotation,
  kGpuUserAnnotation,
  kCudaSync,
  kProfilerSpan,  // "Trace": the profiler's own span, not work
  kOther,
};

Category category_of(std::string_view c) noexcept {
  switch (c.size()) {
    case 5:
      if (c == "Trace") return Category::kProfilerSpan;
      break;
    case 6:
      if (c == "kernel" || c == "Kernel" || c == "Memcpy" || c == "Memset" || c == "cpu_op") {
        return c[0] == 'c'                ? Category::kCpuOp
               : (c[0] == 'k' || c[0] == 'K') ? Category::kKernel
               : c[3] == 'c'              ? Category::kMemcpy
                                          : Category::kMemset;
      }
      break;
    case 7:
      if (c == "Runtime") return Category::kRuntime;
      break;
    case 8:
      if (c == "Operator") return Category::kCpuOp;
      break;
    case 9:
      if (c == "cuda_sync") return Category::kCudaSync;
      break;
    case 10:
      if (c == "gpu_memcpy") return Category::kMemcpy;
      if (c == "gpu_memset") return Category::kMemset;
      break;
    case 11:
      if (c == "cuda_driver") return Category::kDriver;
      break;
    case 12:
      if (c == "cuda_runtime") return Category::kRuntime;
      break;
    case 15:
      if (c == "user_annotation") return Category::kUserAnnotation;
      break;
    case 19:
      if (c == "gpu_user_annotation") return Category::kGpuUserAnnotation;
      break;
    default:
      break;
  }
  return Category::kOther;
}

/// Semantic problem with one event (wrong type, missing field); becomes an InputError.
struct EventError {
  std::string problem;
};

/// An id written as a number or a string. Strings that are decimal or hex ("0x0") become
/// numbers; other strings stay text (e.g. tid "stream 7", pid "Spans").
struct IdValue {
  bool present = false;
  bool was_string = false;
  std::optional<std::int64_t> number;
  std::string_view text;
};

/// The fields of one event that EMO uses, filled in whatever order they appear.
struct EventFields {
  char ph = 0;
  Category cat = Category::kAbsent;
  std::string_view name;
  std::optional<TimeNs> ts;
  std::optional<TimeNs> dur;
  IdValue pid, tid;
  // args
  IdValue stream, device;
  std::int64_t correlation = kNone;
  std::int64_t external_id = kNone;
  std::string_view sync_kind;
  std::int64_t wait_on_stream = kNone;
  std::int64_t wait_on_event_record_corr = kNone;
  std::int64_t wait_on_event_id = kNone;
  bool has_collective = false;
  std::string_view coll_name, pg_name, pg_ranks, dtype;
  std::int64_t group_size = kNone, in_nelems = kNone, out_nelems = kNone, seq = kNone;
  std::int64_t src_rank = kNone, dst_rank = kNone;
};

/// `raw` points just after a key's opening quote (simdjson raw_json_string). True when the key
/// is exactly `lit`: the literal's bytes followed by the closing quote. Reading lit.size()+1
/// bytes is safe: the key ends with a quote inside the document, and the document is padded.
template <std::size_t N>
inline bool key_is(const char* raw, const char (&lit)[N]) noexcept {
  return std::memcmp(raw, lit, N - 1) == 0 && raw[N - 1] == '"';
}

std::optional<std::int64_t> parse_id_text(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    std::uint64_t v = 0;
    for (std::size_t i = 2; i < s.size(); ++i) {
      const char c = s[i];
      int d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return std::nullopt;
      if (v >> 60) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(d);
    }
    return static_cast<std::int64_t>(v);
  }
  return parse_int64(s);
}

class KinetoReader {
 public:
  KinetoReader(PaddedBuffer& buf, const std::string& path, const KinetoOptions& options)
      : buf_(buf), path_(path), options_(options), scan_(buf.view()) {}

  Trace run() {
    trace_.meta.format = TraceFormat::kKinetoJson;
    trace_.meta.path = path_;
    // A rough guess that avoids most re-allocation: ~300 bytes of JSON per kept op.
    trace_.ops.reserve(buf_.size() / 300);
    try {
      parse_document();
    } catch (const ScanError& e) {
      throw InputError(path_, fmt::format("invalid JSON at byte {}: {}", e.offset, e.problem));
    }
    if (trace_.meta.base_time_ns != 0) {
      OpTable& ops = trace_.ops;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        TimeNs start;
        if (__builtin_add_overflow(ops.start_ns[i], trace_.meta.base_time_ns, &start) ||
            !time_in_range(start, ops.dur_ns[i])) {
          throw InputError(path_, fmt::format("baseTimeNanoseconds + ts is out of range "
                                              "(|t| > {} ns)", kMaxAbsTimeNs));
        }
        ops.start_ns[i] = start;
      }
    }
    trace_.finish();
    return std::move(trace_);
  }

 private:
  // ---- top level ---------------------------------------------------------------------------

  void parse_document() {
    std::size_t pos = scan_.skip_ws(0);
    if (pos + 3 <= buf_.size() && std::memcmp(buf_.data() + pos, "\xEF\xBB\xBF", 3) == 0) {
      pos = scan_.skip_ws(pos + 3);  // UTF-8 byte order mark
    }
    if (pos >= buf_.size()) throw InputError(path_, "empty file");
    if (buf_.data()[pos] == '[') {  // JSON Array Format: the document is the events array
      const std::size_t end = parse_events(pos);
      check_trailing(end + 1);
      return;
    }
    if (buf_.data()[pos] != '{') {
      throw InputError(path_, "not a trace: JSON must start with '{' or '['");
    }
    bool saw_events = false;
    pos = scan_.skip_ws(pos + 1);
    if (pos < buf_.size() && buf_.data()[pos] == '}') {
      pos = pos + 1;
    } else {
      for (;;) {
        pos = scan_.skip_ws(pos);
        if (pos >= buf_.size() || buf_.data()[pos] != '"') {
          throw ScanError{pos, "expected a member name in the top-level object"};
        }
        const std::string_view key = scan_.string_at(pos);
        pos = scan_.expect(scan_.skip_string(pos), ':', "':' after a member name");
        pos = scan_.skip_ws(pos);
        if (key == "traceEvents") {
          if (pos >= buf_.size() || buf_.data()[pos] != '[') {
            throw InputError(path_, "'traceEvents' is not an array");
          }
          pos = parse_events(pos) + 1;
          saw_events = true;
        } else {
          const std::size_t end = scan_.skip_value(pos);
          parse_metadata_member(key, std::string_view(buf_.data() + pos, end - pos));
          pos = end;
        }
        pos = scan_.skip_ws(pos);
        if (pos < buf_.size() && buf_.data()[pos] == ',') {
          ++pos;
          continue;
        }
        pos = scan_.expect(pos, '}', "',' or '}' in the top-level object");
        break;
      }
    }
    check_trailing(pos);
    if (!saw_events) throw InputError(path_, "no 'traceEvents' array: not a Kineto/Chrome trace");
  }

  void check_trailing(std::size_t pos) {
    pos = scan_.skip_ws(pos);
    if (pos != buf_.size()) throw ScanError{pos, "unexpected data after the end of the JSON document"};
  }

  /// Top-level members other than traceEvents: small, parsed with nlohmann-json.
  void parse_metadata_member(std::string_view key, std::string_view json_text) {
    if (key == "otherData" && json_text.find("\"emo_origin_ns\"") != std::string_view::npos) {
      throw InputError(path_, "nothing to analyse: this is an overlay EMO wrote (--overlay, for "
                              "viewing in Perfetto), not a profiler trace; give the original trace");
    }
    if (key != "deviceProperties" && key != "distributedInfo" && key != "baseTimeNanoseconds") {
      return;
    }
    nlohmann::json v;
    try {
      v = nlohmann::json::parse(json_text);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path_, fmt::format("invalid JSON in '{}': {}", key, e.what()));
    }
    try {
      if (key == "baseTimeNanoseconds") {
        if (!v.is_number_integer()) throw InputError(path_, "'baseTimeNanoseconds' is not an integer");
        trace_.meta.base_time_ns = v.get<std::int64_t>();
      } else if (key == "distributedInfo") {
        parse_distributed_info(v);
      } else {
        parse_device_properties(v);
      }
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path_, fmt::format("'{}' has a field of the wrong type: {}", key, e.what()));
    }
  }

  void parse_distributed_info(const nlohmann::json& v) {
    if (!v.is_object()) throw InputError(path_, "'distributedInfo' is not an object");
    // Read as 64-bit and range-checked: get<std::int32_t> would wrap 2^32 + 1 to 1. -1 is
    // "unknown" (what EMO's own writer, kineto_writer.cpp, and TraceMeta use).
    auto int_field = [&](const char* name, std::int32_t& out, std::int64_t lowest) {
      if (!v.contains(name)) return;
      const nlohmann::json& f = v[name];
      if (!f.is_number_integer()) {
        throw InputError(path_, fmt::format("'distributedInfo.{}' is not an integer", name));
      }
      constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
      const bool unknown = !f.is_number_unsigned() && f.get<std::int64_t>() == -1;
      if (!unknown && !integer_within(f, lowest, kMax)) {
        throw InputError(path_, fmt::format("'distributedInfo.{}' is {}, outside {} to {} (or -1: unknown)", name, f.dump(),
                                            lowest, kMax));
      }
      out = static_cast<std::int32_t>(f.get<std::int64_t>());
    };
    int_field("rank", trace_.meta.rank, 0);
    int_field("world_size", trace_.meta.world_size, 1);
    if (v.contains("backend") && v["backend"].is_string()) {
      trace_.meta.backend = v["backend"].get<std::string>();
    }
  }

  /// deviceProperties[i].<key> as an integer, `fallback` when absent. A float is accepted only
  /// when integral and within int64 (nlohmann's float-to-int conversion of others is undefined
  /// behaviour); other types throw nlohmann's type_error (reported by the caller).
  template <typename T>
  T device_int(const nlohmann::json& d, const char* key, T fallback) const {
    const auto it = d.find(key);
    if (it == d.end()) return fallback;
    if (it->is_number_float()) {
      const double x = it->get<double>();
      if (!(x >= -0x1p63 && x < 0x1p63) || x != static_cast<double>(static_cast<std::int64_t>(x))) {
        throw InputError(path_, fmt::format("'deviceProperties.{}' is not an integer", key));
      }
      return static_cast<T>(static_cast<std::int64_t>(x));
    }
    return it->get<T>();
  }

  void parse_device_properties(const nlohmann::json& v) {
    if (!v.is_array()) throw InputError(path_, "'deviceProperties' is not an array");
    for (const auto& d : v) {
      if (!d.is_object()) throw InputError(path_, "'deviceProperties' holds a non-object");
      GpuInfo g;
      g.device = device_int(d, "id", 0);
      g.name = d.value("name", std::string());
      g.total_memory_bytes = device_int(d, "totalGlobalMem", std::int64_t{0});
      g.compute_major = device_int(d, "computeMajor", 0);
      g.compute_minor = device_int(d, "computeMinor", 0);
      g.sm_count = device_int(d, "numSms", 0);
      trace_.meta.gpus.push_back(std::move(g));
    }
  }

  // ---- events array --------------------------------------------------------------------------

  /// `open` is the index of the array's '['. Returns the index of its closing ']'.
  std::size_t parse_events(std::size_t open) {
    std::size_t sep = open;  // the '[' or ',' before the next chunk
    const std::size_t size = buf_.size();
    const std::size_t chunk = std::max<std::size_t>(options_.chunk_bytes, 4096);
    for (;;) {
      if (size - sep <= chunk + chunk / 2) {
        const std::size_t end = scan_.find_array_end(sep + 1);
        parse_chunk_or_throw(sep, end);
        return end;
      }
      std::size_t cut = heuristic_cut(sep + chunk, chunk);
      if (cut != kNoCut && try_parse_chunk(sep, cut)) {
        sep = cut;
        continue;
      }
      if (cut != kNoCut && options_.stats != nullptr) ++options_.stats->recut_chunks;
      // The fast cut failed (or none was found): walk events exactly, then parse; any error
      // now is the document's own.
      cut = exact_cut(sep, chunk);
      if (cut == kNoCut) {  // the array ends within this stretch
        const std::size_t end = scan_.find_array_end(sep + 1);
        parse_chunk_or_throw(sep, end);
        return end;
      }
      parse_chunk_or_throw(sep, cut);
      sep = cut;
    }
  }

  static constexpr std::size_t kNoCut = static_cast<std::size_t>(-1);

  /// Index of the ',' in the first "}<ws>,<ws>{" in [from, from + limit), or kNoCut. The limit
  /// keeps the search linear overall on inputs where the pattern is rare.
  std::size_t heuristic_cut(std::size_t from, std::size_t limit) const {
    const char* data = buf_.data();
    const std::size_t size = std::min(buf_.size(), from + limit);
    while (from < size) {
      const void* p = std::memchr(data + from, '}', size - from);
      if (p == nullptr) return kNoCut;
      const std::size_t brace = static_cast<const char*>(p) - data;
      std::size_t i = scan_.skip_ws(brace + 1);
      if (i < size && data[i] == ',') {
        const std::size_t comma = i;
        i = scan_.skip_ws(i + 1);
        if (i < size && data[i] == '{') return comma;
      }
      from = brace + 1;
    }
    return kNoCut;
  }

  /// Walks whole events from the separator `sep` until at least `chunk` bytes are covered;
  /// returns the index of the ',' after the last one, or kNoCut when the array ends first.
  std::size_t exact_cut(std::size_t sep, std::size_t chunk) const {
    std::size_t pos = sep;
    for (;;) {
      pos = scan_.skip_value(pos + 1);
      pos = scan_.skip_ws(pos);
      if (pos >= buf_.size()) throw ScanError{pos, "truncated: the traceEvents array is not closed"};
      if (buf_.data()[pos] == ']') return kNoCut;
      if (buf_.data()[pos] != ',') throw ScanError{pos, "expected ',' or ']' in traceEvents"};
      if (pos - sep >= chunk) return pos;
    }
  }

  struct Checkpoint {
    std::size_t ops, syncs, collectives, events;
    QuirkCounts quirks;
  };

  Checkpoint checkpoint() const {
    return {trace_.ops.size(), trace_.syncs.size(), trace_.collectives.size(), event_index_,
            trace_.quirks};
  }

  void rollback(const Checkpoint& c) {
    auto cut = [](auto& v, std::size_t n) { v.resize(n); };
    OpTable& o = trace_.ops;
    cut(o.kind, c.ops); cut(o.start_ns, c.ops); cut(o.dur_ns, c.ops); cut(o.name, c.ops);
    cut(o.device, c.ops); cut(o.stream, c.ops); cut(o.process, c.ops); cut(o.thread, c.ops);
    cut(o.correlation, c.ops); cut(o.external_id, c.ops);
    SyncTable& s = trace_.syncs;
    cut(s.op, c.syncs); cut(s.kind, c.syncs); cut(s.stream, c.syncs); cut(s.event_stream, c.syncs);
    cut(s.event_record_correlation, c.syncs); cut(s.event_id, c.syncs);
    CollectiveTable& k = trace_.collectives;
    cut(k.op, c.collectives); cut(k.name, c.collectives); cut(k.group, c.collectives);
    cut(k.group_ranks, c.collectives); cut(k.group_size, c.collectives);
    cut(k.in_nelems, c.collectives); cut(k.out_nelems, c.collectives);
    cut(k.dtype, c.collectives); cut(k.sequence, c.collectives);
    cut(k.src_rank, c.collectives); cut(k.dst_rank, c.collectives);
    event_index_ = c.events;
    trace_.quirks = c.quirks;
  }

  /// Parses the events strictly between separators `sep` and `end`. Returns false (with all
  /// rows of the chunk rolled back) on any error.
  bool try_parse_chunk(std::size_t sep, std::size_t end) {
    const Checkpoint cp = checkpoint();
    try {
      parse_chunk(sep, end);
      return true;
    } catch (const simdjson::simdjson_error&) {
    } catch (const EventError&) {
    }
    rollback(cp);
    return false;
  }

  void parse_chunk_or_throw(std::size_t sep, std::size_t end) {
    try {
      parse_chunk(sep, end);
    } catch (const simdjson::simdjson_error& e) {
      throw InputError(path_, fmt::format("invalid JSON in traceEvents[{}]: {}", event_index_,
                                          simdjson::error_message(e.error())));
    } catch (const EventError& e) {
      throw InputError(path_, fmt::format("traceEvents[{}]: {}", event_index_, e.problem));
    }
  }

  void parse_chunk(std::size_t sep, std::size_t end) {
    char* data = buf_.data();
    const char saved_open = data[sep];
    const char saved_close = data[end];
    data[sep] = '[';
    data[end] = ']';
    struct Restore {
      char* d;
      std::size_t a, b;
      char ca, cb;
      ~Restore() { d[a] = ca; d[b] = cb; }
    } restore{data, sep, end, saved_open, saved_close};

    if (options_.stats != nullptr) ++options_.stats->chunks;
    const std::size_t len = end - sep + 1;
    const std::size_t capacity = buf_.size() + PaddedBuffer::kPadding - sep;
    od::document doc = parser_.iterate(data + sep, len, capacity);
    od::array events = doc.get_array();
    for (auto element : events) {
      od::object obj;
      if (const auto err = element.get_object().get(obj); err != simdjson::SUCCESS) {
        if (err == simdjson::INCORRECT_TYPE) throw EventError{"event is not a JSON object"};
        throw simdjson::simdjson_error(err);
      }
      parse_event(obj);
      ++event_index_;
    }
    // The array must end at `end`, the ']' written above. An earlier ']' closed the events array
    // inside this chunk: the cut lies past the array (in members after traceEvents) and the rest
    // of the chunk was never looked at. Reject, so that the caller falls back to an exact cut.
    if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
      throw simdjson::simdjson_error(simdjson::TRAILING_CONTENT);
    }
  }

  // ---- one event -------------------------------------------------------------------------------

  static std::optional<TimeNs> read_time(od::value v, const char* field) {
    std::string_view tok = v.raw_json_token();
    auto ns = parse_us_to_ns(tok);
    if (!ns) throw EventError{fmt::format("'{}' is not a number", field)};
    return ns;
  }

  static std::int64_t read_int(od::value v, const char* field) {
    std::int64_t out;
    if (v.get_int64().get(out) == simdjson::SUCCESS) return out;
    // Integers written with a fraction (e.g. 7.0) are accepted; other types are errors.
    double d;
    // Range check first: converting a double outside int64 (e.g. 1e19) is undefined behaviour.
    if (v.get_double().get(d) == simdjson::SUCCESS && d >= -0x1p63 && d < 0x1p63 &&
        d == static_cast<double>(static_cast<std::int64_t>(d))) {
      return static_cast<std::int64_t>(d);
    }
    throw EventError{fmt::format("'{}' is not an integer", field)};
  }

  /// A global rank (`Src Rank`, `Dst Rank`): -1 is "not recorded" (kNone); a value below it is
  /// kept, for link_job to refuse as no rank of the job (trace/job.h); one beyond 32 bits throws.
  static std::int64_t read_rank(od::value v, const char* field) {
    const std::int64_t r = read_int(v, field);
    if (r < INT32_MIN || r > INT32_MAX) throw EventError{fmt::format("'{}' is {}: no rank can be", field, r)};
    return r;
  }

  IdValue read_id(od::value v, const char* field) {
    IdValue id;
    id.present = true;
    od::json_type type = v.type();
    if (type == od::json_type::string) {
      id.was_string = true;
      id.text = v.get_string();
      id.number = parse_id_text(id.text);
      return id;
    }
    if (type == od::json_type::number) {
      std::int64_t n;
      if (v.get_int64().get(n) == simdjson::SUCCESS) {
        id.number = n;
        return id;
      }
      std::uint64_t u;  // e.g. stream 18446744073709551615 from some writers
      if (v.get_uint64().get(u) == simdjson::SUCCESS) {
        id.number = static_cast<std::int64_t>(u);
        return id;
      }
    }
    throw EventError{fmt::format("'{}' is neither an integer nor a string", field)};
  }

  static std::string_view read_string(od::value v, const char* field) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) {
      throw EventError{fmt::format("'{}' is not a string", field)};
    }
    return s;
  }

  void parse_event(od::object& obj) {
    EventFields f;
    for (auto field : obj) {
      const char* k = field.key().value().raw();
      od::value v = field.value();
      switch (k[0]) {
        case 'p':
          if (key_is(k, "ph")) {
            const std::string_view ph = read_string(v, "ph");
            f.ph = ph.empty() ? '?' : ph[0];
          } else if (key_is(k, "pid")) {
            f.pid = read_id(v, "pid");
          }
          break;
        case 'c':
          if (key_is(k, "cat")) f.cat = category_of(read_string(v, "cat"));
          break;
        case 'n':
          if (key_is(k, "name")) f.name = read_string(v, "name");
          break;
        case 't':
          if (key_is(k, "ts")) f.ts = read_time(v, "ts");
          else if (key_is(k, "tid")) f.tid = read_id(v, "tid");
          break;
        case 'd':
          if (key_is(k, "dur")) f.dur = read_time(v, "dur");
          break;
        case 'a':
          if (key_is(k, "args")) {
            od::object args;
            if (v.get_object().get(args) != simdjson::SUCCESS) {
              throw EventError{"'args' is not an object"};
            }
            parse_args(args, f);
          }
          break;
        default:
          break;
      }
    }
    handle_event(f);
  }

  void parse_args(od::object& args, EventFields& f) {
    for (auto field : args) {
      const char* k = field.key().value().raw();
      od::value v = field.value();
      switch (k[0]) {
        case 'c':
          if (key_is(k, "correlation")) f.correlation = read_int(v, "args.correlation");
          else if (key_is(k, "cuda_sync_kind")) f.sync_kind = read_string(v, "args.cuda_sync_kind");
          break;
        case 's':
          if (key_is(k, "stream")) f.stream = read_id(v, "args.stream");
          break;
        case 'd':
          if (key_is(k, "device")) f.device = read_id(v, "args.device");
          else if (key_is(k, "dtype")) f.dtype = read_string(v, "args.dtype");
          break;
        case 'E':
        case 'e':
          if (key_is(k, "External id") || key_is(k, "external id")) {
            f.external_id = read_int(v, "args.External id");
          }
          break;
        case 'w':
          if (key_is(k, "wait_on_stream")) {
            f.wait_on_stream = read_int(v, "args.wait_on_stream");
          } else if (key_is(k, "wait_on_cuda_event_record_corr_id")) {
            f.wait_on_event_record_corr = read_int(v, "args.wait_on_cuda_event_record_corr_id");
          } else if (key_is(k, "wait_on_cuda_event_id")) {
            f.wait_on_event_id = read_int(v, "args.wait_on_cuda_event_id");
          }
          break;
        case 'C':
          if (key_is(k, "Collective name")) {
            f.coll_name = read_string(v, "args.Collective name");
            f.has_collective = true;
          }
          break;
        case 'P':
          if (key_is(k, "Process Group Name")) {
            f.pg_name = read_string(v, "args.Process Group Name");
          } else if (key_is(k, "Process Group Ranks")) {
            f.pg_ranks = read_string(v, "args.Process Group Ranks");
          }
          break;
        case 'G':
          if (key_is(k, "Group size")) f.group_size = read_int(v, "args.Group size");
          break;
        case 'I':
          if (key_is(k, "In msg nelems")) f.in_nelems = read_int(v, "args.In msg nelems");
          break;
        case 'O':
          if (key_is(k, "Out msg nelems")) f.out_nelems = read_int(v, "args.Out msg nelems");
          break;
        case 'S':
          if (key_is(k, "Seq")) f.seq = read_int(v, "args.Seq");
          else if (key_is(k, "Src Rank")) f.src_rank = read_rank(v, "args.Src Rank");
          break;
        case 'D':
          if (key_is(k, "Dst Rank")) f.dst_rank = read_rank(v, "args.Dst Rank");
          break;
        default:
          break;
      }
    }
  }

  void handle_event(const EventFields& f) {
    if (f.ph == 0) throw EventError{"event has no 'ph'"};
    if (f.ph == 'M') return;  // process/thread names: presentation only
    if (f.ph != 'X') {
      ++trace_.quirks.ignored_events;  // flows, instants, counters
      return;
    }
    switch (f.cat) {
      case Category::kProfilerSpan:
        ++trace_.quirks.ignored_events;
        return;
      case Category::kOther:
      case Category::kAbsent:
        ++trace_.quirks.unknown_category;
        return;
      default:
        break;
    }
    if (!f.ts) throw EventError{"complete event has no 'ts'"};
    if (!f.dur) throw EventError{"complete event has no 'dur'"};
    TimeNs dur = *f.dur;
    if (dur < 0) {
      ++trace_.quirks.negative_duration;
      dur = 0;
    } else if (dur == 0) {
      ++trace_.quirks.zero_duration;
    }
    if (!time_in_range(*f.ts, dur)) {
      throw EventError{fmt::format("'ts' or 'dur' is out of range (|t| > {} ns)", kMaxAbsTimeNs)};
    }
    count_string_ids(f);
    const StringId name = trace_.strings.intern(f.name);
    switch (f.cat) {
      case Category::kKernel:
      case Category::kMemcpy:
      case Category::kMemset:
        add_gpu_op(f, name, dur);
        break;
      case Category::kCudaSync:
        add_sync(f, name, dur);
        break;
      case Category::kGpuUserAnnotation:
        trace_.ops.push(OpKind::kGpuAnnotation, *f.ts, dur, name, gpu_device(f), gpu_stream(f),
                        kNone, kNone, f.correlation, f.external_id);
        break;
      default:
        trace_.ops.push(host_kind(f.cat), *f.ts, dur, name, kNone, kNone, host_id(f.pid),
                        host_id(f.tid), f.correlation, f.external_id);
        break;
    }
  }

  void count_string_ids(const EventFields& f) {
    trace_.quirks.string_ids += f.pid.was_string + f.tid.was_string + f.stream.was_string;
  }

  static OpKind host_kind(Category c) noexcept {
    switch (c) {
      case Category::kRuntime: return OpKind::kRuntime;
      case Category::kDriver: return OpKind::kDriver;
      case Category::kCpuOp: return OpKind::kFrameworkOp;
      default: return OpKind::kAnnotation;
    }
  }

  /// Numeric pid/tid as is; a non-numeric string ("Spans") maps to host_id_of_string().
  std::int64_t host_id(const IdValue& id) {
    if (!id.present) return kNone;
    if (id.number) return *id.number;
    return host_id_of_string(trace_.strings.intern(id.text));
  }

  /// GPU index: args.device, else the event's pid (Kineto puts GPU ops in pid = device).
  static std::int32_t gpu_device(const EventFields& f) {
    if (f.device.number) return static_cast<std::int32_t>(*f.device.number);
    if (f.pid.number) return static_cast<std::int32_t>(*f.pid.number);
    return kNone;
  }

  /// Stream: args.stream, else the tid (a number, or "stream 7" in 2021-era traces).
  static std::int64_t gpu_stream(const EventFields& f) {
    if (f.stream.number) return *f.stream.number;
    if (f.tid.number) return *f.tid.number;
    if (f.tid.text.starts_with("stream ")) {
      std::string_view t = f.tid.text.substr(7);
      while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
      if (auto n = parse_int64(t)) return *n;
    }
    return kNone;
  }

  void add_gpu_op(const EventFields& f, StringId name, TimeNs dur) {
    const OpKind kind = f.cat == Category::kKernel   ? OpKind::kKernel
                        : f.cat == Category::kMemcpy ? OpKind::kMemcpy
                                                     : OpKind::kMemset;
    const std::uint32_t row = trace_.ops.push(kind, *f.ts, dur, name, gpu_device(f), gpu_stream(f),
                                              kNone, kNone, f.correlation, f.external_id);
    if (kind == OpKind::kKernel) maybe_add_collective(f, row);
  }

  /// "ncclKernel_AllReduce_RING_LL_Sum_float(...)" / "ncclDevKernel_SendRecv(...)" -> "allreduce"
  /// / "sendrecv"; "" when the name is not an NCCL/RCCL kernel.
  static std::string collective_from_kernel_name(std::string_view name) {
    for (std::string_view prefix : {"ncclKernel_", "ncclDevKernel_", "rcclKernel_"}) {
      if (name.starts_with(prefix)) {
        std::string_view rest = name.substr(prefix.size());
        rest = rest.substr(0, rest.find_first_of("_("));
        std::string out(rest);
        for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return out;
      }
    }
    return {};
  }

  void maybe_add_collective(const EventFields& f, std::uint32_t row) {
    std::string coll;
    if (f.has_collective) {
      coll.assign(f.coll_name);
      for (char& c : coll) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      coll = collective_from_kernel_name(f.name);
      if (coll.empty()) return;
    }
    CollectiveTable& c = trace_.collectives;
    c.op.push_back(row);
    c.name.push_back(trace_.strings.intern(coll));
    c.group.push_back(trace_.strings.intern(f.pg_name));
    c.group_ranks.push_back(trace_.strings.intern(f.pg_ranks));
    c.group_size.push_back(static_cast<std::int32_t>(f.group_size));
    c.in_nelems.push_back(f.in_nelems);
    c.out_nelems.push_back(f.out_nelems);
    c.dtype.push_back(trace_.strings.intern(f.dtype));
    c.sequence.push_back(f.seq);
    c.src_rank.push_back(static_cast<std::int32_t>(f.src_rank));
    c.dst_rank.push_back(static_cast<std::int32_t>(f.dst_rank));
  }

  static SyncKind sync_kind_of(std::string_view s) noexcept {
    if (s == "Stream Sync") return SyncKind::kStreamSync;
    if (s == "Event Sync") return SyncKind::kEventSync;
    if (s == "Context Sync") return SyncKind::kContextSync;
    if (s == "Stream Wait Event") return SyncKind::kStreamWaitEvent;
    return SyncKind::kUnknown;
  }

  /// Kineto writes -1 or 4294967295 (uint32 -1) for "no stream".
  static std::int64_t stream_or_none(std::int64_t s) noexcept {
    return (s == -1 || s == 4294967295LL) ? kNone : s;
  }

  void add_sync(const EventFields& f, StringId name, TimeNs dur) {
    const std::int64_t stream = f.stream.number ? stream_or_none(*f.stream.number) : kNone;
    const std::uint32_t row = trace_.ops.push(OpKind::kSync, *f.ts, dur, name, gpu_device(f),
                                              stream, kNone, kNone, f.correlation, f.external_id);
    SyncTable& s = trace_.syncs;
    s.op.push_back(row);
    s.kind.push_back(sync_kind_of(f.sync_kind.empty() ? f.name : f.sync_kind));
    s.stream.push_back(stream);
    s.event_stream.push_back(stream_or_none(f.wait_on_stream));
    s.event_record_correlation.push_back(f.wait_on_event_record_corr < 0 ? kNone
                                                                          : f.wait_on_event_record_corr);
    s.event_id.push_back(f.wait_on_event_id < 0 ? kNone : f.wait_on_event_id);
  }

  PaddedBuffer& buf_;
  const std::string& path_;
  KinetoOptions options_;
  JsonScanner scan_;
  od::parser parser_;
  Trace trace_;
  std::size_t event_index_ = 0;
};

}  // namespace

Trace read_kineto_json(PaddedBuffer& json, const std::string& path, const KinetoOptions& options) {
  return KinetoReader(json, path, options).run();
}

}  // namespace emo::trace
