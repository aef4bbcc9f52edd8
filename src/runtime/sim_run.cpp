#include "runtime/sim_run.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "core/units.h"
#include "timing/timing.h"

namespace emo::runtime {

SimRunResult run_on_sim(const trace::Trace& trace, const graph::DepGraph& g, const SimDevice& device,
                        std::span<const double> node_clock_mhz, const std::vector<ClockRequest>& requests,
                        const SimRunOptions& options) {
  const std::size_t n = g.nodes();
  if (node_clock_mhz.size() != n) throw std::invalid_argument("run_on_sim: one clock per graph node needed");
  const auto& gpu = device.gpu();
  const auto latency_ns = ms_to_ns(gpu.switch_latency_ms);
  // Requests per device, by effective time.
  std::map<std::int32_t, std::vector<std::pair<TimeNs, double>>> effective;
  for (const auto& r : requests) effective[r.device].push_back({r.request_ns + latency_ns, r.clock_mhz});
  for (auto& [dev, v] : effective) std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.first < b.first; });

  std::vector<OpTruth> truth(n);  // looked up once per node, not per pass
  std::unordered_map<StringId, OpTruth> kernel_truth;  // and once per kernel name
  std::vector<double> noise(n, 1.0);
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<double> z(0.0, 1.0);
  const double sd = device.options().ground_truth.noise.time_sd;
  for (std::size_t i = 0; i < n; ++i) {
    if (!g.gpu[i]) continue;
    const auto row = g.op[i];
    const auto name = trace.ops.name[row];
    const bool kernel = trace.ops.kind[row] == trace::OpKind::kKernel;
    if (const auto it = kernel ? kernel_truth.find(name) : kernel_truth.end(); it != kernel_truth.end()) {
      truth[i] = it->second;
    } else {
      truth[i] = device.truth({std::string(trace.strings.view(name)), trace.ops.kind[row], 0, 0, g.dur[i]});
      if (kernel) kernel_truth.emplace(name, truth[i]);
    }
    if (options.noise) noise[i] = std::exp(sd * z(rng));
  }
  std::vector<double> clock(node_clock_mhz.begin(), node_clock_mhz.end());
  std::vector<TimeNs> dur(g.dur.begin(), g.dur.end());
  SimRunResult result;
  timing::Schedule s;
  for (int pass = 0; pass < std::max(1, options.max_passes); ++pass) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!g.gpu[i] || g.dur[i] <= 0) continue;
      const double t = device.true_time_ns(truth[i], g.dur[i], clock[i]) * noise[i];
      dur[i] = std::max<TimeNs>(1, std::llround(t));
    }
    s = timing::replay(g, dur);
    result.passes = pass + 1;
    if (requests.empty()) break;
    bool changed = false;
    result.ops_at_other_clock = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!g.gpu[i]) continue;
      const auto dev = trace.ops.device[g.op[i]];
      double f = node_clock_mhz[i];
      if (auto it = effective.find(dev); it != effective.end()) {
        const TimeNs start = s.start(static_cast<std::uint32_t>(i)) - g.window_start_ns;
        auto after = std::upper_bound(it->second.begin(), it->second.end(), start,
                                      [](TimeNs t, const auto& e) { return t < e.first; });
        if (after != it->second.begin()) {
          f = std::prev(after)->second;
        } else {
          auto init = options.initial_clock_mhz.find(dev);
          f = init != options.initial_clock_mhz.end() ? init->second : gpu.max_sm_clock_mhz();
        }
      }
      if (f != node_clock_mhz[i]) ++result.ops_at_other_clock;
      if (f != clock[i]) clock[i] = f, changed = true;
    }
    if (!changed) break;
  }
  double supported = std::nan("");  // the last clock found supported (most nodes share a few)
  for (std::size_t i = 0; i < n; ++i) {
    if (!g.gpu[i] || clock[i] == supported) continue;
    if (std::abs(gpu.nearest_sm_clock(clock[i]) - clock[i]) > 0.5)
      throw std::invalid_argument("run_on_sim: a node's clock is not supported by " + gpu.id);
    supported = clock[i];
  }
  result.makespan_ns = s.makespan_ns;
  // Energy: idle power over the makespan on every device that ran work, plus each op above idle.
  for (std::size_t i = 0; i < n; ++i) {
    if (!g.gpu[i]) continue;
    const auto dev = trace.ops.device[g.op[i]];
    auto [it, inserted] = result.gpu_energy_j.try_emplace(dev, gpu.idle_power_w * static_cast<double>(s.makespan_ns) * kSPerNs);
    const double p = device.true_power_w(truth[i], clock[i]);
    it->second += (p - gpu.idle_power_w) * static_cast<double>(dur[i]) * kSPerNs;
    result.ops.push_back({static_cast<std::uint32_t>(i), dev, kNoRunPack,
                          s.start(static_cast<std::uint32_t>(i)) - g.window_start_ns, dur[i], p - gpu.idle_power_w});
  }
  for (const auto& [dev, e] : result.gpu_energy_j) result.energy_j += e;
  for (const auto& [dev, v] : effective) {
    for (std::size_t k = 1; k < v.size(); ++k) result.clock_changes += v[k].second != v[k - 1].second;
    result.clock_changes += v.empty() ? 0 : 1;
  }
  return result;
}

}  // namespace emo::runtime
