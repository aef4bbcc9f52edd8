#include "trace/trace.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

namespace emo::trace {

std::string_view op_kind_name(OpKind kind) noexcept {
  switch (kind) {
    case OpKind::kKernel: return "kernel";
    case OpKind::kMemcpy: return "memcpy";
    case OpKind::kMemset: return "memset";
    case OpKind::kRuntime: return "runtime";
    case OpKind::kDriver: return "driver";
    case OpKind::kFrameworkOp: return "framework_op";
    case OpKind::kAnnotation: return "annotation";
    case OpKind::kGpuAnnotation: return "gpu_annotation";
    case OpKind::kSync: return "sync";
  }
  return "unknown";
}

std::string_view sync_kind_name(SyncKind kind) noexcept {
  switch (kind) {
    case SyncKind::kStreamSync: return "stream_sync";
    case SyncKind::kEventSync: return "event_sync";
    case SyncKind::kContextSync: return "context_sync";
    case SyncKind::kStreamWaitEvent: return "stream_wait_event";
    case SyncKind::kUnknown: return "unknown";
  }
  return "unknown";
}

std::optional<SyncKind> sync_kind_of_api_call(std::string_view name) noexcept {
  const std::string_view base = name.substr(0, name.find('_'));  // drop "_v3020", "_ptsz"
  std::string_view call;
  for (std::string_view prefix : {"cuda", "hip", "cu"}) {
    if (base.starts_with(prefix)) {
      call = base.substr(prefix.size());
      break;
    }
  }
  if (call == "DeviceSynchronize" || call == "CtxSynchronize" || call == "ThreadSynchronize") {
    return SyncKind::kContextSync;
  }
  if (call == "StreamSynchronize") return SyncKind::kStreamSync;
  if (call == "EventSynchronize") return SyncKind::kEventSync;
  if (call == "StreamWaitEvent") return SyncKind::kStreamWaitEvent;
  return std::nullopt;
}

std::string_view trace_format_name(TraceFormat f) noexcept {
  switch (f) {
    case TraceFormat::kKinetoJson: return "kineto-json";
    case TraceFormat::kNsysSqlite: return "nsys-sqlite";
    case TraceFormat::kEmoTrace: return "emo-trace";
  }
  return "unknown";
}

void OpTable::reserve(std::size_t n) {
  kind.reserve(n);
  start_ns.reserve(n);
  dur_ns.reserve(n);
  name.reserve(n);
  device.reserve(n);
  stream.reserve(n);
  process.reserve(n);
  thread.reserve(n);
  correlation.reserve(n);
  external_id.reserve(n);
}

std::uint32_t OpTable::push(OpKind k, TimeNs start, TimeNs dur, StringId name_id,
                            std::int32_t dev, std::int64_t strm, std::int64_t pid,
                            std::int64_t tid, std::int64_t corr, std::int64_t ext) {
  const auto row = static_cast<std::uint32_t>(kind.size());
  kind.push_back(k);
  start_ns.push_back(start);
  dur_ns.push_back(dur);
  name.push_back(name_id);
  device.push_back(dev);
  stream.push_back(strm);
  process.push_back(pid);
  thread.push_back(tid);
  correlation.push_back(corr);
  external_id.push_back(ext);
  return row;
}

std::size_t OpTable::memory_bytes() const noexcept {
  return kind.capacity() * sizeof(OpKind) + start_ns.capacity() * sizeof(TimeNs) +
         dur_ns.capacity() * sizeof(TimeNs) + name.capacity() * sizeof(StringId) +
         device.capacity() * sizeof(std::int32_t) +
         (stream.capacity() + process.capacity() + thread.capacity() + correlation.capacity() +
          external_id.capacity()) * sizeof(std::int64_t);
}

namespace {

template <typename T>
void permute(std::vector<T>& column, const std::vector<std::uint32_t>& order) {
  std::vector<T> out;
  out.reserve(column.size());
  for (std::uint32_t i : order) out.push_back(column[i]);
  column.swap(out);
}

/// Sorts the op table by start time (stable) and rewrites the op indexes of the side tables.
void sort_ops(Trace& t) {
  OpTable& ops = t.ops;
  const std::size_t n = ops.size();
  bool sorted = true;
  for (std::size_t i = 1; i < n; ++i) {
    if (ops.start_ns[i] < ops.start_ns[i - 1]) {
      ++t.quirks.out_of_order;
      sorted = false;
    }
  }
  if (sorted) return;
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return ops.start_ns[a] < ops.start_ns[b];
  });
  std::vector<std::uint32_t> new_index(n);
  for (std::uint32_t pos = 0; pos < n; ++pos) new_index[order[pos]] = pos;
  permute(ops.kind, order);
  permute(ops.start_ns, order);
  permute(ops.dur_ns, order);
  permute(ops.name, order);
  permute(ops.device, order);
  permute(ops.stream, order);
  permute(ops.process, order);
  permute(ops.thread, order);
  permute(ops.correlation, order);
  permute(ops.external_id, order);
  for (auto& row : t.syncs.op) row = new_index[row];
  for (auto& row : t.collectives.op) row = new_index[row];
}

/// Orders the collective table by op row, so that Trace::is_collective can binary-search it.
void sort_collectives(CollectiveTable& c) {
  if (std::is_sorted(c.op.begin(), c.op.end())) return;
  std::vector<std::uint32_t> order(c.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return c.op[a] < c.op[b]; });
  permute(c.op, order);
  permute(c.name, order);
  permute(c.group, order);
  permute(c.group_ranks, order);
  permute(c.group_size, order);
  permute(c.in_nelems, order);
  permute(c.out_nelems, order);
  permute(c.dtype, order);
  permute(c.sequence, order);
  permute(c.src_rank, order);
  permute(c.dst_rank, order);
}

struct PairHash {
  std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const noexcept {
    // Unsigned arithmetic: ids may be near -2^62 (host_id_of_string), where a signed multiply
    // would overflow.
    const auto a = static_cast<std::uint64_t>(p.first);
    const auto b = static_cast<std::uint64_t>(p.second);
    return std::hash<std::uint64_t>{}(a * 0x9E3779B97F4A7C15ull ^ b);
  }
};

bool is_host_range(OpKind k) noexcept {
  return k == OpKind::kRuntime || k == OpKind::kDriver || k == OpKind::kFrameworkOp ||
         k == OpKind::kAnnotation;
}

/// On each CPU thread, a child that starts inside its parent but ends up to `tolerance` ns after
/// it (profiler rounding; seen up to 0.25 µs in real Kineto traces) is clamped to the parent's
/// end, so that host ops nest properly.
void clamp_children(Trace& t, TimeNs tolerance) {
  OpTable& ops = t.ops;
  // Group host ops by thread with a counting sort; ops are already sorted by start, so each
  // thread's list is in start order.
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, std::uint32_t, PairHash> thread_of;
  std::vector<std::uint32_t> thread_index(ops.size(), 0);
  std::vector<std::uint32_t> bucket_size;
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    if (!is_host_range(ops.kind[i])) continue;
    auto [it, added] = thread_of.try_emplace({ops.process[i], ops.thread[i]},
                                             static_cast<std::uint32_t>(bucket_size.size()));
    if (added) bucket_size.push_back(0);
    thread_index[i] = it->second;
    ++bucket_size[it->second];
  }
  std::vector<std::uint32_t> bucket_start(bucket_size.size() + 1, 0);
  for (std::size_t b = 0; b < bucket_size.size(); ++b) bucket_start[b + 1] = bucket_start[b] + bucket_size[b];
  std::vector<std::uint32_t> host(bucket_start.back());
  std::vector<std::uint32_t> fill(bucket_start.begin(), bucket_start.end() - 1);
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    if (is_host_range(ops.kind[i])) host[fill[thread_index[i]]++] = i;
  }
  // Within equal starts, the enclosing (longer) op must come first.
  auto longer_first = [&](std::uint32_t a, std::uint32_t b) { return ops.dur_ns[a] > ops.dur_ns[b]; };
  std::vector<std::uint32_t> stack;
  for (std::size_t b = 0; b + 1 < bucket_start.size(); ++b) {
    const auto first = host.begin() + bucket_start[b];
    const auto last = host.begin() + bucket_start[b + 1];
    for (auto run = first; run != last;) {
      auto run_end = run + 1;
      while (run_end != last && ops.start_ns[*run_end] == ops.start_ns[*run]) ++run_end;
      if (run_end - run > 1) std::stable_sort(run, run_end, longer_first);
      run = run_end;
    }
    stack.clear();
    for (auto it = first; it != last; ++it) {
      const std::uint32_t i = *it;
      while (!stack.empty() && ops.end_ns(stack.back()) <= ops.start_ns[i]) stack.pop_back();
      if (!stack.empty()) {
        const TimeNs parent_end = ops.end_ns(stack.back());
        const TimeNs overhang = ops.end_ns(i) - parent_end;
        if (overhang > 0 && overhang <= tolerance) {
          ops.dur_ns[i] = parent_end - ops.start_ns[i];
          ++t.quirks.clamped_children;
          t.quirks.max_clamp_ns = std::max(t.quirks.max_clamp_ns, overhang);
        }
      }
      stack.push_back(i);
    }
  }
}

void count_correlation_quirks(Trace& t) {
  const OpTable& ops = t.ops;
  std::vector<std::int64_t> api;
  std::vector<std::int64_t> gpu;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (is_api_call(ops.kind[i]) && ops.correlation[i] != kNone) api.push_back(ops.correlation[i]);
    if (is_gpu_op(ops.kind[i])) gpu.push_back(ops.correlation[i]);
  }
  std::sort(api.begin(), api.end());
  std::sort(gpu.begin(), gpu.end());
  for (std::size_t i = 0; i < gpu.size();) {
    std::size_t j = i;
    while (j < gpu.size() && gpu[j] == gpu[i]) ++j;
    if (gpu[i] == kNone || !std::binary_search(api.begin(), api.end(), gpu[i])) {
      t.quirks.gpu_ops_without_launch += static_cast<std::int64_t>(j - i);
    }
    if (gpu[i] != kNone && j - i > 1) {
      t.quirks.duplicate_gpu_correlation += static_cast<std::int64_t>(j - i);
    }
    i = j;
  }
}

const char* plural(std::int64_t n, const char* one, const char* many) { return n == 1 ? one : many; }

void count_sync_api_calls(Trace& t) {
  // Names are interned: classify each distinct name once.
  std::vector<std::int8_t> is_sync(t.strings.size(), -1);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (!is_api_call(t.ops.kind[i])) continue;
    std::int8_t& known = is_sync[t.ops.name[i]];
    if (known < 0) known = sync_kind_of_api_call(t.strings.view(t.ops.name[i])).has_value();
    t.quirks.sync_api_calls += known;
  }
}

void write_warnings(Trace& t) {
  const QuirkCounts& q = t.quirks;
  auto& w = t.warnings;
  if (q.out_of_order > 0) {
    w.push_back(fmt::format("events not sorted by time ({} out of order); sorted on load",
                            q.out_of_order));
  }
  if (q.duplicate_gpu_correlation > 0) {
    w.push_back(fmt::format("{} GPU ops share their correlation id with another GPU op "
                            "(CUDA graph launches, or duplicated records)",
                            q.duplicate_gpu_correlation));  // always >= 2
  }
  if (q.gpu_ops_without_launch > 0) {
    w.push_back(fmt::format("{} GPU {} no launching runtime/driver call in the trace",
                            q.gpu_ops_without_launch,
                            plural(q.gpu_ops_without_launch, "op has", "ops have")));
  }
  for (std::string& c : changed_on_load(t)) w.push_back(std::move(c));
  if (q.zero_duration > 0) {
    w.push_back(fmt::format("{} {} zero duration", q.zero_duration,
                            plural(q.zero_duration, "event has", "events have")));
  }
  if (q.string_ids > 0) {
    w.push_back(fmt::format("{} pid/tid/stream values were strings; converted", q.string_ids));
  }
  if (q.unknown_category > 0) {
    w.push_back(fmt::format("{} complete events of categories EMO does not model were skipped",
                            q.unknown_category));
  }
  if (t.syncs.size() == 0 && q.sync_api_calls > 0) {
    w.push_back(fmt::format(
        "no sync records, but {} synchronising API {} (cudaStreamSynchronize, ...); waits will be "
        "inferred from call names. For exact ones, profile PyTorch with experimental_config="
        "torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)",
        q.sync_api_calls, plural(q.sync_api_calls, "call", "calls")));
  }
  if (t.ops.size() == 0) {
    w.push_back("no events of the kinds EMO models (GPU ops, API calls, framework ops)");
  }
}

}  // namespace

std::vector<std::string> changed_on_load(const Trace& t) {
  const QuirkCounts& q = t.quirks;
  std::vector<std::string> out;
  if (q.clamped_children > 0) {
    out.push_back(fmt::format("{} host {} after the enclosing op (by up to {} ns); "
                              "clamped to the parent's end",
                              q.clamped_children, plural(q.clamped_children, "op ended", "ops ended"),
                              q.max_clamp_ns));
  }
  if (q.negative_duration > 0) {
    out.push_back(fmt::format("{} {} a negative duration; set to 0", q.negative_duration,
                              plural(q.negative_duration, "event had", "events had")));
  }
  return out;
}

void Trace::finish(TimeNs clamp_tolerance_ns) {
  sort_ops(*this);
  sort_collectives(collectives);
  clamp_children(*this, clamp_tolerance_ns);
  count_correlation_quirks(*this);
  count_sync_api_calls(*this);
  std::sort(meta.gpus.begin(), meta.gpus.end(),
            [](const GpuInfo& a, const GpuInfo& b) { return a.device < b.device; });
  write_warnings(*this);
}

bool Trace::is_collective(std::uint32_t row) const noexcept {
  return std::binary_search(collectives.op.begin(), collectives.op.end(), row);
}

std::string_view Trace::gpu_name(std::int32_t device) const noexcept {
  for (const GpuInfo& g : meta.gpus) {
    if (g.device == device) return g.name;
  }
  return {};
}

std::size_t Trace::memory_bytes() const noexcept {
  return ops.memory_bytes() + strings.memory_bytes() +
         syncs.size() * (sizeof(std::uint32_t) + sizeof(SyncKind) + 4 * sizeof(std::int64_t)) +
         collectives.size() * (8 * sizeof(std::uint32_t) + 3 * sizeof(std::int64_t));
}

}  // namespace emo::trace
