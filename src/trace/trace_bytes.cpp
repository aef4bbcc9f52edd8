#include "trace/trace_bytes.h"

#include <bit>
#include <cstring>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace emo::trace {
namespace {

constexpr std::string_view kMagic = "EMOTRACE";
constexpr std::size_t kHeaderBytes = 8 + 4 + 8 + 8;

std::uint64_t fnv1a64(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

/// The unsigned integer of the same width as T (enums and signed integers are stored as it).
template <class T, bool = std::is_enum_v<T>>
struct RawOf {
  using type = std::make_unsigned_t<T>;
};
template <class T>
struct RawOf<T, true> {
  using type = std::make_unsigned_t<std::underlying_type_t<T>>;
};
template <class T>
using Raw = typename RawOf<T>::type;

class Writer {
 public:
  template <class T>
  void put(T v) {
    auto u = static_cast<Raw<T>>(v);
    for (std::size_t b = 0; b < sizeof(T); ++b) out_.push_back(static_cast<char>((u >> (8 * b)) & 0xff));
  }
  void put(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    out_.append(s);
  }
  template <class T>
  void put(const std::vector<T>& v) {
    put(static_cast<std::uint64_t>(v.size()));
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      if constexpr (std::endian::native == std::endian::little) {
        out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
        return;
      }
    }
    for (const auto& x : v) put(x);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(std::string_view in, const std::string& origin) : in_(in), origin_(origin) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(origin_, fmt::format("not a valid EMO binary trace: {}", problem));
  }
  void need(std::uint64_t n, const char* what) const {
    if (n > in_.size() - pos_) fail(fmt::format("truncated ({} ends at byte {} of {})", what, pos_, in_.size()));
  }
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    Raw<T> u = 0;
    for (std::size_t b = 0; b < sizeof(T); ++b) {
      u |= static_cast<Raw<T>>(static_cast<Raw<T>>(static_cast<unsigned char>(in_[pos_ + b])) << (8 * b));
    }
    pos_ += sizeof(T);
    return static_cast<T>(u);
  }
  std::string str(const char* what) {
    const auto n = get<std::uint64_t>(what);
    need(n, what);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  /// A vector of `expect` elements (or any length when expect is npos).
  template <class T>
  std::vector<T> vec(const char* what, std::size_t expect = std::string::npos) {
    const auto n = get<std::uint64_t>(what);
    if (expect != std::string::npos && n != expect) fail(fmt::format("{} has {} rows, expected {}", what, n, expect));
    if (n > (in_.size() - pos_) / sizeof(T)) fail(fmt::format("truncated ({}: {} rows do not fit)", what, n));
    std::vector<T> v(n);
    if constexpr (std::endian::native == std::endian::little) {
      if (n != 0) std::memcpy(v.data(), in_.data() + pos_, n * sizeof(T));
      pos_ += n * sizeof(T);
    } else {
      for (auto& x : v) x = get<T>(what);
    }
    return v;
  }
  std::uint64_t count(const char* what, std::size_t min_bytes_each) {
    const auto n = get<std::uint64_t>(what);
    if (n > (in_.size() - pos_) / min_bytes_each) fail(fmt::format("truncated ({}: {} entries do not fit)", what, n));
    return n;
  }
  bool at_end() const { return pos_ == in_.size(); }
  std::size_t pos() const { return pos_; }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
  const std::string& origin_;
};

// ---- writing -----------------------------------------------------------------------------------

void put_meta(Writer& w, const TraceMeta& m) {
  w.put(m.format);
  w.put(m.path);
  w.put(m.rank);
  w.put(m.world_size);
  w.put(m.backend);
  w.put(m.base_time_ns);
  w.put(static_cast<std::uint64_t>(m.gpus.size()));
  for (const GpuInfo& g : m.gpus) {
    w.put(g.device);
    w.put(g.name);
    w.put(g.total_memory_bytes);
    w.put(g.compute_major);
    w.put(g.compute_minor);
    w.put(g.sm_count);
    w.put(g.clock_rate_khz);
  }
  w.put(m.schema);
  const JobInfo& j = m.job;
  w.put(j.world_size);
  w.put(static_cast<std::uint64_t>(j.ranks.size()));
  for (const JobRank& r : j.ranks) {
    w.put(r.rank);
    w.put(r.path);
    w.put(r.device);
    w.put(r.offset_ns);
    w.put(r.collectives);
    w.put(r.matched);
    w.put(r.wait_ns);
  }
  w.put(j.collectives_linked);
  w.put(j.match_method);
  w.put(j.residual_max_ns);
  w.put(j.residual_median_ns);
  w.put(static_cast<std::uint64_t>(j.warnings.size()));
  for (const auto& s : j.warnings) w.put(s);
}

void put_tables(Writer& w, const Trace& t) {
  w.put(static_cast<std::uint64_t>(t.strings.size()));
  for (StringId i = 0; i < t.strings.size(); ++i) w.put(std::string(t.strings.view(i)));
  const OpTable& o = t.ops;
  for (const auto* c : {&o.start_ns, &o.dur_ns, &o.stream, &o.process, &o.thread, &o.correlation, &o.external_id}) {
    w.put(*c);
  }
  w.put(o.kind);
  w.put(o.name);
  w.put(o.device);
  const SyncTable& s = t.syncs;
  w.put(s.op);
  w.put(s.kind);
  for (const auto* c : {&s.stream, &s.event_stream, &s.event_record_correlation, &s.event_id}) w.put(*c);
  const CollectiveTable& c = t.collectives;
  w.put(c.op);
  for (const auto* v : {&c.name, &c.group, &c.group_ranks, &c.dtype}) w.put(*v);
  for (const auto* v : {&c.group_size, &c.src_rank, &c.dst_rank}) w.put(*v);
  for (const auto* v : {&c.in_nelems, &c.out_nelems, &c.sequence, &c.match}) w.put(*v);
}

void put_quirks(Writer& w, const Trace& t) {
  const QuirkCounts& q = t.quirks;
  for (const std::int64_t v : {q.out_of_order, q.zero_duration, q.negative_duration, q.clamped_children,
                               q.max_clamp_ns, q.unknown_category, q.string_ids, q.duplicate_gpu_correlation,
                               q.gpu_ops_without_launch, q.ignored_events, q.sync_api_calls}) {
    w.put(v);
  }
  w.put(static_cast<std::uint64_t>(t.warnings.size()));
  for (const auto& s : t.warnings) w.put(s);
}

// ---- reading -----------------------------------------------------------------------------------

void get_meta(Reader& r, TraceMeta& m) {
  m.format = r.get<TraceFormat>("meta.format");
  if (static_cast<int>(m.format) > static_cast<int>(TraceFormat::kEmoTrace)) r.fail("unknown trace format");
  m.path = r.str("meta.path");
  m.rank = r.get<std::int32_t>("meta.rank");
  m.world_size = r.get<std::int32_t>("meta.world_size");
  m.backend = r.str("meta.backend");
  m.base_time_ns = r.get<TimeNs>("meta.base_time_ns");
  m.gpus.resize(r.count("meta.gpus", 44));
  for (GpuInfo& g : m.gpus) {
    g.device = r.get<std::int32_t>("gpu.device");
    g.name = r.str("gpu.name");
    g.total_memory_bytes = r.get<std::int64_t>("gpu.total_memory_bytes");
    g.compute_major = r.get<std::int32_t>("gpu.compute_major");
    g.compute_minor = r.get<std::int32_t>("gpu.compute_minor");
    g.sm_count = r.get<std::int32_t>("gpu.sm_count");
    g.clock_rate_khz = r.get<std::int64_t>("gpu.clock_rate_khz");
  }
  m.schema = r.str("meta.schema");
  JobInfo& j = m.job;
  j.world_size = r.get<std::int32_t>("job.world_size");
  j.ranks.resize(r.count("job.ranks", 48));
  for (JobRank& k : j.ranks) {
    k.rank = r.get<std::int32_t>("job.rank");
    k.path = r.str("job.path");
    k.device = r.get<std::int32_t>("job.device");
    k.offset_ns = r.get<TimeNs>("job.offset_ns");
    k.collectives = r.get<std::int64_t>("job.collectives");
    k.matched = r.get<std::int64_t>("job.matched");
    k.wait_ns = r.get<TimeNs>("job.wait_ns");
  }
  j.collectives_linked = r.get<std::int64_t>("job.collectives_linked");
  j.match_method = r.str("job.match_method");
  j.residual_max_ns = r.get<TimeNs>("job.residual_max_ns");
  j.residual_median_ns = r.get<TimeNs>("job.residual_median_ns");
  j.warnings.resize(r.count("job.warnings", 8));
  for (auto& s : j.warnings) s = r.str("job.warning");
}

void get_strings(Reader& r, Trace& t) {
  const std::uint64_t n = r.count("strings", 8);
  if (n == 0 || !r.str("string 0").empty()) r.fail("string 0 is not the empty string");
  for (std::uint64_t i = 1; i < n; ++i) {
    if (t.strings.intern(r.str("string")) != i) r.fail(fmt::format("string {} is a duplicate", i));
  }
}

void get_ops(Reader& r, OpTable& o) {
  o.start_ns = r.vec<TimeNs>("ops.start_ns");
  const std::size_t n = o.start_ns.size();
  for (auto* c : {&o.dur_ns, &o.stream, &o.process, &o.thread, &o.correlation, &o.external_id}) {
    *c = r.vec<std::int64_t>("op column", n);
  }
  o.kind = r.vec<OpKind>("ops.kind", n);
  o.name = r.vec<StringId>("ops.name", n);
  o.device = r.vec<std::int32_t>("ops.device", n);
}

void get_side_tables(Reader& r, Trace& t) {
  SyncTable& s = t.syncs;
  s.op = r.vec<std::uint32_t>("syncs.op");
  s.kind = r.vec<SyncKind>("syncs.kind", s.op.size());
  for (auto* c : {&s.stream, &s.event_stream, &s.event_record_correlation, &s.event_id}) {
    *c = r.vec<std::int64_t>("sync column", s.op.size());
  }
  CollectiveTable& c = t.collectives;
  c.op = r.vec<std::uint32_t>("collectives.op");
  const std::size_t n = c.op.size();
  for (auto* v : {&c.name, &c.group, &c.group_ranks, &c.dtype}) *v = r.vec<StringId>("collective column", n);
  c.group_size = r.vec<std::int32_t>("collectives.group_size", n);
  c.src_rank = r.vec<std::int32_t>("collectives.src_rank", n);
  c.dst_rank = r.vec<std::int32_t>("collectives.dst_rank", n);
  for (auto* v : {&c.in_nelems, &c.out_nelems, &c.sequence}) *v = r.vec<std::int64_t>("collective column", n);
  c.match = r.vec<std::int64_t>("collectives.match");
  if (!c.match.empty() && c.match.size() != n) r.fail("collectives.match has the wrong number of rows");
}

void get_quirks(Reader& r, Trace& t) {
  QuirkCounts& q = t.quirks;
  for (std::int64_t* v : {&q.out_of_order, &q.zero_duration, &q.negative_duration, &q.clamped_children,
                          &q.max_clamp_ns, &q.unknown_category, &q.string_ids, &q.duplicate_gpu_correlation,
                          &q.gpu_ops_without_launch, &q.ignored_events, &q.sync_api_calls}) {
    *v = r.get<std::int64_t>("quirks");
  }
  t.warnings.resize(r.count("warnings", 8));
  for (auto& s : t.warnings) s = r.str("warning");
}

/// Rejects values that later stages would index with: enums, string ids and rows out of range.
void check_ranges(const Reader& r, const Trace& t) {
  const std::size_t strings = t.strings.size();
  for (const OpKind k : t.ops.kind)
    if (static_cast<int>(k) >= kOpKindCount) r.fail("an op kind is out of range");
  for (const StringId s : t.ops.name)
    if (s >= strings) r.fail("an op name is out of the string table");
  for (const SyncKind k : t.syncs.kind)
    if (static_cast<int>(k) > static_cast<int>(SyncKind::kUnknown)) r.fail("a sync kind is out of range");
  for (const auto* ops : {&t.syncs.op, &t.collectives.op})
    for (const std::uint32_t row : *ops)
      if (row >= t.ops.size()) r.fail("a side-table row points past the op table");
  const CollectiveTable& c = t.collectives;
  for (const auto* v : {&c.name, &c.group, &c.group_ranks, &c.dtype})
    for (const StringId s : *v)
      if (s >= strings) r.fail("a collective string is out of the string table");
}

}  // namespace

std::string to_bytes(const Trace& t) {
  Writer body;
  body.bytes().reserve(t.ops.size() * 64 + 4096);
  put_meta(body, t.meta);
  put_tables(body, t);
  put_quirks(body, t);
  Writer head;
  head.bytes().append(kMagic);
  head.put(kTraceBytesVersion);
  head.put(static_cast<std::uint64_t>(body.bytes().size()));
  head.put(fnv1a64(body.bytes()));
  return head.bytes() + body.bytes();
}

Trace from_bytes(std::string_view bytes, const std::string& origin) {
  Reader head(bytes, origin);
  if (bytes.size() < kHeaderBytes || bytes.substr(0, kMagic.size()) != kMagic) {
    head.fail(bytes.size() < kHeaderBytes ? "shorter than its header" : "wrong magic (not written by to_bytes)");
  }
  Reader h(bytes.substr(kMagic.size()), origin);
  const auto version = h.get<std::uint32_t>("version");
  if (version != kTraceBytesVersion) h.fail(fmt::format("version {}, this emo reads version {}", version, kTraceBytesVersion));
  const auto size = h.get<std::uint64_t>("payload size");
  const auto sum = h.get<std::uint64_t>("checksum");
  const std::string_view payload = bytes.substr(kHeaderBytes);
  if (payload.size() != size) h.fail(fmt::format("payload of {} bytes, the header says {}", payload.size(), size));
  if (fnv1a64(payload) != sum) h.fail("checksum mismatch (corrupt bytes)");
  Reader r(payload, origin);
  Trace t;
  get_meta(r, t.meta);
  get_strings(r, t);
  get_ops(r, t.ops);
  get_side_tables(r, t);
  get_quirks(r, t);
  if (!r.at_end()) r.fail(fmt::format("{} trailing bytes", payload.size() - r.pos()));
  check_ranges(r, t);
  return t;
}

}  // namespace emo::trace
