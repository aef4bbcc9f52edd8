#include "trace/emo/emo_trace_reader.h"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "core/error.h"

namespace emo::trace {
namespace {

namespace dom = simdjson::dom;

constexpr std::string_view kFormat = "emo.trace/1";

/// A problem with one line; becomes InputError("FILE", "line N: ...").
struct LineError {
  std::string problem;
};

std::int64_t int_field(const dom::object& o, std::string_view key) {
  std::int64_t v = 0;
  const auto err = o[key].get_int64().get(v);
  if (err == simdjson::NO_SUCH_FIELD) throw LineError{fmt::format("missing '{}'", key)};
  if (err) throw LineError{fmt::format("'{}' is not an integer", key)};
  return v;
}

std::int64_t int_field_or(const dom::object& o, std::string_view key, std::int64_t fallback) {
  std::int64_t v = 0;
  const auto err = o[key].get_int64().get(v);
  if (err == simdjson::NO_SUCH_FIELD) return fallback;
  if (err) throw LineError{fmt::format("'{}' is not an integer", key)};
  return v;
}

std::string_view string_field(const dom::object& o, std::string_view key) {
  std::string_view v;
  const auto err = o[key].get_string().get(v);
  if (err == simdjson::NO_SUCH_FIELD) throw LineError{fmt::format("missing '{}'", key)};
  if (err) throw LineError{fmt::format("'{}' is not a string", key)};
  return v;
}

SyncKind sync_kind_of(std::string_view s) {
  if (s == "stream_sync") return SyncKind::kStreamSync;
  if (s == "event_sync") return SyncKind::kEventSync;
  if (s == "context_sync") return SyncKind::kContextSync;
  if (s == "stream_wait_event") return SyncKind::kStreamWaitEvent;
  return SyncKind::kUnknown;
}

/// Kineto's names for sync records, so that both readers name them alike.
std::string_view sync_op_name(SyncKind k) {
  switch (k) {
    case SyncKind::kStreamSync: return "Stream Sync";
    case SyncKind::kEventSync: return "Event Sync";
    case SyncKind::kContextSync: return "Context Sync";
    case SyncKind::kStreamWaitEvent: return "Stream Wait Event";
    default: return "Unknown Sync";
  }
}

struct EventRecordRow {
  std::int64_t correlation, stream;
};

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  Trace read(const PaddedBuffer& text) {
    trace_.meta.format = TraceFormat::kEmoTrace;
    trace_.meta.path = path_;
    trace_.meta.schema = std::string(kFormat);
    dom::parser parser;
    dom::document_stream docs;
    constexpr std::size_t kBatch = 4u << 20;
    if (auto err = parser.parse_many(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), kBatch)
                       .get(docs)) {
      throw InputError(path_, fmt::format("invalid JSON: {}", simdjson::error_message(err)));
    }
    std::int64_t line = 0;
    for (auto it = docs.begin(); it != docs.end(); ++it) {
      ++line;
      dom::element doc;
      if (auto err = (*it).get(doc)) {
        throw InputError(path_, fmt::format("line {}: invalid JSON: {}", line, simdjson::error_message(err)));
      }
      dom::object obj;
      if (doc.get_object().get(obj)) throw InputError(path_, fmt::format("line {}: not a JSON object", line));
      try {
        if (line == 1) {
          header(obj);
        } else {
          record(obj);
        }
      } catch (const LineError& e) {
        throw InputError(path_, fmt::format("line {}: {}", line, e.problem));
      }
    }
    if (docs.truncated_bytes() > 0) {
      throw InputError(path_, fmt::format("truncated: the last {} bytes are not a whole JSON line",
                                          docs.truncated_bytes()));
    }
    if (line == 0) throw InputError(path_, "empty trace");
    resolve_event_waits();
    if (!saw_trailer_) {
      trace_.warnings.push_back("no end record: the traced program did not exit normally; the trace may miss "
                                "the last activity buffers");
    }
    if (dropped_ > 0) {
      trace_.warnings.push_back(fmt::format("the tracer dropped {} activity records (buffers full)", dropped_));
    }
    std::vector<std::string> extra = std::move(trace_.warnings);
    trace_.warnings.clear();
    trace_.finish();
    // CUPTI hands records over buffer by buffer, not in time order: expected, not a quirk.
    if (trace_.quirks.out_of_order > 0) {
      trace_.quirks.out_of_order = 0;
      std::erase_if(trace_.warnings, [](const std::string& w) { return w.starts_with("events not sorted by time"); });
    }
    trace_.warnings.insert(trace_.warnings.end(), extra.begin(), extra.end());
    return std::move(trace_);
  }

 private:
  void header(const dom::object& o) {
    std::string_view format;
    if (o["format"].get_string().get(format) || format != kFormat) {
      throw LineError{fmt::format("not an {} header", kFormat)};
    }
    pid_ = int_field_or(o, "pid", kNone);
    dom::array gpus;
    const auto err = o["gpus"].get_array().get(gpus);
    if (err == simdjson::NO_SUCH_FIELD) return;
    if (err) throw LineError{"'gpus' is not an array"};
    for (dom::element g : gpus) {
      dom::object go;
      if (g.get_object().get(go)) throw LineError{"'gpus' holds a non-object"};
      gpu(go);
    }
  }

  /// One GPU, from the header or a "gpu" record; a later record of the same device replaces it.
  void gpu(const dom::object& go) {
    GpuInfo info;
    info.device = static_cast<std::int32_t>(int_field(go, "device"));
    info.name = std::string(string_field(go, "name"));
    info.total_memory_bytes = int_field_or(go, "total_memory_bytes", 0);
    info.compute_major = static_cast<std::int32_t>(int_field_or(go, "compute_major", 0));
    info.compute_minor = static_cast<std::int32_t>(int_field_or(go, "compute_minor", 0));
    info.sm_count = static_cast<std::int32_t>(int_field_or(go, "sm_count", 0));
    info.clock_rate_khz = int_field_or(go, "clock_rate_khz", 0);
    auto& gpus = trace_.meta.gpus;
    const auto it = std::find_if(gpus.begin(), gpus.end(), [&](const GpuInfo& g) { return g.device == info.device; });
    if (it != gpus.end()) {
      *it = std::move(info);
    } else {
      gpus.insert(std::upper_bound(gpus.begin(), gpus.end(), info.device,
                                   [](std::int32_t d, const GpuInfo& g) { return d < g.device; }),
                  std::move(info));
    }
  }

  void record(const dom::object& o) {
    const std::string_view kind = string_field(o, "kind");
    if (kind == "kernel" || kind == "memcpy" || kind == "memset") {
      const OpKind k = kind == "kernel" ? OpKind::kKernel : kind == "memcpy" ? OpKind::kMemcpy : OpKind::kMemset;
      const TimeNs start = time(o, "start_ns");  // fields read in order: the first bad one is reported
      const TimeNs dur = duration(o);
      const StringId name = trace_.strings.intern(string_field(o, "name"));
      const auto device = static_cast<std::int32_t>(int_field(o, "device"));
      const std::int64_t stream = int_field(o, "stream");
      trace_.ops.push(k, start, dur, name, device, stream, pid_, kNone, int_field_or(o, "correlation", kNone), kNone);
    } else if (kind == "runtime" || kind == "driver" || kind == "annotation") {
      const OpKind k = kind == "runtime" ? OpKind::kRuntime : kind == "driver" ? OpKind::kDriver : OpKind::kAnnotation;
      const TimeNs start = time(o, "start_ns");
      const TimeNs dur = duration(o);
      const StringId name = trace_.strings.intern(string_field(o, "name"));
      const std::int64_t pid = int_field(o, "pid");
      const std::int64_t tid = int_field(o, "tid");
      trace_.ops.push(k, start, dur, name, kNone, kNone, pid, tid, int_field_or(o, "correlation", kNone), kNone);
    } else if (kind == "sync") {
      const SyncKind sk = sync_kind_of(string_field(o, "sync"));
      const TimeNs start = time(o, "start_ns");
      const TimeNs dur = duration(o);
      const std::int64_t corr = int_field(o, "correlation");
      const std::int64_t stream = int_field_or(o, "stream", kNone);
      const std::uint32_t row = trace_.ops.push(OpKind::kSync, start, dur, trace_.strings.intern(sync_op_name(sk)),
                                                kNone, stream < 0 ? kNone : stream, kNone, kNone, corr, kNone);
      SyncTable& s = trace_.syncs;
      s.op.push_back(row);
      s.kind.push_back(sk);
      s.stream.push_back(stream < 0 ? kNone : stream);
      s.event_stream.push_back(kNone);
      s.event_record_correlation.push_back(kNone);
      const std::int64_t event_id = int_field_or(o, "event_id", kNone);
      s.event_id.push_back(event_id < 0 ? kNone : event_id);
      sync_event_sync_id_.push_back(int_field_or(o, "event_sync_id", kNone));
    } else if (kind == "cuda_event") {
      const EventRecordRow row{int_field(o, "correlation"), int_field(o, "stream")};
      const std::int64_t sync_id = int_field_or(o, "event_sync_id", kNone);
      if (sync_id >= 0) by_sync_id_[sync_id] = row;
      by_event_id_[int_field(o, "event_id")].push_back(row);
    } else if (kind == "gpu") {
      gpu(o);
    } else if (kind == "end") {
      saw_trailer_ = true;
      dropped_ += int_field_or(o, "dropped", 0);
    } else {
      ++trace_.quirks.unknown_category;
    }
  }

  TimeNs time(const dom::object& o, std::string_view key) {
    const std::int64_t t = int_field(o, key);
    if (t < 0 || t > kMaxAbsTimeNs) throw LineError{fmt::format("'{}' is out of range", key)};
    return t;
  }

  TimeNs duration(const dom::object& o) {
    std::int64_t d = int_field(o, "dur_ns");
    if (d < 0 || d > kMaxAbsTimeNs) throw LineError{"'dur_ns' is out of range"};
    if (d == 0) ++trace_.quirks.zero_duration;
    return d;
  }

  /// Event waits and event syncs get their cudaEventRecord's stream and correlation.
  void resolve_event_waits() {
    SyncTable& s = trace_.syncs;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const EventRecordRow* rec = nullptr;
      if (sync_event_sync_id_[i] >= 0) {
        const auto it = by_sync_id_.find(sync_event_sync_id_[i]);
        if (it != by_sync_id_.end()) rec = &it->second;
      }
      if (rec == nullptr && s.event_id[i] != kNone) {
        const auto it = by_event_id_.find(s.event_id[i]);
        const std::int64_t corr = trace_.ops.correlation[s.op[i]];
        if (it != by_event_id_.end()) {
          for (const auto& r : it->second) {  // latest record before the wait
            if (r.correlation < corr && (rec == nullptr || r.correlation > rec->correlation)) rec = &r;
          }
        }
      }
      if (rec != nullptr) {
        s.event_stream[i] = rec->stream;
        s.event_record_correlation[i] = rec->correlation;
      }
    }
  }

  const std::string& path_;
  Trace trace_;
  std::int64_t pid_ = kNone;
  bool saw_trailer_ = false;
  std::int64_t dropped_ = 0;
  std::vector<std::int64_t> sync_event_sync_id_;  ///< Parallel to trace_.syncs.
  std::map<std::int64_t, EventRecordRow> by_sync_id_;
  std::map<std::int64_t, std::vector<EventRecordRow>> by_event_id_;
};

}  // namespace

bool is_emo_trace(std::string_view head) noexcept {
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  while (!head.empty() && (head.front() == ' ' || head.front() == '\t' || head.front() == '\r')) head.remove_prefix(1);
  if (!head.starts_with("{")) return false;
  const std::string_view first = head.substr(0, std::min(head.find('\n'), std::size_t{4096}));
  return first.find("\"format\"") != std::string_view::npos && first.find("\"emo.trace/1\"") != std::string_view::npos;
}

Trace read_emo_trace(const PaddedBuffer& text, const std::string& path) { return Reader(path).read(text); }

}  // namespace emo::trace
