// The HTML report of `emo optimize --report FILE.html`: one self-contained file (no network, no
// external scripts) with a timeline — GPU streams, the critical path, packs coloured by their
// clock — the energy–latency frontier with the chosen point, and the summary table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace emo::output {

/// One row of the timeline: a GPU stream or a CPU thread.
struct ReportLane {
  std::string label;  ///< e.g. "GPU 0 · stream 7".
  int gpu = -1;       ///< GPU index, -1 for a CPU thread.
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

/// One (time, energy) point: a frontier point or a named schedule.
struct ReportPoint {
  double time_s = 0, energy_j = 0;
  std::string label;  ///< "" for frontier points; "baseline", "static best", "EMO" for markers.
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
  double min_clock_mhz = 0, max_clock_mhz = 0;  ///< Colour scale of the packs.
  std::vector<ReportPoint> frontier;  ///< Ascending time.
  std::vector<ReportPoint> markers;   ///< Baseline, static best, EMO.
  std::vector<ReportRow> rows;
  std::vector<std::string> notes;     ///< Lines under the table (profiling cost, target, ...).
};

/// Renders `r` as one self-contained HTML document. Intervals are merged per lane at
/// makespan / 4000 resolution. Throws std::invalid_argument when makespan_ns ≤ 0.
std::string render_html_report(const HtmlReport& r);

}  // namespace emo::output
