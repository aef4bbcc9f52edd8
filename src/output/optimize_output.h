// What `emo optimize` writes: the JSON result, the text table and the HTML report's content.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "job/job_compare.h"
#include "job/job_solve.h"
#include "driver/optimize.h"
#include "driver/true_optimum.h"
#include "output/html_report.h"
#include "trace/trace.h"

namespace emo::output {

/// The `emo optimize --json` object of one trace: baseline {time_ns, energy_j, clock_mhz},
/// static_best {clock_mhz, time_ns, energy_j}, emo {time_ns, energy_j, predicted_time_ns,
/// predicted_energy_j}, savings, slowdown (fractions vs the baseline), static_savings,
/// static_slowdown, target_ns, predicted_baseline, packs, ops, pack_clocks_mhz, contraction_error,
/// profiled_clocks_mhz, profiled_runs, profiling {...}, clock_switches, ops_at_other_clock, the
/// search counters, frontier [{time_s, energy_j}], simulated; on a real GPU also device,
/// workload_runs, packs_at_run_power and pack_profiles (docs/optimize.md).
nlohmann::json to_json(const driver::OptimizeResult& r);

/// The text table (baseline, best static clock, EMO), labelled simulated where it is.
std::string to_text(const driver::OptimizeResult& r);

/// `--true-optimum` (driver/true_optimum.h) of the result whose measured baseline is `baseline`:
/// the `true_optimum` object of --json {computed, packs, simulated; when computed: time_ns,
/// energy_j, savings, slowdown, gap, met_target, solver_status, solver_gap, seconds, solves, runs,
/// model_target_ns, predicted_time_ns, predicted_energy_j, emo_true_time_ns, emo_true_energy_j,
/// pack_clocks_mhz; else not_computed}. Every figure simulated.
nlohmann::json to_json(const driver::TrueOptimum& t, const driver::Evaluated& baseline);

/// Its text, appended to to_text(OptimizeResult): a table row and a line, labelled [SIMULATED].
std::string to_text(const driver::TrueOptimum& t, const driver::Evaluated& baseline);

/// `--compare-independent`: {baseline, joint, independent: {time_ns, energy_j, savings, slowdown,
/// within_target}, target_ns, ranks: [{rank, packs, savings, slowdown}] (each rank alone), simulated}.
nlohmann::json to_json(const job::JobComparison& c);

/// The text of a JobComparison, every figure labelled [SIMULATED].
std::string to_text(const job::JobComparison& c);

/// JSON of a decomposed joint solve (job/job_solve.h): the schedules, the target, per rank
/// its packs, pins, wait, mean clock and own savings. Every figure simulated ("simulated": true).
nlohmann::json to_json(const job::DecomposedSolve& d);
/// The text of a decomposed joint solve, every figure labelled [SIMULATED]; at most 16 rank rows.
std::string to_text(const job::DecomposedSolve& d);

/// The HTML report's content for `r` (render it with render_html_report). For a linked job
/// (trace.meta.job.ranks), one lane group per rank and the job view: per rank its packs, their
/// clocks, its GPU's energy in the baseline's and the kept plan's runs, and the critical path by
/// rank (output::rank_segments), each stretch drawn from the previous one's end.
HtmlReport to_report(const trace::Trace& trace, const driver::OptimizeResult& r);

/// The label of a rank's pack track in a job's overlay: "saves 29.5 % of its energy (86.794 →
/// 61.178 J, simulated); 6.87 % of the job's baseline" (its GPU's energies at the baseline and the
/// kept plan, the job's baseline energy; J, > 0).
std::string rank_savings_label(double baseline_j, double emo_j, double job_baseline_j, bool simulated);

/// `emo optimize --overlay`: write_pack_overlay with the kept plan's clocks; in a linked job each
/// rank's pack track is labelled with its GPU's savings, e.g. "saves 29.5 % of its energy (86.794
/// → 61.178 J, simulated); 6.87 % of the job's baseline". Throws what write_pack_overlay throws.
void write_optimize_overlay(const trace::Trace& trace, const driver::OptimizeResult& r, const std::string& path);

}  // namespace emo::output
