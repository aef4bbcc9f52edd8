// The HTML report of `emo optimize --report FILE.html`: one self-contained file (no network, no
// external scripts) with the summary table; the energy–latency plot (EMO's predicted frontier and
// the measured static-clock curve, the baseline, the best static clock and EMO as markers, the
// latency target as a line); power over the iteration at baseline and under the policy; a
// timeline — one lane group per GPU (its packs coloured by their clock, its streams) and one for
// the CPU threads, the critical path drawn through every lane it crosses, gaps included; and a
// per-pack table (ops, time, slack, clock, predicted and measured time and energy). A linked job
// (several ranks) also gets the job view: one lane per rank with its packs coloured by clock, the
// critical path crossing the ranks, and each rank's savings, with a per-rank table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace emo::output {

/// One row of the timeline: a GPU stream or a CPU thread. Lanes are drawn in the order given,
/// under a header per run of lanes with the same `group`; a GPU's packs row opens its group.
struct ReportLane {
  std::string label;  ///< e.g. "GPU 0 · stream 7".
  int gpu = -1;       ///< GPU index, -1 for a CPU thread.
  std::string group;  ///< e.g. "GPU 0 · rank 3", "CPU threads"; "" = the label's own group.
  /// Busy intervals [start_ns, end_ns) relative to the trace start, sorted, and whether each holds
  /// an op on the critical path. Adjacent intervals closer than the report's resolution are merged
  /// by render_html_report (critical wins), so any number of ops can be passed.
  struct Interval {
    std::int64_t start_ns = 0, end_ns = 0;
    bool critical = false;
    std::string name;  ///< Op name (the first one when merged), shown on hover.
  };
  std::vector<Interval> intervals;
};

/// A pack on the timeline.
struct ReportPack {
  int gpu = 0;
  std::int64_t start_ns = 0, end_ns = 0;  ///< Relative to the trace start.
  double clock_mhz = 0;
  std::int64_t ops = 0;
};

/// One step of the critical path on the timeline: lane `lane` (index into HtmlReport::lanes)
/// busy on the path over [start_ns, end_ns) (relative to the trace start). Consecutive steps are
/// joined lane to lane, so the gaps between them (launch lags, waits) are drawn too.
struct ReportPathStep {
  int lane = 0;
  std::int64_t start_ns = 0, end_ns = 0;
};

/// A rank of a linked job (docs/multi-rank.md): its lane in the report's job view (its GPU's packs
/// coloured by their clock, its savings beside it) and its row of the per-rank table.
struct ReportRank {
  std::int32_t rank = 0;        ///< Its rank in the job.
  int gpu = 0;                  ///< Its GPU in ReportPack::gpu (the linked trace's device: its position).
  std::string file;             ///< Its trace file.
  std::int64_t packs = 0;       ///< Its packs.
  double mean_clock_mhz = 0;    ///< The plan's clock over its packs, weighted by their recorded time (MHz).
  /// Its GPU's energy in the baseline's and in the kept plan's runs (J); nullopt: not measured.
  std::optional<double> baseline_j, emo_j;
};

/// A stretch of the job's critical path on rank `rank` (index into HtmlReport::ranks) over
/// [start_ns, end_ns), relative to the trace start. Stretches are given in path order; the job
/// view joins each to the next across lanes.
struct ReportRankStretch {
  int rank = 0;
  std::int64_t start_ns = 0, end_ns = 0;
};

/// One (time, energy) point: a frontier point or a named schedule.
struct ReportPoint {
  double time_s = 0, energy_j = 0;
  std::string label;  ///< "" for curve points; "baseline", "static best", "EMO", "EMO (predicted)" for markers.
};

/// Power of every GPU over one iteration: power_w[i] is the mean over the i-th of
/// power_w.size() equal intervals of [0, duration_ns). Empty: not measured.
struct ReportPower {
  std::int64_t duration_ns = 0;
  std::vector<double> power_w;
};

/// One row of the per-pack table. Predicted: by the pack models at the plan; measured: the
/// policy run's (nullopt: not measured, e.g. a policy run on a real GPU).
struct ReportPackRow {
  int id = 0, gpu = 0;
  std::int64_t ops = 0;
  std::int64_t recorded_ns = 0;    ///< First op's start to last op's end, as recorded.
  std::int64_t slack_ns = 0;       ///< The least slack of its ops, as recorded.
  double clock_mhz = 0;            ///< The plan's clock.
  std::int64_t predicted_ns = 0;   ///< Predicted time at that clock.
  double predicted_j = 0;          ///< Predicted energy at that clock.
  std::optional<std::int64_t> measured_ns;
  std::optional<double> measured_j;
};

/// One row of the summary table.
struct ReportRow {
  std::string label;          ///< "baseline (max clock)", "static best (1230 MHz)", "EMO".
  double time_s = 0, energy_j = 0;
  double savings = 0;         ///< Fraction of the baseline energy saved.
  double slowdown = 0;        ///< Fraction over the baseline time.
};

struct HtmlReport {
  std::string title;                 ///< e.g. the trace's file name.
  std::string gpu;                   ///< GPU catalog id.
  bool simulated = true;             ///< Shows a "simulated device" banner when true.
  std::int64_t makespan_ns = 0;      ///< Timeline extent.
  std::vector<ReportLane> lanes;
  std::vector<ReportPack> packs;
  std::vector<ReportPathStep> path;   ///< The critical path, in time order.
  double min_clock_mhz = 0, max_clock_mhz = 0;  ///< Colour scale of the packs.
  std::vector<ReportPoint> frontier;  ///< EMO's predicted frontier, ascending time.
  std::vector<ReportPoint> static_curve;  ///< Every static clock run, measured (any order).
  std::vector<ReportPoint> markers;   ///< Baseline, static best, EMO, EMO (predicted).
  double target_s = 0;                ///< The latency target (a vertical line); 0: none.
  ReportPower baseline_power, emo_power;
  std::vector<ReportPackRow> pack_rows;
  /// Under the pack table: the measured run's time and energy outside the packs (gaps, lead-in,
  /// tail) and in total; nullopt when not measured.
  std::optional<ReportPoint> outside_packs, run_total;
  std::vector<ReportRow> rows;
  std::vector<std::string> notes;     ///< Lines under the table (profiling cost, target, ...).
  /// A linked job: one per rank, in the job's order (empty for one trace), and the critical path
  /// by rank. Drawn as the job view (one lane per rank) and the per-rank table, whose sum row is
  /// the ranks' energies summed (the job's when every GPU is measured).
  std::vector<ReportRank> ranks;
  std::vector<ReportRankStretch> rank_path;
  /// false: no timeline of ops and no per-pack table (the decomposed solve's report: its ranks' ops
  /// stay with the processes that hold them; the job view draws their packs).
  bool timeline = true;
  /// Said where the power plot would be when there is no power curve; "" = "not measured on this device."
  std::string no_power;
  /// The job view's caption; "" = the joint solve's (its critical path as recorded at the max clock).
  std::string rank_caption;
};

/// Renders `r` as one self-contained HTML document. Intervals are merged per lane and path steps
/// per lane at makespan / 4000 resolution. The script sets body[data-drawn] = "<timeline rects>,
/// <frontier points and markers>" and body[data-frontier-box] = "x,y,width,height" of the
/// energy–latency plot in CSS pixels (what the headless-browser test reads); with ranks, also
/// body[data-rank-drawn] = "<rank lanes>,<their packs>,<critical-path stretches>". Throws
/// std::invalid_argument when makespan_ns ≤ 0, a path step names no lane or a rank stretch no rank.
std::string render_html_report(const HtmlReport& r);

}  // namespace emo::output
