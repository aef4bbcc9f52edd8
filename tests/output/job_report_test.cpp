// The report and overlay of a job (issue 26, "Seeing it"): `emo optimize --report/--overlay` on a
// linked job draws one report with a lane per rank (its packs coloured by the plan's clock, its
// savings), the critical path crossing the ranks, and a per-rank table whose sum is the job's;
// one Perfetto overlay with a process per rank.
//
// The job is the hand-worked 2-stage, 2-micro-batch 1F1B pipeline of support/pipeline_job_test.cpp
// (F = 10 ms, B = 20 ms, transfers 1 ms; every time worked out there, in ms after 0):
//   stage 0: F0 [0.01, 10.01], send a0 [10.01, 11.01], ..., recv g1 [62.01, 73.01] (stage 1 sends
//     at 72.01), B1 [73.01, 93.01]; its sync returns at 94.01 (the makespan).
//   stage 1: recv a0 [0.01, 11.01], F0 [11.01, 21.01], B0 [21.01, 41.01], recv a1 [41.01, 42.01]
//     (the last to arrive: stage 0 sent at 20.01), F1 [42.01, 52.01], B1 [52.01, 72.01], send g1
//     [72.01, 73.01].
// So the critical path (by hand): stage 0's first launch and F0, across a0 to stage 1 (from 10.01
// or 11.01: the transfer is on both ranks), all of stage 1's compute to B1 and send g1 (72.01 or
// 73.01), across g1 back to stage 0's B1 and its sync: three stretches, on ranks 0, 1, 0.
//
// The plan drawn is set by hand after optimize() (pack p at 900 + 15 p MHz; GPU energies 40 → 30 J
// and 60 → 57 J), so every expected figure below comes from that plan, not from the report's code.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/optimize.h"
#include "model/gpu_catalog.h"
#include "output/html_report.h"
#include "output/optimize_output.h"
#include "support/capture.h"
#include "support/pipeline_job.h"
#include "test_data.h"
#include "trace/job.h"

namespace emo::testing {
namespace {

using nlohmann::json;

constexpr TimeNs kUs = 1'000, kMs = 1'000'000;

trace::Trace hand_job() {
  const PipelineJob job(hand_worked_source(), PipelineSpec{.stages = 2, .microbatches = 2, .layers = 1, .forward_ns = 10 * kMs,
                                                    .backward_ratio = 2.0, .p2p_ns = 1 * kMs});
  std::vector<trace::Trace> ranks;
  for (int r = 0; r < job.ranks(); ++r) ranks.push_back(job.rank_trace(r));
  return trace::link_job(std::move(ranks));
}

/// The hand plan's clock of pack p.
double hand_clock(std::size_t p) { return 900.0 + 15.0 * static_cast<double>(p); }

/// optimize() on the hand job, once for every test (simulated device).
struct Optimized {
  trace::Trace job = hand_job();
  driver::OptimizeResult r;
  Optimized() {
    driver::OptimizeOptions o;
    o.max_slowdown = 0.01;
    r = driver::optimize(job, graph::Window{}, model::GpuCatalog::builtin().at("A100-SXM4-80GB"), o);
  }
};

const Optimized& optimized() {
  static const Optimized o;
  return o;
}

/// The optimised result with the hand plan's clocks and GPU energies in place of its own.
driver::OptimizeResult with_hand_plan() {
  driver::OptimizeResult r = optimized().r;
  for (std::size_t p = 0; p < r.evaluation.plan.pack_clock_mhz.size(); ++p) r.evaluation.plan.pack_clock_mhz[p] = hand_clock(p);
  r.evaluation.statics.baseline_gpu_j = {{0, 40.0}, {1, 60.0}};
  r.evaluation.emo_run.gpu_energy_j = {{0, 30.0}, {1, 57.0}};
  r.evaluation.statics.baseline.energy_j = 100.0;
  r.evaluation.emo.energy_j = 87.0;
  return r;
}

/// The data element the report's script draws from.
json report_data(const std::string& html) {
  // Found by string search, not std::regex: its recursive matcher overflows the stack (under ASan)
  // on a data element of this size.
  const std::string open = "<script type=\"application/json\" id=\"emo-data\">";
  const std::size_t from = html.find(open);
  const std::size_t to = from == std::string::npos ? from : html.find("</script>", from);
  EXPECT_NE(to, std::string::npos) << "no emo-data element";
  if (to == std::string::npos) return json();
  return json::parse(html.substr(from + open.size(), to - from - open.size()));
}

TEST(JobReport, TheSimulatedRunsSplitTheirEnergyByRank) {
  // What the report's per-rank savings stand on: each run's GPU energies sum to its energy.
  const driver::Evaluation& ev = optimized().r.evaluation;
  ASSERT_EQ(ev.statics.baseline_gpu_j.size(), 2u);
  ASSERT_EQ(ev.emo_run.gpu_energy_j.size(), 2u);
  const auto& base = ev.statics.baseline_gpu_j;
  const auto& emo = ev.emo_run.gpu_energy_j;
  EXPECT_NEAR(base.at(0) + base.at(1), ev.statics.baseline.energy_j, 1e-9 * ev.statics.baseline.energy_j);
  EXPECT_NEAR(emo.at(0) + emo.at(1), ev.emo.energy_j, 1e-9 * ev.emo.energy_j);
}

TEST(JobReport, OneLanePerRankWithThePlansClocksTheCriticalPathAcrossRanksAndPerRankSavings) {
  const trace::Trace& job = optimized().job;
  const driver::OptimizeResult r = with_hand_plan();
  const output::HtmlReport h = output::to_report(job, r);
  const std::string html = output::render_html_report(h);
  const json d = report_data(html);
  // Two ranks, each its own GPU.
  ASSERT_EQ(d["ranks"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(d["ranks"][i]["rank"], i);
    EXPECT_EQ(d["ranks"][i]["gpu"], i);
  }
  // Every pack on its rank's GPU at the hand plan's clock, over its recorded span.
  const auto& packs = r.packs.packing.packs;
  const TimeNs origin = r.packs.analysis.graph.window_start_ns;
  std::multiset<std::tuple<int, TimeNs, TimeNs, double>> want, got;
  std::map<int, double> clock_ns, ns;
  for (std::size_t p = 0; p < packs.size(); ++p) {
    want.insert({packs[p].device, packs[p].start_ns - origin, packs[p].end_ns - origin, hand_clock(p)});
    clock_ns[packs[p].device] += hand_clock(p) * static_cast<double>(packs[p].dur_ns());
    ns[packs[p].device] += static_cast<double>(packs[p].dur_ns());
  }
  for (const json& p : d["packs"])
    got.insert({p["gpu"].get<int>(), p["start_ns"].get<TimeNs>(), p["end_ns"].get<TimeNs>(), p["clock_mhz"].get<double>()});
  EXPECT_EQ(got, want);
  ASSERT_EQ(h.ranks.size(), 2u);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(h.ranks[i].mean_clock_mhz, clock_ns[i] / ns[i], 1e-9) << "rank " << i;
  // The critical path: ranks 0 → 1 → 0, crossing at the a0 and g1 transfers (file comment).
  const json& path = d["rank_path"];
  ASSERT_EQ(path.size(), 3u) << path.dump();
  EXPECT_EQ(path[0][0], 0);
  EXPECT_EQ(path[1][0], 1);
  EXPECT_EQ(path[2][0], 0);
  EXPECT_EQ(path[0][1], 0);
  const TimeNs t0 = 10 * kUs;
  for (const TimeNs cross : {path[0][2].get<TimeNs>(), path[1][1].get<TimeNs>()}) {
    EXPECT_GE(cross, t0 + 10 * kMs);
    EXPECT_LE(cross, t0 + 11 * kMs);
  }
  EXPECT_EQ(path[1][1], path[0][2]) << "stretches are drawn from where the path enters the rank";
  for (const TimeNs cross : {path[1][2].get<TimeNs>(), path[2][1].get<TimeNs>()}) {
    EXPECT_GE(cross, t0 + 72 * kMs);
    EXPECT_LE(cross, t0 + 73 * kMs);
  }
  EXPECT_EQ(path[2][2], t0 + 94 * kMs);
  // Per-rank savings: 40 → 30 J is 25 % of rank 0's, 10 of the job's 100 J; 60 → 57 J is 5 %, 3
  // points; together the job's 13 %.
  EXPECT_NEAR(d["ranks"][0]["savings"].get<double>(), 0.25, 1e-12);
  EXPECT_NEAR(d["ranks"][1]["savings"].get<double>(), 0.05, 1e-12);
  EXPECT_NE(html.find("<td>40.0000</td><td>30.0000</td><td>10.0000</td><td>25.00 %</td><td>10.00 %</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>60.0000</td><td>57.0000</td><td>3.0000</td><td>5.00 %</td><td>3.00 %</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>100.0000</td><td>87.0000</td><td>13.0000</td><td>13.00 %</td><td>13.00 %</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>13.00 %</td>"), std::string::npos) << "the summary's EMO row";
  // Simulated figures say so; nothing is fetched.
  EXPECT_NE(html.find("Simulated device"), std::string::npos);
  EXPECT_NE(html.find("baseline (J, simulated run)"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // The timeline's lane groups are the ranks.
  std::set<std::string> groups;
  for (const output::ReportLane& lane : h.lanes) groups.insert(lane.group);
  EXPECT_EQ(groups, (std::set<std::string>{"rank 0 · GPU 0", "rank 1 · GPU 1"}));
  // A stretch that names no rank is refused.
  output::HtmlReport bad = h;
  bad.rank_path.push_back({2, 0, 1});
  EXPECT_THROW(output::render_html_report(bad), std::invalid_argument);
}

// The job view as headless Chromium draws it: 2 rank lanes, every pack of the plan on one, the 3
// stretches of the critical path joined rank to rank (one polyline of 6 points).
TEST(JobReport, DrawsTheJobViewInHeadlessChromium) {
  if (capture("command -v chromium").empty()) {
    if (in_ci()) FAIL() << "chromium is not installed (scripts/setup-deps.sh installs it)";
    GTEST_SKIP() << "SKIPPED LOUDLY: chromium not installed; the job view's drawing is not checked";
  }
  const driver::OptimizeResult r = with_hand_plan();
  const auto dir = scratch_dir("job-report-chromium");
  std::ofstream(dir / "report.html") << output::render_html_report(output::to_report(optimized().job, r));
  const std::string dom = capture("chromium --headless --no-sandbox --disable-gpu --user-data-dir=" +
                                  (dir / "profile").string() + " --dump-dom file://" + (dir / "report.html").string() +
                                  " 2>/dev/null");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("data-rank-drawn=\"(\\d+),(\\d+),(\\d+)\""))) << dom.substr(0, 300);
  EXPECT_EQ(std::stoi(m[1]), 2);
  EXPECT_EQ(std::stoul(m[2]), r.packs.packing.packs.size());
  EXPECT_EQ(std::stoi(m[3]), 3);
  // The critical path's polyline: 6 points (3 stretches, each a start and an end), by string search
  // (std::regex recurses per character on a page this size).
  const std::size_t path = dom.find("class=\"rank-critical-path\"");
  ASSERT_NE(path, std::string::npos);
  const std::size_t tag = dom.rfind('<', path), points = dom.find("points=\"", tag);
  ASSERT_LT(points, path);
  const std::string coords = dom.substr(points + 8, dom.find('"', points + 8) - points - 8);
  EXPECT_EQ(std::count(coords.begin(), coords.end(), ' '), 5) << coords;
  std::ptrdiff_t lanes = 0;
  for (std::size_t at = 0; (at = dom.find("class=\"rank-lane\"", at)) != std::string::npos; ++at) ++lanes;
  EXPECT_EQ(lanes, 2);
}

TEST(JobReport, GPUsNotMeasuredSayNotMeasured) {
  driver::OptimizeResult r = with_hand_plan();
  r.evaluation.emo_run.gpu_energy_j.clear();  // as on a real GPU
  const std::string html = output::render_html_report(output::to_report(optimized().job, r));
  const json d = report_data(html);
  EXPECT_TRUE(d["ranks"][0]["savings"].is_null());
  EXPECT_NE(html.find("<td class=\"nm\">not measured</td>"), std::string::npos);
  EXPECT_EQ(html.find("the job (sum over ranks)"), std::string::npos);
}

TEST(JobReport, TheOverlayHasAProcessPerRankWithItsPacksAtThePlansClocks) {
  const trace::Trace& job = optimized().job;
  const driver::OptimizeResult r = with_hand_plan();
  const auto file = scratch_dir("job-overlay") / "overlay.json";
  output::write_optimize_overlay(job, r, file.string());
  const json o = json::parse(std::ifstream(file));
  std::map<std::int64_t, std::string> names, labels;
  for (const json& e : o["traceEvents"]) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name") names[e["pid"]] = e["args"]["name"];
    if (e["name"] == "process_labels") labels[e["pid"]] = e["args"]["labels"];
  }
  int rank_gpus = 0;
  std::map<int, std::int64_t> pack_pid;
  for (const auto& [pid, name] : names) {
    rank_gpus += std::regex_match(name, std::regex("rank [01] GPU \\(.*\\)"));
    for (int i = 0; i < 2; ++i)
      if (name == "EMO packs, rank " + std::to_string(i) + " (GPU " + std::to_string(i) + ")") pack_pid[i] = pid;
  }
  EXPECT_EQ(rank_gpus, 2);
  ASSERT_EQ(pack_pid.size(), 2u);
  EXPECT_NE(labels[pack_pid[0]].find("saves 25.0 % of its energy (40.000 → 30.000 J, simulated); 10.00 %"),
            std::string::npos) << labels[pack_pid[0]];
  EXPECT_NE(labels[pack_pid[1]].find("saves 5.0 %"), std::string::npos) << labels[pack_pid[1]];
  // Each pack event on its rank's track, at the hand plan's clock.
  const auto& packs = r.packs.packing.packs;
  std::size_t seen = 0;
  for (const json& e : o["traceEvents"]) {
    if (e["ph"] != "X" || e.value("cat", "") != "emo") continue;
    const std::size_t p = e["args"]["pack"];
    ASSERT_LT(p, packs.size());
    EXPECT_EQ(e["pid"], pack_pid[packs[p].device]) << "pack " << p;
    EXPECT_EQ(e["args"]["rank"], packs[p].device);
    EXPECT_EQ(e["args"]["clock_mhz"].get<double>(), hand_clock(p));
    ++seen;
  }
  EXPECT_EQ(seen, packs.size());
}

}  // namespace
}  // namespace emo::testing
