// Conversion of CUPTI activity records into EMO's own trace format, `emo.trace/1` (docs/tracer.md),
// in plain C++: the injection library (cupti_tracer.cpp) copies the few fields EMO uses out of
// each CUPTI record into these structs, so that the conversion is tested with synthetic records
// and no CUDA.
//
// emo.trace/1 is JSON lines: a header object, then one object per record, then a trailer:
//   {"format":"emo.trace/1","emo_version":"0.1.0","pid":4242,"command":["./app"],"gpus":[...]}
//   {"kind":"kernel","start_ns":1000,"dur_ns":500,"name":"gemm","device":0,"stream":7,"correlation":12}
//   {"kind":"runtime","start_ns":900,"dur_ns":50,"name":"cudaLaunchKernel","pid":4242,"tid":4243,"correlation":12}
//   {"kind":"end","records":2,"dropped":0}
// Timestamps are CUPTI's, integer ns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_text.h"  // json_quote: how the records' strings are written

namespace emo::tracer {

inline constexpr std::string_view kTraceFormat = "emo.trace/1";
inline constexpr std::uint32_t kInvalidId = 0xFFFFFFFFu;        ///< CUPTI_SYNCHRONIZATION_INVALID_VALUE
inline constexpr std::uint64_t kInvalidSyncId = 0xFFFFFFFFFFFFFFFFull;

struct GpuProps {
  std::int32_t device = 0;
  std::string name;
  std::int64_t total_memory_bytes = 0;
  std::int32_t compute_major = 0, compute_minor = 0, sm_count = 0;
  std::int64_t clock_rate_khz = 0;
};

struct TraceHeader {
  std::string emo_version;
  std::int64_t pid = 0;
  std::vector<std::string> command;
  std::vector<GpuProps> gpus;
};

/// CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL / KERNEL (CUpti_ActivityKernel*).
struct KernelRecord {
  std::uint64_t start = 0, end = 0;  ///< ns
  std::uint32_t device = 0, stream = 0, correlation = 0;
  std::string_view name;             ///< Mangled or plain; demangled on output.
};

/// CUPTI_ACTIVITY_KIND_MEMCPY (CUpti_ActivityMemcpy*). Kinds are CUpti_ActivityMemcpyKind and
/// CUpti_ActivityMemoryKind values.
struct MemcpyRecord {
  std::uint64_t start = 0, end = 0;
  std::uint32_t device = 0, stream = 0, correlation = 0;
  std::uint8_t copy_kind = 0, src_kind = 0, dst_kind = 0;
  std::uint64_t bytes = 0;
};

/// CUPTI_ACTIVITY_KIND_MEMSET (CUpti_ActivityMemset*).
struct MemsetRecord {
  std::uint64_t start = 0, end = 0;
  std::uint32_t device = 0, stream = 0, correlation = 0;
  std::uint16_t memory_kind = 0;
  std::uint64_t bytes = 0;
};

/// CUPTI_ACTIVITY_KIND_RUNTIME / DRIVER (CUpti_ActivityAPI); `name` from cuptiGetCallbackName.
struct ApiRecord {
  bool driver = false;
  std::uint64_t start = 0, end = 0;
  std::uint32_t pid = 0, tid = 0, correlation = 0;
  std::string_view name;
};

/// CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (CUpti_ActivitySynchronization2). `type` is a
/// CUpti_ActivitySynchronizationType (1 event sync, 2 stream wait event, 3 stream sync,
/// 4 context sync); kInvalidId / kInvalidSyncId mark fields that do not apply.
struct SyncRecord {
  std::uint32_t type = 0;
  std::uint64_t start = 0, end = 0;
  std::uint32_t correlation = 0, stream = kInvalidId, event_id = kInvalidId;
  std::uint64_t event_sync_id = kInvalidSyncId;  ///< CUDA ≥ 12.8; kInvalidSyncId before.
};

/// CUPTI_ACTIVITY_KIND_CUDA_EVENT (CUpti_ActivityCudaEvent2): one cudaEventRecord.
struct CudaEventRecord {
  std::uint32_t event_id = 0, correlation = 0, device = 0, stream = 0;
  std::uint64_t event_sync_id = kInvalidSyncId;
};

/// One NVTX range on a host thread (from a MARKER start/end pair).
struct RangeRecord {
  std::uint64_t start = 0, end = 0;
  std::uint32_t pid = 0, tid = 0;
  std::string name;
};

/// Pairs CUPTI MARKER records (CUpti_ActivityMarker2: a start with a name, an end with the same
/// id) into ranges. Instant markers (neither flag) are dropped.
class MarkerPairer {
 public:
  /// A start marker. Returns nothing; the range is complete at its end.
  void start(std::uint32_t id, std::uint64_t ts, std::string_view name, std::uint32_t pid, std::uint32_t tid);
  /// An end marker: the finished range, or nullopt when no start had that id.
  std::optional<RangeRecord> end(std::uint32_t id, std::uint64_t ts);
  std::size_t open() const noexcept { return open_.size(); }

 private:
  std::map<std::uint32_t, RangeRecord> open_;
};

/// A readable kernel name: demangled when `name` is an Itanium-mangled C++ name ("_Z..."),
/// else as is. demangle("_Z6kernelPfi") == "kernel(float*, int)".
std::string demangle(std::string_view name);
/// An API name without CUPTI's version suffix, as Kineto and nsys name calls:
/// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel"; "cudaMemcpyAsync_ptsz_v7000" ->
/// "cudaMemcpyAsync_ptsz"; "cuLaunchKernel" unchanged.
std::string_view api_name(std::string_view cupti_name) noexcept;
/// "Memcpy HtoD (Pageable -> Device)", Kineto's naming of copies.
std::string memcpy_name(std::uint8_t copy_kind, std::uint8_t src_kind, std::uint8_t dst_kind);
/// "Memset (Device)".
std::string memset_name(std::uint16_t memory_kind);
/// "stream_sync", "event_sync", "context_sync", "stream_wait_event", "unknown" (the trace
/// model's sync_kind_name spelling) for a CUpti_ActivitySynchronizationType.
std::string_view sync_type_name(std::uint32_t type) noexcept;

/// One line of emo.trace/1 (without the newline) for each record kind.
std::string header_line(const TraceHeader& h);
std::string to_line(const KernelRecord& r);
std::string to_line(const MemcpyRecord& r);
std::string to_line(const MemsetRecord& r);
std::string to_line(const ApiRecord& r);
std::string to_line(const SyncRecord& r);
std::string to_line(const CudaEventRecord& r);
std::string to_line(const RangeRecord& r);
/// {"kind":"gpu",...}: one GPU's properties (CUPTI_ACTIVITY_KIND_DEVICE arrives after the header).
std::string to_line(const GpuProps& g);
std::string trailer_line(std::int64_t records, std::int64_t dropped);

}  // namespace emo::tracer
