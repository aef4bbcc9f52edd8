// EMO's format-neutral trace model (docs/design.md §1).
//
// One columnar table of ops (GPU work, host API calls, framework ops, sync records), side tables
// for what only some ops carry (sync details, collective metadata), and the trace's metadata.
// Every reader (src/trace/kineto, src/trace/nsys, later src/trace/cupti) fills this model; every
// later stage reads only this model, never a file format.
//
// Units: timestamps and durations are integer nanoseconds (TimeNs). Kineto writes microseconds as
// decimal text; readers convert exactly (see timestamp.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/string_table.h"
#include "core/timestamp.h"

namespace emo::trace {

/// What an op is. GPU ops (kernel, memcpy, memset) run on a (device, stream); host ops run on a
/// (process, thread); sync records describe a wait (Kineto `cuda_sync`, nsys SYNCHRONIZATION).
/// A collective is a kernel (kind kKernel) with a row in Trace::collectives.
enum class OpKind : std::uint8_t {
  kKernel,         ///< GPU kernel (NCCL kernels included).
  kMemcpy,         ///< GPU copy.
  kMemset,         ///< GPU memset.
  kRuntime,        ///< CUDA/HIP runtime API call (cudaLaunchKernel, hipMemcpyWithStream, ...).
  kDriver,         ///< CUDA driver API call (cuLaunchKernel, ...).
  kFrameworkOp,    ///< Framework op on a CPU thread (PyTorch `cpu_op`, 2021 `Operator`).
  kAnnotation,     ///< User range on a CPU thread (`user_annotation`, ProfilerStep#N, NVTX).
  kGpuAnnotation,  ///< User range drawn on a GPU stream (`gpu_user_annotation`).
  kSync,           ///< Synchronisation record; details in Trace::syncs.
};
inline constexpr int kOpKindCount = 9;

/// Lower-case stable name ("kernel", "memcpy", ..., "sync"), used in JSON and tables.
std::string_view op_kind_name(OpKind kind) noexcept;
/// True for kernel, memcpy and memset: work that occupies a GPU stream.
constexpr bool is_gpu_op(OpKind k) noexcept {
  return k == OpKind::kKernel || k == OpKind::kMemcpy || k == OpKind::kMemset;
}
/// True for runtime and driver API calls.
constexpr bool is_api_call(OpKind k) noexcept {
  return k == OpKind::kRuntime || k == OpKind::kDriver;
}

inline constexpr std::int64_t kNone = -1;  ///< Absent id (stream, correlation, device, ...).

/// Process and thread ids written as non-numeric text (Kineto pid "Spans", tid "stream 7" of
/// a host op) are stored as kStringIdBase - (their interned string id): stable within a trace and
/// far below any real (or -1) OS id. host_id_string() recovers the string id.
inline constexpr std::int64_t kStringIdBase = -(std::int64_t{1} << 62);
constexpr std::int64_t host_id_of_string(StringId s) noexcept {
  return kStringIdBase - static_cast<std::int64_t>(s);
}
/// The string id behind a host id made by host_id_of_string(), or -1 for a numeric id.
constexpr std::int64_t host_id_string(std::int64_t id) noexcept {
  return (id <= kStringIdBase && id > kStringIdBase - (std::int64_t{1} << 32)) ? kStringIdBase - id
                                                                               : -1;
}

/// Columnar op table: column i of every vector describes op i. Rows are sorted by
/// (start_ns, file order) once a reader finishes (Trace::finish()).
struct OpTable {
  std::vector<OpKind> kind;
  std::vector<TimeNs> start_ns;
  std::vector<TimeNs> dur_ns;          ///< >= 0
  std::vector<StringId> name;          ///< Into Trace::strings.
  std::vector<std::int32_t> device;    ///< GPU index, or kNone for host ops.
  std::vector<std::int64_t> stream;    ///< GPU stream id (CUDA stream id, HIP stream handle); kNone.
  std::vector<std::int64_t> process;   ///< OS pid of host ops; for GPU ops the owning process
                                       ///< where the format records it (nsys), else kNone.
  std::vector<std::int64_t> thread;    ///< OS tid of host ops; kNone for GPU ops.
  std::vector<std::int64_t> correlation;  ///< Links an API call to the GPU op it launched.
  std::vector<std::int64_t> external_id;  ///< Framework op <-> API call link (Kineto), or kNone.

  std::size_t size() const noexcept { return kind.size(); }
  TimeNs end_ns(std::size_t i) const noexcept { return start_ns[i] + dur_ns[i]; }
  void reserve(std::size_t n);
  /// Appends one row; returns its index.
  std::uint32_t push(OpKind k, TimeNs start, TimeNs dur, StringId name_id, std::int32_t dev,
                     std::int64_t strm, std::int64_t pid, std::int64_t tid, std::int64_t corr,
                     std::int64_t ext);
  /// Bytes held by the columns (capacity), for memory accounting.
  std::size_t memory_bytes() const noexcept;
};

/// Kind of a synchronisation record.
enum class SyncKind : std::uint8_t {
  kStreamSync,       ///< Host waits for one stream (cudaStreamSynchronize).
  kEventSync,        ///< Host waits for an event (cudaEventSynchronize).
  kContextSync,      ///< Host waits for the whole device (cudaDeviceSynchronize).
  kStreamWaitEvent,  ///< A stream waits for an event recorded on another (cudaStreamWaitEvent).
  kUnknown,
};
std::string_view sync_kind_name(SyncKind kind) noexcept;

/// Sync kind of a blocking or waiting API call, judged by its name (CUDA runtime, driver or HIP;
/// a "_v3020"/"_ptsz" suffix is ignored), or nullopt for other calls.
/// Examples: "cudaDeviceSynchronize" -> kContextSync, "hipStreamSynchronize" -> kStreamSync,
/// "cuStreamWaitEvent" -> kStreamWaitEvent, "cudaLaunchKernel" -> nullopt.
std::optional<SyncKind> sync_kind_of_api_call(std::string_view name) noexcept;

/// One row per sync record (an op of kind kSync). Columns as in OpTable.
struct SyncTable {
  std::vector<std::uint32_t> op;               ///< Row in OpTable.
  std::vector<SyncKind> kind;
  std::vector<std::int64_t> stream;            ///< Synchronised or waiting stream, or kNone.
  std::vector<std::int64_t> event_stream;      ///< Stream the waited-on event was recorded on.
  std::vector<std::int64_t> event_record_correlation;  ///< Correlation of cudaEventRecord.
  std::vector<std::int64_t> event_id;          ///< CUDA event id, or kNone.
  std::size_t size() const noexcept { return op.size(); }
};

/// One row per collective kernel (NCCL/RCCL). Metadata as written by PyTorch (`Collective name`,
/// `Process Group Name`, `Group size`, `In msg nelems`, ...); absent values are kNone / id 0.
struct CollectiveTable {
  std::vector<std::uint32_t> op;            ///< Row in OpTable (a kernel); ascending after finish().
  std::vector<StringId> name;               ///< "allreduce", "sendrecv", ... (lower case).
  std::vector<StringId> group;              ///< Process group name, "" if unknown.
  std::vector<StringId> group_ranks;        ///< e.g. "[0, 1]", "" if unknown.
  std::vector<std::int32_t> group_size;     ///< Ranks in the group, or kNone.
  std::vector<std::int64_t> in_nelems;      ///< Elements in, or kNone.
  std::vector<std::int64_t> out_nelems;     ///< Elements out, or kNone.
  std::vector<StringId> dtype;              ///< "Float", ... or "".
  std::vector<std::int64_t> sequence;       ///< Collective sequence number, or kNone.
  /// Point-to-point ops (PyTorch `Src Rank`, `Dst Rank`: global ranks): the sending and the
  /// receiving rank, kNone when not recorded. PyTorch records the peer only: `Dst Rank` on a
  /// send, `Src Rank` on a recv (the other end is the trace's own rank).
  std::vector<std::int32_t> src_rank;
  std::vector<std::int32_t> dst_rank;
  /// Linked traces only (trace/job.h): the job-wide id of the collective instance this kernel
  /// takes part in, shared by its participants on the other ranks, or kNone when it was not
  /// linked. Empty in a trace read from one file.
  std::vector<std::int64_t> match;
  std::size_t size() const noexcept { return op.size(); }
};

/// Static properties of one GPU, as reported by the trace (Kineto `deviceProperties`, nsys
/// TARGET_INFO_GPU). Zero / empty when the trace does not say.
struct GpuInfo {
  std::int32_t device = 0;
  std::string name;                  ///< e.g. "NVIDIA A100-SXM4-80GB".
  std::int64_t total_memory_bytes = 0;
  std::int32_t compute_major = 0;
  std::int32_t compute_minor = 0;
  std::int32_t sm_count = 0;
  std::int64_t clock_rate_khz = 0;   ///< Max SM clock (nsys clockRate), 0 if unknown.
};

enum class TraceFormat : std::uint8_t { kKinetoJson, kNsysSqlite, kEmoTrace };
/// "kineto-json", "nsys-sqlite", "emo-trace" (EMO's own CUPTI tracer, docs/tracer.md)
std::string_view trace_format_name(TraceFormat f) noexcept;

/// Reader-observed irregularities, counted so that `emo inspect` can warn about them.
struct QuirkCounts {
  std::int64_t out_of_order = 0;       ///< Ops whose start precedes the previous op's in the file.
  std::int64_t zero_duration = 0;      ///< Ops with dur == 0.
  std::int64_t negative_duration = 0;  ///< Ops with dur < 0 (set to 0).
  std::int64_t clamped_children = 0;   ///< Host ops ending past their enclosing op (clamped).
  TimeNs max_clamp_ns = 0;             ///< Largest such overhang.
  std::int64_t unknown_category = 0;   ///< Complete events of categories EMO does not model.
  std::int64_t string_ids = 0;         ///< pid/tid/stream written as strings.
  std::int64_t duplicate_gpu_correlation = 0;  ///< GPU ops sharing a correlation id.
  std::int64_t gpu_ops_without_launch = 0;     ///< GPU ops with no API call of that correlation.
  std::int64_t ignored_events = 0;     ///< Events skipped (instant, counter, profiler spans...).
  std::int64_t sync_api_calls = 0;     ///< API calls that block or wait (by name), see
                                       ///< sync_kind_of_api_call(); with no sync records these
                                       ///< are the only evidence of synchronisation.
};

/// One rank of a linked job (trace/job.h). In the linked trace, GPU device i is ranks[i]'s GPU.
struct JobRank {
  std::int32_t rank = -1;         ///< Distributed rank.
  std::string path;               ///< Its trace file.
  std::int32_t device = 0;        ///< Its GPU's device index in its own trace.
  TimeNs offset_ns = 0;           ///< Added to its timestamps to put them on the first rank's clock.
  std::int64_t collectives = 0;   ///< Collective kernels in its trace.
  std::int64_t matched = 0;       ///< Of those, linked to their participants on other ranks.
  TimeNs wait_ns = 0;             ///< Recorded wait in linked collectives, after alignment:
                                  ///< Σ (last participant's arrival − own arrival), ≥ 0.
};

/// How the traces of one job were linked (trace/job.h, link_job). Empty `ranks`: one trace.
struct JobInfo {
  std::int32_t world_size = -1;
  std::vector<JobRank> ranks;            ///< By device of the linked trace.
  std::int64_t collectives_linked = 0;   ///< Collective instances linked across ≥ 2 ranks.
  std::string match_method;              ///< "process group + sequence", "order per stream", ...
  TimeNs residual_max_ns = 0;            ///< After alignment: max over linked instances of the
                                         ///< spread of their participants' ends (max − min).
  TimeNs residual_median_ns = 0;         ///< Median of the same spread.
  std::vector<std::string> warnings;     ///< What was not linked, and why.
  std::vector<std::uint32_t> source_row; ///< Per op of the linked trace: its row in its rank's
                                         ///< own trace (the rank: trace::job_rank_index).
};

/// CollectivePin::start_ns of a port: the kernel takes the transfer time only, its start is left
/// free (no release, no deadline): the rank's graph reduced to its ports (timing/ports.h).
inline constexpr TimeNs kOpenPin = INT64_MIN;

/// One collective of a rank cut out of a linked job (job/job_solve.h): the job fixes when its
/// transfer starts — the other ranks arrive then — and how long the transfer takes.
struct CollectivePin {
  std::uint32_t op = 0;     ///< Row of the collective kernel in OpTable.
  TimeNs start_ns = 0;      ///< The transfer starts here, on this trace's clock: the kernel starts
                            ///< no earlier (the others arrive then) and must start no later (they
                            ///< would wait for this rank). kOpenPin: neither.
  TimeNs transfer_ns = 0;   ///< The transfer's duration (the kernel's duration in the job's graph).
};

/// A rank's trace cut out of a linked job for the decomposed joint solve (job/job_solve.h):
/// the job's timing at each of its collectives, fixed (graph::build_graph applies it). Empty
/// `pins`: a trace of its own.
struct JobCut {
  std::vector<CollectivePin> pins;
  TimeNs end_ns = 0;        ///< The job's latest end, on this trace's clock: a pin's "no later"
                            ///< is a constraint on the makespan (graph::build_graph).
};

/// Metadata of the traced job.
struct TraceMeta {
  TraceFormat format = TraceFormat::kKinetoJson;
  std::string path;                  ///< File the trace was read from.
  std::int32_t rank = -1;            ///< Distributed rank, -1 if unknown.
  std::int32_t world_size = -1;      ///< -1 if unknown.
  std::string backend;               ///< e.g. "nccl".
  TimeNs base_time_ns = 0;           ///< Added to every timestamp (Kineto baseTimeNanoseconds).
  std::vector<GpuInfo> gpus;         ///< Sorted by device.
  std::string schema;                ///< Format version if known (nsys export version, ...).
  JobInfo job;                       ///< Linked traces of several ranks; ranks empty otherwise.
  JobCut cut;                        ///< A rank cut out of a job (decomposed solve); empty otherwise.
};

/// A whole trace. Build with a reader, then call finish().
struct Trace {
  TraceMeta meta;
  StringTable strings;
  OpTable ops;
  SyncTable syncs;
  CollectiveTable collectives;
  QuirkCounts quirks;
  std::vector<std::string> warnings;  ///< Human-readable, filled by finish() from the counts.

  /// Sorts ops by start (stable), remaps side tables, clamps children that poke past their
  /// parent on the same thread (up to `clamp_tolerance_ns`), counts correlation quirks and writes
  /// `warnings`. Readers call it once at the end.
  void finish(TimeNs clamp_tolerance_ns = 1000);

  /// True when op row `row` is a collective kernel (binary search: finish() sorts the
  /// collective table by op row).
  bool is_collective(std::uint32_t row) const noexcept;

  /// GPU name for `device`, or "" if unknown.
  std::string_view gpu_name(std::int32_t device) const noexcept;
  /// Total bytes held by the model (columns, side tables, strings), for memory accounting.
  std::size_t memory_bytes() const noexcept;
};

/// The load warnings of `t` that say its data was changed on load: negative durations set to 0
/// and host ops clamped to their enclosing op's end (QuirkCounts). These are printed by every
/// command that computes from the trace (`emo optimize`, `analyze`, `pack`), where the others in
/// `warnings` (events sorted, zero durations, string ids, ...) are informational and only `emo
/// inspect` lists them. Empty when nothing was changed. Never throws but std::bad_alloc.
std::vector<std::string> changed_on_load(const Trace& t);

}  // namespace emo::trace
