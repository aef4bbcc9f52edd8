#include "tracer/record_convert.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace emo::tracer {
namespace {

std::string num(std::int64_t v) { return std::to_string(v); }
std::string unum(std::uint64_t v) { return std::to_string(v); }

/// Duration end − start, 0 when the record has no valid end.
std::int64_t dur(std::uint64_t start, std::uint64_t end) {
  return end >= start ? static_cast<std::int64_t>(end - start) : 0;
}

/// An optional id: -1 for CUPTI's "invalid".
std::string id32(std::uint32_t v) { return v == kInvalidId ? "-1" : unum(v); }
std::string id64(std::uint64_t v) { return v == kInvalidSyncId ? "-1" : unum(v); }

std::string_view copy_kind_name(std::uint8_t k) {
  switch (k) {
    case 1: return "HtoD";
    case 2: return "DtoH";
    case 3: return "HtoA";
    case 4: return "AtoH";
    case 5: return "AtoA";
    case 6: return "AtoD";
    case 7: return "DtoA";
    case 8: return "DtoD";
    case 9: return "HtoH";
    case 10: return "PtoP";
    default: return "Unknown";
  }
}

std::string_view memory_kind_name(unsigned k) {
  switch (k) {
    case 1: return "Pageable";
    case 2: return "Pinned";
    case 3: return "Device";
    case 4: return "Array";
    case 5: return "Managed";
    case 6: return "Device Static";
    case 7: return "Managed Static";
    default: return "Unknown";
  }
}

}  // namespace

void MarkerPairer::start(std::uint32_t id, std::uint64_t ts, std::string_view name, std::uint32_t pid,
                         std::uint32_t tid) {
  open_[id] = RangeRecord{ts, ts, pid, tid, std::string(name)};
}

std::optional<RangeRecord> MarkerPairer::end(std::uint32_t id, std::uint64_t ts) {
  const auto it = open_.find(id);
  if (it == open_.end()) return std::nullopt;
  RangeRecord r = std::move(it->second);
  open_.erase(it);
  r.end = ts;
  return r;
}

std::string demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  int status = 0;
  const std::string mangled(name);
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                  &std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::string memcpy_name(std::uint8_t copy_kind, std::uint8_t src_kind, std::uint8_t dst_kind) {
  std::string out = "Memcpy ";
  out += copy_kind_name(copy_kind);
  out += " (";
  out += memory_kind_name(src_kind);
  out += " -> ";
  out += memory_kind_name(dst_kind);
  out += ")";
  return out;
}

std::string memset_name(std::uint16_t memory_kind) {
  return "Memset (" + std::string(memory_kind_name(memory_kind)) + ")";
}

std::string_view sync_type_name(std::uint32_t type) noexcept {
  switch (type) {
    case 1: return "event_sync";
    case 2: return "stream_wait_event";
    case 3: return "stream_sync";
    case 4: return "context_sync";
    default: return "unknown";
  }
}

std::string_view api_name(std::string_view n) noexcept {
  const std::size_t v = n.rfind("_v");
  if (v == std::string_view::npos || v + 2 >= n.size()) return n;
  for (std::size_t i = v + 2; i < n.size(); ++i) {
    if (n[i] < '0' || n[i] > '9') return n;
  }
  return n.substr(0, v);
}

namespace {
std::string gpu_fields(const GpuProps& g) {
  return "\"device\":" + num(g.device) + ",\"name\":" + json_quote(g.name) +
         ",\"total_memory_bytes\":" + num(g.total_memory_bytes) + ",\"compute_major\":" + num(g.compute_major) +
         ",\"compute_minor\":" + num(g.compute_minor) + ",\"sm_count\":" + num(g.sm_count) +
         ",\"clock_rate_khz\":" + num(g.clock_rate_khz);
}
}  // namespace

std::string to_line(const GpuProps& g) { return "{\"kind\":\"gpu\"," + gpu_fields(g) + "}"; }

std::string header_line(const TraceHeader& h) {
  std::string out = "{\"format\":" + json_quote(kTraceFormat) + ",\"emo_version\":" + json_quote(h.emo_version) +
                    ",\"pid\":" + num(h.pid) + ",\"command\":[";
  for (std::size_t i = 0; i < h.command.size(); ++i) out += (i ? "," : "") + json_quote(h.command[i]);
  out += "],\"gpus\":[";
  for (std::size_t i = 0; i < h.gpus.size(); ++i) {
    out += (i ? ",{" : "{") + gpu_fields(h.gpus[i]) + "}";
  }
  return out + "]}";
}

std::string to_line(const KernelRecord& r) {
  return "{\"kind\":\"kernel\",\"start_ns\":" + unum(r.start) + ",\"dur_ns\":" + num(dur(r.start, r.end)) +
         ",\"name\":" + json_quote(demangle(r.name)) + ",\"device\":" + unum(r.device) +
         ",\"stream\":" + unum(r.stream) + ",\"correlation\":" + unum(r.correlation) + "}";
}

std::string to_line(const MemcpyRecord& r) {
  return "{\"kind\":\"memcpy\",\"start_ns\":" + unum(r.start) + ",\"dur_ns\":" + num(dur(r.start, r.end)) +
         ",\"name\":" + json_quote(memcpy_name(r.copy_kind, r.src_kind, r.dst_kind)) +
         ",\"device\":" + unum(r.device) + ",\"stream\":" + unum(r.stream) +
         ",\"correlation\":" + unum(r.correlation) + ",\"bytes\":" + unum(r.bytes) + "}";
}

std::string to_line(const MemsetRecord& r) {
  return "{\"kind\":\"memset\",\"start_ns\":" + unum(r.start) + ",\"dur_ns\":" + num(dur(r.start, r.end)) +
         ",\"name\":" + json_quote(memset_name(r.memory_kind)) + ",\"device\":" + unum(r.device) +
         ",\"stream\":" + unum(r.stream) + ",\"correlation\":" + unum(r.correlation) +
         ",\"bytes\":" + unum(r.bytes) + "}";
}

std::string to_line(const ApiRecord& r) {
  return std::string("{\"kind\":\"") + (r.driver ? "driver" : "runtime") + "\",\"start_ns\":" + unum(r.start) +
         ",\"dur_ns\":" + num(dur(r.start, r.end)) + ",\"name\":" + json_quote(r.name) + ",\"pid\":" + unum(r.pid) +
         ",\"tid\":" + unum(r.tid) + ",\"correlation\":" + unum(r.correlation) + "}";
}

std::string to_line(const SyncRecord& r) {
  return "{\"kind\":\"sync\",\"sync\":\"" + std::string(sync_type_name(r.type)) +
         "\",\"start_ns\":" + unum(r.start) + ",\"dur_ns\":" + num(dur(r.start, r.end)) +
         ",\"correlation\":" + unum(r.correlation) + ",\"stream\":" + id32(r.stream) +
         ",\"event_id\":" + id32(r.event_id) + ",\"event_sync_id\":" + id64(r.event_sync_id) + "}";
}

std::string to_line(const CudaEventRecord& r) {
  return "{\"kind\":\"cuda_event\",\"event_id\":" + unum(r.event_id) + ",\"correlation\":" + unum(r.correlation) +
         ",\"device\":" + unum(r.device) + ",\"stream\":" + unum(r.stream) +
         ",\"event_sync_id\":" + id64(r.event_sync_id) + "}";
}

std::string to_line(const RangeRecord& r) {
  return "{\"kind\":\"annotation\",\"start_ns\":" + unum(r.start) + ",\"dur_ns\":" + num(dur(r.start, r.end)) +
         ",\"name\":" + json_quote(r.name) + ",\"pid\":" + unum(r.pid) + ",\"tid\":" + unum(r.tid) + "}";
}

std::string trailer_line(std::int64_t records, std::int64_t dropped) {
  return "{\"kind\":\"end\",\"records\":" + num(records) + ",\"dropped\":" + num(dropped) + "}";
}

}  // namespace emo::tracer
