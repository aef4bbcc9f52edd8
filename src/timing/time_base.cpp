#include "timing/time_base.h"

#include <algorithm>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

namespace emo::timing {

using graph::DepGraph;
using graph::EdgeType;

TimeBaseCheck check_time_base(const trace::Trace& t, const DepGraph& g) {
  TimeBaseCheck c;
  std::vector<TimeNs> delays;
  std::uint32_t worst_end = UINT32_MAX;
  TimeNs cpu_min = INT64_MAX, cpu_max = INT64_MIN, gpu_min = INT64_MAX, gpu_max = INT64_MIN;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (g.gpu[n]) {
      gpu_min = std::min(gpu_min, g.rec_start[n]);
      gpu_max = std::max(gpu_max, g.rec_end[n]);
    } else {
      cpu_min = std::min(cpu_min, g.rec_start[n]);
      cpu_max = std::max(cpu_max, g.rec_end[n]);
    }
    if (!g.gpu[n]) continue;
    const std::uint32_t tp = DepGraph::start_tp(n);
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_type[k] != EdgeType::kLaunch) continue;
      const std::uint32_t call = DepGraph::node_of(g.in_from[k]);
      ++c.launches;
      const TimeNs start = g.rec_start[n];
      delays.push_back(start - g.rec_start[call]);
      // A blocking call (cudaMemcpy, a synchronous launch) waits for its op: the op runs inside
      // it, as it should. Only an op that starts before the call returns and runs on past it says
      // the call returned late or the clocks disagree.
      const bool inside = start >= g.rec_start[call] && g.rec_end[n] <= g.rec_end[call];
      if (start < g.rec_end[call] && !inside) {
        ++c.before_call_end;
        if (g.rec_end[call] - start > c.max_before_call_end_ns) {
          c.max_before_call_end_ns = g.rec_end[call] - start;
          worst_end = n;
        }
      }
      if (start < g.rec_start[call]) {
        ++c.before_call_start;
        c.max_before_call_start_ns = std::max(c.max_before_call_start_ns, g.rec_start[call] - start);
      }
    }
  }
  if (!delays.empty()) {
    auto mid = delays.begin() + static_cast<std::ptrdiff_t>(delays.size() / 2);
    std::nth_element(delays.begin(), mid, delays.end());
    c.median_delay_ns = *mid;
  }
  if (cpu_min != INT64_MAX && gpu_min != INT64_MAX) {
    if (gpu_min > cpu_max) c.cpu_gpu_gap_ns = gpu_min - cpu_max;
    if (cpu_min > gpu_max) c.cpu_gpu_gap_ns = cpu_min - gpu_max;
  }
  c.different_time_bases = std::llabs(c.median_delay_ns) > kTimeBaseMismatchNs ||
                           c.cpu_gpu_gap_ns > kTimeBaseMismatchNs;
  if (c.different_time_bases) {
    c.warnings.push_back(fmt::format(
        "GPU and CPU timestamps are on different time bases: {} (over {} launches); the makespan, "
        "launch overhead and critical path mix the two clocks and mean nothing — re-record the "
        "trace, or analyse GPU-only or CPU-only work",
        c.cpu_gpu_gap_ns > kTimeBaseMismatchNs
            ? fmt::format("the GPU ops and the CPU calls are {} apart with no overlap",
                          format_duration(c.cpu_gpu_gap_ns))
            : fmt::format("the median GPU op starts {} {} its launching call",
                          format_duration(std::llabs(c.median_delay_ns)),
                          c.median_delay_ns > 0 ? "after" : "before"),
        c.launches));
  }
  if (c.before_call_end > 0) {
    const std::uint32_t row = g.op[worst_end];
    c.warnings.push_back(fmt::format(
        "clock skew: {} of {} GPU ops start before their launching call returns ({} before the "
        "call even starts), by up to {} ({}): the CPU and GPU clocks disagree by up to that much, "
        "or the call returned late; the graph keeps the recorded times (a negative lag on the path "
        "is left out of the bound-by shares)",
        c.before_call_end, c.launches, c.before_call_start,
        format_duration(c.max_before_call_end_ns), t.strings.view(t.ops.name[row])));
  }
  return c;
}

}  // namespace emo::timing
