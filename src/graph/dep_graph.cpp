#include "graph/dep_graph.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "graph/algorithms.h"

namespace emo::graph {
namespace {

using trace::kNone;
using trace::OpKind;
using trace::SyncKind;
using trace::Trace;

constexpr std::uint32_t kNoNode = std::numeric_limits<std::uint32_t>::max();

struct RawEdge {
  std::uint32_t from_tp;
  std::uint32_t to_tp;
  TimeNs lag;  // physical lag before the gap rule
  EdgeType type;
  bool inferred;
};

/// A GPU stream: its nodes in execution order, with the time each was launched (the start of
/// its launching API call; its own start when it has none).
struct StreamOps {
  std::int32_t device;
  std::int64_t stream;
  std::vector<std::uint32_t> nodes;
  std::vector<TimeNs> launched;
};

/// Calls that block the host until GPU work is done, besides the sync calls: synchronous copies.
bool is_blocking_copy(std::string_view name) {
  // "hipMemcpyWithStream" has no '_'; "cudaMemcpy_v3020" (nsys) is cut at it.
  const std::string_view base = name.substr(0, name.find('_'));
  for (std::string_view n : {"cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol",
                             "cudaMemcpyFromSymbol", "cudaMemcpyPeer", "hipMemcpy", "hipMemcpyWithStream",
                             "hipMemcpy2D", "cuMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH",
                             "cuMemcpyDtoD"}) {
    if (base == n) return true;
  }
  return false;
}

bool is_event_record(std::string_view name) {
  const std::string_view base = name.substr(0, name.find('_'));
  return base == "cudaEventRecord" || base == "cudaEventRecordWithFlags" ||
         base == "hipEventRecord" || base == "cuEventRecord";
}

class Builder {
 public:
  Builder(const Trace& t, const Window& w) : t_(t), ops_(t.ops) { g_.window = w; }

  DepGraph build() {
    select_nodes();
    program_order_edges();
    stream_edges();
    launch_edges();
    collective_edges();
    sync_record_edges();
    inferred_sync_edges();
    assign_lags_and_csr();
    pin_collectives();
    topological_order();
    return std::move(g_);
  }

 private:
  // ---- nodes -------------------------------------------------------------------------------

  std::uint32_t add_node(std::uint32_t row) {
    const auto n = static_cast<std::uint32_t>(g_.op.size());
    g_.op.push_back(row);
    g_.dur.push_back(ops_.dur_ns[row]);
    g_.rec_start.push_back(ops_.start_ns[row]);
    g_.rec_end.push_back(ops_.end_ns(row));
    g_.gpu.push_back(trace::is_gpu_op(ops_.kind[row]) ? 1 : 0);
    g_.release.push_back(INT64_MIN);
    node_of_op_[row] = n;
    return n;
  }

  bool in_window(TimeNs ts) const {
    return ts >= g_.window.begin_ns && ts < g_.window.end_ns;
  }

  void select_nodes() {
    node_of_op_.assign(ops_.size(), kNoNode);
    // API calls in the window, then the GPU ops they launched (or, without a launcher, in it).
    for (std::uint32_t i = 0; i < ops_.size(); ++i) {
      if (trace::is_api_call(ops_.kind[i]) && in_window(ops_.start_ns[i]) &&
          ops_.correlation[i] != kNone) {
        call_of_corr_.emplace_back(ops_.correlation[i], i);
      }
    }
    // Sorted by correlation, first call (lowest row = earliest) first among equals.
    std::sort(call_of_corr_.begin(), call_of_corr_.end());
    find_relevant_threads();
    for (std::uint32_t i = 0; i < ops_.size(); ++i) {
      const OpKind k = ops_.kind[i];
      if (trace::is_api_call(k)) {
        if (in_window(ops_.start_ns[i]) && relevant_threads_.count(thread_key(i)) != 0) add_node(i);
      } else if (trace::is_gpu_op(k)) {
        const bool launched_in_window = call_row(ops_.correlation[i]) != kNoNode;
        if (launched_in_window || (!has_any_launcher(i) && in_window(ops_.start_ns[i]))) {
          add_node(i);
        }
      }
    }
    if (!g_.op.empty()) {
      // A named window starts where its annotation starts (its CPU time before the first API
      // call counts); the whole trace starts at its first node.
      g_.window_start_ns = g_.window.begin_ns != INT64_MIN
                               ? g_.window.begin_ns
                               : *std::min_element(g_.rec_start.begin(), g_.rec_start.end());
    }
  }

  std::uint64_t thread_key(std::uint32_t row) const {
    return static_cast<std::uint64_t>(ops_.process[row]) * 0x9E3779B97F4A7C15ull ^
           static_cast<std::uint64_t>(ops_.thread[row]);
  }

  /// Threads that launch GPU work or block on it. Others (an NCCL watchdog polling with
  /// cudaEventQuery, a data loader) neither delay the GPU nor wait for it, so they are left out:
  /// their calls would otherwise stretch the window's end with unrelated CPU time.
  void find_relevant_threads() {
    std::vector<std::int64_t> gpu_corr;
    for (std::uint32_t i = 0; i < ops_.size(); ++i) {
      if (trace::is_gpu_op(ops_.kind[i])) gpu_corr.push_back(ops_.correlation[i]);
    }
    std::sort(gpu_corr.begin(), gpu_corr.end());
    for (std::uint32_t i = 0; i < ops_.size(); ++i) {
      if (!trace::is_api_call(ops_.kind[i]) || !in_window(ops_.start_ns[i])) continue;
      const std::uint64_t key = thread_key(i);
      if (relevant_threads_.count(key) != 0) continue;
      const std::string_view name = t_.strings.view(ops_.name[i]);
      if (std::binary_search(gpu_corr.begin(), gpu_corr.end(), ops_.correlation[i]) ||
          trace::sync_kind_of_api_call(name).has_value() || is_blocking_copy(name)) {
        relevant_threads_.insert(key);
      }
    }
  }

  /// True when some API call anywhere in the trace has the op's correlation id.
  bool has_any_launcher(std::uint32_t gpu_row) {
    if (all_calls_.empty() && !all_calls_built_) {
      for (std::uint32_t i = 0; i < ops_.size(); ++i) {
        if (trace::is_api_call(ops_.kind[i]) && ops_.correlation[i] != kNone) {
          all_calls_.push_back(ops_.correlation[i]);
        }
      }
      std::sort(all_calls_.begin(), all_calls_.end());
      all_calls_built_ = true;
    }
    return ops_.correlation[gpu_row] != kNone &&
           std::binary_search(all_calls_.begin(), all_calls_.end(), ops_.correlation[gpu_row]);
  }

  /// Trace row of the (first) API call in the window with correlation `corr`, or kNoNode.
  std::uint32_t call_row(std::int64_t corr) const {
    if (corr == kNone) return kNoNode;
    const auto it = std::lower_bound(call_of_corr_.begin(), call_of_corr_.end(),
                                     std::pair<std::int64_t, std::uint32_t>{corr, 0});
    return (it != call_of_corr_.end() && it->first == corr) ? it->second : kNoNode;
  }

  std::uint32_t node_of_call(std::int64_t corr) const {
    const std::uint32_t row = call_row(corr);
    return row == kNoNode ? kNoNode : node_of_op_[row];
  }

  void edge(std::uint32_t from_tp, std::uint32_t to_tp, TimeNs lag, EdgeType type,
            bool inferred = false) {
    raw_.push_back({from_tp, to_tp, lag, type, inferred});
  }

  // ---- CPU threads: program order and nesting ----------------------------------------------

  void program_order_edges() {
    std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> threads;
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
      if (g_.gpu[n]) continue;
      const std::uint32_t r = g_.op[n];
      threads[thread_key(r)].push_back(n);
    }
    for (auto& [key, nodes] : threads) {
      // Nodes are in start order (trace rows are sorted); parents first on ties.
      std::stable_sort(nodes.begin(), nodes.end(), [&](std::uint32_t a, std::uint32_t b) {
        if (g_.rec_start[a] != g_.rec_start[b]) return g_.rec_start[a] < g_.rec_start[b];
        return g_.rec_end[a] > g_.rec_end[b];
      });
      // A stack of open calls; each level remembers its last finished child.
      struct Level {
        std::uint32_t node;
        std::uint32_t last_child;
      };
      std::vector<Level> stack;
      std::uint32_t last_top = kNoNode;
      for (std::uint32_t n : nodes) {
        while (!stack.empty() && g_.rec_end[stack.back().node] <= g_.rec_start[n]) {
          const std::uint32_t closed = stack.back().node;
          stack.pop_back();
          if (stack.empty()) {
            last_top = closed;
          } else {
            stack.back().last_child = closed;
          }
        }
        if (stack.empty()) {
          if (last_top != kNoNode) {
            edge(DepGraph::end_tp(last_top), DepGraph::start_tp(n),
                 g_.rec_start[n] - g_.rec_end[last_top], EdgeType::kProgramOrder);
          }
        } else {
          Level& parent = stack.back();
          if (parent.last_child != kNoNode) {
            edge(DepGraph::end_tp(parent.last_child), DepGraph::start_tp(n),
                 g_.rec_start[n] - g_.rec_end[parent.last_child], EdgeType::kProgramOrder);
          } else {
            edge(DepGraph::start_tp(parent.node), DepGraph::start_tp(n),
                 g_.rec_start[n] - g_.rec_start[parent.node], EdgeType::kNesting);
          }
          edge(DepGraph::end_tp(n), DepGraph::end_tp(parent.node), 0, EdgeType::kNesting);
        }
        stack.push_back({n, kNoNode});
      }
    }
  }

  // ---- GPU streams ---------------------------------------------------------------------------

  void stream_edges() {
    std::unordered_map<std::uint64_t, std::uint32_t> index;
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
      if (!g_.gpu[n]) continue;
      const std::uint32_t r = g_.op[n];
      const std::uint64_t key = static_cast<std::uint64_t>(ops_.device[r]) << 48 ^
                                static_cast<std::uint64_t>(ops_.stream[r]);
      auto [it, added] = index.try_emplace(key, static_cast<std::uint32_t>(streams_.size()));
      if (added) streams_.push_back({ops_.device[r], ops_.stream[r], {}, {}});
      StreamOps& s = streams_[it->second];
      s.nodes.push_back(n);
      const std::uint32_t call = node_of_call(ops_.correlation[r]);
      s.launched.push_back(call == kNoNode ? g_.rec_start[n] : g_.rec_start[call]);
    }
    release_backlog(index);
    for (StreamOps& s : streams_) {
      // Nodes were added in start order; launch times are non-decreasing in practice, and the
      // lookups below need them sorted: make them so (a running maximum).
      for (std::size_t i = 1; i < s.launched.size(); ++i) {
        s.launched[i] = std::max(s.launched[i], s.launched[i - 1]);
      }
      for (std::size_t i = 1; i < s.nodes.size(); ++i) {
        edge(DepGraph::end_tp(s.nodes[i - 1]), DepGraph::start_tp(s.nodes[i]), 0,
             EdgeType::kStreamOrder);
      }
    }
  }

  /// In a window, a stream may still be busy with work launched before it: the first op of
  /// each stream may not start before that work ends (a release time, not an edge).
  void release_backlog(const std::unordered_map<std::uint64_t, std::uint32_t>& index) {
    if (g_.window.begin_ns == INT64_MIN) return;
    for (std::uint32_t i = 0; i < ops_.size(); ++i) {
      if (!trace::is_gpu_op(ops_.kind[i]) || node_of_op_[i] != kNoNode) continue;
      const std::uint64_t key = static_cast<std::uint64_t>(ops_.device[i]) << 48 ^
                                static_cast<std::uint64_t>(ops_.stream[i]);
      const auto it = index.find(key);
      if (it == index.end()) continue;
      const std::uint32_t first = streams_[it->second].nodes.front();
      if (ops_.start_ns[i] >= g_.rec_start[first]) continue;
      const TimeNs busy_until = std::min(ops_.end_ns(i), g_.rec_start[first]);
      g_.release[first] = std::max(g_.release[first], busy_until);
    }
  }

  void launch_edges() {
    const bool linked = !t_.meta.job.ranks.empty();
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
      if (!g_.gpu[n]) continue;
      const std::uint32_t call = node_of_call(ops_.correlation[g_.op[n]]);
      if (call == kNoNode) continue;
      edge(DepGraph::start_tp(call), DepGraph::start_tp(n), 0, EdgeType::kLaunch);
      if (linked) device_of_process_.emplace(ops_.process[g_.op[call]], ops_.device[g_.op[n]]);
    }
  }

  /// Linked traces (trace/job.h): the GPU a host call's rank drives, so that a sync that names
  /// no stream waits for its own rank's streams only; kNone in a trace of one process.
  std::int32_t scope_of(std::uint32_t call) const {
    const auto it = device_of_process_.find(ops_.process[g_.op[call]]);
    return it == device_of_process_.end() ? static_cast<std::int32_t>(kNone) : it->second;
  }

  /// Linked traces: each linked collective ends when its last participant has arrived and the
  /// transfer is done. The transfer time T is the shortest participant's recorded duration: the
  /// last arrival waits for no one, so where the ranks' records agree its kernel is the shortest,
  /// and where they do not (an order-based match that paired different collectives) the minimum
  /// never makes a rank's collective longer than recorded. Every participant's duration becomes T. With hub h (the participant of
  /// the first rank): S(q) -> E(h) lag T and E(h) -> E(q) lag 0 for every other participant q,
  /// so E(q) = E(h) = max over participants of S + T, in 2(m - 1) edges for m participants.
  void collective_edges() {
    const trace::CollectiveTable& ct = t_.collectives;
    if (ct.match.empty()) return;
    std::map<std::int64_t, std::vector<std::uint32_t>> instances;
    for (std::size_t c = 0; c < ct.size(); ++c) {
      const std::uint32_t n = ct.match[c] == kNone ? kNoNode : node_of_op_[ct.op[c]];
      if (n != kNoNode) instances[ct.match[c]].push_back(n);
    }
    for (const auto& [id, nodes] : instances) {
      if (nodes.size() < 2) continue;
      TimeNs transfer = INT64_MAX;
      for (std::uint32_t n : nodes) transfer = std::min(transfer, g_.dur[n]);
      std::uint32_t hub = nodes[0];
      for (std::uint32_t n : nodes) {
        if (ops_.device[g_.op[n]] < ops_.device[g_.op[hub]]) hub = n;
      }
      for (std::uint32_t n : nodes) {
        g_.dur[n] = transfer;
        if (n == hub) continue;
        edge(DepGraph::start_tp(n), DepGraph::end_tp(hub), transfer, EdgeType::kCollective);
        edge(DepGraph::end_tp(hub), DepGraph::end_tp(n), 0, EdgeType::kCollective);
      }
    }
  }

  // ---- syncs -----------------------------------------------------------------------------------

  /// Last node of `s` launched strictly before `t`, or kNoNode.
  static std::uint32_t last_launched_before(const StreamOps& s, TimeNs t) {
    const auto it = std::lower_bound(s.launched.begin(), s.launched.end(), t);
    if (it == s.launched.begin()) return kNoNode;
    return s.nodes[static_cast<std::size_t>(it - s.launched.begin()) - 1];
  }

  /// First node of `s` launched at or after `t`, or kNoNode.
  static std::uint32_t first_launched_after(const StreamOps& s, TimeNs t) {
    const auto it = std::lower_bound(s.launched.begin(), s.launched.end(), t);
    if (it == s.launched.end()) return kNoNode;
    return s.nodes[static_cast<std::size_t>(it - s.launched.begin())];
  }

  const StreamOps* find_stream(std::int32_t device, std::int64_t stream) const {
    for (const StreamOps& s : streams_) {
      if (s.stream == stream && (device == kNone || s.device == device)) return &s;
    }
    return nullptr;
  }

  /// E(last op of stream launched before `t`) -> E(call).
  void sync_on_stream(const StreamOps& s, std::uint32_t call, TimeNs t, bool inferred) {
    const std::uint32_t op = last_launched_before(s, t);
    if (op != kNoNode) edge(DepGraph::end_tp(op), DepGraph::end_tp(call), 0, EdgeType::kHostSync, inferred);
  }

  /// sync_on_stream for every stream of `device` (kNone: the call's rank's GPU in linked traces,
  /// else every device), with the ops launched before `t` (default: the call's start).
  void sync_on_device(std::int32_t device, std::uint32_t call, bool inferred, TimeNs t = INT64_MIN) {
    if (device == kNone) device = scope_of(call);
    if (t == INT64_MIN) t = g_.rec_start[call];
    for (const StreamOps& s : streams_) {
      if (device == kNone || s.device == device) sync_on_stream(s, call, t, inferred);
    }
  }

  /// E(last op launched before `t` on every stream of dst's device but dst) -> S(first), the
  /// first op of dst launched after the wait call: a stream wait whose event stream is unknown.
  void wait_on_other_streams(const StreamOps& dst, std::uint32_t first, TimeNs t) {
    for (const StreamOps& s : streams_) {
      if (&s == &dst || s.device != dst.device) continue;
      const std::uint32_t a = last_launched_before(s, t);
      if (a != kNoNode) edge(DepGraph::end_tp(a), DepGraph::start_tp(first), 0, EdgeType::kEventWait, true);
    }
  }

  /// Start of the cudaEventRecord named by sync record `i`, or, without that call in the graph,
  /// of the wait call itself: the ops launched before it are the ones the event can stand for.
  TimeNs event_recorded_at(std::size_t i, std::uint32_t call) const {
    const std::uint32_t record = node_of_call(t_.syncs.event_record_correlation[i]);
    return g_.rec_start[record != kNoNode ? record : call];
  }

  /// An event-sync record: E(last op of the event's stream launched before the record) -> E(call).
  /// An event stream that was not recorded may be any stream: every stream of the device, flagged
  /// inferred and counted. A recorded stream that runs nothing: no edge.
  void event_sync_record(std::size_t i, std::uint32_t call, std::int32_t device) {
    const TimeNs at = event_recorded_at(i, call);
    if (t_.syncs.event_stream[i] == kNone) {
      ++g_.stats.unknown_event_streams;
      sync_on_device(device, call, true, at);
      return;
    }
    const StreamOps* s = find_stream(device, t_.syncs.event_stream[i]);
    if (s != nullptr) sync_on_stream(*s, call, at, false);
  }

  /// A stream-wait record: E(last op of the event's stream launched before the record) ->
  /// S(first op of the waiting stream launched at or after the call). An event stream that was
  /// not recorded: every other stream of the waiting stream's device, flagged inferred and
  /// counted. A waiting or event stream that runs nothing: no edge.
  void stream_wait_record(std::size_t i, std::uint32_t call, std::int32_t device) {
    const StreamOps* dst = find_stream(device, t_.syncs.stream[i]);
    if (dst == nullptr) return;
    const std::uint32_t b = first_launched_after(*dst, g_.rec_start[call]);
    const TimeNs at = event_recorded_at(i, call);
    if (t_.syncs.event_stream[i] == kNone) {
      ++g_.stats.unknown_event_streams;
      if (b != kNoNode) wait_on_other_streams(*dst, b, at);
      return;
    }
    const StreamOps* src = find_stream(device, t_.syncs.event_stream[i]);
    if (src == nullptr) return;
    const std::uint32_t a = last_launched_before(*src, at);
    if (a != kNoNode && b != kNoNode) edge(DepGraph::end_tp(a), DepGraph::start_tp(b), 0, EdgeType::kEventWait);
  }

  void sync_record_edges() {
    const trace::SyncTable& sy = t_.syncs;
    covered_.assign(g_.nodes(), 0);
    for (std::size_t i = 0; i < sy.size(); ++i) {
      const std::uint32_t row = sy.op[i];
      const std::uint32_t call = node_of_call(ops_.correlation[row]);
      if (call == kNoNode) {
        // A call outside the window, or on a left-out thread (a poller), or absent.
        if (in_window(ops_.start_ns[row]) && call_row(ops_.correlation[row]) == kNoNode) {
          ++g_.stats.unresolved_syncs;
        }
        continue;
      }
      covered_[call] = 1;
      // CUPTI also writes records for cudaEventQuery/cudaStreamQuery; a query does not wait.
      if (t_.strings.view(ops_.name[g_.op[call]]).find("Query") != std::string_view::npos) continue;
      const std::int32_t device = ops_.device[row] != kNone ? ops_.device[row] : scope_of(call);
      switch (sy.kind[i]) {
        case SyncKind::kStreamSync: {
          const StreamOps* s = find_stream(device, sy.stream[i]);
          if (s != nullptr) sync_on_stream(*s, call, g_.rec_start[call], false);
          break;  // no ops on that stream: nothing to wait for
        }
        case SyncKind::kContextSync:
          sync_on_device(device, call, false);
          break;
        case SyncKind::kEventSync:
          event_sync_record(i, call, device);
          break;
        case SyncKind::kStreamWaitEvent:
          stream_wait_record(i, call, device);
          break;
        case SyncKind::kUnknown:
          sync_on_device(device, call, true);
          break;
      }
    }
  }

  /// Sync calls without a record, and blocking copies, resolved from their names.
  void inferred_sync_edges() {
    // Per thread, the latest cudaEventRecord seen so far (for stream waits without records).
    std::unordered_map<std::uint64_t, std::uint32_t> last_record;
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
      if (g_.gpu[n]) continue;
      const std::uint32_t r = g_.op[n];
      const std::string_view name = t_.strings.view(ops_.name[r]);
      const std::uint64_t thread = static_cast<std::uint64_t>(ops_.thread[r]);
      if (is_event_record(name)) {
        last_record[thread] = n;
        continue;
      }
      if (is_blocking_copy(name)) {
        // A synchronous copy returns once its data is in host memory (DtoH). From pageable host
        // memory to the GPU it returns once the data is staged, and device-to-device copies do
        // not block the host (CUDA runtime API, "API synchronization behavior").
        for (std::uint32_t m : launched_by(n)) {
          if (t_.strings.view(ops_.name[g_.op[m]]).find("DtoH") != std::string_view::npos) {
            edge(DepGraph::end_tp(m), DepGraph::end_tp(n), 0, EdgeType::kHostSync, true);
          }
        }
        continue;
      }
      if (covered_[n]) continue;
      const auto kind = trace::sync_kind_of_api_call(name);
      if (!kind) continue;
      if (*kind == SyncKind::kStreamWaitEvent) {
        const auto it = last_record.find(thread);
        infer_stream_wait(n, it == last_record.end() ? n : it->second);
      } else {
        // Stream and event syncs name no stream in Kineto's API events: wait for them all.
        sync_on_device(kNone, n, true);
      }
    }
  }

  /// GPU nodes launched by API call node `call` (same correlation id).
  std::vector<std::uint32_t> launched_by(std::uint32_t call) {
    if (gpu_by_corr_.empty()) {
      for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
        if (g_.gpu[n]) gpu_by_corr_.emplace_back(ops_.correlation[g_.op[n]], n);
      }
      std::sort(gpu_by_corr_.begin(), gpu_by_corr_.end());
    }
    std::vector<std::uint32_t> out;
    const std::int64_t corr = ops_.correlation[g_.op[call]];
    if (corr == kNone) return out;
    auto it = std::lower_bound(gpu_by_corr_.begin(), gpu_by_corr_.end(),
                               std::pair<std::int64_t, std::uint32_t>{corr, 0});
    for (; it != gpu_by_corr_.end() && it->first == corr; ++it) out.push_back(it->second);
    return out;
  }

  /// cudaStreamWaitEvent without a record: the waiting stream is that of the next GPU op
  /// launched after the call; the event's stream is unknown, so every other stream's last op
  /// launched before the preceding cudaEventRecord is a source.
  void infer_stream_wait(std::uint32_t wait_call, std::uint32_t record_call) {
    const StreamOps* dst = nullptr;
    std::uint32_t first = kNoNode;
    TimeNs first_launch = INT64_MAX;
    const std::int32_t scope = scope_of(wait_call);
    for (const StreamOps& s : streams_) {
      if (scope != kNone && s.device != scope) continue;
      const auto it = std::lower_bound(s.launched.begin(), s.launched.end(), g_.rec_start[wait_call]);
      if (it != s.launched.end() && *it < first_launch) {
        first_launch = *it;
        first = s.nodes[static_cast<std::size_t>(it - s.launched.begin())];
        dst = &s;
      }
    }
    if (dst != nullptr) wait_on_other_streams(*dst, first, g_.rec_start[record_call]);
  }

  // ---- lags, CSR, order ------------------------------------------------------------------------

  TimeNs rec(std::uint32_t tp) const {
    const std::uint32_t n = DepGraph::node_of(tp);
    return DepGraph::is_end(tp) ? g_.rec_end[n] : g_.rec_start[n];
  }

  void assign_lags_and_csr() {
    const std::size_t tps = 2 * g_.nodes();
    // Counting sort of the edges by target timepoint.
    g_.in_begin.assign(tps + 1, 0);
    for (const RawEdge& e : raw_) ++g_.in_begin[e.to_tp + 1];
    for (std::size_t t = 0; t < tps; ++t) g_.in_begin[t + 1] += g_.in_begin[t];
    const std::size_t m = raw_.size();
    g_.in_from.resize(m);
    g_.in_lag.resize(m);
    g_.in_type.resize(m);
    g_.in_inferred.resize(m);
    std::vector<std::uint32_t> fill(g_.in_begin.begin(), g_.in_begin.end() - 1);
    for (const RawEdge& e : raw_) {
      const std::uint32_t k = fill[e.to_tp]++;
      g_.in_from[k] = e.from_tp;
      g_.in_lag[k] = e.lag;
      g_.in_type[k] = e.type;
      g_.in_inferred[k] = e.inferred ? 1 : 0;
      ++g_.stats.edges[static_cast<int>(e.type)];
      if (e.inferred) ++g_.stats.inferred_edges[static_cast<int>(e.type)];
    }
    raw_.clear();
    raw_.shrink_to_fit();
    for (std::uint32_t t = 0; t < tps; ++t) fit_lags(t);
  }

  /// The gap rule of build_graph() for timepoint t.
  void fit_lags(std::uint32_t t) {
    const std::uint32_t b = g_.in_begin[t];
    const std::uint32_t e = g_.in_begin[t + 1];
    const std::uint32_t n = DepGraph::node_of(t);
    const bool is_end = DepGraph::is_end(t);
    const TimeNs target = rec(t);
    std::uint32_t binding = UINT32_MAX;
    std::uint32_t launch = UINT32_MAX;
    TimeNs latest = INT64_MIN;
    TimeNs latest_other = is_end ? INT64_MIN : g_.release[n];  // constraints but the launch
    for (std::uint32_t k = b; k < e; ++k) {
      TimeNs c = rec(g_.in_from[k]) + g_.in_lag[k];
      if (c > target) {
        if (g_.in_inferred[k]) {
          // An inferred wait the recording contradicts did not happen: drop it.
          g_.in_lag[k] = kDroppedLag;
          ++g_.stats.dropped_inferred_edges;
          continue;
        }
        g_.in_lag[k] = target - rec(g_.in_from[k]);  // recorded dependency, clock skew: clamp
        c = target;
        ++g_.stats.violated_edges;
      }
      if (c > latest) {
        latest = c;
        binding = k;
      }
      if (g_.in_type[k] == EdgeType::kLaunch) {
        launch = k;
      } else {
        latest_other = std::max(latest_other, c);
      }
    }
    if (!is_end && (binding == UINT32_MAX || g_.release[n] >= latest)) {
      // No constraint, or the stream was busy with work from before the window: pinned.
      g_.release[n] = target;
      ++g_.stats.sources;
      return;
    }
    if (binding == UINT32_MAX) return;  // an end with no usable edge: its duration binds
    // A GPU op cannot start before its launch call submitted it, which is by the call's return.
    // When the call returned no earlier than every other constraint, the launch explains the
    // start: the gap is launch overhead, not an unexplained wait of the GPU.
    if (launch != UINT32_MAX && binding != launch &&
        g_.rec_end[DepGraph::node_of(g_.in_from[launch])] >= latest_other) {
      binding = launch;
      latest = rec(g_.in_from[launch]) + g_.in_lag[launch];
    }
    if (is_end && g_.gpu[n]) {
      // A linked collective (the only GPU end with edges in): when its own start and transfer
      // explain its recorded end, no edge binds; else the binding edge takes the gap.
      if (g_.rec_start[n] + g_.dur[n] >= target) return;
    } else if (is_end) {
      // A call that waited: its own duration is what remains after the wait ended.
      if (latest <= g_.rec_start[n]) return;  // finished on its own: the duration binds
      g_.dur[n] = std::min(g_.dur[n], target - latest);
    }
    const TimeNs gap = target - latest;
    g_.in_lag[binding] += gap;
    if (g_.gpu[n] && !is_end && g_.in_type[binding] == EdgeType::kStreamOrder) {
      g_.stats.unexplained_gpu_gap_ns += gap;
    }
  }

  /// A rank cut out of a job (TraceMeta::cut, job/job_solve.h): each pinned collective takes
  /// its transfer time and starts no earlier than its pin (a release); "no later" becomes an edge
  /// S(collective) -> E(sink) with lag end_ns - start_ns, the sink being a node nothing waits for
  /// (the latest-ending host node without successors; else such a GPU node), so that the sink ends
  /// after the job's end — the makespan exceeds it — exactly when the collective starts late.
  /// Applied after the lags are fitted (they stay those of the recording) and typed collective.
  void pin_collectives() {
    const trace::JobCut& cut = t_.meta.cut;
    if (cut.pins.empty() || g_.nodes() == 0) return;
    std::vector<std::uint8_t> has_out(g_.nodes(), 0);
    for (std::uint32_t from : g_.in_from) has_out[DepGraph::node_of(from)] = 1;
    std::uint32_t sink = kNoNode;
    auto better = [&](std::uint32_t n) {
      if (sink == kNoNode) return true;
      if (g_.gpu[n] != g_.gpu[sink]) return g_.gpu[n] == 0;
      return g_.rec_end[n] >= g_.rec_end[sink];
    };
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
      if (!has_out[n] && better(n)) sink = n;
    }
    std::vector<RawEdge> extra;
    for (const trace::CollectivePin& p : cut.pins) {
      const std::uint32_t n = p.op < node_of_op_.size() ? node_of_op_[p.op] : kNoNode;
      if (n == kNoNode) continue;
      g_.dur[n] = p.transfer_ns;
      if (p.start_ns == trace::kOpenPin) continue;  // a port: the transfer time only
      g_.release[n] = std::max(g_.release[n], p.start_ns);
      // No sink: every node has a successor (a cycle was cut); nothing to pin the deadline to.
      if (sink != kNoNode) {
        extra.push_back({DepGraph::start_tp(n), DepGraph::end_tp(sink), cut.end_ns - p.start_ns, EdgeType::kCollective, false});
      }
    }
    insert_edges(extra);
  }

  /// Adds `extra` to the CSR as they are (no lag fitting).
  void insert_edges(const std::vector<RawEdge>& extra) {
    if (extra.empty()) return;
    const std::size_t tps = 2 * g_.nodes();
    std::vector<std::uint32_t> add(tps + 1, 0);
    for (const RawEdge& e : extra) ++add[e.to_tp + 1];
    for (std::size_t t = 0; t < tps; ++t) add[t + 1] += add[t];
    const std::size_t m = g_.in_from.size() + extra.size();
    std::vector<std::uint32_t> from(m), begin(tps + 1, 0);
    std::vector<TimeNs> lag(m);
    std::vector<EdgeType> type(m);
    std::vector<std::uint8_t> inferred(m, 0);
    std::vector<std::uint32_t> fill(tps);
    for (std::size_t t = 0; t < tps; ++t) {
      begin[t] = g_.in_begin[t] + add[t];
      std::uint32_t k = begin[t];
      for (std::uint32_t j = g_.in_begin[t]; j < g_.in_begin[t + 1]; ++j, ++k) {
        from[k] = g_.in_from[j], lag[k] = g_.in_lag[j], type[k] = g_.in_type[j], inferred[k] = g_.in_inferred[j];
      }
      fill[t] = k;
    }
    begin[tps] = static_cast<std::uint32_t>(m);
    for (const RawEdge& e : extra) {
      const std::uint32_t k = fill[e.to_tp]++;
      from[k] = e.from_tp, lag[k] = e.lag, type[k] = e.type;
      ++g_.stats.edges[static_cast<int>(e.type)];
    }
    g_.in_begin = std::move(begin), g_.in_from = std::move(from), g_.in_lag = std::move(lag);
    g_.in_type = std::move(type), g_.in_inferred = std::move(inferred);
  }

  /// g_.topo (graph/algorithms.h, timepoint_order). Cycle policy: equal-time cycles, if any, are
  /// broken by forcing the earliest (recorded time) blocked timepoint, dropping its still-blocking
  /// incoming edges (lag kDroppedLag, counted in stats.cycle_edges).
  void topological_order() {
    std::vector<std::uint32_t> by_time;  // built only if a cycle shows up
    std::size_t next_forced = 0;
    g_.topo = timepoint_order(g_, [&](TimepointCycle& c) {
      const std::size_t tps = 2 * g_.nodes();
      if (by_time.empty()) {
        by_time.resize(tps);
        std::iota(by_time.begin(), by_time.end(), 0u);
        std::stable_sort(by_time.begin(), by_time.end(),
                         [&](std::uint32_t a, std::uint32_t b) { return rec(a) < rec(b); });
      }
      while (next_forced < tps && (c.done(by_time[next_forced]) || c.pending(by_time[next_forced]) == 0)) {
        ++next_forced;
      }
      const std::uint32_t t = by_time[next_forced];
      for (std::uint32_t k = g_.in_begin[t]; k < g_.in_begin[t + 1]; ++k) {
        if (!c.done(g_.in_from[k])) {
          g_.in_lag[k] = kDroppedLag;
          ++g_.stats.cycle_edges;
          c.cut(k, t);
        }
      }
    });
  }

  const Trace& t_;
  const trace::OpTable& ops_;
  DepGraph g_;
  std::vector<std::uint32_t> node_of_op_;
  std::unordered_set<std::uint64_t> relevant_threads_;
  std::vector<std::pair<std::int64_t, std::uint32_t>> call_of_corr_;  // (correlation, row), sorted
  std::vector<std::int64_t> all_calls_;
  bool all_calls_built_ = false;
  std::vector<StreamOps> streams_;
  std::vector<std::pair<std::int64_t, std::uint32_t>> gpu_by_corr_;
  std::vector<std::uint8_t> covered_;
  std::vector<RawEdge> raw_;
  std::unordered_map<std::int64_t, std::int32_t> device_of_process_;  // linked traces only
};

}  // namespace

std::string_view edge_type_name(EdgeType t) noexcept {
  switch (t) {
    case EdgeType::kStreamOrder: return "stream_order";
    case EdgeType::kProgramOrder: return "program_order";
    case EdgeType::kNesting: return "nesting";
    case EdgeType::kLaunch: return "launch";
    case EdgeType::kHostSync: return "host_sync";
    case EdgeType::kEventWait: return "event_wait";
    case EdgeType::kCollective: return "collective";
  }
  return "unknown";
}

std::size_t DepGraph::memory_bytes() const noexcept {
  return op.capacity() * 4 + (dur.capacity() + rec_start.capacity() + rec_end.capacity() +
                              release.capacity()) * 8 +
         gpu.capacity() + in_begin.capacity() * 4 + in_from.capacity() * 4 +
         in_lag.capacity() * 8 + in_type.capacity() + in_inferred.capacity() + topo.capacity() * 4;
}

void DepGraph::shrink_to_fit() {
  op.shrink_to_fit();
  dur.shrink_to_fit();
  rec_start.shrink_to_fit();
  rec_end.shrink_to_fit();
  gpu.shrink_to_fit();
  release.shrink_to_fit();
  in_begin.shrink_to_fit();
  in_from.shrink_to_fit();
  in_lag.shrink_to_fit();
  in_type.shrink_to_fit();
  in_inferred.shrink_to_fit();
  topo.shrink_to_fit();
}

DepGraph build_graph(const trace::Trace& trace, const Window& window) {
  return Builder(trace, window).build();
}

}  // namespace emo::graph
