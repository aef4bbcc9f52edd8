#include "output/html_report.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>

#include "test_data.h"

namespace emo::output {
namespace {

HtmlReport sample() {
  HtmlReport r;
  r.title = "trace <a&b>.json";
  r.gpu = "A100-SXM4-80GB";
  r.simulated = true;
  r.makespan_ns = 10'000'000;
  ReportLane gpu{"GPU 0 · stream 7", 0, {}};
  for (int i = 0; i < 100; ++i) gpu.intervals.push_back({i * 100'000, i * 100'000 + 60'000, i % 3 == 0, "k</script>"});
  ReportLane cpu{"CPU thread 1", -1, {{0, 9'000'000, false, "python"}}};
  r.lanes = {gpu, cpu};
  r.packs = {{0, 0, 4'000'000, 1410, 40}, {0, 4'000'000, 10'000'000, 990, 60}};
  r.min_clock_mhz = 210, r.max_clock_mhz = 1410;
  r.frontier = {{0.010, 5.0, ""}, {0.0105, 4.4, ""}, {0.011, 4.1, ""}};
  r.markers = {{0.010, 5.0, "baseline"}, {0.0105, 4.6, "static best"}, {0.0105, 4.4, "EMO"}};
  r.rows = {{"baseline", 0.010, 5.0, 0, 0}, {"EMO", 0.0105, 4.4, 0.12, 0.05}};
  r.notes = {"profiling: 6 pack-clock runs"};
  return r;
}

TEST(HtmlReport, SelfContainedEscapedAndLabelledSimulated) {
  const std::string html = render_html_report(sample());
  EXPECT_NE(html.find("Simulated device"), std::string::npos);
  EXPECT_NE(html.find("trace &lt;a&amp;b&gt;.json"), std::string::npos);
  EXPECT_EQ(html.find("k</script>"), std::string::npos);  // op names cannot close the data element
  EXPECT_NE(html.find("k<\\/script>"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);  // nothing loaded from the network
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("<td>12.00 %</td><td>5.00 %</td>"), std::string::npos);
  HtmlReport real = sample();
  real.simulated = false;
  EXPECT_EQ(render_html_report(real).find("Simulated device"), std::string::npos);
  HtmlReport bad = sample();
  bad.makespan_ns = 0;
  EXPECT_THROW(render_html_report(bad), std::invalid_argument);
}

TEST(HtmlReport, MergesIntervalsBelowResolution) {
  HtmlReport r = sample();
  r.lanes[0].intervals.clear();
  for (int i = 0; i < 100000; ++i) r.lanes[0].intervals.push_back({i * 100, i * 100 + 50, false, "k"});  // 10 ms of 50 ns ops
  const std::string html = render_html_report(r);
  EXPECT_LT(html.size(), 200'000u);  // merged at makespan/4000 = 2.5 µs
}

/// Output of `cmd` (stdout), or "" when it cannot run.
std::string capture(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return "";
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p.get())) out.append(buf.data(), n);
  return out;
}

// Renders the report in headless Chromium and checks that the script drew the timeline and the
// frontier: body[data-drawn] = "<rects>,<points>".
TEST(HtmlReport, DrawsInHeadlessChromium) {
  if (capture("command -v chromium").empty()) {
    if (::emo::testing::in_ci()) FAIL() << "chromium is not installed (scripts/setup-deps.sh installs it)";
    GTEST_SKIP() << "SKIPPED LOUDLY: chromium not installed; the report's drawing is not checked";
  }
  const auto dir = ::emo::testing::scratch_dir("html-report");
  const auto file = dir / "report.html";
  std::ofstream(file) << render_html_report(sample());
  const std::string dom = capture("chromium --headless --no-sandbox --disable-gpu --user-data-dir=" +
                                  (dir / "profile").string() + " --dump-dom file://" + file.string() +
                                  " 2>/dev/null");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("data-drawn=\"(\\d+),(\\d+)\""))) << dom.substr(0, 500);
  // 2 packs + 34 critical and 66 other GPU intervals (gaps of 40 µs > resolution) + 1 CPU interval.
  EXPECT_EQ(std::stoi(m[1]), 2 + 100 + 1);
  EXPECT_EQ(std::stoi(m[2]), 3 + 3);
  EXPECT_NE(dom.find("class=\"pack\""), std::string::npos);
  EXPECT_NE(dom.find("class=\"op critical\""), std::string::npos);
  EXPECT_NE(dom.find("class=\"marker\""), std::string::npos);
}

}  // namespace
}  // namespace emo::output
