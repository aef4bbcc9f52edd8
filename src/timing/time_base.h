// Checks that the CPU and GPU timestamps of a trace can be compared: a GPU op cannot start before
// the API call that launched it, nor (in practice) seconds or days after it. Such traces are
// analysed anyway, but the analysis says what it saw instead of reporting silently a launch
// overhead of -1 % or a makespan of 141 days.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/dep_graph.h"
#include "trace/trace.h"

namespace emo::timing {

/// What the launch pairs of a graph (API call -> its GPU op, by correlation id) say about the
/// trace's two time bases. Times in ns.
struct TimeBaseCheck {
  std::int64_t launches = 0;                ///< Launch pairs looked at (both ends in the graph).
  std::int64_t before_call_end = 0;         ///< GPU op starts before its call returns and ends
                                            ///< after it (an op inside its call is a blocking
                                            ///< call waiting for it: not counted).
  TimeNs max_before_call_end_ns = 0; ///< Largest call end - GPU op start (>= 0).
  std::int64_t before_call_start = 0;       ///< GPU op starts before its call even began.
  TimeNs max_before_call_start_ns = 0;  ///< Largest call start - GPU op start (>= 0).
  TimeNs median_delay_ns = 0;        ///< Median of GPU op start - call start.
  TimeNs cpu_gpu_gap_ns = 0;         ///< Gap between the CPU and GPU nodes' time spans
                                            ///< when they do not overlap at all, else 0.
  bool different_time_bases = false;        ///< The two clocks disagree wholesale.
  std::vector<std::string> warnings;        ///< One line each, for the text output.
};

/// Above this median launch delay (GPU op start - call start), or gap between the CPU and GPU
/// spans, the GPU and CPU timestamps are taken to be on different time bases: 1 s (real launch
/// queues hold milliseconds of work, not seconds).
inline constexpr TimeNs kTimeBaseMismatchNs = 1'000'000'000;

/// Looks at every launch edge of `g` (and the CPU and GPU spans). Warns, with the largest value,
/// when GPU ops start before their launching call returns and run on past it (clock skew between
/// the CPU and GPU time bases, or a call that returned late; an op wholly inside its call is a
/// blocking call waiting for it and is not counted), and when the time bases disagree wholesale
/// (different_time_bases: median launch delay or span gap above kTimeBaseMismatchNs). O(E log E).
TimeBaseCheck check_time_base(const trace::Trace& trace, const graph::DepGraph& g);

}  // namespace emo::timing
