// Progress of a long run (`emo optimize`: packing, profiling, refinement, planning, evaluation),
// reported as stages of countable units to a ProgressSink. The library only reports; who draws it
// is the caller's business: the command line draws a bar on a terminal (cli/progress_bar.h), the
// Python package may pass a callback. Reporting never changes a result.
//
//   Progress p(sink);           // sink may be null: reports nothing
//   p.start("profiling", 12);   // sink: ("profiling", 0, 12)
//   p.step();                   // sink: ("profiling", 1, 12)
//   p.finish();                 // sink: ("profiling", 12, 12)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace emo {

/// Told how far a long run is: stage `stage` has `done` of `total` units done. Calls come in stage
/// order; each stage starts with done = 0 and ends with done == total, and 0 <= done <= total,
/// total >= 1 always. Called on the thread that runs the work.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void update(std::string_view stage, std::int64_t done, std::int64_t total) = 0;
};

/// One run's progress on an optional sink: the current stage, its units done and its total. A
/// step past the total raises the total (estimates may be short), so done <= total holds.
class Progress {
 public:
  explicit Progress(ProgressSink* sink = nullptr) : sink_(sink) {}
  /// Begins `stage` with `total` units (at least 1): reports 0 of total.
  void start(std::string_view stage, std::int64_t total);
  /// `n` more units are coming in this stage: total = done + n when that is more.
  void expect(std::int64_t n);
  /// `n` units done: reports the new count (total raised to it when short).
  void step(std::int64_t n = 1);
  /// The stage is over: reports done == total (no-op before start()).
  void finish();
  std::int64_t done() const { return done_; }
  std::int64_t total() const { return total_; }
  const std::string& stage() const { return stage_; }

 private:
  void report() const;
  ProgressSink* sink_;
  std::string stage_;
  std::int64_t done_ = 0, total_ = 0;
};

/// The text of a progress bar in at most `width` columns (ASCII, no newline):
/// "PREFIX STAGE [###.....] DONE/TOTAL" with a bar of at most 30 cells, '#' for done × cells / total
/// rounded down; where fewer than 10 cells fit, no bar, and the text clipped to `width`. An empty
/// prefix is left out. progress_line("optimize", "profiling", 1, 4, 40) ==
/// "optimize profiling [###............] 1/4" (15 cells fit, 3 of them done).
std::string progress_line(std::string_view prefix, std::string_view stage, std::int64_t done, std::int64_t total,
                          int width);

}  // namespace emo
