// What `emo optimize --report/--overlay` write for a job solved by decomposition (job/job_solve.h,
// job/job_view.h; docs/multi-rank.md "Seeing it"): the report's summary and job view — one lane
// per rank with its packs of the kept plan's simulated run coloured by their clock, the kept
// plan's critical path across the ranks, each rank's savings and the per-rank table — drawn by the
// joint report's code (output/html_report.h), and an overlay of the same lanes and path. No op of
// any rank is drawn: they stay with the processes that hold them.
#pragma once

#include <string>

#include "job/job_solve.h"
#include "output/html_report.h"

namespace emo::output {

/// The report of `d` (with its job view, d.view) on the job `jp` and the catalog GPU `gpu`: the
/// summary table (baseline, best static clock, EMO's composed plan, and the static clock when it
/// is kept), the energy–latency markers and the target; per rank (ReportRank) its packs, its mean
/// clock (RankSolve::mean_clock_mhz as the text and --json give it; the static clock when it is
/// kept), its GPU's energy at the baseline and in the kept plan
/// (JobViewRank; summing to the job's), and the critical path by rank (ReportRankStretch). No
/// timeline of ops, per-pack table, frontier or power curve (HtmlReport::timeline false). Times
/// relative to the kept run's start. Throws std::invalid_argument when d has no view.
HtmlReport to_report(const job::DecomposedSolve& d, const job::JobPorts& jp, const std::string& gpu);

/// `emo optimize --overlay` for `d`: a Perfetto trace of EMO's tracks alone (write_track_overlay):
/// per rank a process "EMO packs, rank R (GPU d)" (sorted rank by rank, labelled with its savings
/// as rank_savings_label) with a slice per pack (args: rank, pack, clock_mhz, ops) on thread 0 and
/// its stretches of the critical path on thread 1, flows from stretch to stretch; and the process
/// "EMO critical path" with every stretch ("rank R"). Throws std::invalid_argument when d has no
/// view, emo::InputError when `path` cannot be written.
void write_decomposed_overlay(const job::DecomposedSolve& d, const job::JobPorts& jp, const std::string& path);

}  // namespace emo::output
