// The stage-level view of a 1F1B pipeline job (issue 26, item 5; docs/multi-rank.md, "Cross-check
// against the stage-level optimiser"): its Perseus stage profile derived from the SIMULATED
// device, and a stage-level plan (one clock per pass, `emo pipeline --plans`) replayed on the same
// device as `emo optimize` evaluates a job on. Used by the emo_pipeline_crosscheck tool
// (bench/pipeline_crosscheck.cpp) and its test (support/stage_profile_test.cpp).
//
// A pass is found in the linked trace of the job (trace::link_job, ranks 0 .. S − 1 = stages
// 0 .. S − 1, one rank per stage: no data- or tensor-parallel ranks): rank s's compute kernels
// (kernels that are not collectives), in start order, cut into 2M runs of equal length, the k-th
// being pass k of opt::one_f_one_b_order(S, M, s). The cut is checked: every forward pass of a
// stage has the same kernel names in the same order, and every backward pass too (as
// emo_make_job --mode pipeline writes them: a backward is the forward's kernels in reverse).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/gpu_catalog.h"
#include "opt/pipeline.h"
#include "policy/policy.h"
#include "graph/dep_graph.h"
#include "runtime/sim_device.h"
#include "runtime/sim_run.h"
#include "trace/trace.h"

namespace emo::testing {

/// The passes of a linked 1F1B job: rows[s][k] = the OpTable rows of pass k (1F1B order, order[s][k])
/// of stage s, in start order.
struct PipelinePasses {
  int stages = 0;
  int microbatches = 0;
  std::vector<std::vector<opt::Pass>> order;
  std::vector<std::vector<std::vector<std::uint32_t>>> rows;
};

/// Finds the passes (file comment) of `linked`, a trace made by trace::link_job. Throws
/// emo::InputError(the rank's path, problem) when the job is not S ranks 0 .. S − 1, when a rank's
/// compute kernels do not split into 2M passes of equal length, or when its forward (backward)
/// passes do not all run the same kernels; ArgumentError for stages or microbatches < 1.
PipelinePasses find_passes(const trace::Trace& linked, int stages, int microbatches);

/// One row of a Perseus stage profile: stage, instruction, SM clock (MHz), time (s), energy (J).
struct StageProfileRow {
  int stage = 0;
  opt::PassKind kind = opt::PassKind::kForward;
  double clock_mhz = 0;
  double time_s = 0;
  double energy_j = 0;
};

/// The stage profile of `passes` on `device`, noise-free (SimDevice::true_run): for each stage,
/// kind and clock of `clocks_mhz` (descending as given), the mean over the stage's M passes of
/// that kind of
///   time   = the pass's kernels run back to back on their stream (traced gaps kept),
///   energy = P_idle · time + Σ_kernels (P_k(f) − P_idle) · t_k(f)
/// (runtime/sim_device.h; each t_k(f) = t_ref · τ_c(f / f_max; β_k), P_k(f) = max(P_idle,
/// level_k · P_limit · π_c(f / f_max))). With P_blocked = P_idle, `emo pipeline`'s accounting
/// Σ(E_pass − P_blocked · t_pass) + S · T · P_blocked is then the simulated device's for the passes
/// alone (no transfer kernels, no host). Rows ordered by stage, forward before backward, then
/// clock as given. Throws std::invalid_argument for an unsupported clock.
std::vector<StageProfileRow> stage_profile(const trace::Trace& linked, const PipelinePasses& passes,
                                           const runtime::SimDevice& device, const std::vector<double>& clocks_mhz);

/// The profile as `emo pipeline --stage-profile` reads it: "stage,instruction,frequency,time,energy"
/// then one line per row (each number in the shortest form that reads back exactly).
std::string stage_profile_csv(const std::vector<StageProfileRow>& rows);

/// A stage-level plan: the clock of each pass, named as `emo pipeline` names them
/// ("stage S forward mb M" / "stage S backward mb M").
struct PassPlan {
  std::vector<std::string> pass_names;
  std::vector<double> clock_mhz;
};

/// The clock of every node of `g` (built from `linked`) under `plan`: a pass's kernels at its
/// clock; any other GPU op (a transfer kernel, on any stream) at the clock in effect on its GPU
/// when it starts (recorded times): that of the latest pass of its stage started at or before it,
/// else the stage's first pass's; host nodes 0. Ideal switching: no switch latency. Throws
/// std::invalid_argument when a pass name is unknown or a pass of the job has no clock.
std::vector<double> plan_node_clocks(const trace::Trace& linked, const PipelinePasses& passes,
                                     const std::vector<std::uint32_t>& node_op, const std::vector<std::uint8_t>& node_gpu,
                                     const PassPlan& plan);

/// `plan` as a policy of one pack per pass (per stage's GPU, in pass order, each starting where
/// `ideal` — a run of `g` with plan_node_clocks' clocks, ideal switching — started the pass's first
/// kernel). Throws std::invalid_argument as plan_node_clocks.
policy::Policy plan_pass_policy(const trace::Trace& linked, const PipelinePasses& passes, const graph::DepGraph& g,
                                const runtime::SimRunResult& ideal, const PassPlan& plan);

/// The passes' starts as `emo run` observes them in `run` (a replay of `g`): per stage, in pass
/// order, the start of the pass's first kernel (ns from the window start; INT64_MAX where it did
/// not run) — the observed starts of plan_pass_policy's packs (runtime::run_policy_closed_loop).
std::vector<std::vector<TimeNs>> observed_pass_starts(const PipelinePasses& passes, const graph::DepGraph& g,
                                                      const runtime::SimRunResult& run);

}  // namespace emo::testing
