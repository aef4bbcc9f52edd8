#include "policy/optimize.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "opt/pack_problem.h"
#include "opt/solver.h"
#include "runtime/profiler.h"
#include "runtime/sim_run.h"
#include "trace/error.h"

namespace emo::policy {
namespace {

using graph::DepGraph;
using trace::TimeNs;

/// A pack's ops as a unit of work for the device: each stream's ops back to back (the gaps inside
/// a pack are launch or dependency waits that the pack graph models; profiling measures the work).
runtime::Work pack_work(const trace::Trace& t, const DepGraph& g, const pack::Packing& packing, std::uint32_t p) {
  runtime::Work w;
  w.label = fmt::format("pack {}", p);
  std::map<std::int64_t, TimeNs> stream_end;
  for (const std::uint32_t n : packing.ops_of(p)) {
    const auto row = g.op[n];
    const std::int64_t stream = t.ops.stream[row];
    TimeNs& end = stream_end[stream];
    const TimeNs dur = std::max<TimeNs>(1, g.dur[n]);
    w.ops.push_back({std::string(t.strings.view(t.ops.name[row])), t.ops.kind[row], static_cast<std::int32_t>(stream),
                     end, dur});
    end += dur;
  }
  return w;
}

/// Pack clocks -> per-node clocks of the op graph (host nodes 0).
std::vector<double> node_clocks(const DepGraph& g, const pack::Packing& packing, const std::vector<double>& pack_clock) {
  std::vector<double> c(g.nodes(), 0.0);
  for (std::size_t n = 0; n < g.nodes(); ++n)
    if (g.gpu[n] && packing.pack_of[n] != pack::kNoPack) c[n] = pack_clock[packing.pack_of[n]];
  return c;
}

}  // namespace

OptimizeResult optimize(const trace::Trace& trace, const graph::Window& window, const model::GpuSpec& gpu,
                        const OptimizeOptions& options) {
  if (!(options.max_slowdown >= 0) || !std::isfinite(options.max_slowdown))
    throw InputError("--max-slowdown", fmt::format("{} is impossible: the target cannot be faster than every GPU at its "
                                                   "max clock (use a fraction >= 0, e.g. 0.05)",
                                                   options.max_slowdown));
  if (options.frontier_points < 2) throw std::invalid_argument("optimize: frontier_points must be >= 2");
  OptimizeResult r;
  r.trace_path = trace.meta.path;
  r.gpu = gpu.id;
  r.packs = pack::run_pack(trace, window, options.min_pack_ns);
  const DepGraph& g = r.packs.analysis.graph;
  const pack::Packing& packing = r.packs.packing;
  const pack::PackGraph& pg = r.packs.pack_graph;
  const std::uint32_t P = pg.packs;
  if (P == 0) throw InputError(trace.meta.path, fmt::format("no GPU ops in {}: nothing to optimise", g.window.label));

  runtime::SimDeviceOptions dev_opts;
  dev_opts.seed = options.seed;
  runtime::SimDevice device(gpu, dev_opts);
  r.simulated = device.simulated();
  const auto supported = device.supported_sm_clocks_mhz();
  try {
    r.profiled_clocks_mhz = runtime::profiling_clocks(supported, options.profile_clocks);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("--profile-clocks {}", options.profile_clocks), e.what());
  }
  r.option_clocks_mhz = runtime::trusted_clocks(supported, r.profiled_clocks_mhz);
  const double f_max = supported.front();
  const double idle_w = device.idle_power_w();

  // Profile every pack at K clocks and turn its model into options.
  std::vector<std::vector<opt::PackOption>> pack_options(P);
  std::vector<std::int32_t> device_of_pack(P);
  for (std::uint32_t p = 0; p < P; ++p) {
    device_of_pack[p] = packing.packs[p].device;
    const runtime::ProfileResult prof = runtime::profile_work(device, pack_work(trace, g, packing, p), r.profiled_clocks_mhz);
    r.profiled_runs += prof.runs;
    r.profiling_device_s += prof.device_time_s;
    const double t_top = prof.model.time_s(f_max);
    for (const double f : r.option_clocks_mhz) {
      const double t = prof.model.time_s(f);
      pack_options[p].push_back({f, t / t_top, prof.model.energy_j(f) - idle_w * t});
    }
  }
  r.pack_clock_profiles = static_cast<std::int64_t>(P) * static_cast<std::int64_t>(r.profiled_clocks_mhz.size());
  r.every_clock_profiles = static_cast<std::int64_t>(P) * static_cast<std::int64_t>(supported.size());

  std::map<std::int32_t, int> gpu_count;
  for (auto d : device_of_pack) gpu_count[d] = 1;
  const double n_gpus = static_cast<double>(gpu_count.size());
  auto predicted_energy = [&](const std::vector<int>& choice, TimeNs makespan) {
    double e = idle_w * n_gpus * static_cast<double>(makespan) * 1e-9;
    for (std::uint32_t p = 0; p < P; ++p) e += std::max(0.0, pack_options[p][choice[p]].dynamic_energy_j);
    return e;
  };
  auto exact_makespan = [&](const std::vector<int>& choice, timing::Schedule* out = nullptr) {
    std::vector<double> factors(P);
    for (std::uint32_t p = 0; p < P; ++p) factors[p] = pack_options[p][choice[p]].factor;
    timing::Schedule s = pg.evaluate_factors(factors);
    const TimeNs m = s.makespan_ns;
    if (out) *out = std::move(s);
    return m;
  };

  const std::vector<int> all_max(P, 0);  // option 0 = f_max (trusted clocks descending)
  const TimeNs base_ns = exact_makespan(all_max);
  r.predicted_baseline = {base_ns, predicted_energy(all_max, base_ns), f_max};
  r.target_ns = static_cast<TimeNs>(std::floor(static_cast<double>(base_ns) * (1 + options.max_slowdown)));
  r.profiling_iterations = base_ns > 0 ? r.profiling_device_s / (static_cast<double>(base_ns) * 1e-9) : 0;

  opt::PackProblem pp = opt::build_pack_problem(pg, pack_options, device_of_pack, idle_w);
  r.negative_lags = pp.negative_lags;
  opt::FastSolver solver(pp.problem);
  // The predicted frontier (the optimiser's own accounting).
  for (const auto& s : solver.frontier(options.frontier_points)) r.frontier.push_back({s.makespan_s, s.energy_j, ""});

  // Evaluate on the device: baseline, best static clock (oracle: evaluated at every clock down to
  // half the max), EMO with its switches requested one switch latency before each pack.
  runtime::SimRunOptions run_opts;
  run_opts.seed = options.seed + 1;
  auto run_static = [&](double f) {
    const auto res = runtime::run_on_sim(trace, g, device, node_clocks(g, packing, std::vector<double>(P, f)), {}, run_opts);
    return Evaluated{res.makespan_ns, res.energy_j, f};
  };
  r.baseline = run_static(f_max);
  const auto truth_target = static_cast<TimeNs>(std::floor(static_cast<double>(r.baseline.time_ns) * (1 + options.max_slowdown)));
  r.static_best = r.baseline;
  for (const double f : supported) {
    if (f < 0.5 * f_max) break;
    const Evaluated e = run_static(f);
    if (e.time_ns <= truth_target && e.energy_j < r.static_best.energy_j) r.static_best = e;
  }
  // Optimise, write the policy, run it on the device; when the run misses the target (the pack
  // models are approximate), tighten the model's target by the overshoot and repeat (at most 3
  // validation runs; on a real GPU each is one measured iteration).
  TimeNs model_target_ns = r.target_ns;
  for (int round = 0; round < 4; ++round) {
    // Optimise at the target; re-evaluate exactly and tighten the deadline while it overshoots.
    std::vector<int> best = all_max;
    double deadline_s = static_cast<double>(model_target_ns) * 1e-9;
    for (int attempt = 0; attempt < 8; ++attempt) {
      const auto sol = solver.solve(std::max(deadline_s, solver.fastest_makespan_s()));
      if (!sol) break;
      std::vector<int> choice(P);
      for (std::uint32_t p = 0; p < P; ++p) choice[p] = sol->choice[pp.work_node[p]];
      const TimeNs m = exact_makespan(choice);
      if (m <= model_target_ns) {
        if (predicted_energy(choice, m) < predicted_energy(best, exact_makespan(best))) best = choice;
        break;
      }
      ++r.deadline_repairs;
      deadline_s -= static_cast<double>(m - model_target_ns) * 1e-9 + 1e-6;
      if (deadline_s < solver.fastest_makespan_s()) break;
    }
    timing::Schedule emo_schedule;
    const TimeNs emo_ns = exact_makespan(best, &emo_schedule);
    r.predicted_emo = {emo_ns, predicted_energy(best, emo_ns), 0};
    r.pack_clock_mhz.resize(P);
    for (std::uint32_t p = 0; p < P; ++p) r.pack_clock_mhz[p] = pack_options[p][best[p]].clock_mhz;

    // Policy.
    r.policy = Policy{};
    Policy& pol = r.policy;
    pol.emo_version = EMO_VERSION;
    pol.gpu = gpu.id;
    pol.trace = trace.meta.path;
    pol.iteration_marker = g.window.label == "whole trace" ? "" : g.window.label;
    pol.max_slowdown = options.max_slowdown;
    pol.latency_target_ns = r.target_ns;
    pol.baseline_time_ns = r.predicted_baseline.time_ns;
    pol.baseline_energy_j = r.predicted_baseline.energy_j;
    pol.predicted_time_ns = r.predicted_emo.time_ns;
    pol.predicted_energy_j = r.predicted_emo.energy_j;
    pol.switch_latency_ms = device.switch_latency_ms();
    pol.simulated = r.simulated;
    {
      // Ordinal of each GPU op among the window's ops of the same name on its device.
      std::vector<std::uint32_t> gpu_nodes;
      for (std::uint32_t n = 0; n < g.nodes(); ++n)
        if (g.gpu[n]) gpu_nodes.push_back(n);
      std::stable_sort(gpu_nodes.begin(), gpu_nodes.end(), [&](auto a, auto b) { return g.rec_start[a] < g.rec_start[b]; });
      std::map<std::pair<std::int32_t, trace::StringId>, std::int64_t> seen;
      std::vector<std::int64_t> ordinal(g.nodes(), 0);
      for (auto n : gpu_nodes) {
        const auto row = g.op[n];
        ordinal[n] = seen[{trace.ops.device[row], trace.ops.name[row]}]++;
      }
      std::map<std::int32_t, GpuPolicy> per_device;
      for (std::uint32_t p = 0; p < P; ++p) {
        const std::int32_t d = device_of_pack[p];
        GpuPolicy& gp = per_device[d];
        gp.device = d;
        gp.rank = trace.meta.rank;
        gp.default_clock_mhz = f_max;
        const auto first = packing.ops_of(p)[0];
        const auto row = g.op[first];
        PackClock pc;
        pc.start = {std::string(trace.strings.view(trace.ops.name[row])), trace.ops.stream[row], ordinal[first]};
        pc.start_offset_ns = emo_schedule.start(p) - g.window_start_ns;
        pc.duration_ns = emo_schedule.end(p) - emo_schedule.start(p);
        pc.ops = packing.packs[p].count;
        pc.clock_mhz = r.pack_clock_mhz[p];
        pc.predicted_energy_j = std::max(0.0, pack_options[p][best[p]].dynamic_energy_j) +
                                idle_w * static_cast<double>(pc.duration_ns) * 1e-9;
        gp.packs.push_back(std::move(pc));
      }
      for (auto& [d, gp] : per_device) {
        std::stable_sort(gp.packs.begin(), gp.packs.end(),
                         [](const auto& a, const auto& b) { return a.start_offset_ns < b.start_offset_ns; });
        for (std::size_t i = 0; i < gp.packs.size(); ++i) gp.packs[i].index = static_cast<std::int32_t>(i);
        pol.gpus.push_back(std::move(gp));
      }
    }

    std::vector<runtime::ClockRequest> requests;
    run_opts.initial_clock_mhz.clear();
    const auto latency_ns = static_cast<TimeNs>(std::llround(device.switch_latency_ms() * 1e6));
    for (const auto& gp : pol.gpus) {
      if (gp.packs.empty()) continue;
      double prev = gp.packs.back().clock_mhz;  // steady state: the previous iteration's last clock
      run_opts.initial_clock_mhz[gp.device] = prev;
      for (const auto& pc : gp.packs) {
        if (pc.clock_mhz != prev) requests.push_back({gp.device, pc.start_offset_ns - latency_ns, pc.clock_mhz});
        prev = pc.clock_mhz;
      }
    }
    const auto emo_run = runtime::run_on_sim(trace, g, device, node_clocks(g, packing, r.pack_clock_mhz), requests, run_opts);
    r.emo = {emo_run.makespan_ns, emo_run.energy_j, 0};
    r.clock_switches = static_cast<std::int64_t>(requests.size());
    r.ops_at_other_clock = emo_run.ops_at_other_clock;
    r.validation_runs = round + 1;
    if (r.emo.time_ns <= truth_target || model_target_ns <= base_ns) break;
    model_target_ns = std::max(base_ns, model_target_ns - (r.emo.time_ns - truth_target) - 1000);
  }
  return r;
}

nlohmann::json to_json(const OptimizeResult& r) {
  nlohmann::json frontier = nlohmann::json::array();
  for (const auto& p : r.frontier) frontier.push_back({{"time_s", p.time_s}, {"energy_j", p.energy_j}});
  std::map<double, int> clocks;
  for (double f : r.pack_clock_mhz) clocks[f]++;
  nlohmann::json clock_hist = nlohmann::json::object();
  for (auto [f, n] : clocks) clock_hist[fmt::format("{:.0f}", f)] = n;
  const double static_savings = r.baseline.energy_j > 0 ? 1 - r.static_best.energy_j / r.baseline.energy_j : 0;
  return {{"trace", r.trace_path},
          {"gpu", r.gpu},
          {"simulated", r.simulated},
          {"window", r.packs.analysis.graph.window.label},
          {"baseline", {{"time_ns", r.baseline.time_ns}, {"energy_j", r.baseline.energy_j}, {"clock_mhz", r.baseline.clock_mhz}}},
          {"static_best",
           {{"clock_mhz", r.static_best.clock_mhz}, {"time_ns", r.static_best.time_ns}, {"energy_j", r.static_best.energy_j}}},
          {"emo",
           {{"time_ns", r.emo.time_ns},
            {"energy_j", r.emo.energy_j},
            {"predicted_time_ns", r.predicted_emo.time_ns},
            {"predicted_energy_j", r.predicted_emo.energy_j}}},
          {"savings", r.savings()},
          {"slowdown", r.slowdown()},
          {"static_savings", static_savings},
          {"static_slowdown", r.baseline.time_ns > 0 ? static_cast<double>(r.static_best.time_ns) / r.baseline.time_ns - 1 : 0},
          {"target_ns", r.target_ns},
          {"predicted_baseline", {{"time_ns", r.predicted_baseline.time_ns}, {"energy_j", r.predicted_baseline.energy_j}}},
          {"packs", r.packs.pack_graph.packs},
          {"ops", r.packs.packing.nodes.size()},
          {"pack_clocks_mhz", clock_hist},
          {"contraction_error", r.packs.contraction.contraction_error},
          {"profiled_clocks_mhz", r.profiled_clocks_mhz},
          {"profiled_runs", r.profiled_runs},
          {"profiling",
           {{"pack_clock_profiles", r.pack_clock_profiles},
            {"every_clock_profiles", r.every_clock_profiles},
            {"device_s", r.profiling_device_s},
            {"equivalent_iterations", r.profiling_iterations},
            {"every_clock_equivalent_iterations",
             r.pack_clock_profiles > 0 ? r.profiling_iterations * static_cast<double>(r.every_clock_profiles) /
                                             static_cast<double>(r.pack_clock_profiles)
                                       : 0.0}}},
          {"clock_switches", r.clock_switches},
          {"ops_at_other_clock", r.ops_at_other_clock},
          {"deadline_repairs", r.deadline_repairs},
          {"validation_runs", r.validation_runs},
          {"negative_lags", r.negative_lags},
          {"frontier", frontier}};
}

std::string to_text(const OptimizeResult& r) {
  const std::string sim = r.simulated ? " [SIMULATED]" : "";
  std::string out = fmt::format("{}: {} ({}), GPU {}{}\n", r.trace_path, r.packs.analysis.graph.window.label,
                                trace::format_duration(r.baseline.time_ns), r.gpu,
                                r.simulated ? " — simulated device: every time and energy below is simulated" : "");
  out += fmt::format("  {} packs of {} GPU ops; profiled at {} MHz: {} pack-clock profiles ({} runs, {:.2f} s of device "
                     "time, {:.1f} iterations); every clock would be {} profiles (~{:.0f} iterations)\n",
                     r.packs.pack_graph.packs, r.packs.packing.nodes.size(), fmt::join(r.profiled_clocks_mhz, ","),
                     r.pack_clock_profiles, r.profiled_runs, r.profiling_device_s, r.profiling_iterations,
                     r.every_clock_profiles,
                     r.pack_clock_profiles > 0 ? r.profiling_iterations * static_cast<double>(r.every_clock_profiles) /
                                                     static_cast<double>(r.pack_clock_profiles)
                                               : 0.0);
  out += fmt::format("  {:<26} {:>12} {:>12} {:>9} {:>9}\n", "schedule", "time", "energy (J)", "savings", "slowdown");
  auto row = [&](const std::string& name, const Evaluated& e) {
    const double sav = r.baseline.energy_j > 0 ? 1 - e.energy_j / r.baseline.energy_j : 0;
    const double slow = r.baseline.time_ns > 0 ? static_cast<double>(e.time_ns) / r.baseline.time_ns - 1 : 0;
    return fmt::format("  {:<26} {:>12} {:>12.3f} {:>8.2f}% {:>8.2f}%{}\n", name, trace::format_duration(e.time_ns),
                       e.energy_j, 100 * sav, 100 * slow, sim);
  };
  out += row(fmt::format("baseline ({:.0f} MHz)", r.baseline.clock_mhz), r.baseline);
  out += row(fmt::format("best static ({:.0f} MHz)", r.static_best.clock_mhz), r.static_best);
  out += row("EMO policy", r.emo);
  out += fmt::format("  target: +{:.1f} % ({}); EMO predicted {} and {:.3f} J; {} clock switches per iteration\n",
                     100 * (static_cast<double>(r.target_ns) / r.predicted_baseline.time_ns - 1),
                     trace::format_duration(r.target_ns), trace::format_duration(r.predicted_emo.time_ns),
                     r.predicted_emo.energy_j, r.clock_switches);
  return out;
}

HtmlReport to_report(const trace::Trace& t, const OptimizeResult& r) {
  HtmlReport h;
  const DepGraph& g = r.packs.analysis.graph;
  h.title = r.trace_path + " (" + g.window.label + ")";
  h.gpu = r.gpu;
  h.simulated = r.simulated;
  h.makespan_ns = std::max<TimeNs>(1, r.packs.analysis.schedule.makespan_ns);
  std::map<std::pair<int, std::int64_t>, ReportLane> lanes;  // (device or -1, stream or thread)
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    const auto row = g.op[n];
    const bool gpu = g.gpu[n] != 0;
    const int dev = gpu ? t.ops.device[row] : -1;
    const std::int64_t key = gpu ? t.ops.stream[row] : t.ops.thread[row];
    ReportLane& lane = lanes[{dev, key}];
    if (lane.label.empty()) {
      lane.label = gpu ? fmt::format("GPU {} · stream {}", dev, key) : fmt::format("CPU thread {}", key);
      lane.gpu = dev;
    }
    lane.intervals.push_back({g.rec_start[n] - g.window_start_ns, g.rec_end[n] - g.window_start_ns,
                              r.packs.analysis.node_slack[n] == 0, std::string(t.strings.view(t.ops.name[row]))});
  }
  for (auto& [k, lane] : lanes) h.lanes.push_back(std::move(lane));
  std::stable_sort(h.lanes.begin(), h.lanes.end(), [](const auto& a, const auto& b) { return (a.gpu < 0) < (b.gpu < 0); });
  const auto& packs = r.packs.packing.packs;
  for (std::size_t p = 0; p < packs.size(); ++p)
    h.packs.push_back({packs[p].device, packs[p].start_ns - g.window_start_ns, packs[p].end_ns - g.window_start_ns,
                       r.pack_clock_mhz[p], packs[p].count});
  h.min_clock_mhz = r.option_clocks_mhz.empty() ? 0 : r.option_clocks_mhz.back();
  h.max_clock_mhz = r.option_clocks_mhz.empty() ? 0 : r.option_clocks_mhz.front();
  h.frontier = r.frontier;
  h.markers = {{r.predicted_baseline.time_ns * 1e-9, r.predicted_baseline.energy_j, "baseline"},
               {r.predicted_emo.time_ns * 1e-9, r.predicted_emo.energy_j, "EMO"}};
  auto row = [&](const std::string& name, const Evaluated& e) {
    return ReportRow{name, e.time_ns * 1e-9, e.energy_j,
                     r.baseline.energy_j > 0 ? 1 - e.energy_j / r.baseline.energy_j : 0,
                     r.baseline.time_ns > 0 ? static_cast<double>(e.time_ns) / r.baseline.time_ns - 1 : 0};
  };
  h.rows = {row(fmt::format("baseline ({:.0f} MHz)", r.baseline.clock_mhz), r.baseline),
            row(fmt::format("best static clock ({:.0f} MHz)", r.static_best.clock_mhz), r.static_best),
            row("EMO policy", r.emo)};
  h.notes = {fmt::format("Table: evaluated on the {} device. Frontier and markers: predicted by the pack models.",
                         r.simulated ? "simulated" : "real"),
             fmt::format("{} packs; profiled at {} MHz ({} pack-clock profiles; every clock: {}).", r.packs.pack_graph.packs,
                         fmt::join(r.profiled_clocks_mhz, ", "), r.pack_clock_profiles, r.every_clock_profiles),
             fmt::format("Latency target {} (+{:.1f} %); {} clock switches per iteration.",
                         trace::format_duration(r.target_ns),
                         100 * (static_cast<double>(r.target_ns) / r.predicted_baseline.time_ns - 1), r.clock_switches)};
  return h;
}

}  // namespace emo::policy
