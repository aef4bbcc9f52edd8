#include "runtime/profiler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/units.h"

namespace emo::runtime {

std::vector<double> profiling_clocks(const std::vector<double>& supported, int k) {
  if (k < 2) throw std::invalid_argument("profiling needs at least 2 clocks");
  if (supported.empty()) throw std::invalid_argument("the GPU has no supported clocks");
  const double f_max = *std::max_element(supported.begin(), supported.end());
  const double x_low = 0.5;
  std::vector<double> out;
  for (int i = 0; i < k; ++i) {
    const double want = f_max * (1.0 - (1.0 - x_low) * i / (k - 1));
    const double got = *std::min_element(supported.begin(), supported.end(), [&](double a, double b) {
      return std::abs(a - want) < std::abs(b - want) || (std::abs(a - want) == std::abs(b - want) && a > b);
    });
    if (std::find(out.begin(), out.end(), got) == out.end()) out.push_back(got);
  }
  if (static_cast<int>(out.size()) < k)
    throw std::invalid_argument(fmt::format("the GPU has fewer than {} distinct clocks in [{:.0f}, {:.0f}] MHz", k,
                                            x_low * f_max, f_max));
  return out;
}

std::vector<double> trusted_clocks(const std::vector<double>& supported, const std::vector<double>& profiled) {
  const double lowest = *std::min_element(profiled.begin(), profiled.end());
  std::vector<double> out;
  for (double f : supported)
    if (f >= lowest - 1e-9) out.push_back(f);
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

ProfileResult measure_work(Device& device, Work work, const std::vector<double>& clocks, int counter_periods) {
  if (clocks.empty()) throw std::invalid_argument(fmt::format("{}: '{}': no clock to measure at", device.name(), work.label));
  ProfileResult r;
  r.simulated = device.simulated();
  // One timing run at the first clock sizes the repetitions.
  work.repetitions = 1;
  const Measurement probe = device.run(work, clocks.front());
  r.runs += 1;
  r.device_time_s += ns_to_s(probe.time_ns);
  work.repetitions = repetitions_for(ns_to_s(probe.time_ns), device, counter_periods);
  for (double f : clocks) {
    const Measurement m = device.run(work, f);
    if (m.time_ns <= 0 || !(m.energy_j > 0))
      throw std::invalid_argument(fmt::format("{}: '{}' at {} MHz measured {} ns, {} J", device.name(), work.label, f,
                                              m.time_ns, m.energy_j));
    r.points.push_back({m.clock_mhz, ns_to_s(m.time_ns), m.energy_j});
    r.runs += m.repetitions;
    r.device_time_s += ns_to_s(m.time_ns) * m.repetitions;
  }
  return r;
}

ProfileResult profile_work(Device& device, Work work, const std::vector<double>& clocks, int counter_periods) {
  ProfileResult r = measure_work(device, std::move(work), clocks, counter_periods);
  r.model = model::fit_clock_model(r.points);
  return r;
}

}  // namespace emo::runtime
