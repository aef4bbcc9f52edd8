// What `emo analyze` writes: the JSON object and the text summary of an analysis.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "timing/analysis.h"
#include "trace/trace.h"

namespace emo::output {

/// The `emo analyze --json` object: makespan_ns, replay_error, critical_path_ns, critical_path
/// [{id, name, kind, device, stream, start_ns, dur_ns, via}], edges {type: count, inferred:
/// {type: count}}, gpus [{device, busy_ns, critical_busy_ns, slack_ns, slack_windows}], bound_by
/// {category: fraction of the makespan} (= bound_by_makespan), bound_by_critical_path {category:
/// fraction of the path, lead left out}, path_lead {ns, category}, clock_skew_on_path_ns,
/// time_base {...}, warnings [text], what_if [{spec, makespan_ns, change}], graph statistics,
/// and durations_from {path, window, gpu_ops, gpu_matched, calls, calls_matched,
/// source_gpu_ops, source_unmatched, unmatched, predicted_makespan_ns, source_makespan_ns, error} when set.
nlohmann::json to_json(const trace::Trace& trace, const timing::Analysis& a);

/// Human-readable summary.
std::string to_text(const trace::Trace& trace, const timing::Analysis& a);

/// The `job` object of a linked job (trace/job.h; docs/multi-rank.md): world_size, ranks [{rank,
/// file, device, trace_device, offset_ns, collectives, collectives_matched,
/// wait_in_collectives_ns, slack_ns}], collectives_linked, match_method, offset residual (median,
/// max, ns), critical_path_by_rank [{rank, start_ns, end_ns, ops}], warnings; null for one trace.
nlohmann::json job_json(const trace::Trace& trace, const timing::Analysis& a);

/// The text lines of a linked job (the job, a line per rank, the critical path by rank, the job's
/// warnings), as `emo analyze` prints them; "" for one trace.
std::string job_text(const trace::Trace& trace, const timing::Analysis& a);

/// A stretch of the critical path on one rank of a linked job.
struct RankSegment {
  std::int32_t index = -1;  ///< In trace.meta.job.ranks (= the rank's device in the linked trace).
  TimeNs start_ns = 0;      ///< The stretch's first step's start in a.schedule (trace time, ns).
  TimeNs end_ns = 0;        ///< Its last step's end (ns).
  std::int64_t ops = 0;     ///< Path steps in it.
};

/// Which rank the critical path of `a` (an analysis of the linked job `trace`) is on, when: its
/// steps in path order, consecutive steps on one rank merged (host steps count for their rank).
/// Example: a 2-stage pipeline's path F0 (rank 0) → F0, B0 (rank 1) → B0 (rank 0) gives three
/// stretches on ranks 0, 1, 0. Empty for a trace that is not a linked job.
std::vector<RankSegment> rank_segments(const trace::Trace& trace, const timing::Analysis& a);

/// The same from the link alone (a job solved decomposed has no graph of the whole job): no
/// slack, no critical path by rank; the text lists the first 16 ranks. Null / "" for no ranks.
nlohmann::json job_json(const trace::JobInfo& job);
std::string job_text(const trace::JobInfo& job);

}  // namespace emo::output
