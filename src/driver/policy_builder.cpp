#include "driver/policy_builder.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/units.h"
#include "core/version.h"

namespace emo::driver {
namespace {

/// Ordinal of each GPU node among the window's ops of the same name on its device (start order).
std::vector<std::int64_t> name_ordinals(const trace::Trace& trace, const graph::DepGraph& g) {
  std::vector<std::uint32_t> gpu_nodes;
  for (std::uint32_t n = 0; n < g.nodes(); ++n)
    if (g.gpu[n]) gpu_nodes.push_back(n);
  std::stable_sort(gpu_nodes.begin(), gpu_nodes.end(), [&](auto a, auto b) { return g.rec_start[a] < g.rec_start[b]; });
  std::map<std::pair<std::int32_t, StringId>, std::int64_t> seen;
  std::vector<std::int64_t> ordinal(g.nodes(), 0);
  for (auto n : gpu_nodes) ordinal[n] = seen[{trace.ops.device[g.op[n]], trace.ops.name[g.op[n]]}]++;
  return ordinal;
}

/// Sorts each GPU's packs by predicted start and numbers them; returns, per GPU, the pack id of
/// each sorted entry given `id_of` (pack ids in insertion order).
void sort_by_start(policy::GpuPolicy& gp, const std::vector<std::uint32_t>& id_of, std::vector<std::uint32_t>* ids) {
  std::vector<std::size_t> order(gp.packs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return gp.packs[a].start_offset_ns < gp.packs[b].start_offset_ns;
  });
  std::vector<policy::PackClock> sorted;
  for (const std::size_t i : order) sorted.push_back(std::move(gp.packs[i]));
  gp.packs = std::move(sorted);
  for (std::size_t i = 0; i < gp.packs.size(); ++i) gp.packs[i].index = static_cast<std::int32_t>(i);
  if (ids != nullptr) {
    ids->clear();
    for (const std::size_t i : order) ids->push_back(id_of[i]);
  }
}

}  // namespace

policy::Policy make_policy(const trace::Trace& trace, const pack::PackRun& packs, const std::vector<PackPlan>& plan,
                           const model::GpuSpec& gpu, const PolicyHeader& header,
                           std::map<std::int32_t, std::vector<std::uint32_t>>* ids) {
  const graph::DepGraph& g = packs.analysis.graph;
  const pack::Packing& packing = packs.packing;
  if (plan.size() != packing.packs.size()) throw std::invalid_argument("make_policy: one plan entry per pack expected");
  policy::Policy pol;
  pol.emo_version = std::string(emo::version());
  pol.gpu = gpu.id;
  pol.trace = trace.meta.path;
  pol.iteration_marker = g.window.label == "whole trace" ? "" : g.window.label;
  pol.max_slowdown = header.max_slowdown;
  pol.latency_target_ns = header.latency_target_ns;
  pol.baseline_time_ns = header.baseline_time_ns;
  pol.baseline_energy_j = header.baseline_energy_j;
  pol.predicted_time_ns = header.predicted_time_ns;
  pol.predicted_energy_j = header.predicted_energy_j;
  pol.switch_latency_ms = gpu.switch_latency_ms;
  // The runtime keeps switches this far apart (issue 17) where collectives can suffer and the
  // packs were made at least that long (--min-pack-ms): then it never contradicts the plan.
  if (gpu.min_switch_interval_ms > 0 && packing.min_pack_ns >= ms_to_ns(gpu.min_switch_interval_ms) &&
      model::has_collectives(trace)) {
    pol.min_switch_interval_ms = gpu.min_switch_interval_ms;
  }
  pol.simulated = header.simulated;
  const std::vector<std::int64_t> ordinal = name_ordinals(trace, g);
  std::map<std::int32_t, policy::GpuPolicy> per_device;
  std::map<std::int32_t, std::vector<std::uint32_t>> id_of;
  for (std::uint32_t p = 0; p < packing.packs.size(); ++p) {
    const std::int32_t d = packing.packs[p].device;
    policy::GpuPolicy& gp = per_device[d];
    gp.device = d;
    // A linked job (trace/job.h): device d is the d-th rank's GPU; its section names that rank.
    const auto& ranks = trace.meta.job.ranks;
    gp.rank = d >= 0 && static_cast<std::size_t>(d) < ranks.size() ? ranks[static_cast<std::size_t>(d)].rank
                                                                     : trace.meta.rank;
    gp.default_clock_mhz = gpu.max_sm_clock_mhz();
    const auto first = packing.ops_of(p)[0];
    const auto row = g.op[first];
    policy::PackClock k;
    k.start = {std::string(trace.strings.view(trace.ops.name[row])), trace.ops.stream[row], ordinal[first]};
    k.start_offset_ns = plan[p].start_ns - g.window_start_ns;
    k.duration_ns = plan[p].end_ns - plan[p].start_ns;
    k.ops = packing.packs[p].count;
    k.clock_mhz = plan[p].clock_mhz;
    k.predicted_energy_j = plan[p].energy_j;
    gp.packs.push_back(std::move(k));
    id_of[d].push_back(p);
  }
  for (auto& [d, gp] : per_device) {
    sort_by_start(gp, id_of[d], ids != nullptr ? &(*ids)[d] : nullptr);
    pol.gpus.push_back(std::move(gp));
  }
  return pol;
}

StaticPolicy static_policy(const trace::Trace& trace, const pack::PackRun& packs, const model::GpuSpec& gpu,
                           double clock_mhz) {
  const pack::Packing& packing = packs.packing;
  std::vector<PackPlan> plan(packing.packs.size());
  for (std::size_t p = 0; p < plan.size(); ++p) plan[p] = {packing.packs[p].start_ns, packing.packs[p].end_ns, clock_mhz, 0};
  StaticPolicy out;
  out.policy = make_policy(trace, packs, plan, gpu, PolicyHeader{}, &out.pack_ids);
  for (auto& gp : out.policy.gpus) gp.default_clock_mhz = clock_mhz;
  return out;
}

}  // namespace emo::driver
