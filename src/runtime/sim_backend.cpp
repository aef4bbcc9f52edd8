#include "runtime/sim_backend.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "core/units.h"
#include "runtime/profiler.h"
#include "runtime/switch_planner.h"
#include "runtime/switch_timing.h"

namespace emo::runtime {

std::int64_t switches_per_iteration(const policy::Policy& policy) {
  std::map<std::int32_t, double> initial;
  return static_cast<std::int64_t>(switch_requests(policy, 0, initial).size());
}

Work pack_work(const trace::Trace& t, const graph::DepGraph& g, const pack::Packing& packing, std::uint32_t p) {
  Work w;
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

std::vector<double> node_clocks(const graph::DepGraph& g, const pack::Packing& packing,
                                const std::vector<double>& pack_clock_mhz) {
  std::vector<double> c(g.nodes(), 0.0);
  for (std::size_t n = 0; n < g.nodes(); ++n)
    if (g.gpu[n] && packing.pack_of[n] != pack::kNoPack) c[n] = pack_clock_mhz[packing.pack_of[n]];
  return c;
}

std::vector<ClockRequest> switch_requests(const policy::Policy& policy, TimeNs latency_ns,
                                          std::map<std::int32_t, double>& initial_clock_mhz) {
  std::vector<ClockRequest> requests;
  initial_clock_mhz.clear();
  for (const auto& gp : policy.gpus) {
    if (gp.packs.empty()) continue;
    std::vector<ClockRequest> section;
    double prev = gp.packs.back().clock_mhz;
    initial_clock_mhz[gp.device] = prev;
    for (const auto& k : gp.packs) {
      // Up one switch latency early, down a quarter of one or the pack's own lead (switch_timing.h).
      if (k.clock_mhz != prev)
        section.push_back(
            {gp.device, k.start_offset_ns - switch_lead_ns(prev, k.clock_mhz, latency_ns, k.down_lead_ns), k.clock_mhz});
      prev = k.clock_mhz;
    }
    drop_overtaken(section, [](const ClockRequest& r) { return r.request_ns; });
    double current = initial_clock_mhz[gp.device];  // a request left redundant by a dropped one goes too
    for (const ClockRequest& r : section) {
      if (r.clock_mhz != current) requests.push_back(r), current = r.clock_mhz;
    }
  }
  return requests;
}

std::vector<ClockRequest> issued_requests(const policy::Policy& policy, TimeNs latency_ns,
                                          std::map<std::int32_t, double>& initial_clock_mhz) {
  return hold_to_interval(switch_requests(policy, latency_ns, initial_clock_mhz), ms_to_ns(policy.min_switch_interval_ms),
                          initial_clock_mhz);
}

std::vector<ClockRequest> hold_to_interval(std::vector<ClockRequest> requests, TimeNs min_interval_ns,
                                           const std::map<std::int32_t, double>& initial_clock_mhz) {
  if (min_interval_ns <= 0) return requests;
  std::stable_sort(requests.begin(), requests.end(), [](const ClockRequest& a, const ClockRequest& b) {
    return a.device != b.device ? a.device < b.device : a.request_ns < b.request_ns;
  });
  std::vector<ClockRequest> out;
  std::size_t i = 0;
  while (i < requests.size()) {
    const std::int32_t device = requests[i].device;
    const auto init = initial_clock_mhz.find(device);
    double requested = init != initial_clock_mhz.end() ? init->second : 0.0;
    std::optional<TimeNs> last;          // when the last switch was issued
    std::optional<ClockRequest> held;    // held back by the interval
    auto issue = [&](ClockRequest r) {
      if (std::abs(r.clock_mhz - requested) <= 0.5) return;  // redundant
      requested = r.clock_mhz;
      last = r.request_ns;
      out.push_back(r);
    };
    auto release_by = [&](TimeNs t) {  // a held request is issued once the interval has passed
      if (held && last && t >= *last + min_interval_ns) {
        ClockRequest h = *held;
        held.reset();
        h.request_ns = *last + min_interval_ns;
        issue(h);
      }
    };
    for (; i < requests.size() && requests[i].device == device; ++i) {
      release_by(requests[i].request_ns);
      if (last && requests[i].request_ns < *last + min_interval_ns) {
        held = requests[i];  // replaces a held one: only the newest clock matters
        continue;
      }
      issue(requests[i]);
    }
    release_by(INT64_MAX);
  }
  return out;
}

std::vector<std::vector<TimeNs>> observed_pack_starts(const policy::Policy& policy, const pack::Packing& packing,
                                                      const SimRunResult& run) {
  // Each device's packs in time order (Packing::packs is by device, then time): its position there.
  std::map<std::int32_t, std::uint32_t> count;
  std::vector<std::uint32_t> position(packing.packs.size());
  for (std::size_t p = 0; p < packing.packs.size(); ++p) position[p] = count[packing.packs[p].device]++;
  std::map<std::int32_t, std::size_t> gpu_of;
  std::vector<std::vector<TimeNs>> out(policy.gpus.size());
  for (std::size_t i = 0; i < policy.gpus.size(); ++i) {
    const auto& gp = policy.gpus[i];
    const auto it = count.find(gp.device);
    if (gp.packs.size() != (it == count.end() ? 0 : it->second))
      throw std::invalid_argument(fmt::format("observed_pack_starts: GPU {} has {} packs in the policy, {} in the packing",
                                              gp.device, gp.packs.size(), it == count.end() ? 0 : it->second));
    out[i].assign(gp.packs.size(), INT64_MAX);
    gpu_of[gp.device] = i;
  }
  for (const RunOp& op : run.ops) {
    const std::uint32_t p = packing.pack_of[op.node];
    if (p == pack::kNoPack) continue;
    const auto g = gpu_of.find(packing.packs[p].device);
    if (g == gpu_of.end()) continue;
    TimeNs& t = out[g->second][position[p]];
    t = std::min(t, op.start_ns);
  }
  return out;
}

std::vector<ClockRequest> planner_requests(const policy::Policy& policy, TimeNs latency_ns,
                                           const std::vector<std::vector<TimeNs>>& observed_ns,
                                           std::map<std::int32_t, double>& initial_clock_mhz) {
  if (observed_ns.size() != policy.gpus.size())
    throw std::invalid_argument("planner_requests: one list of observed starts per GPU of the policy needed");
  std::vector<ClockRequest> requests;
  initial_clock_mhz.clear();
  for (std::size_t i = 0; i < policy.gpus.size(); ++i) {
    policy::GpuPolicy gp = policy.gpus[i];
    if (gp.packs.empty()) continue;
    if (observed_ns[i].size() != gp.packs.size())
      throw std::invalid_argument(fmt::format("planner_requests: GPU {}: {} observed starts for {} packs", gp.device,
                                              observed_ns[i].size(), gp.packs.size()));
    gp.default_clock_mhz = 0;  // steady state: the clock before pack 0 is the last pack's, no default switch
    const double last = gp.packs.back().clock_mhz;
    initial_clock_mhz[gp.device] = last;
    SwitchPlanner planner(gp, latency_ns, last, ms_to_ns(policy.min_switch_interval_ms));
    const policy::PackClock& first = gp.packs.front();
    if (first.clock_mhz != last) {
      const TimeNs t = first.start_offset_ns - switch_lead_ns(last, first.clock_mhz, latency_ns, first.down_lead_ns);
      requests.push_back({gp.device, t, first.clock_mhz});
      planner.issued_before(t, first.clock_mhz);  // the minimum interval counts from it
    }
    // A switch is asked for when the planner issues it: at its planned time, or at once when a
    // re-plan finds that time passed (`now`: emo run polls due() as soon as it has re-planned).
    auto take = [&](const std::vector<Switch>& issued, TimeNs now) {
      for (const Switch& sw : issued)
        if (sw.iteration == 0 && sw.pack >= 0) requests.push_back({gp.device, std::max(sw.t_ns, now), sw.clock_mhz});
    };
    // Observations in time order, each at the time of the op its start is observed by.
    std::vector<std::pair<TimeNs, std::int32_t>> seen;
    for (std::size_t k = 0; k < gp.packs.size(); ++k) {
      const TimeNs t = observed_ns[i][k];
      if (t != INT64_MAX) seen.emplace_back(t + gp.packs[k].anchor_offset_ns() - gp.packs[k].start_offset_ns, static_cast<std::int32_t>(k));
    }
    std::stable_sort(seen.begin(), seen.end());
    for (const auto& [t, k] : seen) {
      take(planner.due(t), INT64_MIN);
      if (const std::optional<Switch> late = planner.observe({gp.device, k, 0, t, 0})) take({*late}, t);
      take(planner.due(t), t);
    }
    take(planner.due(INT64_MAX), INT64_MIN);
  }
  return requests;
}

SimRunResult run_policy_closed_loop(const policy::Policy& policy, TimeNs latency_ns, const RequestReplay& replay,
                                    const StartObserver& observe, std::vector<ClockRequest>* requests_out,
                                    std::map<std::int32_t, double>* initial_out) {
  std::map<std::int32_t, double> initial;
  std::vector<ClockRequest> requests = issued_requests(policy, latency_ns, initial);
  SimRunResult run = replay(requests, initial);
  for (int replays = 1; replays < kClosedLoopReplays; ++replays) {
    std::vector<ClockRequest> next = planner_requests(policy, latency_ns, observe(run), initial);
    if (next == requests) break;
    requests = std::move(next);
    run = replay(requests, initial);
  }
  if (requests_out != nullptr) *requests_out = std::move(requests);
  if (initial_out != nullptr) *initial_out = std::move(initial);
  return run;
}

namespace {

SimDeviceOptions device_options(std::uint64_t seed) {
  SimDeviceOptions o;
  o.seed = seed;
  return o;
}

}  // namespace

SimBackend::SimBackend(const model::GpuSpec& gpu, std::uint64_t seed) : device_(gpu, device_options(seed)) {
  run_opts_.seed = seed + 1;
}

PackProfiles SimBackend::profile_packs(const trace::Trace& trace, const pack::PackRun& packs,
                                       const std::vector<double>& clocks_mhz) {
  const graph::DepGraph& g = packs.analysis.graph;
  PackProfiles out;
  expect_units(static_cast<std::int64_t>(packs.packing.packs.size()));
  for (std::uint32_t p = 0; p < packs.packing.packs.size(); ++p) {
    ProfileResult prof = profile_work(device_, pack_work(trace, g, packs.packing, p), clocks_mhz);
    out.runs += prof.runs;
    out.device_s += prof.device_time_s;
    out.points.push_back(std::move(prof.points));
    unit_done();
  }
  return out;
}

PackProfiles SimBackend::profile_pack_clocks(const trace::Trace& trace, const pack::PackRun& packs,
                                             const std::vector<std::vector<double>>& clocks_mhz) {
  if (clocks_mhz.size() != packs.packing.packs.size())
    throw std::invalid_argument(fmt::format("profile_pack_clocks: {} clock lists for {} packs", clocks_mhz.size(),
                                            packs.packing.packs.size()));
  const graph::DepGraph& g = packs.analysis.graph;
  PackProfiles out;
  out.points.resize(clocks_mhz.size());
  expect_units(std::count_if(clocks_mhz.begin(), clocks_mhz.end(), [](const auto& c) { return !c.empty(); }));
  for (std::uint32_t p = 0; p < clocks_mhz.size(); ++p) {
    if (clocks_mhz[p].empty()) continue;
    ProfileResult prof = measure_work(device_, pack_work(trace, g, packs.packing, p), clocks_mhz[p]);
    out.runs += prof.runs;
    out.device_s += prof.device_time_s;
    out.points[p] = std::move(prof.points);
    unit_done();
  }
  return out;
}

std::vector<std::vector<model::ClockPoint>> true_pack_points(const SimDevice& device, const trace::Trace& trace,
                                                             const pack::PackRun& packs,
                                                             const std::vector<double>& clocks_mhz) {
  const std::vector<double> supported = device.supported_sm_clocks_mhz();
  for (const double f : clocks_mhz) {
    if (std::none_of(supported.begin(), supported.end(), [f](double c) { return std::abs(c - f) <= 0.5; }))
      throw std::invalid_argument(fmt::format("{}: {} MHz is not a supported clock", device.name(), f));
  }
  const graph::DepGraph& g = packs.analysis.graph;
  std::vector<std::vector<model::ClockPoint>> out;
  for (std::uint32_t p = 0; p < packs.packing.packs.size(); ++p) {
    const Work w = pack_work(trace, g, packs.packing, p);
    std::vector<model::ClockPoint>& points = out.emplace_back();
    for (const double f : clocks_mhz) {
      const TrueRun t = device.true_run(w, f);
      points.push_back({f, ns_to_s(t.time_ns), t.energy_j});
    }
  }
  return out;
}

namespace {

/// The pack costs and power series of a simulated run of `packs`.
void add_breakdown(SimRunResult run, const pack::PackRun& packs, double idle_w, RunMeasurement& m) {
  for (RunOp& op : run.ops) op.pack = packs.packing.pack_of[op.node];
  m.pack_costs = pack_costs(run.ops, packs.packing.packs.size(), run.makespan_ns, idle_w);
  m.power = power_series(run.ops, run.makespan_ns, idle_w, kPowerBins);
}

}  // namespace

RunMeasurement SimBackend::run_static(const trace::Trace& trace, const pack::PackRun& packs, double clock_mhz) {
  const graph::DepGraph& g = packs.analysis.graph;
  const std::vector<double> clocks(packs.pack_graph.packs, clock_mhz);
  SimRunResult res = run_on_sim(trace, g, device_, node_clocks(g, packs.packing, clocks), {}, run_opts_);
  RunMeasurement m;
  m.time_ns = res.makespan_ns;
  m.energy_j = res.energy_j;
  m.clock_mhz = clock_mhz;
  m.gpu_energy_j = res.gpu_energy_j;
  add_breakdown(std::move(res), packs, device_.gpu().idle_power_w, m);
  unit_done();
  return m;
}

RunMeasurement SimBackend::run_policy(const trace::Trace& trace, const pack::PackRun& packs,
                                      const policy::Policy& policy, const std::vector<double>& pack_clock_mhz) {
  const graph::DepGraph& g = packs.analysis.graph;
  const TimeNs latency_ns = ms_to_ns(device_.switch_latency_ms());
  const std::vector<double> clocks = node_clocks(g, packs.packing, pack_clock_mhz);
  SimRunResult run = run_policy_closed_loop(
      policy, latency_ns,
      [&](const std::vector<ClockRequest>& r, const std::map<std::int32_t, double>& initial) {
        run_opts_.initial_clock_mhz = initial;
        return run_on_sim(trace, g, device_, clocks, r, run_opts_);
      },
      [&](const SimRunResult& r) { return observed_pack_starts(policy, packs.packing, r); });
  RunMeasurement m;
  m.time_ns = run.makespan_ns;
  m.energy_j = run.energy_j;
  std::map<std::int32_t, double> initial;
  m.clock_switches = static_cast<std::int64_t>(issued_requests(policy, latency_ns, initial).size());
  m.ops_at_other_clock = run.ops_at_other_clock;
  m.gpu_energy_j = run.gpu_energy_j;
  add_breakdown(std::move(run), packs, device_.gpu().idle_power_w, m);
  unit_done();
  return m;
}

}  // namespace emo::runtime
