#include "runtime/run_breakdown.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

namespace emo::runtime {

PackCosts pack_costs(std::span<const RunOp> ops, std::size_t packs, TimeNs makespan_ns, double idle_w) {
  PackCosts out;
  out.packs.assign(packs, PackCost{});
  std::vector<TimeNs> end(packs, 0);
  std::vector<double> above_j(packs, 0.0);
  std::vector<bool> seen(packs, false);
  std::vector<std::int32_t> device(packs, 0);
  std::set<std::int32_t> devices;
  double outside_above_j = 0;
  for (const RunOp& op : ops) {
    devices.insert(op.device);
    const double e = op.above_idle_w * static_cast<double>(op.dur_ns) * kSPerNs;
    if (op.pack == kNoRunPack) {
      outside_above_j += e;
      continue;
    }
    if (op.pack >= packs) throw std::invalid_argument("pack_costs: op of pack " + std::to_string(op.pack) + " of " + std::to_string(packs));
    PackCost& c = out.packs[op.pack];
    if (!seen[op.pack] || op.start_ns < c.start_ns) c.start_ns = op.start_ns;
    end[op.pack] = seen[op.pack] ? std::max(end[op.pack], op.start_ns + op.dur_ns) : op.start_ns + op.dur_ns;
    above_j[op.pack] += e;
    device[op.pack] = op.device;
    seen[op.pack] = true;
  }
  TimeNs packs_ns = 0;
  for (std::size_t p = 0; p < packs; ++p) {
    if (!seen[p]) continue;
    PackCost& c = out.packs[p];
    c.time_ns = end[p] - c.start_ns;
    c.energy_j = idle_w * static_cast<double>(c.time_ns) * kSPerNs + above_j[p];
    packs_ns += c.time_ns;
  }
  out.outside_ns = static_cast<TimeNs>(devices.size()) * makespan_ns - packs_ns;
  out.outside_energy_j = idle_w * static_cast<double>(out.outside_ns) * kSPerNs + outside_above_j;
  return out;
}

PowerSeries power_series(std::span<const RunOp> ops, TimeNs makespan_ns, double idle_w, int bins) {
  if (bins < 1) throw std::invalid_argument("power_series: bins must be at least 1");
  if (makespan_ns < 0) throw std::invalid_argument("power_series: negative makespan");
  PowerSeries out;
  out.duration_ns = makespan_ns;
  std::set<std::int32_t> devices;
  for (const RunOp& op : ops) devices.insert(op.device);
  const double idle_total_w = idle_w * static_cast<double>(devices.size());
  out.power_w.assign(static_cast<std::size_t>(bins), idle_total_w);
  if (makespan_ns == 0) return out;
  // Energy above idle per bin (W·ns): partial bins at an op's ends directly, whole bins between
  // them through a difference array of power.
  const double width = static_cast<double>(makespan_ns) / bins;
  std::vector<double> partial(static_cast<std::size_t>(bins), 0.0), whole(static_cast<std::size_t>(bins) + 1, 0.0);
  for (const RunOp& op : ops) {
    const double a = static_cast<double>(std::clamp<TimeNs>(op.start_ns, 0, makespan_ns));
    const double b = static_cast<double>(std::clamp<TimeNs>(op.start_ns + op.dur_ns, 0, makespan_ns));
    if (b <= a) continue;
    const int i0 = std::min(bins - 1, static_cast<int>(a / width));
    const int i1 = std::min(bins - 1, static_cast<int>(b / width));
    if (i0 == i1) {
      partial[i0] += op.above_idle_w * (b - a);
      continue;
    }
    partial[i0] += op.above_idle_w * ((i0 + 1) * width - a);
    partial[i1] += op.above_idle_w * (b - i1 * width);
    whole[i0 + 1] += op.above_idle_w;
    whole[i1] -= op.above_idle_w;
  }
  double running_w = 0;
  for (int i = 0; i < bins; ++i) {
    running_w += whole[i];
    out.power_w[i] += running_w + partial[i] / width;
  }
  return out;
}

}  // namespace emo::runtime
