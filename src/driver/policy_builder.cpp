#include "driver/policy_builder.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/units.h"
#include "core/version.h"
#include "tracer/pack_matcher.h"

namespace emo::driver {
namespace {

/// One observable call of the window: a kernel launch, copy, memset or graph launch, and the GPU
/// nodes it enqueued (in recorded start order).
struct Unit {
  std::optional<tracer::WatchKind> kind;  ///< nullopt: the tracer does not follow its call.
  std::vector<std::uint32_t> nodes;
  TimeNs host_ns = 0;       ///< When it was called (its API call's start; its first op's, without one).
  std::int64_t ordinal = 0; ///< Among the window's units of its kind and key on its device (host order).
  std::int64_t kernels = 0; ///< kGraph: kernel ops of the launch.
  std::string first_kernel; ///< kGraph: the launch's first kernel's name.
};

/// The window's units (observable calls) and each GPU node's unit.
struct Units {
  std::vector<Unit> units;
  std::vector<std::uint32_t> unit_of;  ///< Per graph node; only GPU nodes are set.
};

/// The kind of the call that launched GPU op `row` (its API call `api`, or none): by the call's
/// name (tracer::watch_kind_of_api, the rule the tracer follows calls by); without a launching
/// call in the trace, by the op's kind (assumed enqueued by the usual asynchronous call).
std::optional<tracer::WatchKind> kind_of(const trace::Trace& trace, std::uint32_t row, std::optional<std::uint32_t> api) {
  if (api) return tracer::watch_kind_of_api(trace.strings.view(trace.ops.name[*api]));
  switch (trace.ops.kind[row]) {
    case trace::OpKind::kKernel: return tracer::WatchKind::kKernel;
    case trace::OpKind::kMemcpy: return tracer::WatchKind::kCopy;
    case trace::OpKind::kMemset: return tracer::WatchKind::kMemset;
    default: return std::nullopt;
  }
}

/// Groups the window's GPU nodes by the call that launched them (same device and correlation id
/// as an API call of the trace; a node without one is its own unit) and numbers the units as the
/// tracer counts calls (tracer/pack_matcher.h): per device, kind and key, in call order.
Units observable_units(const trace::Trace& trace, const graph::DepGraph& g) {
  const trace::OpTable& ops = trace.ops;
  std::vector<std::pair<std::int64_t, std::uint32_t>> calls;  // (correlation, row), first call first
  for (std::uint32_t r = 0; r < ops.size(); ++r) {
    if (trace::is_api_call(ops.kind[r]) && ops.correlation[r] != trace::kNone) calls.emplace_back(ops.correlation[r], r);
  }
  std::sort(calls.begin(), calls.end());
  auto call_of = [&](std::int64_t corr) -> std::optional<std::uint32_t> {
    const auto it = std::lower_bound(calls.begin(), calls.end(), std::pair{corr, std::uint32_t{0}});
    if (corr == trace::kNone || it == calls.end() || it->first != corr) return std::nullopt;
    return it->second;
  };
  std::vector<std::uint32_t> gpu_nodes;
  for (std::uint32_t n = 0; n < g.nodes(); ++n)
    if (g.gpu[n]) gpu_nodes.push_back(n);
  std::stable_sort(gpu_nodes.begin(), gpu_nodes.end(), [&](auto a, auto b) { return g.rec_start[a] < g.rec_start[b]; });
  Units u;
  u.unit_of.assign(g.nodes(), 0);
  std::map<std::pair<std::int32_t, std::int64_t>, std::uint32_t> by_call;  // (device, correlation) -> unit
  for (const auto n : gpu_nodes) {
    const auto row = g.op[n];
    const auto api = call_of(ops.correlation[row]);
    std::uint32_t id = static_cast<std::uint32_t>(u.units.size());
    if (api) id = by_call.try_emplace({ops.device[row], ops.correlation[row]}, id).first->second;
    if (id == u.units.size()) {
      Unit unit;
      unit.kind = kind_of(trace, row, api);
      unit.host_ns = api ? ops.start_ns[*api] : g.rec_start[n];
      u.units.push_back(std::move(unit));
    }
    u.units[id].nodes.push_back(n);
    u.unit_of[n] = id;
  }
  for (auto& unit : u.units) {
    for (const auto n : unit.nodes) {
      if (ops.kind[g.op[n]] != trace::OpKind::kKernel) continue;
      if (unit.kernels++ == 0) unit.first_kernel = std::string(trace.strings.view(ops.name[g.op[n]]));
    }
  }
  std::vector<std::uint32_t> order(u.units.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return u.units[a].host_ns < u.units[b].host_ns; });
  std::map<std::tuple<std::int32_t, tracer::WatchKind, std::string>, std::int64_t> seen;
  for (const auto i : order) {
    Unit& unit = u.units[i];
    if (!unit.kind) continue;
    const auto row = g.op[unit.nodes.front()];
    std::string key;
    if (*unit.kind == tracer::WatchKind::kKernel) key = std::string(trace.strings.view(ops.name[row]));
    if (*unit.kind == tracer::WatchKind::kGraph) key = std::to_string(unit.kernels) + ' ' + unit.first_kernel;
    unit.ordinal = seen[{ops.device[row], *unit.kind, key}]++;
  }
  return u;
}

/// Predicted start of GPU node `n` relative to the window's start: its pack's planned start plus
/// its recorded offset in the pack, scaled by the pack's planned / recorded duration (a pack's
/// ops stretch together at a lower clock; linear interpolation, exact at the pack's start).
std::int64_t predicted_offset(const graph::DepGraph& g, const pack::Packing& packing, const std::vector<PackPlan>& plan,
                              std::uint32_t n) {
  const auto p = packing.pack_of[n];
  const pack::Pack& k = packing.packs[p];
  const double scale = k.dur_ns() > 0 ? static_cast<double>(plan[p].end_ns - plan[p].start_ns) / static_cast<double>(k.dur_ns()) : 1.0;
  const auto within = static_cast<std::int64_t>(std::llround(static_cast<double>(g.rec_start[n] - k.start_ns) * scale));
  return std::clamp<std::int64_t>(plan[p].start_ns + within, plan[p].start_ns, plan[p].end_ns) - g.window_start_ns;
}

policy::ObservedBy observed_by(tracer::WatchKind k) {
  switch (k) {
    case tracer::WatchKind::kKernel: return policy::ObservedBy::kKernel;
    case tracer::WatchKind::kCopy: return policy::ObservedBy::kCopy;
    case tracer::WatchKind::kMemset: return policy::ObservedBy::kMemset;
    case tracer::WatchKind::kGraph: return policy::ObservedBy::kGraph;
  }
  return policy::ObservedBy::kNone;
}

/// The unit pack start node `f` is observed by: its own when the tracer follows it, else the
/// nearest observable one on its device by recorded start (the earlier of two equally near);
/// nullopt when its device has none.
std::optional<std::uint32_t> anchor_unit(const trace::Trace& trace, const graph::DepGraph& g, const Units& u, std::uint32_t f) {
  const std::uint32_t own = u.unit_of[f];
  if (u.units[own].kind) return own;
  const auto device = trace.ops.device[g.op[f]];
  std::optional<std::uint32_t> best;
  TimeNs best_distance = 0, best_start = 0;
  for (std::uint32_t i = 0; i < u.units.size(); ++i) {
    const auto first = u.units[i].nodes.front();
    if (!u.units[i].kind || trace.ops.device[g.op[first]] != device) continue;
    const TimeNs start = g.rec_start[first];
    const TimeNs distance = start > g.rec_start[f] ? start - g.rec_start[f] : g.rec_start[f] - start;
    if (!best || distance < best_distance || (distance == best_distance && start < best_start)) {
      best = i;
      best_distance = distance;
      best_start = start;
    }
  }
  return best;
}

/// How the start of a pack whose first node is `f` (predicted at `start_offset`) is observed.
policy::PackStart pack_start(const trace::Trace& trace, const graph::DepGraph& g, const pack::Packing& packing,
                             const std::vector<PackPlan>& plan, const Units& u, std::uint32_t f,
                             std::int64_t start_offset) {
  policy::PackStart s;
  s.op_name = std::string(trace.strings.view(trace.ops.name[g.op[f]]));
  s.stream = trace.ops.stream[g.op[f]];
  const auto a = anchor_unit(trace, g, u, f);
  if (!a) {
    s.observed_by = policy::ObservedBy::kNone;
    return s;
  }
  const Unit& unit = u.units[*a];
  const auto first = unit.nodes.front();
  s.observed_by = observed_by(*unit.kind);
  s.stream = trace.ops.stream[g.op[first]];
  s.ordinal = unit.ordinal;
  if (*a != u.unit_of[f]) {
    s.moved_from = s.op_name;
    s.op_name = std::string(trace.strings.view(trace.ops.name[g.op[first]]));
  }
  if (first != f) s.anchor_offset_ns = predicted_offset(g, packing, plan, first);
  if (s.anchor_offset_ns == start_offset) s.anchor_offset_ns.reset();
  if (s.observed_by == policy::ObservedBy::kGraph) {
    const auto at = std::find(unit.nodes.begin(), unit.nodes.end(), f);
    s.graph = {unit.kernels, unit.first_kernel, at != unit.nodes.end() ? at - unit.nodes.begin() : 0};
  }
  return s;
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

struct PolicyBuilder::Calls {
  Units units;
};

PolicyBuilder::PolicyBuilder(const trace::Trace& trace, const pack::PackRun& packs)
    : trace_(trace), packs_(packs), calls_(std::make_unique<const Calls>(Calls{observable_units(trace, packs.analysis.graph)})) {}

PolicyBuilder::~PolicyBuilder() = default;

policy::Policy make_policy(const trace::Trace& trace, const pack::PackRun& packs, const std::vector<PackPlan>& plan,
                           const model::GpuSpec& gpu, const PolicyHeader& header,
                           std::map<std::int32_t, std::vector<std::uint32_t>>* ids) {
  return PolicyBuilder(trace, packs).make(plan, gpu, header, ids);
}

policy::Policy PolicyBuilder::make(const std::vector<PackPlan>& plan, const model::GpuSpec& gpu, const PolicyHeader& header,
                                   std::map<std::int32_t, std::vector<std::uint32_t>>* ids) const {
  const trace::Trace& trace = trace_;
  const graph::DepGraph& g = packs_.analysis.graph;
  const pack::Packing& packing = packs_.packing;
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
  const Units& units = calls_->units;
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
    policy::PackClock k;
    k.start_offset_ns = plan[p].start_ns - g.window_start_ns;
    k.start = pack_start(trace, g, packing, plan, units, first, k.start_offset_ns);
    k.duration_ns = plan[p].end_ns - plan[p].start_ns;
    k.ops = packing.packs[p].count;
    k.clock_mhz = plan[p].clock_mhz;
    k.predicted_energy_j = plan[p].energy_j;
    k.down_lead_ns = plan[p].down_lead_ns;
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
