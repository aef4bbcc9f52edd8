#include "trace/kineto/kineto_writer.h"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "core/json_text.h"

namespace emo::trace {
namespace {

/// ns as µs with exactly three decimals: 1500 -> "1.500", -5 -> "-0.005".
std::string micros(TimeNs ns) {
  const bool neg = ns < 0;
  const auto a = static_cast<std::uint64_t>(neg ? -(ns + 1) + 1 : ns);
  return fmt::format("{}{}.{:03}", neg ? "-" : "", a / 1000, a % 1000);
}

/// A host id as JSON: the number, or the original string for ids made by host_id_of_string().
std::string host_id(const Trace& t, std::int64_t id) {
  const std::int64_t s = host_id_string(id);
  if (s >= 0) return json_quote(t.strings.view(static_cast<StringId>(s)));
  return fmt::format("{}", id);
}

std::string_view category(OpKind k) {
  switch (k) {
    case OpKind::kKernel: return "kernel";
    case OpKind::kMemcpy: return "gpu_memcpy";
    case OpKind::kMemset: return "gpu_memset";
    case OpKind::kRuntime: return "cuda_runtime";
    case OpKind::kDriver: return "cuda_driver";
    case OpKind::kFrameworkOp: return "cpu_op";
    case OpKind::kAnnotation: return "user_annotation";
    case OpKind::kGpuAnnotation: return "gpu_user_annotation";
    case OpKind::kSync: return "cuda_sync";
  }
  return "unknown";
}

std::string_view kineto_sync_kind(SyncKind k) {
  switch (k) {
    case SyncKind::kStreamSync: return "Stream Sync";
    case SyncKind::kEventSync: return "Event Sync";
    case SyncKind::kContextSync: return "Context Sync";
    case SyncKind::kStreamWaitEvent: return "Stream Wait Event";
    case SyncKind::kUnknown: break;
  }
  return "Unknown";
}

}  // namespace

std::string to_kineto_json(const Trace& t) {
  std::string out = "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [";
  for (std::size_t i = 0; i < t.meta.gpus.size(); ++i) {
    const GpuInfo& g = t.meta.gpus[i];
    out += fmt::format("{}\n    {{\"id\": {}, \"name\": {}, \"totalGlobalMem\": {}, \"computeMajor\": {}, "
                       "\"computeMinor\": {}, \"numSms\": {}}}",
                       i ? "," : "", g.device, json_quote(g.name), g.total_memory_bytes, g.compute_major,
                       g.compute_minor, g.sm_count);
  }
  out += "\n  ],\n";
  if (t.meta.rank >= 0) {
    out += fmt::format("  \"distributedInfo\": {{\"rank\": {}, \"world_size\": {}, \"backend\": {}}},\n", t.meta.rank,
                       t.meta.world_size, json_quote(t.meta.backend));
  }
  out += "  \"traceEvents\": [";
  // Side tables by op row.
  std::vector<std::int64_t> sync_of(t.ops.size(), -1), coll_of(t.ops.size(), -1);
  for (std::size_t i = 0; i < t.syncs.size(); ++i) sync_of[t.syncs.op[i]] = static_cast<std::int64_t>(i);
  for (std::size_t i = 0; i < t.collectives.size(); ++i) coll_of[t.collectives.op[i]] = static_cast<std::int64_t>(i);
  const OpTable& ops = t.ops;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpKind k = ops.kind[i];
    std::string args;
    auto arg = [&](std::string_view key, const std::string& value) {
      args += fmt::format("{}{}: {}", args.empty() ? "" : ", ", json_quote(key), value);
    };
    std::string pid, tid;
    if (is_gpu_op(k) || k == OpKind::kGpuAnnotation) {
      pid = fmt::format("{}", ops.device[i]);
      tid = fmt::format("{}", ops.stream[i]);
      arg("device", fmt::format("{}", ops.device[i]));
      arg("stream", fmt::format("{}", ops.stream[i]));
    } else if (k == OpKind::kSync) {
      const auto s = static_cast<std::size_t>(sync_of[i]);
      if (ops.device[i] != kNone) {
        pid = fmt::format("{}", ops.device[i]);
        arg("device", pid);
      }
      arg("cuda_sync_kind", json_quote(kineto_sync_kind(t.syncs.kind[s])));
      arg("stream", fmt::format("{}", t.syncs.stream[s]));
      arg("wait_on_stream", fmt::format("{}", t.syncs.event_stream[s]));
      arg("wait_on_cuda_event_record_corr_id", fmt::format("{}", t.syncs.event_record_correlation[s]));
      arg("wait_on_cuda_event_id", fmt::format("{}", t.syncs.event_id[s]));
    } else {
      if (ops.process[i] != kNone) pid = host_id(t, ops.process[i]);
      if (ops.thread[i] != kNone) tid = host_id(t, ops.thread[i]);
    }
    if (ops.correlation[i] != kNone) arg("correlation", fmt::format("{}", ops.correlation[i]));
    if (ops.external_id[i] != kNone) arg("External id", fmt::format("{}", ops.external_id[i]));
    if (coll_of[i] >= 0) {
      const auto c = static_cast<std::size_t>(coll_of[i]);
      const CollectiveTable& ct = t.collectives;
      arg("Collective name", json_quote(t.strings.view(ct.name[c])));
      if (!t.strings.view(ct.group[c]).empty()) arg("Process Group Name", json_quote(t.strings.view(ct.group[c])));
      if (!t.strings.view(ct.group_ranks[c]).empty())
        arg("Process Group Ranks", json_quote(t.strings.view(ct.group_ranks[c])));
      if (ct.group_size[c] != kNone) arg("Group size", fmt::format("{}", ct.group_size[c]));
      if (ct.in_nelems[c] != kNone) arg("In msg nelems", fmt::format("{}", ct.in_nelems[c]));
      if (ct.out_nelems[c] != kNone) arg("Out msg nelems", fmt::format("{}", ct.out_nelems[c]));
      if (!t.strings.view(ct.dtype[c]).empty()) arg("dtype", json_quote(t.strings.view(ct.dtype[c])));
      if (ct.sequence[c] != kNone) arg("Seq", fmt::format("{}", ct.sequence[c]));
      if (ct.src_rank[c] != kNone) arg("Src Rank", fmt::format("{}", ct.src_rank[c]));
      if (ct.dst_rank[c] != kNone) arg("Dst Rank", fmt::format("{}", ct.dst_rank[c]));
    }
    out += fmt::format("{}\n    {{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}", i ? "," : "", category(k),
                       json_quote(t.strings.view(ops.name[i])));
    if (!pid.empty()) out += ", \"pid\": " + pid;
    if (!tid.empty()) out += ", \"tid\": " + tid;
    out += fmt::format(", \"ts\": {}, \"dur\": {}, \"args\": {{{}}}}}", micros(ops.start_ns[i] - t.meta.base_time_ns),
                       micros(ops.dur_ns[i]), args);
  }
  out += "\n  ]";
  if (t.meta.base_time_ns != 0) out += fmt::format(",\n  \"baseTimeNanoseconds\": {}", t.meta.base_time_ns);
  out += "\n}\n";
  return out;
}

}  // namespace emo::trace
