#include "output/html_report.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>

#include <libdeflate.h>

#include "support/capture.h"
#include "test_data.h"

namespace emo::output {
namespace {

using ::emo::testing::capture;

HtmlReport sample() {
  HtmlReport r;
  r.title = "trace <a&b>.json";
  r.gpu = "A100-SXM4-80GB";
  r.simulated = true;
  r.makespan_ns = 10'000'000;
  ReportLane gpu{"stream 7", 0, "GPU 0", {}};
  for (int i = 0; i < 100; ++i) gpu.intervals.push_back({i * 100'000, i * 100'000 + 60'000, i % 3 == 0, "k</script>"});
  ReportLane cpu{"thread 1", -1, "CPU threads", {{0, 9'000'000, false, "python"}}};
  r.lanes = {gpu, cpu};
  r.packs = {{0, 0, 4'000'000, 1410, 40}, {0, 4'000'000, 10'000'000, 990, 60}};
  r.min_clock_mhz = 210, r.max_clock_mhz = 1410;
  r.frontier = {{0.010, 5.0, ""}, {0.0105, 4.4, ""}, {0.011, 4.1, ""}};
  r.markers = {{0.010, 5.0, "baseline"}, {0.0105, 4.6, "static best"}, {0.0105, 4.4, "EMO"}};
  r.rows = {{"baseline", 0.010, 5.0, 0, 0}, {"EMO", 0.0105, 4.4, 0.12, 0.05}};
  r.notes = {"profiling: 6 pack-clock runs"};
  // Issue 18: the static curve, the target, the critical path across lanes, power, the pack table.
  r.static_curve = {{0.010, 5.0, ""}, {0.0102, 4.8, ""}, {0.0105, 4.6, ""}, {0.0110, 4.5, ""}, {0.0118, 4.55, ""}};
  r.markers.push_back({0.0104, 4.35, "EMO (predicted)"});
  r.target_s = 0.0105;
  r.path = {{0, 0, 60'000}, {1, 100'000, 200'000}, {0, 300'000, 360'000}};
  r.baseline_power = {10'000'000, {300, 320, 310, 290}};
  r.emo_power = {10'500'000, {250, 260, 255, 240}};
  r.pack_rows = {{0, 0, 40, 4'000'000, 0, 1410, 4'000'000, 1.9, 4'010'000, 1.95},
                 {1, 0, 60, 6'000'000, 500'000, 990, 6'300'000, 2.5, std::nullopt, std::nullopt}};
  r.outside_packs = ReportPoint{0.0002, 0.01, "outside"};
  r.run_total = ReportPoint{0.0105, 4.4, "total"};
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
  // The pack table: pack 0 measured (4.010 ms, 1.9500 J), pack 1 not; the rest and the total under it.
  EXPECT_NE(html.find("<td>0</td><td>0</td><td>40</td><td>4.000</td><td>0.000</td><td>1410</td><td>4.000</td>"
                      "<td>1.9000</td><td>4.010</td><td>1.9500</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>990</td><td>6.300</td><td>2.5000</td><td class=\"nm\">not measured</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>0.200</td><td>0.0100</td>"), std::string::npos);  // outside the packs
  EXPECT_NE(html.find("simulated run (J)"), std::string::npos);
  HtmlReport bad_path = sample();
  bad_path.path.push_back({2, 0, 1});  // two lanes only
  EXPECT_THROW(render_html_report(bad_path), std::invalid_argument);
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

/// An 8-bit RGB or RGBA, non-interlaced PNG decoded to RGB rows (what Chromium's screenshots are).
struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  ///< width × height × 3.
};

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t{static_cast<std::uint8_t>(s[at])} << 24) | (std::uint32_t{static_cast<std::uint8_t>(s[at + 1])} << 16) |
         (std::uint32_t{static_cast<std::uint8_t>(s[at + 2])} << 8) | std::uint32_t{static_cast<std::uint8_t>(s[at + 3])};
}

/// Decodes `file` (PNG chunks; IDAT inflated with libdeflate; filters 0–4). Returns an empty
/// image for anything else.
Image read_png(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Image img;
  if (s.size() < 33 || s.compare(1, 3, "PNG") != 0) return img;
  std::string idat;
  int colour = 0;
  for (std::size_t at = 8; at + 8 <= s.size();) {
    const std::uint32_t len = be32(s, at);
    const std::string type = s.substr(at + 4, 4);
    if (type == "IHDR") {
      img.width = static_cast<int>(be32(s, at + 8)), img.height = static_cast<int>(be32(s, at + 12));
      colour = static_cast<std::uint8_t>(s[at + 17]);
      if (s[at + 16] != 8 || s[at + 20] != 0 || (colour != 2 && colour != 6)) return {};
    }
    if (type == "IDAT") idat += s.substr(at + 8, len);
    at += 12 + len;
  }
  const int bpp = colour == 6 ? 4 : 3;
  const std::size_t stride = static_cast<std::size_t>(img.width) * bpp;
  std::vector<std::uint8_t> raw((stride + 1) * img.height);
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> z(libdeflate_alloc_decompressor(),
                                                                                 libdeflate_free_decompressor);
  if (libdeflate_zlib_decompress(z.get(), idat.data(), idat.size(), raw.data(), raw.size(), nullptr) != LIBDEFLATE_SUCCESS)
    return {};
  std::vector<std::uint8_t> prev(stride, 0), cur(stride);
  img.rgb.resize(static_cast<std::size_t>(img.width) * img.height * 3);
  for (int y = 0; y < img.height; ++y) {
    const std::uint8_t filter = raw[y * (stride + 1)];
    for (std::size_t i = 0; i < stride; ++i) {
      const int x = raw[y * (stride + 1) + 1 + i], a = i >= static_cast<std::size_t>(bpp) ? cur[i - bpp] : 0,
                b = prev[i], c = i >= static_cast<std::size_t>(bpp) ? prev[i - bpp] : 0;
      const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
      const int pred = filter == 1 ? a : filter == 2 ? b : filter == 3 ? (a + b) / 2
                       : filter == 4 ? (pa <= pb && pa <= pc ? a : pb <= pc ? b : c) : 0;
      cur[i] = static_cast<std::uint8_t>(x + pred);
    }
    for (int x = 0; x < img.width; ++x)
      for (int k = 0; k < 3; ++k) img.rgb[(static_cast<std::size_t>(y) * img.width + x) * 3 + k] = cur[x * bpp + k];
    std::swap(prev, cur);
  }
  return img;
}

/// Pixels of `img` inside box (x, y, w, h) within 6 per channel of colour (r, g, b).
int count_colour(const Image& img, const std::array<int, 4>& box, int r, int g, int b) {
  int n = 0;
  for (int y = std::max(0, box[1]); y < std::min(img.height, box[1] + box[3]); ++y)
    for (int x = std::max(0, box[0]); x < std::min(img.width, box[0] + box[2]); ++x) {
      const std::uint8_t* px = &img.rgb[(static_cast<std::size_t>(y) * img.width + x) * 3];
      n += std::abs(px[0] - r) <= 6 && std::abs(px[1] - g) <= 6 && std::abs(px[2] - b) <= 6;
    }
  return n;
}

/// What headless Chromium made of a report: its DOM after the script ran, and a screenshot.
struct Rendered {
  std::string dom;
  Image screenshot;
  std::array<int, 4> frontier_box{};  ///< body[data-frontier-box], CSS px = screenshot px.
};

Rendered render_in_chromium(const HtmlReport& r, const std::string& name) {
  const auto dir = ::emo::testing::scratch_dir("html-report-" + name);
  const auto file = dir / "report.html";
  std::ofstream(file) << render_html_report(r);
  const std::string chromium = "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                               "--force-device-scale-factor=1 --window-size=1400,1600 --user-data-dir=" +
                               (dir / "profile").string();
  Rendered out;
  out.dom = capture(chromium + " --dump-dom file://" + file.string() + " 2>/dev/null");
  capture(chromium + " --screenshot=" + (dir / "shot.png").string() + " file://" + file.string() + " 2>/dev/null");
  out.screenshot = read_png(dir / "shot.png");
  std::smatch m;
  if (std::regex_search(out.dom, m, std::regex("data-frontier-box=\"(\\d+),(\\d+),(\\d+),(\\d+)\"")))
    out.frontier_box = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
  return out;
}

// Renders the report in headless Chromium: the script drew the timeline and the plots
// (body[data-drawn] = "<rects>,<points>"), the best-static marker, the target line and the
// critical path exist in the DOM, and the screenshot shows both curves of the energy–latency plot
// (each curve's colour counted in the plot's box; without a static curve its colour is all but
// absent there: only its legend swatch).
TEST(HtmlReport, DrawsInHeadlessChromium) {
  if (capture("command -v chromium").empty()) {
    if (::emo::testing::in_ci()) FAIL() << "chromium is not installed (scripts/setup-deps.sh installs it)";
    GTEST_SKIP() << "SKIPPED LOUDLY: chromium not installed; the report's drawing is not checked";
  }
  const Rendered full = render_in_chromium(sample(), "full");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(full.dom, m, std::regex("data-drawn=\"(\\d+),(\\d+)\""))) << full.dom.substr(0, 500);
  // 2 packs + 34 critical and 66 other GPU intervals (gaps of 40 µs > resolution) + 1 CPU interval.
  EXPECT_EQ(std::stoi(m[1]), 2 + 100 + 1);
  // 3 frontier points + 5 static points + 4 markers.
  EXPECT_EQ(std::stoi(m[2]), 3 + 5 + 4);
  for (const char* cls : {"class=\"pack\"", "class=\"op critical\"", "class=\"marker\"", "marker static-best-marker",
                          "class=\"target-line\"", "class=\"critical-path\"", "class=\"static-curve\"",
                          "class=\"frontier-curve\"", "class=\"lane-group\"", "class=\"critical-path-steps\""})
    EXPECT_NE(full.dom.find(cls), std::string::npos) << cls;
  std::ptrdiff_t power_lines = 0;
  for (std::size_t at = 0; (at = full.dom.find("class=\"power-line\"", at)) != std::string::npos; ++at) ++power_lines;
  EXPECT_EQ(power_lines, 2);
  // The critical path: (lane row y) 0 → 1 → 0, one polyline of 6 points.
  EXPECT_TRUE(std::regex_search(full.dom, std::regex("points=\"(?:[^\" ]+ ){5}[^\" ]+\"[^>]*class=\"critical-path\"")));
  ASSERT_GT(full.screenshot.width, 0) << "no screenshot decoded";
  ASSERT_GT(full.frontier_box[2], 0);
  constexpr int kCurvePixels = 150;  // a 2.5-px line over ~500 px of plot; a legend swatch is 18 × 3
  EXPECT_GT(count_colour(full.screenshot, full.frontier_box, 0x1f, 0x77, 0xb4), kCurvePixels) << "EMO's frontier";
  EXPECT_GT(count_colour(full.screenshot, full.frontier_box, 0xff, 0x7f, 0x0e), kCurvePixels) << "static curve";
  HtmlReport no_static = sample();
  no_static.static_curve.clear();
  const Rendered control = render_in_chromium(no_static, "control");
  ASSERT_GT(control.screenshot.width, 0);
  EXPECT_LT(count_colour(control.screenshot, control.frontier_box, 0xff, 0x7f, 0x0e), kCurvePixels);
  EXPECT_GT(count_colour(control.screenshot, control.frontier_box, 0x1f, 0x77, 0xb4), kCurvePixels);
}

}  // namespace
}  // namespace emo::output
