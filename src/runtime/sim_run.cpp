#include "runtime/sim_run.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "core/units.h"
#include "timing/timing.h"

namespace emo::runtime {

namespace {

/// Per device: the requests by the time they take effect (request + switch latency, ns), stable.
using EffectiveClocks = std::map<std::int32_t, std::vector<std::pair<TimeNs, double>>>;

EffectiveClocks effective_clocks(const std::vector<ClockRequest>& requests, TimeNs latency_ns) {
  EffectiveClocks effective;
  for (const auto& r : requests) effective[r.device].push_back({r.request_ns + latency_ns, r.clock_mhz});
  for (auto& [dev, v] : effective) std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.first < b.first; });
  return effective;
}

/// Each GPU node's ground truth and its time noise factor (exp(sd × z), drawn in node order from
/// options.seed; 1 without noise). Nodes of one op kind and name share one truth (SimDevice::truth
/// depends on nothing else): `truth` holds each distinct one once, `key` is a node's index into it.
struct NodeTruths {
  std::vector<OpTruth> truth;
  std::vector<std::uint32_t> key;  ///< Per node (GPU nodes only).
  std::vector<double> noise;
};

NodeTruths node_truths(const trace::Trace& trace, const graph::DepGraph& g, const SimDevice& device,
                       const SimRunOptions& options) {
  const std::size_t n = g.nodes();
  NodeTruths out{{}, std::vector<std::uint32_t>(n, 0), std::vector<double>(n, 1.0)};
  std::unordered_map<std::uint64_t, std::uint32_t> key_of;  // (kind, name) -> index into truth
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<double> z(0.0, 1.0);
  const double sd = device.options().ground_truth.noise.time_sd;
  for (std::size_t i = 0; i < n; ++i) {
    if (!g.gpu[i]) continue;
    const auto row = g.op[i];
    const auto name = trace.ops.name[row];
    const auto kind = trace.ops.kind[row];
    static_assert(sizeof(StringId) <= 4 && sizeof(trace::OpKind) == 1, "the key packs a name id and a kind");
    const std::uint64_t k = (static_cast<std::uint64_t>(name) << 8) | static_cast<std::uint64_t>(kind);
    const auto [it, inserted] = key_of.try_emplace(k, static_cast<std::uint32_t>(out.truth.size()));
    if (inserted) out.truth.push_back(device.truth({std::string(trace.strings.view(name)), kind, 0, 0, g.dur[i]}));
    out.key[i] = it->second;
    if (options.noise) out.noise[i] = std::exp(sd * z(rng));
  }
  return out;
}

/// A GPU node's duration (ns, ≥ 1): its recorded duration × its truth's time ratio at its clock ×
/// its noise factor, rounded — SimDevice::true_time_ns × noise, the one formula of run_on_sim and
/// StaticSimRuns (which must agree to the bit).
TimeNs node_dur_ns(TimeNs recorded_ns, double time_ratio, double noise) {
  return std::max<TimeNs>(1, std::llround(static_cast<double>(recorded_ns) * time_ratio * noise));
}

/// Each distinct truth's time ratio t(f) / t(f_max) at the clocks asked so far (SimDevice's
/// ground truth: two pow per evaluation, the cost of a simulated run), so that a run evaluates it
/// once per truth and clock instead of once per node. Exact: the same function of the same values.
class TimeRatios {
 public:
  TimeRatios(const SimDevice& device, const std::vector<OpTruth>& truth) : device_(device), truth_(truth), at_(truth.size()) {}
  /// A node of truth `key` recorded at `recorded_ns`, at `clock_mhz`, noise factor `noise`: its
  /// duration (node_dur_ns).
  TimeNs dur_ns(std::uint32_t key, TimeNs recorded_ns, double clock_mhz, double noise) {
    auto& at = at_[key];
    auto it = std::find_if(at.begin(), at.end(), [&](const auto& e) { return e.first == clock_mhz; });
    if (it == at.end()) {
      at.emplace_back(clock_mhz, device_.true_time_ns(truth_[key], 1, clock_mhz));
      it = std::prev(at.end());
    }
    return node_dur_ns(recorded_ns, it->second, noise);
  }

 private:
  const SimDevice& device_;
  const std::vector<OpTruth>& truth_;
  std::vector<std::vector<std::pair<double, double>>> at_;  ///< Per truth: (clock, ratio).
};

/// Throws std::invalid_argument when `gpu` does not support `clock_mhz` (±0.5 MHz).
void check_clock(const model::GpuSpec& gpu, double clock_mhz) {
  if (!(std::abs(gpu.nearest_sm_clock(clock_mhz) - clock_mhz) <= 0.5))  // NaN too
    throw std::invalid_argument("run_on_sim: a node's clock is not supported by " + gpu.id);
}

/// Sets each GPU node's clock to the one in effect on its device when it starts in `s` (the last
/// effective request before it, else the device's initial clock, else the max clock); counts the
/// nodes whose clock differs from `node_clock_mhz` in ops_at_other_clock. True when a clock changed.
bool apply_clocks(const trace::Trace& trace, const graph::DepGraph& g, const model::GpuSpec& gpu,
                  const EffectiveClocks& effective, std::span<const double> node_clock_mhz,
                  const SimRunOptions& options, const timing::Schedule& s, std::vector<double>& clock,
                  SimRunResult& result) {
  bool changed = false;
  result.ops_at_other_clock = 0;
  for (std::size_t i = 0; i < g.nodes(); ++i) {
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
  return changed;
}

/// Throws std::invalid_argument when a GPU node's clock is not one `gpu` supports (±0.5 MHz).
void check_supported(const graph::DepGraph& g, const model::GpuSpec& gpu, const std::vector<double>& clock) {
  double supported = std::nan("");  // the last clock found supported (most nodes share a few)
  for (std::size_t i = 0; i < g.nodes(); ++i) {
    if (!g.gpu[i] || clock[i] == supported) continue;
    check_clock(gpu, clock[i]);
    supported = clock[i];
  }
}

/// Energy: idle power over the makespan on every device that ran work, plus each op above idle;
/// each GPU op's run record; the clock changes the requests make.
void add_energy(const trace::Trace& trace, const graph::DepGraph& g, const SimDevice& device,
                const NodeTruths& nt, const std::vector<double>& clock, const std::vector<TimeNs>& dur,
                const timing::Schedule& s, const EffectiveClocks& effective, SimRunResult& result) {
  const auto& gpu = device.gpu();
  for (std::size_t i = 0; i < g.nodes(); ++i) {
    if (!g.gpu[i]) continue;
    const auto dev = trace.ops.device[g.op[i]];
    auto [it, inserted] = result.gpu_energy_j.try_emplace(dev, gpu.idle_power_w * static_cast<double>(s.makespan_ns) * kSPerNs);
    const double p = device.true_power_w(nt.truth[nt.key[i]], clock[i]);
    it->second += (p - gpu.idle_power_w) * static_cast<double>(dur[i]) * kSPerNs;
    result.ops.push_back({static_cast<std::uint32_t>(i), dev, kNoRunPack,
                          s.start(static_cast<std::uint32_t>(i)) - g.window_start_ns, dur[i], p - gpu.idle_power_w});
  }
  for (const auto& [dev, e] : result.gpu_energy_j) result.energy_j += e;
  for (const auto& [dev, v] : effective) {
    for (std::size_t k = 1; k < v.size(); ++k) result.clock_changes += v[k].second != v[k - 1].second;
    result.clock_changes += v.empty() ? 0 : 1;
  }
}

}  // namespace

SimRunResult run_on_sim(const trace::Trace& trace, const graph::DepGraph& g, const SimDevice& device,
                        std::span<const double> node_clock_mhz, const std::vector<ClockRequest>& requests,
                        const SimRunOptions& options) {
  const std::size_t n = g.nodes();
  if (node_clock_mhz.size() != n) throw std::invalid_argument("run_on_sim: one clock per graph node needed");
  const auto& gpu = device.gpu();
  const EffectiveClocks effective = effective_clocks(requests, ms_to_ns(gpu.switch_latency_ms));
  const NodeTruths nt = node_truths(trace, g, device, options);
  std::vector<double> clock(node_clock_mhz.begin(), node_clock_mhz.end());
  std::vector<TimeNs> dur(g.dur.begin(), g.dur.end());
  SimRunResult result;
  timing::Schedule s;
  TimeRatios ratios(device, nt.truth);
  std::vector<double> dur_clock(n, std::nan(""));  // the clock each GPU node's dur[i] is at (NaN: none yet)
  for (int pass = 0; pass < std::max(1, options.max_passes); ++pass) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!g.gpu[i] || g.dur[i] <= 0 || dur_clock[i] == clock[i]) continue;
      dur[i] = ratios.dur_ns(nt.key[i], g.dur[i], clock[i], nt.noise[i]);
      dur_clock[i] = clock[i];
    }
    s = timing::replay(g, dur);
    result.passes = pass + 1;
    if (requests.empty()) break;
    if (!apply_clocks(trace, g, gpu, effective, node_clock_mhz, options, s, clock, result)) break;
  }
  check_supported(g, gpu, clock);
  result.makespan_ns = s.makespan_ns;
  add_energy(trace, g, device, nt, clock, dur, s, effective, result);
  return result;
}

StaticSimRuns::StaticSimRuns(const trace::Trace& trace, const graph::DepGraph& g, const SimDevice& device,
                             const SimRunOptions& options)
    : g_(g), device_(device) {
  NodeTruths nt = node_truths(trace, g, device, options);
  truth_ = std::move(nt.truth);
  key_ = std::move(nt.key);
  noise_ = std::move(nt.noise);
}

double StaticSimRuns::run(double clock_mhz, std::vector<TimeNs>& dur) const {
  const auto& gpu = device_.gpu();
  check_clock(gpu, clock_mhz);
  std::vector<double> ratio(truth_.size()), above_w(truth_.size());  // per distinct truth, at clock_mhz
  for (std::size_t k = 0; k < truth_.size(); ++k) {
    ratio[k] = device_.true_time_ns(truth_[k], 1, clock_mhz);
    above_w[k] = device_.true_power_w(truth_[k], clock_mhz) - gpu.idle_power_w;
  }
  dur.assign(g_.dur.begin(), g_.dur.end());
  double above_idle_j = 0;
  for (std::size_t i = 0; i < g_.nodes(); ++i) {
    if (!g_.gpu[i]) continue;
    const std::uint32_t k = key_[i];
    if (g_.dur[i] > 0) dur[i] = node_dur_ns(g_.dur[i], ratio[k], noise_[i]);
    above_idle_j += above_w[k] * static_cast<double>(dur[i]) * 1e-9;
  }
  return above_idle_j;
}

}  // namespace emo::runtime
