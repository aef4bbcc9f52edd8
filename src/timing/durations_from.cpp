#include "timing/durations_from.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "timing/timing.h"

using emo::TimeNs;
#include "core/error.h"

namespace emo::timing {

namespace {

/// (is GPU op, device or process, stream or thread, name).
using Key = std::tuple<bool, std::int64_t, std::int64_t, std::string_view>;

Key key_of(const trace::Trace& t, const graph::DepGraph& g, std::uint32_t n) {
  const std::uint32_t row = g.op[n];
  const bool gpu = g.gpu[n] != 0;
  return {gpu, gpu ? t.ops.device[row] : t.ops.process[row],
          gpu ? t.ops.stream[row] : t.ops.thread[row], t.strings.view(t.ops.name[row])};
}

/// Node ids of `g` in recorded start order (ties by node id).
std::vector<std::uint32_t> by_start(const graph::DepGraph& g) {
  std::vector<std::uint32_t> order(g.nodes());
  for (std::uint32_t n = 0; n < g.nodes(); ++n) order[n] = n;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return g.rec_start[a] < g.rec_start[b]; });
  return order;
}

}  // namespace

DurationsFrom durations_from(const trace::Trace& target_trace, const graph::DepGraph& target,
                             const trace::Trace& source_trace, const graph::Window& source_window) {
  DurationsFrom r;
  r.path = source_trace.meta.path;
  r.window = source_window.label;
  const graph::DepGraph source = graph::build_graph(source_trace, source_window);
  if (source.nodes() == 0) {
    throw InputError(source_trace.meta.path,
                     fmt::format("nothing to analyse: no GPU op or launching API call in {} (the "
                                 "--durations-from window)", source_window.label));
  }
  r.source_makespan_ns = replay(source, source.dur).makespan_ns;

  std::map<Key, std::vector<std::uint32_t>> pool;  // source nodes per key, in start order
  for (std::uint32_t n : by_start(source)) {
    pool[key_of(source_trace, source, n)].push_back(n);
    r.source_gpu_ops += source.gpu[n];
  }
  std::map<Key, std::size_t> used;

  r.dur.assign(target.dur.begin(), target.dur.end());
  std::vector<TimeNs> release = target.release;
  std::size_t matched_total = 0;
  for (std::uint32_t n : by_start(target)) {
    const Key k = key_of(target_trace, target, n);
    const bool gpu = target.gpu[n] != 0;
    (gpu ? r.gpu_ops : r.calls) += 1;
    const auto it = pool.find(k);
    std::size_t& next = used[k];
    if (it != pool.end() && next < it->second.size()) {
      const std::uint32_t m = it->second[next];
      r.dur[n] = source.dur[m];
      if (source.release[m] != INT64_MIN) {
        release[n] = target.window_start_ns + (source.release[m] - source.window_start_ns);
        ++r.starts_matched;
      } else if (target.release[n] != INT64_MIN && target.in_begin[2 * n] != target.in_begin[2 * n + 1]) {
        release[n] = INT64_MIN;  // held back here, not in the source: its edges decide
        ++r.starts_matched;
      }
      ++next;
      (gpu ? r.gpu_matched : r.calls_matched) += 1;
      ++matched_total;
    } else {
      if (r.unmatched.size() < 5) {
        r.unmatched.push_back(fmt::format("{} {} {}: {} (#{} of its name there)", gpu ? "stream" : "thread",
                                          std::get<2>(k), gpu ? "GPU op" : "call", std::get<3>(k), next));
      }
      ++next;
    }
  }
  r.source_unmatched = source.nodes() - matched_total;
  r.durations_only_makespan_ns = replay(target, r.dur).makespan_ns;
  graph::DepGraph shifted = target;  // the same graph with the source's starting state
  shifted.release = std::move(release);
  r.predicted_makespan_ns = replay(shifted, r.dur).makespan_ns;
  r.error = r.source_makespan_ns > 0 ? static_cast<double>(r.predicted_makespan_ns) /
                                               static_cast<double>(r.source_makespan_ns) -
                                           1.0
                                     : 0.0;
  return r;
}

}  // namespace emo::timing
