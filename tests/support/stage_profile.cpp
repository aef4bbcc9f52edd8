#include "support/stage_profile.h"

#include <algorithm>
#include <climits>
#include <map>
#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>

#include "core/error.h"
#include "policy/policy.h"
#include "runtime/device.h"
#include "runtime/sim_backend.h"

namespace emo::testing {
namespace {

/// Position in meta.job.ranks of each rank 0 .. stages − 1; throws unless the job is exactly those.
std::vector<std::int32_t> stage_devices(const trace::Trace& linked, int stages) {
  const auto& ranks = linked.meta.job.ranks;
  const std::string& path = ranks.empty() ? linked.meta.path : ranks.front().path;
  if (ranks.size() != static_cast<std::size_t>(stages)) {
    throw InputError(path, fmt::format("{} ranks given for a pipeline of {} stages (one rank per stage expected)",
                                       ranks.size(), stages));
  }
  std::vector<std::int32_t> device(stages, -1);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].rank < 0 || ranks[i].rank >= stages) {
      throw InputError(ranks[i].path, fmt::format("rank {} is no stage of a {}-stage pipeline", ranks[i].rank, stages));
    }
    device[ranks[i].rank] = static_cast<std::int32_t>(i);
  }
  return device;
}

/// The kernel names of a pass, in order.
std::vector<StringId> names_of(const trace::Trace& t, const std::vector<std::uint32_t>& rows) {
  std::vector<StringId> out;
  for (std::uint32_t r : rows) out.push_back(t.ops.name[r]);
  return out;
}

/// Cuts one stage's compute kernels (start order) into its 2M passes and checks them.
std::vector<std::vector<std::uint32_t>> cut_passes(const trace::Trace& t, const std::vector<std::uint32_t>& kernels,
                                                   const std::vector<opt::Pass>& order, const std::string& path) {
  const std::size_t passes = order.size();
  if (kernels.empty() || kernels.size() % passes != 0) {
    throw InputError(path, fmt::format("{} compute kernels do not split into {} passes of equal length",
                                       kernels.size(), passes));
  }
  const std::size_t per = kernels.size() / passes;
  std::vector<std::vector<std::uint32_t>> out(passes);
  std::map<opt::PassKind, std::vector<StringId>> first;
  for (std::size_t k = 0; k < passes; ++k) {
    out[k].assign(kernels.begin() + static_cast<std::ptrdiff_t>(k * per),
                  kernels.begin() + static_cast<std::ptrdiff_t>((k + 1) * per));
    const auto [it, added] = first.emplace(order[k].kind, names_of(t, out[k]));
    if (!added && it->second != names_of(t, out[k])) {
      throw InputError(path, fmt::format("pass {} ({} of micro-batch {}) runs other kernels than the stage's first {}: "
                                         "not the 1F1B order of this pipeline",
                                         k, order[k].kind == opt::PassKind::kForward ? "forward" : "backward",
                                         order[k].microbatch,
                                         order[k].kind == opt::PassKind::kForward ? "forward" : "backward"));
    }
  }
  return out;
}

const char* kind_name(opt::PassKind k) { return k == opt::PassKind::kForward ? "forward" : "backward"; }

std::string pass_name(int stage, const opt::Pass& p) {
  return fmt::format("stage {} {} mb {}", stage, kind_name(p.kind), p.microbatch);
}

}  // namespace

PipelinePasses find_passes(const trace::Trace& linked, int stages, int microbatches) {
  if (stages < 1) throw ArgumentError("stages", fmt::format("{}", stages), "not a positive stage count");
  if (microbatches < 1) throw ArgumentError("microbatches", fmt::format("{}", microbatches), "not a positive count");
  const std::vector<std::int32_t> device = stage_devices(linked, stages);
  std::unordered_set<std::uint32_t> collective(linked.collectives.op.begin(), linked.collectives.op.end());
  std::vector<std::vector<std::uint32_t>> kernels(stages);
  std::vector<std::int32_t> stage_of_device(stages);
  for (int s = 0; s < stages; ++s) stage_of_device[device[s]] = s;
  for (std::uint32_t r = 0; r < linked.ops.size(); ++r) {
    const std::int32_t d = linked.ops.device[r];
    if (linked.ops.kind[r] != trace::OpKind::kKernel || collective.contains(r) || d < 0 || d >= stages) continue;
    kernels[stage_of_device[d]].push_back(r);
  }
  PipelinePasses out;
  out.stages = stages;
  out.microbatches = microbatches;
  for (int s = 0; s < stages; ++s) {
    auto& k = kernels[s];
    std::stable_sort(k.begin(), k.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return linked.ops.start_ns[a] < linked.ops.start_ns[b]; });
    out.order.push_back(opt::one_f_one_b_order(stages, microbatches, s));
    out.rows.push_back(cut_passes(linked, k, out.order.back(), linked.meta.job.ranks[device[s]].path));
  }
  return out;
}

std::vector<StageProfileRow> stage_profile(const trace::Trace& linked, const PipelinePasses& passes,
                                           const runtime::SimDevice& device, const std::vector<double>& clocks_mhz) {
  std::vector<StageProfileRow> out;
  for (int s = 0; s < passes.stages; ++s) {
    for (opt::PassKind kind : {opt::PassKind::kForward, opt::PassKind::kBackward}) {
      std::vector<runtime::Work> works;
      for (std::size_t k = 0; k < passes.order[s].size(); ++k) {
        if (passes.order[s][k].kind != kind) continue;
        runtime::Work w;
        w.label = pass_name(s, passes.order[s][k]);
        const TimeNs origin = linked.ops.start_ns[passes.rows[s][k].front()];
        for (std::uint32_t r : passes.rows[s][k]) {
          w.ops.push_back({std::string(linked.strings.view(linked.ops.name[r])), linked.ops.kind[r],
                           static_cast<std::int32_t>(linked.ops.stream[r]), linked.ops.start_ns[r] - origin,
                           linked.ops.dur_ns[r]});
        }
        works.push_back(std::move(w));
      }
      for (double f : clocks_mhz) {
        if (std::find(device.gpu().sm_clocks_mhz.begin(), device.gpu().sm_clocks_mhz.end(), f) ==
            device.gpu().sm_clocks_mhz.end()) {
          throw std::invalid_argument(fmt::format("stage_profile: {} MHz is not a clock of {}", f, device.gpu().id));
        }
        double time_ns = 0, energy_j = 0;
        for (const runtime::Work& w : works) {
          const runtime::TrueRun run = device.true_run(w, f);
          time_ns += static_cast<double>(run.time_ns);
          energy_j += run.energy_j;
        }
        const auto n = static_cast<double>(works.size());
        out.push_back({s, kind, f, time_ns / n * 1e-9, energy_j / n});
      }
    }
  }
  return out;
}

std::string stage_profile_csv(const std::vector<StageProfileRow>& rows) {
  std::string out = "stage,instruction,frequency,time,energy\n";
  for (const StageProfileRow& r : rows) {
    out += fmt::format("{},{},{},{},{}\n", r.stage, kind_name(r.kind), r.clock_mhz, r.time_s, r.energy_j);
  }
  return out;
}

std::vector<double> plan_node_clocks(const trace::Trace& linked, const PipelinePasses& passes,
                                     const std::vector<std::uint32_t>& node_op, const std::vector<std::uint8_t>& node_gpu,
                                     const PassPlan& plan) {
  if (plan.pass_names.size() != plan.clock_mhz.size()) throw std::invalid_argument("plan_node_clocks: size mismatch");
  std::map<std::string, double> clock_of;
  for (std::size_t i = 0; i < plan.pass_names.size(); ++i) clock_of[plan.pass_names[i]] = plan.clock_mhz[i];
  const std::vector<std::int32_t> device = stage_devices(linked, passes.stages);
  std::map<std::uint32_t, double> row_clock;
  std::vector<std::vector<std::pair<TimeNs, double>>> starts(passes.stages);  // per stage: (pass start, clock)
  std::size_t used = 0;
  for (int s = 0; s < passes.stages; ++s) {
    for (std::size_t k = 0; k < passes.order[s].size(); ++k) {
      const opt::Pass& p = passes.order[s][k];
      const std::string name = pass_name(s, p);
      const auto it = clock_of.find(name);
      if (it == clock_of.end()) throw std::invalid_argument("plan_node_clocks: the plan has no clock for " + name);
      ++used;
      for (std::uint32_t r : passes.rows[s][k]) row_clock[r] = it->second;
      starts[s].push_back({linked.ops.start_ns[passes.rows[s][k].front()], it->second});
    }
    std::sort(starts[s].begin(), starts[s].end());
  }
  if (used != clock_of.size()) throw std::invalid_argument("plan_node_clocks: the plan names passes the job does not have");
  std::vector<std::int32_t> stage_of_device(passes.stages);
  for (int s = 0; s < passes.stages; ++s) stage_of_device[device[s]] = s;
  std::vector<double> out(node_op.size(), 0.0);
  for (std::size_t n = 0; n < node_op.size(); ++n) {
    if (!node_gpu[n]) continue;
    const std::uint32_t r = node_op[n];
    if (const auto it = row_clock.find(r); it != row_clock.end()) {
      out[n] = it->second;
      continue;
    }
    const auto& st = starts[stage_of_device[linked.ops.device[r]]];
    auto after = std::upper_bound(st.begin(), st.end(), std::pair{linked.ops.start_ns[r], 1e300});
    out[n] = after == st.begin() ? st.front().second : std::prev(after)->second;
  }
  return out;
}

namespace {

/// Each GPU op row of `run` (a replay of `g`) → its start there.
std::map<std::uint32_t, TimeNs> row_starts(const graph::DepGraph& g, const runtime::SimRunResult& run) {
  std::map<std::uint32_t, TimeNs> out;
  for (const runtime::RunOp& op : run.ops) out[g.op[op.node]] = op.start_ns;
  return out;
}

}  // namespace

policy::Policy plan_pass_policy(const trace::Trace& linked, const PipelinePasses& passes, const graph::DepGraph& g,
                                const runtime::SimRunResult& ideal, const PassPlan& plan) {
  std::map<std::string, double> clock_of;
  for (std::size_t i = 0; i < plan.pass_names.size() && i < plan.clock_mhz.size(); ++i) {
    clock_of[plan.pass_names[i]] = plan.clock_mhz[i];
  }
  const std::map<std::uint32_t, TimeNs> start_of_row = row_starts(g, ideal);
  const std::vector<std::int32_t> device = stage_devices(linked, passes.stages);
  policy::Policy pol;
  for (int s = 0; s < passes.stages; ++s) {
    policy::GpuPolicy gp;
    gp.device = device[s];
    for (std::size_t k = 0; k < passes.order[s].size(); ++k) {
      const std::string name = pass_name(s, passes.order[s][k]);
      const auto clock = clock_of.find(name);
      const auto start = start_of_row.find(passes.rows[s][k].front());
      if (clock == clock_of.end()) throw std::invalid_argument("plan_pass_policy: the plan has no clock for " + name);
      if (start == start_of_row.end()) throw std::invalid_argument("plan_pass_policy: " + name + " did not run");
      policy::PackClock pc;
      pc.index = static_cast<std::int32_t>(k);
      pc.start_offset_ns = start->second;
      pc.clock_mhz = clock->second;
      gp.packs.push_back(pc);
    }
    pol.gpus.push_back(std::move(gp));
  }
  return pol;
}

std::vector<std::vector<TimeNs>> observed_pass_starts(const PipelinePasses& passes, const graph::DepGraph& g,
                                                      const runtime::SimRunResult& run) {
  const std::map<std::uint32_t, TimeNs> start_of_row = row_starts(g, run);
  std::vector<std::vector<TimeNs>> out(static_cast<std::size_t>(passes.stages));
  for (int s = 0; s < passes.stages; ++s) {
    for (std::size_t k = 0; k < passes.order[s].size(); ++k) {
      const auto start = start_of_row.find(passes.rows[s][k].front());
      out[static_cast<std::size_t>(s)].push_back(start == start_of_row.end() ? INT64_MAX : start->second);
    }
  }
  return out;
}

}  // namespace emo::testing
