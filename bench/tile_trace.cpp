// emo-tile-trace: makes a large Kineto trace out of a small one, for benchmarks.
//
//   emo-tile-trace IN OUT --copies N
//   emo-tile-trace IN OUT --target-mb M     (N chosen so that OUT has at least M * 10^6 bytes)
//
// OUT ("-" = stdout) is plain JSON whose traceEvents are N copies of IN's events. Copy k is
// shifted in time by k * (span + 1 ms) and every id that links events is shifted by
// k * (max_id + 1): args.correlation, args."External id" / args."external id",
// args.wait_on_cuda_event_record_corr_id (when >= 0) and the `id` of flow events (ph s/t/f).
// Only non-negative integer ids are shifted (negative values are "none" sentinels; string ids
// are copied as they are). Top-level members other than traceEvents are copied once, in order.
//
// Timestamps stay exact: the `ts` text is parsed with parse_us_to_ns into integer ns, shifted,
// and written back as decimal microseconds with 3 fraction digits (integer arithmetic only).
// Every other byte of the events array is copied verbatim from IN (whitespace and separators
// included), so each copy has the size and layout of IN's events, and the output is valid JSON
// whenever IN is (IN is validated with simdjson DOM first).
//
// IN is parsed with simdjson: DOM to validate, then On-Demand to locate the exact source text of
// the values to patch (DOM does not keep number text, and a double cannot hold a 19-digit ts).
// The events' source text plus the patch positions form a "template" from which the copies are
// streamed, so memory stays ~ the size of IN whatever N is.
//
// Errors: one line "emo-tile-trace: error: FILE: problem" on stderr, exit code 2.
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/file_io.h"
#include "core/timestamp.h"

namespace {

namespace od = simdjson::ondemand;
using emo::InputError;
using emo::TimeNs;

constexpr TimeNs kGapNs = 1'000'000;  // 1 ms between copies

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' ||
                        s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

/// The field of an object iteration step; throws simdjson_error on malformed JSON.
od::field take(simdjson::simdjson_result<od::field>&& result) {
  od::field field;
  if (auto err = std::move(result).get(field)) throw simdjson::simdjson_error(err);
  return field;
}

/// Exact source text of a value (strings with their quotes, nested values verbatim).
std::string_view value_text(od::value& v) {
  switch (v.type().value()) {
    case od::json_type::object: {
      od::object o = v.get_object();
      return trim(o.raw_json().value());
    }
    case od::json_type::array: {
      od::array a = v.get_array();
      return trim(a.raw_json().value());
    }
    default:
      return trim(v.raw_json_token());
  }
}

/// A field's key as written in the source (escapes kept, without quotes). `raw` points just past
/// the opening quote; the source is valid JSON, so the closing quote exists.
std::string_view raw_key(od::field& field) {
  const char* begin = field.key().raw();
  const char* p = begin;
  while (*p != '"') p += (*p == '\\') ? 2 : 1;
  return {begin, static_cast<std::size_t>(p - begin)};
}

/// A value of the events' text that changes from copy to copy.
struct Patch {
  enum Kind : std::uint8_t { kTime, kId };
  std::size_t pos;    ///< Offset of the original token in Template::text.
  std::uint32_t len;  ///< Length of the original token.
  Kind kind;
  std::int64_t base;  ///< ns for kTime, the id for kId.
};

/// The events of IN: their source text, verbatim from the first event's '{' to the last one's
/// '}' (separators and whitespace included), and the values to patch, in text order.
struct Template {
  std::string_view text;
  std::vector<Patch> patches;
  std::size_t events = 0;
  std::optional<TimeNs> min_ts, max_end;  ///< Over events other than metadata (ph "M").
  std::int64_t max_id = -1;
};

constexpr bool is_ws(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/// `p` is just past an object's last member (or just past its '{' when it has none): returns
/// the position just past its closing '}'. The source is valid JSON (validated with DOM).
const char* object_end(const char* p) {
  while (is_ws(*p)) ++p;
  if (*p != '}') throw simdjson::simdjson_error(simdjson::TAPE_ERROR);
  return p + 1;
}

class TemplateBuilder {
 public:
  TemplateBuilder(Template& t, const std::string& path) : t_(t), path_(path) {}

  void add_event(od::value element) {
    const char* start = element.raw_json_token().data();
    od::object obj;
    if (element.get_object().get(obj) != simdjson::SUCCESS) {
      throw InputError(path_, fmt::format("traceEvents[{}] is not an object", t_.events));
    }
    if (first_ == nullptr) first_ = start;
    const std::size_t first_patch = t_.patches.size();
    std::optional<std::size_t> id_patch;
    bool is_meta = false, is_flow = false;
    std::optional<TimeNs> ts, dur;

    const char* last = start + 1;  // end of the last member's value
    for (auto result : obj) {
      od::field field = take(std::move(result));
      const std::string_view key = raw_key(field);
      od::value v = field.value();
      if (key == "args" && v.type().value() == od::json_type::object) {
        const char* args_start = v.raw_json_token().data();
        od::object args = v.get_object();
        last = add_args(args, args_start);
        continue;
      }
      const std::string_view text = value_text(v);
      last = text.data() + text.size();
      if (key == "ts") {
        ts = emo::parse_us_to_ns(text);
        if (!ts) throw InputError(path_, fmt::format("traceEvents[{}]: 'ts' is not a number", t_.events));
        add_patch(Patch::kTime, text, *ts);
      } else if (key == "dur") {
        dur = emo::parse_us_to_ns(text);
      } else if (key == "ph") {
        is_meta = text == "\"M\"";
        is_flow = text == "\"s\"" || text == "\"t\"" || text == "\"f\"";
      } else if (key == "id") {
        if (auto id = nonnegative_int(v, text)) {
          id_patch = t_.patches.size();
          add_patch(Patch::kId, text, *id);
        }
      }
    }
    end_ = object_end(last);

    if (id_patch && !is_flow) {
      // Not a flow event: its `id` is not a link; the original text stays.
      t_.patches.erase(t_.patches.begin() + static_cast<std::ptrdiff_t>(*id_patch));
    }
    for (std::size_t i = first_patch; i < t_.patches.size(); ++i) {
      if (t_.patches[i].kind == Patch::kId) t_.max_id = std::max(t_.max_id, t_.patches[i].base);
    }
    if (ts && !is_meta) {
      const TimeNs end = *ts + std::max<TimeNs>(dur.value_or(0), 0);
      t_.min_ts = t_.min_ts ? std::min(*t_.min_ts, *ts) : *ts;
      t_.max_end = t_.max_end ? std::max(*t_.max_end, end) : end;
    }
    ++t_.events;
  }

  /// Turns the patches' source positions into offsets in Template::text.
  void finish() {
    if (first_ == nullptr) return;
    t_.text = std::string_view(first_, static_cast<std::size_t>(end_ - first_));
    for (Patch& p : t_.patches) p.pos -= reinterpret_cast<std::uintptr_t>(first_);
  }

 private:
  /// Returns the end of the args object (just past its '}').
  const char* add_args(od::object& args, const char* args_start) {
    const char* last = args_start + 1;
    for (auto result : args) {
      od::field field = take(std::move(result));
      const std::string_view key = raw_key(field);
      od::value v = field.value();
      const std::string_view text = value_text(v);
      last = text.data() + text.size();
      if (key == "correlation" || key == "External id" || key == "external id" ||
          key == "wait_on_cuda_event_record_corr_id") {
        if (auto id = nonnegative_int(v, text)) add_patch(Patch::kId, text, *id);
      }
    }
    return object_end(last);
  }

  /// The value as an id: a non-negative integer written without fraction or exponent.
  static std::optional<std::int64_t> nonnegative_int(od::value& v, std::string_view text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
    std::int64_t n = 0;
    if (v.get_int64().get(n) != simdjson::SUCCESS) return std::nullopt;
    return n;
  }

  /// Records a patch at the token's source address (made relative in finish()).
  void add_patch(Patch::Kind kind, std::string_view original, std::int64_t base) {
    t_.patches.push_back({reinterpret_cast<std::uintptr_t>(original.data()),
                          static_cast<std::uint32_t>(original.size()), kind, base});
  }

  Template& t_;
  const std::string& path_;
  const char* first_ = nullptr;
  const char* end_ = nullptr;
};

/// Buffered output to a FILE*, with the error naming the file.
class Output {
 public:
  explicit Output(const std::string& path) : path_(path) {
    if (path == "-") {
      f_ = stdout;
    } else {
      f_ = std::fopen(path.c_str(), "wb");
      if (f_ == nullptr) throw InputError(path, fmt::format("cannot open for writing: {}", std::strerror(errno)));
    }
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  }
  ~Output() {
    if (f_ != nullptr && f_ != stdout) std::fclose(f_);
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  void write(std::string_view s) {
    if (!s.empty() && std::fwrite(s.data(), 1, s.size(), f_) != s.size()) fail();
    bytes_ += s.size();
  }
  void close() {
    const bool ok = std::fflush(f_) == 0 && (f_ == stdout || std::fclose(f_) == 0);
    if (f_ != stdout) f_ = nullptr;
    if (!ok) fail();
  }
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  [[noreturn]] void fail() { throw InputError(path_, fmt::format("write failed: {}", std::strerror(errno))); }
  std::string path_;
  std::FILE* f_ = nullptr;
  std::uint64_t bytes_ = 0;
};

/// Decimal microseconds with exactly 3 fraction digits, from integer ns: -1500 -> "-1.500".
std::string_view format_us(TimeNs ns, char (&buf)[32]) {
  char* p = buf;
  std::uint64_t mag = static_cast<std::uint64_t>(ns);
  if (ns < 0) {
    *p++ = '-';
    mag = ~mag + 1;  // |ns|, also for INT64_MIN
  }
  p = std::to_chars(p, buf + sizeof buf, mag / 1000).ptr;
  const unsigned frac = static_cast<unsigned>(mag % 1000);
  *p++ = '.';
  *p++ = static_cast<char>('0' + frac / 100);
  *p++ = static_cast<char>('0' + frac / 10 % 10);
  *p++ = static_cast<char>('0' + frac % 10);
  return {buf, static_cast<std::size_t>(p - buf)};
}

/// Writes copy k of the events.
void write_copy(Output& out, const Template& t, std::int64_t time_shift, std::int64_t id_shift) {
  std::size_t prev = 0;
  char buf[32];
  const std::string_view text = t.text;
  for (const Patch& p : t.patches) {
    out.write(text.substr(prev, p.pos - prev));
    if (p.kind == Patch::kTime) {
      out.write(format_us(p.base + time_shift, buf));
    } else {
      const auto r = std::to_chars(buf, buf + sizeof buf, p.base + id_shift);
      out.write({buf, static_cast<std::size_t>(r.ptr - buf)});
    }
    prev = p.pos + p.len;
  }
  out.write(text.substr(prev));
}

struct Args {
  std::string in, out;
  std::optional<std::int64_t> copies;
  std::optional<double> target_mb;
};

[[noreturn]] void usage_error(const std::string& problem) {
  std::fprintf(stderr,
               "emo-tile-trace: error: %s\n"
               "usage: emo-tile-trace IN OUT (--copies N | --target-mb M)\n",
               problem.c_str());
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::printf(
          "usage: emo-tile-trace IN OUT (--copies N | --target-mb M)\n"
          "Writes OUT ('-' = stdout), a plain-JSON Kineto trace whose events are N time-shifted\n"
          "copies of IN's (plain or gzip) with correlation/external/flow ids made unique per copy.\n"
          "--target-mb M picks N so that OUT has at least M * 10^6 bytes.\n");
      std::exit(0);
    } else if (arg == "--copies") {
      const std::string v = next();
      auto n = emo::parse_int64(v);
      if (!n || *n < 1) usage_error("--copies wants an integer >= 1, got '" + v + "'");
      a.copies = *n;
    } else if (arg == "--target-mb") {
      const std::string v = next();
      char* end = nullptr;
      const double mb = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(mb > 0) || mb > 1e9) {
        usage_error("--target-mb wants a positive number, got '" + v + "'");
      }
      a.target_mb = mb;
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      usage_error("unknown option " + arg);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) usage_error("expected IN and OUT");
  if (a.copies.has_value() == a.target_mb.has_value()) usage_error("give one of --copies N or --target-mb M");
  a.in = positional[0];
  a.out = positional[1];
  return a;
}

/// Validates IN with simdjson DOM: valid JSON, and either an object with an array `traceEvents`
/// or an array (JSON Array Format).
void validate(const emo::PaddedBuffer& buf, const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(buf.data(), buf.size(), false).get(root)) {
    throw InputError(path, fmt::format("invalid JSON: {}", simdjson::error_message(err)));
  }
  if (root.is_array()) return;
  if (!root.is_object()) throw InputError(path, "not a trace: JSON must be an object or an array");
  simdjson::dom::element events;
  if (root["traceEvents"].get(events) != simdjson::SUCCESS) {
    throw InputError(path, "no 'traceEvents' array: not a Kineto/Chrome trace");
  }
  if (!events.is_array()) throw InputError(path, "'traceEvents' is not an array");
}

int run(const Args& a) {
  emo::PaddedBuffer buf = emo::read_maybe_gzip(a.in);
  validate(buf, a.in);

  od::parser parser;
  od::document doc = parser.iterate(
      simdjson::padded_string_view(buf.data(), buf.size(), buf.size() + emo::PaddedBuffer::kPadding));

  Template t;
  TemplateBuilder builder(t, a.in);
  auto build = [&](od::array events) {
    for (auto element : events) builder.add_event(element.value());
    builder.finish();
  };

  // Top-level members in order; traceEvents marks where the copies go.
  std::vector<std::string_view> before, after;
  bool saw_events = false;
  if (doc.type().value() == od::json_type::array) {
    build(doc.get_array());
    saw_events = true;
  } else {
    od::object root = doc.get_object();
    for (auto result : root) {
      od::field field = take(std::move(result));
      const std::string_view key = raw_key(field);
      od::value v = field.value();
      if (key == "traceEvents") {
        if (saw_events) throw InputError(a.in, "more than one 'traceEvents' member");
        build(v.get_array());
        saw_events = true;
        continue;
      }
      // "key":value, as one view of the source (key through value).
      const std::string_view text = value_text(v);
      const char* begin = key.data() - 1;
      (saw_events ? after : before).emplace_back(begin, static_cast<std::size_t>(text.data() + text.size() - begin));
    }
  }

  const TimeNs span = t.min_ts ? *t.max_end - *t.min_ts : 0;
  const TimeNs time_step = span + kGapNs;
  const std::int64_t id_step = t.max_id + 1;

  std::int64_t copies;
  if (a.copies) {
    copies = *a.copies;
  } else {
    // Shifts only lengthen non-negative ts and ids, so copy 0's size is a lower bound for each
    // copy; one spare copy covers negative timestamps getting shorter.
    std::int64_t per_copy = static_cast<std::int64_t>(t.text.size()) + 3;  // + ",\n  "
    char buf[32];
    for (const Patch& p : t.patches) {
      const std::size_t written =
          p.kind == Patch::kTime
              ? format_us(p.base, buf).size()
              : static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, p.base).ptr - buf);
      per_copy += static_cast<std::int64_t>(written) - static_cast<std::int64_t>(p.len);
    }
    copies = static_cast<std::int64_t>(*a.target_mb * 1e6 / static_cast<double>(std::max<std::int64_t>(per_copy, 1))) + 1;
    if (t.min_ts && *t.min_ts < 0) ++copies;
    if (t.events == 0) copies = 1;  // nothing to tile
  }
  // The largest shifted values must fit in int64.
  {
    std::int64_t ts_shift = 0, id_shift = 0, probe = 0;
    const TimeNs max_ts = t.max_end.value_or(0);
    if (__builtin_mul_overflow(copies - 1, time_step, &ts_shift) ||
        __builtin_add_overflow(max_ts, ts_shift, &probe) ||
        __builtin_mul_overflow(copies - 1, id_step, &id_shift) ||
        __builtin_add_overflow(t.max_id, id_shift, &probe)) {
      throw InputError(a.in, fmt::format("{} copies would overflow 64-bit timestamps or ids", copies));
    }
  }

  Output out(a.out);
  try {
    out.write("{");
    for (std::string_view m : before) {
      out.write(m);
      out.write(",");
    }
    out.write("\"traceEvents\": [\n  ");
    for (std::int64_t k = 0; k < copies; ++k) {
      if (k != 0 && t.events != 0) out.write(",\n  ");
      write_copy(out, t, k * time_step, k * id_step);
    }
    out.write("\n]");
    for (std::string_view m : after) {
      out.write(",");
      out.write(m);
    }
    out.write("}\n");
    out.close();
  } catch (...) {
    if (a.out != "-") std::remove(a.out.c_str());
    throw;
  }
  std::fprintf(stderr,
               "emo-tile-trace: %lld copies of %zu events (span %lld ns, time step %lld ns, id "
               "step %lld) -> %s, %llu bytes\n",
               static_cast<long long>(copies), t.events, static_cast<long long>(span),
               static_cast<long long>(time_step), static_cast<long long>(id_step), a.out.c_str(),
               static_cast<unsigned long long>(out.bytes()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  try {
    return run(args);
  } catch (const InputError& e) {
    std::fprintf(stderr, "emo-tile-trace: error: %s\n", emo::one_line(e.what()).c_str());
    return 2;
  } catch (const simdjson::simdjson_error& e) {
    std::fprintf(stderr, "emo-tile-trace: error: %s: invalid JSON: %s\n", args.in.c_str(),
                 simdjson::error_message(e.error()));
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "emo-tile-trace: error: out of memory\n");
    return 3;
  }
}
