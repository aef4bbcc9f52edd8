#include "output/optimize_output.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <climits>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "output/analysis_output.h"
#include "output/pack_output.h"
#include "trace/job.h"

namespace emo::output {
namespace {

using driver::Evaluated;
using driver::OptimizeResult;

/// The row label of the plan EMO keeps: its policy, a static clock, or the baseline.
std::string kept_label(const driver::Evaluation& ev) {
  if (ev.kept == driver::KeptPlan::baseline) return "EMO (baseline kept)";
  if (ev.kept == driver::KeptPlan::static_clock) return fmt::format("EMO (static {:.0f} MHz)", ev.candidates.static_mhz);
  if (ev.kept == driver::KeptPlan::per_gpu_static) return "EMO (static per GPU)";
  return "EMO policy";
}

/// `fractions` as percentages (0.005 → 0.5).
std::vector<double> percent_points(const std::vector<double>& fractions) {
  std::vector<double> out;
  for (const double f : fractions) out.push_back(100 * f);
  return out;
}

double savings_of(const Evaluated& e, const Evaluated& baseline) {
  return baseline.energy_j > 0 ? 1 - e.energy_j / baseline.energy_j : 0;
}

double slowdown_of(const Evaluated& e, const Evaluated& baseline) {
  return baseline.time_ns > 0 ? static_cast<double>(e.time_ns) / baseline.time_ns - 1 : 0;
}

/// The measured latency target as a slowdown of the measured baseline (a fraction).
double target_slowdown(const driver::Evaluation& ev) {
  return slowdown_of({ev.statics.target_ns, 0, 0}, ev.statics.baseline);
}

/// True when the measured per-GPU static plan ran within the measured target.
bool per_gpu_static_within(const driver::Evaluation& ev) {
  return ev.candidates.per_gpu_static.time_ns <= ev.statics.target_ns;
}

/// The measured per-GPU static plan (each GPU its own clock), or null when none was run.
nlohmann::json per_gpu_static_json(const driver::Evaluation& ev) {
  const driver::Candidates& c = ev.candidates;
  if (c.per_gpu_static_mhz.empty()) return nullptr;
  return {{"time_ns", c.per_gpu_static.time_ns},
          {"energy_j", c.per_gpu_static.energy_j},
          {"within_target", per_gpu_static_within(ev)},
          {"clocks_mhz", c.per_gpu_static_mhz},
          {"savings", savings_of(c.per_gpu_static, ev.statics.baseline)}};
}

/// Profiling every clock, in equivalent iterations (scaled from what K clocks cost).
double every_clock_iterations(const OptimizeResult& r) {
  const driver::ProfileStage& p = r.profile;
  return p.pack_clock_profiles > 0 ? r.profiling_iterations * static_cast<double>(p.every_clock_profiles) /
                                         static_cast<double>(p.pack_clock_profiles)
                                   : 0.0;
}

/// Measured and fitted points per pack (a real GPU only).
nlohmann::json pack_profiles(const OptimizeResult& r) {
  nlohmann::json profiles = nlohmann::json::array();
  const auto& measured = r.profile.measured.points;
  for (std::size_t p = 0; p < measured.size(); ++p) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& pt : measured[p]) {
      nlohmann::json j = {{"clock_mhz", pt.clock_mhz}, {"time_s", pt.time_s}, {"energy_j", pt.energy_j}};
      if (p < r.fit.models.size()) {
        j["fitted_time_s"] = r.fit.models[p].time_s(pt.clock_mhz);
        j["fitted_energy_j"] = r.fit.models[p].energy_j(pt.clock_mhz);
      }
      points.push_back(std::move(j));
    }
    profiles.push_back({{"pack", p}, {"device", r.packs.packing.packs[p].device}, {"points", points}});
  }
  return profiles;
}

/// How the kept plan was found: the candidates, the re-plans and which one is kept (top-level keys
/// of --json).
nlohmann::json candidates_json(const driver::Evaluation& ev) {
  return {
          {"static_candidate_mhz", ev.candidates.static_mhz},
          {"static_kept", (ev.kept == driver::KeptPlan::static_clock)},
          {"baseline_kept", (ev.kept == driver::KeptPlan::baseline)},
          {"conservative_margin", ev.validation.conservative_margin},
          {"tighter_runs", ev.candidates.tighter_runs},
          {"tighter_kept", (ev.kept == driver::KeptPlan::tighter)},
          {"per_gpu_static_kept", (ev.kept == driver::KeptPlan::per_gpu_static)},
          {"per_gpu_static", per_gpu_static_json(ev)},
          {"own_plan", {{"time_ns", ev.validation.own_plan.time_ns}, {"energy_j", ev.validation.own_plan.energy_j}}},
          {"static_candidate_runs", ev.candidates.static_runs},
          {"calibrated_target_ns", ev.validation.calibrated_target_ns},
          {"calibration_runs", ev.validation.calibration_runs},
          {"calibration_kept", (ev.kept == driver::KeptPlan::calibrated)},
          {"probe_runs", ev.validation.probe_runs},
          {"probe_kept", (ev.kept == driver::KeptPlan::probe)},
          {"validation_runs", ev.policy_runs},
          {"target_ladder", ev.ladder},
          {"kept_ladder_step", ev.kept_step}};
}

}  // namespace

nlohmann::json to_json(const OptimizeResult& r) {
  const driver::Evaluation& ev = r.evaluation;
  nlohmann::json frontier = nlohmann::json::array();
  for (const auto& p : r.frontier) frontier.push_back({{"time_s", p.time_s}, {"energy_j", p.energy_j}});
  nlohmann::json static_curve = nlohmann::json::array();
  for (const auto& e : ev.statics.curve)
    static_curve.push_back({{"clock_mhz", e.clock_mhz}, {"time_ns", e.time_ns}, {"energy_j", e.energy_j}});
  std::map<double, int> clocks;
  for (double f : ev.plan.pack_clock_mhz) clocks[f]++;
  nlohmann::json clock_hist = nlohmann::json::object();
  for (auto [f, n] : clocks) clock_hist[fmt::format("{:.0f}", f)] = n;
  const driver::ProfileStage& prof = r.profile;
  nlohmann::json out = {
      {"trace", r.trace_path},
      {"gpu", r.gpu},
      {"simulated", r.simulated},
      {"window", r.packs.analysis.graph.window.label},
      {"baseline", {{"time_ns", ev.statics.baseline.time_ns}, {"energy_j", ev.statics.baseline.energy_j}, {"clock_mhz", ev.statics.baseline.clock_mhz}}},
      {"static_best",
       {{"clock_mhz", ev.statics.best.clock_mhz}, {"time_ns", ev.statics.best.time_ns}, {"energy_j", ev.statics.best.energy_j}}},
      {"emo",
       {{"time_ns", ev.emo.time_ns},
        {"energy_j", ev.emo.energy_j},
        {"predicted_time_ns", ev.plan.predicted.time_ns},
        {"predicted_energy_j", ev.plan.predicted.energy_j}}},
      {"savings", r.savings()},
      {"slowdown", r.slowdown()},
      {"static_savings", savings_of(ev.statics.best, ev.statics.baseline)},
      {"static_slowdown", slowdown_of(ev.statics.best, ev.statics.baseline)},
      {"target_ns", r.model.target_ns},
      {"predicted_baseline", {{"time_ns", r.model.predicted_baseline.time_ns}, {"energy_j", r.model.predicted_baseline.energy_j}}},
      {"packs", r.packs.pack_graph.packs},
      {"ops", r.packs.packing.nodes.size()},
      {"pack_clocks_mhz", clock_hist},
      {"contraction_error", r.packs.contraction.contraction_error},
      {"profiled_clocks_mhz", prof.profiled_clocks_mhz},
      {"profiled_runs", prof.measured.runs},
      {"profiling",
       {{"pack_clock_profiles", prof.pack_clock_profiles},
        {"refinement_profiles", prof.refinement_profiles},
        {"refinement_rounds", prof.refinement_rounds},
        {"every_clock_profiles", prof.every_clock_profiles},
        {"device_s", prof.measured.device_s},
        {"equivalent_iterations", r.profiling_iterations},
        {"every_clock_equivalent_iterations", every_clock_iterations(r)}}},
      {"clock_switches", ev.emo_run.clock_switches},
      {"ops_at_other_clock", ev.emo_run.ops_at_other_clock},
      {"deadline_repairs", ev.search.deadline_repairs},
      {"polish_moves", ev.search.polish_moves},
      {"greedy_wins", ev.search.greedy_wins},
      {"static_wins", ev.search.static_wins},
      {"negative_lags", r.model.negative_lags},
      {"frontier", frontier},
      {"static_curve", static_curve}};
  out.update(candidates_json(ev));
  if (std::getenv("EMO_DEBUG_PROFILES")) out["pack_profiles"] = pack_profiles(r);
  if (!r.simulated) {  // measured on a real GPU by running the workload (driver/workload_backend.h)
    out["device"] = r.device_label;
    out["workload_runs"] = r.workload_runs;
    out["packs_at_run_power"] = prof.measured.packs_at_run_power;
    out["pack_profiles"] = pack_profiles(r);
  }
  return out;
}

std::string to_text(const OptimizeResult& r) {
  const driver::Evaluation& ev = r.evaluation;
  const driver::ProfileStage& prof = r.profile;
  const std::string sim = r.simulated ? " [SIMULATED]" : "";
  std::string out = fmt::format("{}: {} ({}), GPU {}{}\n", r.trace_path, r.packs.analysis.graph.window.label,
                                format_duration(ev.statics.baseline.time_ns), r.gpu,
                                r.simulated ? " — simulated device: every time and energy below is simulated"
                                            : fmt::format(" — measured on {} by running the workload ({} runs)",
                                                          r.device_label, r.workload_runs));
  out += fmt::format("  {} packs of {} GPU ops; profiled at {} MHz, then {} profiles where the plan decides ({} "
                     "rounds): {} pack-clock profiles ({} runs, {:.2f} s of device time, {:.1f} iterations); every "
                     "clock would be {} profiles (~{:.0f} iterations)\n",
                     r.packs.pack_graph.packs, r.packs.packing.nodes.size(), fmt::join(prof.profiled_clocks_mhz, ","),
                     prof.refinement_profiles, prof.refinement_rounds, prof.pack_clock_profiles, prof.measured.runs, prof.measured.device_s, r.profiling_iterations,
                     prof.every_clock_profiles, every_clock_iterations(r));
  out += fmt::format("  {:<26} {:>12} {:>12} {:>9} {:>9}\n", "schedule", "time", "energy (J)", "savings", "slowdown");
  auto row = [&](const std::string& name, const Evaluated& e) {
    return fmt::format("  {:<26} {:>12} {:>12.3f} {:>8.2f}% {:>8.2f}%{}\n", name, format_duration(e.time_ns),
                       e.energy_j, 100 * savings_of(e, ev.statics.baseline), 100 * slowdown_of(e, ev.statics.baseline), sim);
  };
  out += row(fmt::format("baseline ({:.0f} MHz)", ev.statics.baseline.clock_mhz), ev.statics.baseline);
  out += row(fmt::format("best static ({:.0f} MHz)", ev.statics.best.clock_mhz), ev.statics.best);
  if (!ev.candidates.per_gpu_static_mhz.empty()) {
    out += row(fmt::format("static per GPU ({} MHz)", fmt::join(ev.candidates.per_gpu_static_mhz, ",")), ev.candidates.per_gpu_static);
    if (!per_gpu_static_within(ev))
      out += fmt::format("    (static per GPU: {:+.3f} % on its run, over the target of {:+.3f} %; not a candidate){}\n",
                         100 * slowdown_of(ev.candidates.per_gpu_static, ev.statics.baseline), 100 * target_slowdown(ev), sim);
  }
  out += row(kept_label(ev), ev.emo);
  if (!ev.ladder.empty())
    out += fmt::format("  planned at {} target-ladder point{} (+{} %){}\n", ev.ladder.size(), ev.ladder.size() == 1 ? "" : "s",
                       fmt::join(percent_points(ev.ladder), ", +"),
                       ev.kept_step >= 0 ? fmt::format("; kept: the plan of +{:g} %", 100 * ev.kept_step) : "");
  if ((ev.kept == driver::KeptPlan::baseline))
    out += fmt::format("  no plan met the latency target on its evaluation run ({} policy runs; EMO's own plan {}, "
                       "{:+.2f} %): the baseline (max clock) is kept\n",
                       ev.policy_runs, format_duration(ev.validation.own_plan.time_ns), 100 * slowdown_of(ev.validation.own_plan, ev.statics.baseline));
  out += fmt::format("  target: +{:.1f} % ({} on the measured baseline, {} on the models' baseline); EMO "
                     "predicted {} and {:.3f} J; {} clock switches per window ({})\n",
                     100 * (static_cast<double>(r.model.target_ns) / r.model.predicted_baseline.time_ns - 1),
                     format_duration(static_cast<TimeNs>(std::floor(static_cast<double>(ev.statics.baseline.time_ns) *
                                                                    static_cast<double>(r.model.target_ns) /
                                                                    static_cast<double>(r.model.predicted_baseline.time_ns)))),
                     format_duration(r.model.target_ns), format_duration(ev.plan.predicted.time_ns),
                     ev.plan.predicted.energy_j, ev.emo_run.clock_switches, r.packs.analysis.graph.window.label);
  return out;
}

nlohmann::json to_json(const driver::TrueOptimum& t, const Evaluated& baseline) {
  nlohmann::json j = {{"computed", t.computed}, {"packs", t.packs}, {"simulated", true}};
  if (!t.computed) {
    j["not_computed"] = t.not_computed;
    return j;
  }
  std::map<std::string, int> clocks;
  for (double f : t.pack_clock_mhz) clocks[fmt::format("{:.0f}", f)]++;
  j.update({{"time_ns", t.time_ns},
            {"energy_j", t.energy_j},
            {"savings", t.savings},
            {"slowdown", slowdown_of({t.time_ns, t.energy_j, 0}, baseline)},
            {"gap", t.gap},
            {"met_target", t.met_target},
            {"solver_status", t.status},
            {"solver_gap", t.solver_gap},
            {"seconds", t.seconds},
            {"solves", t.solves},
            {"runs", t.runs},
            {"model_target_ns", t.model_target_ns},
            {"predicted_time_ns", t.predicted_time_ns},
            {"predicted_energy_j", t.predicted_energy_j},
            {"emo_true_time_ns", t.emo_true_time_ns},
            {"emo_true_energy_j", t.emo_true_energy_j},
            {"pack_clocks_mhz", clocks}});
  return j;
}


std::string to_text(const driver::TrueOptimum& t, const Evaluated& baseline) {
  if (!t.computed) return fmt::format("  true optimum: not computed ({}) [SIMULATED]\n", t.not_computed);
  const Evaluated e{t.time_ns, t.energy_j, 0};
  std::string out = fmt::format("  {:<26} {:>12} {:>12.3f} {:>8.2f}% {:>8.2f}% [SIMULATED]\n", "true optimum (oracle)",
                                format_duration(e.time_ns), e.energy_j, 100 * savings_of(e, baseline),
                                100 * slowdown_of(e, baseline));
  out += fmt::format("  true optimum: the same packs and target with true costs, solved exactly (CBC {}, {:.1f} s) "
                     "and run on the simulated device{}; EMO's gap to it {:+.2f} % [SIMULATED]\n",
                     t.status, t.seconds, t.met_target ? "" : " (misses the target)", 100 * t.gap);
  return out;
}

namespace {

/// The timeline's lanes: one per GPU stream and CPU thread of the window, grouped per GPU ("GPU d",
/// with the trace's rank when it has one) and then the CPU threads; in a linked job one group per
/// rank ("rank r · GPU d": its streams, then its CPU threads). `lane_of` receives each graph node's
/// lane.
std::vector<ReportLane> lanes_of(const trace::Trace& t, const OptimizeResult& r, std::vector<int>& lane_of) {
  const graph::DepGraph& g = r.packs.analysis.graph;
  const auto& ranks = t.meta.job.ranks;
  const std::string rank = t.meta.rank >= 0 ? fmt::format(" · rank {}", t.meta.rank) : "";
  // (group order, CPU?, stream or thread): one trace orders GPUs by device, then every CPU thread;
  // a job orders by rank, each rank's GPU streams before its threads.
  using Key = std::tuple<std::int64_t, bool, std::int64_t>;
  std::map<Key, ReportLane> lanes;
  std::vector<Key> key_of(g.nodes());
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    const auto row = g.op[n];
    const bool gpu = g.gpu[n] != 0;
    const int dev = gpu ? t.ops.device[row] : -1;
    const std::int32_t in_job = ranks.empty() ? -1 : trace::job_rank_index(t, row);
    const std::int64_t stream_or_thread = gpu ? t.ops.stream[row] : t.ops.thread[row];
    key_of[n] = {in_job >= 0 ? in_job : (gpu ? dev : INT32_MAX), !gpu, stream_or_thread};
    ReportLane& lane = lanes[key_of[n]];
    if (lane.label.empty()) {
      lane.label = gpu ? fmt::format("stream {}", stream_or_thread) : fmt::format("thread {}", stream_or_thread);
      lane.gpu = dev;
      if (in_job >= 0) {
        lane.group = fmt::format("rank {} · GPU {}", ranks[static_cast<std::size_t>(in_job)].rank, in_job);
      } else {
        lane.group = gpu ? fmt::format("GPU {}{}", dev, rank) : fmt::format("CPU threads{}", rank);
      }
    }
    lane.intervals.push_back({g.rec_start[n] - g.window_start_ns, g.rec_end[n] - g.window_start_ns,
                              r.packs.analysis.node_slack[n] == 0, std::string(t.strings.view(t.ops.name[row]))});
  }
  std::vector<ReportLane> out;
  std::map<Key, int> index;
  for (auto& [k, lane] : lanes) {
    index[k] = static_cast<int>(out.size());
    out.push_back(std::move(lane));
  }
  lane_of.resize(g.nodes());
  for (std::uint32_t n = 0; n < g.nodes(); ++n) lane_of[n] = index[key_of[n]];
  return out;
}

/// A linked job: per rank its packs, their clock and its GPU's energy in the baseline's and the
/// kept plan's runs (HtmlReport::ranks), and the critical path by rank (HtmlReport::rank_path), each
/// stretch from the previous one's end.
void add_ranks(const trace::Trace& t, const OptimizeResult& r, HtmlReport& h) {
  const auto& ranks = t.meta.job.ranks;
  const driver::Evaluation& ev = r.evaluation;
  const auto& packs = r.packs.packing.packs;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int gpu = static_cast<int>(i);
    ReportRank k{ranks[i].rank, gpu, ranks[i].path, 0, 0, std::nullopt, std::nullopt};
    double clock_ns = 0, ns = 0;
    for (std::size_t p = 0; p < packs.size(); ++p) {
      if (packs[p].device != gpu) continue;
      ++k.packs;
      clock_ns += ev.plan.pack_clock_mhz[p] * static_cast<double>(packs[p].dur_ns());
      ns += static_cast<double>(packs[p].dur_ns());
    }
    k.mean_clock_mhz = ns > 0 ? clock_ns / ns : 0;
    const auto& base_j = ev.statics.baseline_gpu_j;
    const auto& emo_j = ev.emo_run.gpu_energy_j;
    if (const auto b = base_j.find(gpu); b != base_j.end()) k.baseline_j = b->second;
    if (const auto e = emo_j.find(gpu); e != emo_j.end()) k.emo_j = e->second;
    h.ranks.push_back(std::move(k));
  }
  // A stretch is drawn from where the path enters its rank: a receive posted early starts long before
  // its data arrives (the step before it, on the sending rank, ends then).
  const TimeNs origin = r.packs.analysis.graph.window_start_ns;
  TimeNs entered = INT64_MIN;
  for (const RankSegment& s : rank_segments(t, r.packs.analysis)) {
    const TimeNs start = std::max(s.start_ns, entered);
    h.rank_path.push_back({s.index, start - origin, std::max(start, s.end_ns) - origin});
    entered = std::max(start, s.end_ns);
  }
}

/// Per pack id, the policy's predicted energy: make_policy lists each GPU's packs in pack-id order
/// stably sorted by predicted start, so the same sort over the plan's schedule pairs them.
std::vector<double> predicted_pack_energy(const OptimizeResult& r) {
  const auto& packs = r.packs.packing.packs;
  std::vector<double> out(packs.size(), 0.0);
  for (const policy::GpuPolicy& gp : r.policy().gpus) {
    std::vector<std::uint32_t> ids;
    for (std::uint32_t p = 0; p < packs.size(); ++p)
      if (packs[p].device == gp.device) ids.push_back(p);
    std::stable_sort(ids.begin(), ids.end(),
                     [&](auto a, auto b) { return r.plan().schedule.start(a) < r.plan().schedule.start(b); });
    for (std::size_t i = 0; i < ids.size() && i < gp.packs.size(); ++i) out[ids[i]] = gp.packs[i].predicted_energy_j;
  }
  return out;
}

/// The per-pack table's rows, and the measured rest of the run and its total when measured.
void add_pack_rows(const OptimizeResult& r, HtmlReport& h) {
  const driver::Evaluation& ev = r.evaluation;
  const auto& packs = r.packs.packing.packs;
  const std::vector<double> predicted_j = predicted_pack_energy(r);
  const bool measured = ev.emo_run.packs.packs.size() == packs.size();
  for (std::uint32_t p = 0; p < packs.size(); ++p) {
    ReportPackRow row{static_cast<int>(p), packs[p].device, packs[p].count, packs[p].dur_ns(), r.packs.pack_slack[p],
                      ev.plan.pack_clock_mhz[p], r.plan().schedule.end(p) - r.plan().schedule.start(p),
                      predicted_j[p], std::nullopt, std::nullopt};
    if (measured) row.measured_ns = ev.emo_run.packs.packs[p].time_ns, row.measured_j = ev.emo_run.packs.packs[p].energy_j;
    h.pack_rows.push_back(row);
  }
  if (measured) {
    h.outside_packs = ReportPoint{ns_to_s(ev.emo_run.packs.outside_ns), ev.emo_run.packs.outside_energy_j, "outside"};
    h.run_total = ReportPoint{ns_to_s(ev.emo.time_ns), ev.emo.energy_j, "total"};
  }
}

/// The energy–latency plot: EMO's predicted frontier, the measured static curve, the markers and
/// the measured target.
void add_plot(const OptimizeResult& r, HtmlReport& h) {
  const driver::Evaluation& ev = r.evaluation;
  for (const auto& p : r.frontier) h.frontier.push_back({p.time_s, p.energy_j, ""});
  for (const auto& e : ev.statics.curve) h.static_curve.push_back({ns_to_s(e.time_ns), e.energy_j, ""});
  h.markers = {{ns_to_s(ev.statics.baseline.time_ns), ev.statics.baseline.energy_j, "baseline"},
               {ns_to_s(ev.statics.best.time_ns), ev.statics.best.energy_j, "static best"},
               {ns_to_s(ev.emo.time_ns), ev.emo.energy_j, "EMO"},
               {ns_to_s(ev.plan.predicted.time_ns), ev.plan.predicted.energy_j, "EMO (predicted)"}};
  h.target_s = ns_to_s(ev.statics.target_ns);
  h.baseline_power = {ev.statics.baseline_power.duration_ns, ev.statics.baseline_power.power_w};
  h.emo_power = {ev.emo_run.power.duration_ns, ev.emo_run.power.power_w};
}

}  // namespace

HtmlReport to_report(const trace::Trace& t, const OptimizeResult& r) {
  const driver::Evaluation& ev = r.evaluation;
  HtmlReport h;
  const graph::DepGraph& g = r.packs.analysis.graph;
  h.title = r.trace_path + " (" + g.window.label + ")";
  h.gpu = r.gpu;
  h.simulated = r.simulated;
  h.makespan_ns = std::max<TimeNs>(1, r.packs.analysis.schedule.makespan_ns);
  std::vector<int> lane_of;
  h.lanes = lanes_of(t, r, lane_of);
  for (const auto& step : r.packs.analysis.path.steps)
    h.path.push_back({lane_of[step.node], r.packs.analysis.schedule.start(step.node) - g.window_start_ns,
                      r.packs.analysis.schedule.end(step.node) - g.window_start_ns});
  const auto& packs = r.packs.packing.packs;
  for (std::size_t p = 0; p < packs.size(); ++p)
    h.packs.push_back({packs[p].device, packs[p].start_ns - g.window_start_ns, packs[p].end_ns - g.window_start_ns,
                       ev.plan.pack_clock_mhz[p], packs[p].count});
  const auto& options = r.profile.option_clocks_mhz;
  h.min_clock_mhz = options.empty() ? 0 : options.back();
  h.max_clock_mhz = options.empty() ? 0 : options.front();
  add_plot(r, h);
  add_pack_rows(r, h);
  if (!t.meta.job.ranks.empty()) add_ranks(t, r, h);
  auto row = [&](const std::string& name, const Evaluated& e) {
    return ReportRow{name, ns_to_s(e.time_ns), e.energy_j, savings_of(e, ev.statics.baseline), slowdown_of(e, ev.statics.baseline)};
  };
  h.rows = {row(fmt::format("baseline ({:.0f} MHz)", ev.statics.baseline.clock_mhz), ev.statics.baseline),
            row(fmt::format("best static clock ({:.0f} MHz)", ev.statics.best.clock_mhz), ev.statics.best),
            row(kept_label(ev), ev.emo)};
  h.notes = {fmt::format("Table: evaluated on the {} device. Energy–latency plot: EMO's frontier predicted by the pack "
                         "models; the static curve, the markers and the target {}.",
                         r.simulated ? "simulated" : "real", r.simulated ? "from simulated runs" : "measured"),
             fmt::format("{} packs; profiled at {} MHz ({} pack-clock profiles; every clock: {}).", r.packs.pack_graph.packs,
                         fmt::join(r.profile.profiled_clocks_mhz, ", "), r.profile.pack_clock_profiles,
                         r.profile.every_clock_profiles),
             fmt::format("Latency target {} (+{:.1f} % on the {} baseline; the models' target {}); {} clock switches "
                         "per window ({}).",
                         format_duration(ev.statics.target_ns), 100 * target_slowdown(ev),
                         r.simulated ? "simulated" : "measured", format_duration(r.model.target_ns), ev.emo_run.clock_switches,
                         g.window.label)};
  return h;
}

std::string rank_savings_label(double baseline_j, double emo_j, double job_baseline_j, bool simulated) {
  return fmt::format("saves {:.1f} % of its energy ({:.3f} → {:.3f} J{}); {:.2f} % of the job's baseline",
                     100 * (1 - emo_j / baseline_j), baseline_j, emo_j, simulated ? ", simulated" : "",
                     100 * (baseline_j - emo_j) / job_baseline_j);
}

void write_optimize_overlay(const trace::Trace& t, const OptimizeResult& r, const std::string& path) {
  const driver::Evaluation& ev = r.evaluation;
  std::map<std::int32_t, std::string> labels;
  for (std::size_t d = 0; d < t.meta.job.ranks.size(); ++d) {
    const auto b = ev.statics.baseline_gpu_j.find(static_cast<std::int32_t>(d));
    const auto e = ev.emo_run.gpu_energy_j.find(static_cast<std::int32_t>(d));
    if (b == ev.statics.baseline_gpu_j.end() || e == ev.emo_run.gpu_energy_j.end() || b->second <= 0 ||
        ev.statics.baseline.energy_j <= 0)
      continue;
    labels[static_cast<std::int32_t>(d)] = rank_savings_label(b->second, e->second, ev.statics.baseline.energy_j, r.simulated);
  }
  write_pack_overlay(t, r.packs, path, r.plan().pack_clock_mhz, labels);
}

namespace {

/// One schedule of a job against its baseline and target.
nlohmann::json schedule_json(const driver::Evaluated& e, const driver::Evaluated& baseline, TimeNs target_ns) {
  const double savings = baseline.energy_j > 0 ? 1.0 - e.energy_j / baseline.energy_j : 0.0;
  const double slowdown =
      baseline.time_ns > 0 ? static_cast<double>(e.time_ns) / static_cast<double>(baseline.time_ns) - 1.0 : 0.0;
  return {{"time_ns", e.time_ns},
          {"energy_j", e.energy_j},
          {"savings", savings},
          {"slowdown", slowdown},
          {"within_target", e.time_ns <= target_ns}};
}

/// A text row of one schedule of a job: time, energy, savings, slowdown, the target.
std::string schedule_row(const char* name, const driver::Evaluated& e, const driver::Evaluated& baseline,
                         TimeNs target_ns, bool simulated) {
  const double savings = baseline.energy_j > 0 ? 100.0 * (1.0 - e.energy_j / baseline.energy_j) : 0.0;
  const double slowdown = baseline.time_ns > 0
                              ? 100.0 * (static_cast<double>(e.time_ns) / static_cast<double>(baseline.time_ns) - 1.0)
                              : 0.0;
  return fmt::format("  {:<30} {:>10} {:>12.3f} {:>8.2f}% {:>8.2f}% {}{}\n", name, format_duration(e.time_ns),
                     e.energy_j, savings, slowdown, e.time_ns <= target_ns ? "within target" : "MISSES the target",
                     simulated ? " [SIMULATED]" : "");
}

}  // namespace

nlohmann::json to_json(const job::JobComparison& c) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const job::RankAlone& r : c.ranks) {
    ranks.push_back({{"rank", r.rank}, {"packs", r.packs}, {"savings", r.savings}, {"slowdown", r.slowdown}});
  }
  return {{"baseline", schedule_json(c.baseline, c.baseline, c.target_ns)},
          {"joint", schedule_json(c.joint, c.baseline, c.target_ns)},
          {"independent", schedule_json(c.independent, c.baseline, c.target_ns)},
          {"target_ns", c.target_ns},
          {"ranks_alone", ranks},
          {"switching", "ideal: every op at its pack's clock from its start, for both plans"},
          {"simulated", c.simulated}};
}

std::string to_text(const job::JobComparison& c) {
  auto row = [&](const char* name, const driver::Evaluated& e) {
    return schedule_row(name, e, c.baseline, c.target_ns, c.simulated);
  };
  std::string out = "joint vs per-rank independent plans, all ranks run together on the joint graph (collectives wait "
                    "for their last participant; ideal switching for both):\n";
  out += fmt::format("  {:<30} {:>10} {:>12} {:>9} {:>9}\n", "schedule", "time", "energy (J)", "savings", "slowdown");
  out += row("baseline (max clock)", c.baseline);
  out += row("joint (EMO)", c.joint);
  out += row("independent (each rank alone)", c.independent);
  std::string alone;
  for (const job::RankAlone& r : c.ranks) {
    alone += fmt::format("{}rank {} {:.1f}%/{:+.2f}%", alone.empty() ? "" : ", ", r.rank, 100 * r.savings, 100 * r.slowdown);
  }
  out += fmt::format("  target {}; each rank alone, on its own trace (savings/slowdown): {}\n",
                     format_duration(c.target_ns), alone);
  return out;
}

nlohmann::json to_json(const job::DecomposedSolve& d) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const job::RankSolve& r : d.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"packs", r.packs},
                     {"collectives_pinned", r.pinned},
                     {"wait_before_collectives_ns", r.wait_ns},
                     {"mean_clock_mhz", r.mean_clock_mhz},
                     {"own_savings", r.own_savings},
                     {"own_target_met", r.own_met}});
  }
  return {{"solve", "decomposed"},
          {"max_slowdown", d.max_slowdown},
          {"model_makespan_ns", d.recorded.makespan_ns},
          {"collectives_pinned", d.recorded.collectives_pinned},
          {"cycle_breaks", d.recorded.cycle_breaks},
          {"baseline", schedule_json(d.baseline.run, d.baseline.run, d.baseline.target_ns)},
          {"emo", schedule_json(d.plan, d.baseline.run, d.baseline.target_ns)},
          {"own_plan", schedule_json(d.composed.plan, d.baseline.run, d.baseline.target_ns)},
          {"static_best", d.static_choice.best.clock_mhz > 0
                              ? schedule_json(d.static_choice.best, d.baseline.run, d.baseline.target_ns)
                              : nlohmann::json()},
          {"static_best_clock_mhz", d.static_choice.best.clock_mhz},
          {"static_kept", d.static_choice.kept},
          {"pin_stretch", d.composed.pin_stretch},
          {"rank_slowdown", d.composed.rank_slowdown},
          {"compose_reserve", d.composed.compose_reserve},
          {"rounds", d.composed.rounds},
          {"compose_passes", d.composed.passes},
          {"compose_residual_ns", d.composed.residual_ns},
          {"target_ns", d.baseline.target_ns},
          {"savings", d.savings()},
          {"slowdown", d.slowdown()},
          {"ranks", ranks},
          {"switching", "each rank's policy run with its clock requests as emo run issues them (switch latency, "
                        "minimum switch interval); the static clocks and the baseline switch nothing"},
          {"simulated", d.simulated}};
}

std::string to_text(const job::DecomposedSolve& d) {
  std::string out = fmt::format(
      "decomposed joint solve of {} ranks (docs/multi-rank.md): {} collectives pinned at their max-clock start "
      "stretched by {:.3f} %, each rank solved alone against them with {:.3f} % of its own and {:.3f} % kept for "
      "their composition{}; each rank's plan run "
      "on its own graph and reduced to its collectives, the job timed from them (collectives wait for their last "
      "participant; each rank's policy run with switch latency, its collectives starting where the job starts them: "
      "{}):\n",
      d.ranks.size(), d.recorded.collectives_pinned, 100 * d.composed.pin_stretch, 100 * d.composed.rank_slowdown,
      100 * d.composed.compose_reserve,
      d.composed.rounds > 1 ? fmt::format(" ({} rounds: the earlier ones missed the target)", d.composed.rounds) : "",
      d.composed.residual_ns == 0
          ? fmt::format("{} passes to a fixed point", d.composed.passes)
          : fmt::format("no fixed point in {} passes, the last moved a transfer by {}", d.composed.passes,
                        format_duration(d.composed.residual_ns)));
  out += fmt::format("  {:<30} {:>10} {:>12} {:>9} {:>9}\n", "schedule", "time", "energy (J)", "savings", "slowdown");
  out += schedule_row("baseline (max clock)", d.baseline.run, d.baseline.run, d.baseline.target_ns, d.simulated);
  if (d.static_choice.best.clock_mhz > 0) {
    out += schedule_row(fmt::format("best static ({:.0f} MHz)", d.static_choice.best.clock_mhz).c_str(), d.static_choice.best,
                        d.baseline.run, d.baseline.target_ns, d.simulated);
  }
  out += schedule_row("EMO (decomposed)", d.composed.plan, d.baseline.run, d.baseline.target_ns, d.simulated);
  out += fmt::format("  target {}; kept: {}\n", format_duration(d.baseline.target_ns),
                     d.static_choice.kept ? "the static clock (cheaper, or the plan missed)" : "EMO's plan");
  if (d.recorded.cycle_breaks > 0) {
    out += fmt::format("  warning: the ranks' collectives form {} cycle(s) (the ranks disagree on their order: a "
                       "mismatched link); each was timed from the collectives already done\n",
                       d.recorded.cycle_breaks);
  }
  out += fmt::format("  {:>6} {:>6} {:>7} {:>14} {:>11} {:>12}\n", "rank", "packs", "pinned", "wait (max clk)",
                     "mean clock", "own savings");
  constexpr std::size_t kShown = 16;
  for (std::size_t i = 0; i < d.ranks.size() && i < kShown; ++i) {
    const job::RankSolve& r = d.ranks[i];
    out += fmt::format("  {:>6} {:>6} {:>7} {:>14} {:>7.0f} MHz {:>11.2f}%{}\n", r.rank, r.packs, r.pinned,
                       format_duration(r.wait_ns), r.mean_clock_mhz, 100 * r.own_savings,
                       r.own_met ? "" : " (its own run missed)");
  }
  if (d.ranks.size() > kShown) out += fmt::format("  ... {} more ranks in --json\n", d.ranks.size() - kShown);
  return out;
}

}  // namespace emo::output
