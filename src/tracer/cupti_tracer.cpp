// libemo_tracer.so: EMO's CUPTI injection library (docs/tracer.md). The CUDA driver loads it
// when CUDA_INJECTION64_PATH names it and calls InitializeInjection() during cuInit. Two modes,
// chosen by the environment that `emo trace` / `emo run` set:
//
//   trace  (EMO_TRACE_OUTPUT=FILE): CUPTI activity records for concurrent kernels, memcpy,
//          memset, runtime and driver API, synchronization, CUDA events, NVTX markers and
//          devices, converted (tracer/record_convert.h) and appended to FILE as emo.trace/1
//          lines as each buffer completes; flushed, with a trailer, at exit.
//   follow (EMO_TRACER_MODE=follow, EMO_WATCH_FILE, EMO_PROGRESS_FD): no activity records;
//          callbacks on kernel launches, async copies and memsets, graph launches (every
//          runtime/driver call tracer::watch_kind_of_api classifies) and NVTX ranges feed a
//          PackMatcher; graph instantiations (resource callback) give each executable graph
//          its shape (kernel count and names); before each call that starts (or, for a graph,
//          anchors) a pack, a CUDA event is recorded on the call's stream; a poller thread queries the pending
//          events and, when one completes (the GPU has reached the pack), writes
//          "P SECTION PACK ITERATION T_NS PID\n" (CLOCK_MONOTONIC) to the progress pipe. On the
//          first launch on a CUDA device the process says which policy section it follows
//          and the device's UUID: "H PID RANK SECTION GPU-UUID\n" (tracer/process_identity.h).
//
// Nothing here changes GPU settings. Errors are reported once on stderr ("emo tracer: ...")
// and disable the tracer; the traced program keeps running.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <generated_nvtx_meta.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tracer/pack_matcher.h"
#include "tracer/process_identity.h"
#include "tracer/record_convert.h"

#ifndef EMO_VERSION
#define EMO_VERSION "unknown"
#endif

namespace {

using namespace emo::tracer;

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kBufferAlign = 8;

void warn(const std::string& what) { std::fprintf(stderr, "emo tracer: %s\n", what.c_str()); }

bool cupti_ok(CUptiResult rc, const char* call) {
  if (rc == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(rc, &text);
  warn(std::string(call) + " failed: " + (text != nullptr ? text : "unknown CUPTI error"));
  return false;
}

std::vector<std::string> command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> out;
  std::string arg;
  while (std::getline(in, arg, '\0')) out.push_back(arg);
  return out;
}

// ---- trace mode ----------------------------------------------------------------------------------

struct TraceState {
  std::mutex mu;
  std::FILE* out = nullptr;
  MarkerPairer markers;
  std::int64_t records = 0;
  std::int64_t dropped = 0;
  bool finished = false;
} g_trace;

void write_line(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), g_trace.out);
  std::fputc('\n', g_trace.out);
  ++g_trace.records;
}

std::string_view callback_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) return "unknown";
  return api_name(name);
}

void convert(const CUpti_Activity* rec) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      write_line(to_line(KernelRecord{k->start, k->end, k->deviceId, k->streamId, k->correlationId,
                                      k->name != nullptr ? k->name : "unknown"}));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      write_line(to_line(MemcpyRecord{m->start, m->end, m->deviceId, m->streamId, m->correlationId, m->copyKind,
                                      m->srcKind, m->dstKind, m->bytes}));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      write_line(to_line(MemsetRecord{m->start, m->end, m->deviceId, m->streamId, m->correlationId, m->memoryKind,
                                      m->bytes}));
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      const bool driver = rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
      const auto domain = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
      write_line(to_line(ApiRecord{driver, a->start, a->end, a->processId, a->threadId, a->correlationId,
                                   callback_name(domain, a->cbid)}));
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
      write_line(to_line(SyncRecord{static_cast<std::uint32_t>(s->type), s->start, s->end, s->correlationId,
                                    s->streamId, s->cudaEventId, s->cudaEventSyncId}));
      break;
    }
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
      const auto* e = reinterpret_cast<const CUpti_ActivityCudaEvent2*>(rec);
      write_line(to_line(CudaEventRecord{e->eventId, e->correlationId, e->deviceId, e->streamId, e->cudaEventSyncId}));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(rec);
      if ((m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0) {
        g_trace.markers.start(m->id, m->timestamp, m->name != nullptr ? m->name : "", m->objectId.pt.processId,
                              m->objectId.pt.threadId);
      } else if ((m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0) {
        if (auto r = g_trace.markers.end(m->id, m->timestamp)) write_line(to_line(*r));
      }
      break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(rec);
      GpuProps g;
      g.device = static_cast<std::int32_t>(d->id);
      g.name = d->name != nullptr ? d->name : "";
      g.total_memory_bytes = static_cast<std::int64_t>(d->globalMemorySize);
      g.compute_major = static_cast<std::int32_t>(d->computeCapabilityMajor);
      g.compute_minor = static_cast<std::int32_t>(d->computeCapabilityMinor);
      g.sm_count = static_cast<std::int32_t>(d->numMultiprocessors);
      g.clock_rate_khz = d->coreClockRate;
      write_line(to_line(g));
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(g_trace.mu);
    if (g_trace.out != nullptr && !g_trace.finished) {
      CUpti_Activity* rec = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) convert(rec);
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS) {
        g_trace.dropped += static_cast<std::int64_t>(dropped);
      }
      std::fflush(g_trace.out);
    }
  }
  std::free(buffer);
}

void finish_trace() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_trace.mu);
  if (g_trace.out == nullptr || g_trace.finished) return;
  const std::string trailer = trailer_line(g_trace.records, g_trace.dropped);
  std::fwrite(trailer.data(), 1, trailer.size(), g_trace.out);
  std::fputc('\n', g_trace.out);
  std::fclose(g_trace.out);
  g_trace.out = nullptr;
  g_trace.finished = true;
}

bool start_trace(const char* path) {
  g_trace.out = std::fopen(path, "w");
  if (g_trace.out == nullptr) {
    warn(std::string("cannot write ") + path + ": " + std::strerror(errno));
    return false;
  }
  TraceHeader h;
  h.emo_version = EMO_VERSION;
  h.pid = getpid();
  h.command = command_line();
  const std::string header = header_line(h);
  std::fwrite(header.data(), 1, header.size(), g_trace.out);
  std::fputc('\n', g_trace.out);
  if (!cupti_ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks")) {
    return false;
  }
  for (CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_CUDA_EVENT, CUPTI_ACTIVITY_KIND_MARKER}) {
    cupti_ok(cuptiActivityEnable(kind), "cuptiActivityEnable");  // a missing kind only loses those rows
  }
  std::atexit(finish_trace);
  return true;
}

// ---- follow mode ---------------------------------------------------------------------------------

struct Driver {  // the few driver functions the poller needs, from the already loaded libcuda
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_query)(CUevent) = nullptr;
  CUresult (*event_destroy)(CUevent) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;          // cuDeviceGet
  CUresult (*device_uuid)(CUuuid*, CUdevice) = nullptr;      // cuDeviceGetUuid_v2 (may be absent: "-")
  // Graph shapes (absent: graphs are launched unrecognised, their packs unseen).
  CUresult (*graph_get_nodes)(CUgraph, CUgraphNode*, size_t*) = nullptr;           // cuGraphGetNodes
  CUresult (*node_get_type)(CUgraphNode, CUgraphNodeType*) = nullptr;              // cuGraphNodeGetType
  CUresult (*kernel_node_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*) = nullptr;  // cuGraphKernelNodeGetParams_v2
  CUresult (*child_graph)(CUgraphNode, CUgraph*) = nullptr;                        // cuGraphChildGraphNodeGetGraph
  CUresult (*func_name)(const char**, CUfunction) = nullptr;                       // cuFuncGetName (CUDA 12.3+)
  CUresult (*kernel_name)(const char**, CUkernel) = nullptr;                       // cuKernelGetName (CUDA 12.3+)
};

struct Pending {
  CUevent event;
  CUcontext context;
  PackHit hit;
};

struct FollowState {
  std::mutex mu;
  std::unique_ptr<PackMatcher> matcher;
  std::vector<Pending> pending;
  Driver cu;
  int progress_fd = -1;
  std::int64_t pid = 0;
  ProcessRank rank;
  std::map<std::uint32_t, std::optional<std::int32_t>> section_of;  ///< CUDA device -> section followed
  std::map<CUgraphExec, GraphShape> graphs;  ///< Executable graph -> its shape (at instantiation)
  std::atomic<bool> running{false};
  std::thread poller;
  CUpti_SubscriberHandle subscriber = nullptr;
} g_follow;

thread_local bool t_in_runtime_call = false;  // a followed runtime call: its driver calls are not counted again
thread_local bool t_in_tracer = false;  // our own driver calls must not re-enter

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// The UUID of CUDA device `ordinal` in NVML's form, "" when the driver cannot say.
std::string device_uuid(std::uint32_t ordinal) {
  CUdevice dev = 0;
  CUuuid id{};
  if (g_follow.cu.device_get == nullptr || g_follow.cu.device_uuid == nullptr ||
      g_follow.cu.device_get(&dev, static_cast<int>(ordinal)) != CUDA_SUCCESS ||
      g_follow.cu.device_uuid(&id, dev) != CUDA_SUCCESS) {
    return "";
  }
  std::array<std::uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), id.bytes, bytes.size());
  return uuid_text(bytes);
}

/// The section the launches on CUDA device `device` follow; on the first launch there, the
/// hello line. Called with g_follow.mu held.
std::optional<std::int32_t> section_of_device(std::uint32_t device) {
  const auto known = g_follow.section_of.find(device);
  if (known != g_follow.section_of.end()) return known->second;
  const auto section = section_for(g_follow.matcher->watch(), g_follow.rank.rank, static_cast<std::int32_t>(device));
  g_follow.section_of[device] = section;
  if (!section) {
    warn("rank " + std::to_string(g_follow.rank.rank) + " has no section in the policy: its clocks are not switched");
    return section;
  }
  const std::string line = hello_line(g_follow.pid, g_follow.rank.rank, *section, device_uuid(device));
  (void)!::write(g_follow.progress_fd, line.data(), line.size());
  return section;
}

/// A followed call (kernel launch, copy, memset, graph launch) on `stream` of `ctx`: counted by
/// the matcher; when it starts (anchors) a pack, an event is recorded on its stream just before.
/// `known_stream` false: its parameters are not decoded here; it is counted, never matched.
void on_call(CUcontext ctx, WatchKind kind, CUstream stream, bool known_stream, bool per_thread, const char* symbol,
             CUgraphExec exec) {
  if (ctx == nullptr || (kind == WatchKind::kKernel && symbol == nullptr)) return;
  uint32_t device = 0, stream_id = 0;
  if (cuptiGetDeviceId(ctx, &device) != CUPTI_SUCCESS) return;
  if (known_stream && cuptiGetStreamIdEx(ctx, stream, per_thread ? 1 : 0, &stream_id) != CUPTI_SUCCESS) return;
  const std::int64_t sid = known_stream ? static_cast<std::int64_t>(stream_id) : -1;
  std::lock_guard<std::mutex> lock(g_follow.mu);
  t_in_tracer = true;
  const auto section = section_of_device(device);
  t_in_tracer = false;
  if (!section) return;
  std::optional<PackHit> hit;
  if (kind == WatchKind::kKernel) {
    hit = g_follow.matcher->on_launch(*section, sid, demangle(symbol));
  } else if (kind == WatchKind::kGraph) {
    const auto shape = g_follow.graphs.find(exec);
    hit = g_follow.matcher->on_graph_launch(*section, sid, shape != g_follow.graphs.end() ? shape->second : GraphShape{});
  } else {
    hit = g_follow.matcher->on_call(kind, *section, sid);
  }
  if (!hit || !known_stream) return;
  t_in_tracer = true;
  CUevent ev = nullptr;
  if (g_follow.cu.event_create(&ev, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS) {
    if (g_follow.cu.event_record(ev, stream) == CUDA_SUCCESS) {
      g_follow.pending.push_back({ev, ctx, *hit});
    } else {
      g_follow.cu.event_destroy(ev);
    }
  }
  t_in_tracer = false;
}

/// Adds the kernel nodes of `graph` (and of its child graphs) to `shape`.
void add_graph_kernels(CUgraph graph, GraphShape& shape, int depth) {
  const Driver& cu = g_follow.cu;
  size_t n = 0;
  if (depth > 8 || cu.graph_get_nodes(graph, nullptr, &n) != CUDA_SUCCESS) return;
  std::vector<CUgraphNode> nodes(n);
  if (n == 0 || cu.graph_get_nodes(graph, nodes.data(), &n) != CUDA_SUCCESS) return;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type{};
    if (cu.node_get_type(node, &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph child = nullptr;
      if (cu.child_graph != nullptr && cu.child_graph(node, &child) == CUDA_SUCCESS) add_graph_kernels(child, shape, depth + 1);
      continue;
    }
    if (type != CU_GRAPH_NODE_TYPE_KERNEL) continue;
    ++shape.kernels;
    CUDA_KERNEL_NODE_PARAMS p{};
    const char* name = nullptr;
    if (cu.kernel_node_params(node, &p) == CUDA_SUCCESS) {
      if (p.func != nullptr && cu.func_name != nullptr) cu.func_name(&name, p.func);
      if (name == nullptr && p.kern != nullptr && cu.kernel_name != nullptr) cu.kernel_name(&name, p.kern);
    }
    if (name != nullptr) shape.kernel_names.push_back(demangle(name));
  }
}

/// An executable graph was instantiated from `graph`: records its shape.
void on_graph_instantiated(CUgraph graph, CUgraphExec exec) {
  if (g_follow.cu.graph_get_nodes == nullptr || g_follow.cu.node_get_type == nullptr ||
      g_follow.cu.kernel_node_params == nullptr) {
    return;
  }
  GraphShape shape;
  t_in_tracer = true;
  add_graph_kernels(graph, shape, 0);
  t_in_tracer = false;
  std::lock_guard<std::mutex> lock(g_follow.mu);
  g_follow.graphs[exec] = std::move(shape);
}

/// A followed call's stream, as decoded from its parameters.
struct FollowedCall {
  WatchKind kind;
  CUstream stream = nullptr;
  bool known_stream = true;
  bool per_thread = false;
  CUgraphExec exec = nullptr;
};

#define EMO_RT(NAME, PTSZ)            \
  case CUPTI_RUNTIME_TRACE_CBID_##NAME: \
    c.stream = reinterpret_cast<CUstream>(static_cast<const NAME##_params*>(params)->stream); c.per_thread = PTSZ; break;
#define EMO_DRV(NAME, PTSZ)          \
  case CUPTI_DRIVER_TRACE_CBID_##NAME: \
    c.stream = static_cast<const NAME##_params*>(params)->hStream; c.per_thread = PTSZ; break;

/// The runtime call `cbid` of kind `kind` (watch_kind_of_api of its name) with its stream.
FollowedCall runtime_call(WatchKind kind, CUpti_CallbackId cbid, const void* params) {
  FollowedCall c{kind};
  switch (cbid) {
    EMO_RT(cudaLaunchKernel_v7000, false) EMO_RT(cudaLaunchKernel_ptsz_v7000, true)
    EMO_RT(cudaMemcpyAsync_v3020, false) EMO_RT(cudaMemcpyAsync_ptsz_v7000, true)
    EMO_RT(cudaMemcpy2DAsync_v3020, false) EMO_RT(cudaMemcpy2DAsync_ptsz_v7000, true)
    EMO_RT(cudaMemcpy3DAsync_v3020, false) EMO_RT(cudaMemcpy3DAsync_ptsz_v7000, true)
    EMO_RT(cudaMemcpyToSymbolAsync_v3020, false) EMO_RT(cudaMemcpyToSymbolAsync_ptsz_v7000, true)
    EMO_RT(cudaMemcpyFromSymbolAsync_v3020, false) EMO_RT(cudaMemcpyFromSymbolAsync_ptsz_v7000, true)
    EMO_RT(cudaMemcpyPeerAsync_v4000, false)
    EMO_RT(cudaMemsetAsync_v3020, false) EMO_RT(cudaMemsetAsync_ptsz_v7000, true)
    EMO_RT(cudaMemset2DAsync_v3020, false) EMO_RT(cudaMemset2DAsync_ptsz_v7000, true)
    EMO_RT(cudaMemset3DAsync_v3020, false) EMO_RT(cudaMemset3DAsync_ptsz_v7000, true)
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const auto* p = static_cast<const cudaLaunchKernelExC_v11060_params*>(params);
      c.stream = p->config != nullptr ? reinterpret_cast<CUstream>(p->config->stream) : nullptr;
      c.per_thread = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: {
      const auto* p = static_cast<const cudaGraphLaunch_v10000_params*>(params);  // same layout as _ptsz
      c.stream = reinterpret_cast<CUstream>(p->stream);
      c.exec = reinterpret_cast<CUgraphExec>(p->graphExec);
      c.per_thread = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
      break;
    }
    default:
      c.known_stream = false;  // counted (the ordinals stay right), never matched
  }
  return c;
}

/// The driver call `cbid` of kind `kind` with its stream.
FollowedCall driver_call(WatchKind kind, CUpti_CallbackId cbid, const void* params) {
  FollowedCall c{kind};
  switch (cbid) {
    EMO_DRV(cuLaunchKernel, false) EMO_DRV(cuLaunchKernel_ptsz, true)
    EMO_DRV(cuMemcpyHtoDAsync_v2, false) EMO_DRV(cuMemcpyHtoDAsync_v2_ptsz, true)
    EMO_DRV(cuMemcpyDtoHAsync_v2, false) EMO_DRV(cuMemcpyDtoHAsync_v2_ptsz, true)
    EMO_DRV(cuMemcpyDtoDAsync_v2, false) EMO_DRV(cuMemcpyDtoDAsync_v2_ptsz, true)
    EMO_DRV(cuMemcpyAsync, false) EMO_DRV(cuMemcpyAsync_ptsz, true)
    EMO_DRV(cuMemcpyPeerAsync, false) EMO_DRV(cuMemcpyPeerAsync_ptsz, true)
    EMO_DRV(cuMemsetD8Async, false) EMO_DRV(cuMemsetD8Async_ptsz, true)
    EMO_DRV(cuMemsetD16Async, false) EMO_DRV(cuMemsetD16Async_ptsz, true)
    EMO_DRV(cuMemsetD32Async, false) EMO_DRV(cuMemsetD32Async_ptsz, true)
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
      c.stream = p->config != nullptr ? p->config->hStream : nullptr;
      c.per_thread = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      const auto* p = static_cast<const cuGraphLaunch_params*>(params);  // same layout as _ptsz
      c.stream = p->hStream;
      c.exec = p->hGraph;
      c.per_thread = cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
      break;
    }
    default:
      c.known_stream = false;
  }
  return c;
}
#undef EMO_RT
#undef EMO_DRV

/// Kind of each followed callback id, by domain (filled in start_follow from the callback names);
/// nullopt: a runtime call followed only so that the driver calls it makes are not counted (a
/// synchronous cudaMemcpy may enqueue its copy through the driver's asynchronous entry point).
std::map<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>, std::optional<WatchKind>> g_followed;

void CUPTIAPI follow_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (t_in_tracer) return;
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    const auto* d = static_cast<const CUpti_NvtxData*>(data);
    const char* message = nullptr;
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushA:
        message = static_cast<const nvtxRangePushA_params*>(d->functionParams)->message;
        break;
      case CUPTI_CBID_NVTX_nvtxRangeStartA:
        message = static_cast<const nvtxRangeStartA_params*>(d->functionParams)->message;
        break;
      case CUPTI_CBID_NVTX_nvtxRangePushEx: {
        const auto* a = static_cast<const nvtxRangePushEx_params*>(d->functionParams)->eventAttrib;
        if (a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII) message = a->message.ascii;
        break;
      }
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
        const auto* a = static_cast<const nvtxDomainRangePushEx_params*>(d->functionParams)->core.eventAttrib;
        if (a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII) message = a->message.ascii;
        break;
      }
      default:
        break;
    }
    if (message != nullptr) {
      std::lock_guard<std::mutex> lock(g_follow.mu);
      g_follow.matcher->on_range(message);
    }
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) {
      const auto* r = static_cast<const CUpti_ResourceData*>(data);
      const auto* gd = static_cast<const CUpti_GraphData*>(r->resourceDescriptor);
      if (gd != nullptr) on_graph_instantiated(gd->graph, gd->graphExec);
    }
    return;
  }
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  const auto followed = g_followed.find({domain, cbid});
  if (followed == g_followed.end()) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cb->callbackSite == CUPTI_API_EXIT) {
      t_in_runtime_call = false;
      return;
    }
    t_in_runtime_call = true;
    if (!followed->second) return;
    const FollowedCall c = runtime_call(*followed->second, cbid, cb->functionParams);
    on_call(cb->context, c.kind, c.stream, c.known_stream, c.per_thread, cb->symbolName, c.exec);
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cb->callbackSite == CUPTI_API_ENTER && !t_in_runtime_call) {
    if (!followed->second) return;
    const FollowedCall c = driver_call(*followed->second, cbid, cb->functionParams);
    on_call(cb->context, c.kind, c.stream, c.known_stream, c.per_thread, cb->symbolName, c.exec);
  }
}

void poll_events() {
  t_in_tracer = true;
  CUcontext current = nullptr;
  std::vector<Pending> mine;
  while (g_follow.running.load()) {
    {  // take the pending events; launches keep adding to the shared list meanwhile
      std::lock_guard<std::mutex> lock(g_follow.mu);
      mine.insert(mine.end(), g_follow.pending.begin(), g_follow.pending.end());
      g_follow.pending.clear();
    }
    // Driver calls happen without the lock, so a launch callback never waits on them.
    for (std::size_t i = 0; i < mine.size();) {
      if (mine[i].context != current) {
        g_follow.cu.ctx_set_current(mine[i].context);
        current = mine[i].context;
      }
      const CUresult rc = g_follow.cu.event_query(mine[i].event);
      if (rc == CUDA_ERROR_NOT_READY) {
        ++i;
        continue;
      }
      if (rc == CUDA_SUCCESS) {
        const std::string line = progress_line(mine[i].hit, monotonic_ns(), g_follow.pid);
        (void)!::write(g_follow.progress_fd, line.data(), line.size());  // < PIPE_BUF: one atomic write
      }
      g_follow.cu.event_destroy(mine[i].event);
      mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void finish_follow() {
  g_follow.running.store(false);
  if (g_follow.poller.joinable()) g_follow.poller.join();
  if (g_follow.subscriber != nullptr) cuptiUnsubscribe(g_follow.subscriber);
}

bool start_follow() {
  const char* watch_path = std::getenv("EMO_WATCH_FILE");
  const char* fd_text = std::getenv("EMO_PROGRESS_FD");
  if (watch_path == nullptr || fd_text == nullptr) {
    warn("follow mode needs EMO_WATCH_FILE and EMO_PROGRESS_FD (set by emo run)");
    return false;
  }
  std::ifstream in(watch_path);
  std::stringstream text;
  text << in.rdbuf();
  auto watch = parse_watch_list(text.str());
  if (!watch) {
    warn(std::string(watch_path) + ": not an emo.watch/1 list");
    return false;
  }
  g_follow.matcher = std::make_unique<PackMatcher>(std::move(*watch));
  g_follow.progress_fd = std::atoi(fd_text);
  g_follow.pid = static_cast<std::int64_t>(::getpid());
  g_follow.rank = rank_from_environment([](const char* n) { return std::getenv(n); });
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (cuda == nullptr) {
    warn("cannot find libcuda.so.1");
    return false;
  }
  Driver& cu = g_follow.cu;
  cu.event_create = reinterpret_cast<decltype(cu.event_create)>(dlsym(cuda, "cuEventCreate"));
  cu.event_record = reinterpret_cast<decltype(cu.event_record)>(dlsym(cuda, "cuEventRecord"));
  cu.event_query = reinterpret_cast<decltype(cu.event_query)>(dlsym(cuda, "cuEventQuery"));
  cu.event_destroy = reinterpret_cast<decltype(cu.event_destroy)>(dlsym(cuda, "cuEventDestroy_v2"));
  cu.ctx_set_current = reinterpret_cast<decltype(cu.ctx_set_current)>(dlsym(cuda, "cuCtxSetCurrent"));
  cu.device_get = reinterpret_cast<decltype(cu.device_get)>(dlsym(cuda, "cuDeviceGet"));
  cu.device_uuid = reinterpret_cast<decltype(cu.device_uuid)>(dlsym(cuda, "cuDeviceGetUuid_v2"));
  cu.graph_get_nodes = reinterpret_cast<decltype(cu.graph_get_nodes)>(dlsym(cuda, "cuGraphGetNodes"));
  cu.node_get_type = reinterpret_cast<decltype(cu.node_get_type)>(dlsym(cuda, "cuGraphNodeGetType"));
  cu.kernel_node_params = reinterpret_cast<decltype(cu.kernel_node_params)>(dlsym(cuda, "cuGraphKernelNodeGetParams_v2"));
  cu.child_graph = reinterpret_cast<decltype(cu.child_graph)>(dlsym(cuda, "cuGraphChildGraphNodeGetGraph"));
  cu.func_name = reinterpret_cast<decltype(cu.func_name)>(dlsym(cuda, "cuFuncGetName"));
  cu.kernel_name = reinterpret_cast<decltype(cu.kernel_name)>(dlsym(cuda, "cuKernelGetName"));
  if (cu.device_uuid == nullptr) {  // drivers before CUDA 11.4 (same answer outside MIG)
    cu.device_uuid = reinterpret_cast<decltype(cu.device_uuid)>(dlsym(cuda, "cuDeviceGetUuid"));
  }
  if (!cu.event_create || !cu.event_record || !cu.event_query || !cu.event_destroy || !cu.ctx_set_current) {
    warn("libcuda.so.1 lacks the event functions");
    return false;
  }
  if (!cupti_ok(cuptiSubscribe(&g_follow.subscriber, follow_callback, nullptr), "cuptiSubscribe")) return false;
  // Every runtime and driver call whose name watch_kind_of_api classifies: the policy builder
  // counts a trace's calls by the same rule. The table is complete before any callback is
  // enabled (callbacks read it without a lock).
  for (auto [domain, size] : {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, static_cast<CUpti_CallbackId>(CUPTI_RUNTIME_TRACE_CBID_SIZE)},
                              std::pair{CUPTI_CB_DOMAIN_DRIVER_API, static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE)}}) {
    for (CUpti_CallbackId id = 1; id < size; ++id) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      const auto kind = watch_kind_of_api(name);
      const std::string_view n(name);
      const bool guard = domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
                         (n.starts_with("cudaMemcpy") || n.starts_with("cudaMemset") || n.starts_with("cudaLaunch") ||
                          n.starts_with("cudaGraphLaunch"));
      if (kind || guard) g_followed[{domain, id}] = kind;
    }
  }
  for (const auto& entry : g_followed) {
    cupti_ok(cuptiEnableCallback(1, g_follow.subscriber, entry.first.first, entry.first.second), "cuptiEnableCallback");
  }
  cupti_ok(cuptiEnableCallback(1, g_follow.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED),
           "cuptiEnableCallback");
  for (CUpti_CallbackId id : {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
                              CUPTI_CBID_NVTX_nvtxRangeStartA, CUPTI_CBID_NVTX_nvtxDomainRangePushEx}) {
    cuptiEnableCallback(1, g_follow.subscriber, CUPTI_CB_DOMAIN_NVTX, id);  // absent without NVTX injection
  }
  g_follow.running.store(true);
  g_follow.poller = std::thread(poll_events);
  std::atexit(finish_follow);
  return true;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static bool done = false;
  if (done) return 1;
  done = true;
  const char* mode = std::getenv("EMO_TRACER_MODE");
  if (mode != nullptr && std::strcmp(mode, "follow") == 0) {
    if (!start_follow()) warn("following disabled; the program runs without clock switches");
    return 1;
  }
  const char* out = std::getenv("EMO_TRACE_OUTPUT");
  if (out == nullptr || *out == '\0') {
    warn("EMO_TRACE_OUTPUT is not set; nothing is traced (use emo trace)");
    return 1;
  }
  if (!start_trace(out)) warn("tracing disabled");
  return 1;
}
