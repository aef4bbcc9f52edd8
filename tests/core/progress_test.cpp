// core/progress: the Progress bookkeeping a sink sees, and the text of a progress bar.
#include "core/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace emo::testing {
namespace {

struct Recording final : ProgressSink {
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> calls;
  void update(std::string_view stage, std::int64_t done, std::int64_t total) override {
    calls.emplace_back(std::string(stage), done, total);
  }
};

using Call = std::tuple<std::string, std::int64_t, std::int64_t>;

TEST(Progress, ReportsStartStepsAndFinish) {
  Recording sink;
  Progress p(&sink);
  p.start("profiling", 3);
  p.step();
  p.step();
  p.finish();
  const std::vector<Call> want{{"profiling", 0, 3}, {"profiling", 1, 3}, {"profiling", 2, 3}, {"profiling", 3, 3}};
  EXPECT_EQ(sink.calls, want);
}

TEST(Progress, ExpectAndStepsPastTheTotalRaiseIt) {
  Recording sink;
  Progress p(&sink);
  p.start("refinement", 0);  // at least 1
  p.expect(2);               // 0 + 2 > 1: raised
  p.step(3);                 // 3 > 2: raised to 3
  p.expect(1);               // 3 + 1 = 4
  p.expect(0);               // 3 + 0 < 4: unchanged, not reported
  p.finish();
  const std::vector<Call> want{{"refinement", 0, 1}, {"refinement", 0, 2}, {"refinement", 3, 3},
                               {"refinement", 3, 4}, {"refinement", 4, 4}};
  EXPECT_EQ(sink.calls, want);
  EXPECT_EQ(p.done(), 4);
  EXPECT_EQ(p.total(), 4);
}

TEST(Progress, NoSinkAndNoStageReportNothing) {
  Progress none;  // no sink: bookkeeping only
  none.start("packing", 2);
  none.step();
  EXPECT_EQ(none.done(), 1);
  Recording sink;
  Progress idle(&sink);
  idle.step();
  idle.expect(5);
  idle.finish();
  EXPECT_TRUE(sink.calls.empty());
}

TEST(ProgressLine, BarShrinksToTheWidthThenGoes) {
  // 40 columns: "optimize profiling [" (20) + "] 1/4" (5) leave 15 cells; 1/4 of 15 → 3.
  EXPECT_EQ(progress_line("optimize", "profiling", 1, 4, 40), "optimize profiling [###............] 1/4");
  // Wide: 30 cells at most; 7/7 → all done.
  EXPECT_EQ(progress_line("", "evaluation", 7, 7, 200), "evaluation [" + std::string(30, '#') + "] 7/7");
  // 34 columns leave 9 cells (< 10): no bar.
  EXPECT_EQ(progress_line("optimize", "profiling", 1, 4, 34), "optimize profiling 1/4");
  // Narrower than the text: clipped.
  EXPECT_EQ(progress_line("optimize", "profiling", 1, 4, 12), "optimize pro");
  EXPECT_EQ(progress_line("optimize", "profiling", 1, 4, 0), "");
}

}  // namespace
}  // namespace emo::testing
