// The optimisation problem of a real trace: its pack graph (src/pack) with a discrete set of
// (clock, time, energy) options per pack, as an opt::Problem.
//
// Reduction. Only the packs' timepoints vary with the clocks; everything else (host calls, their
// gaps, the recorded lags) is fixed. So the fixed part of the pack graph is collapsed into lags
// between pack timepoints: for each pack timepoint (and an origin at the window start) a forward
// longest-path pass through fixed nodes only, stopping at the next pack timepoints, gives
// constraints "b ≥ a + L". The problem then has, per pack, a start event, the pack's work node
// (its options) and an end event; a fixed node of duration L per distinct positive lag; an origin
// and a sink (the makespan). Size O(P) nodes and O(P²) edges at most, built in O(P·(V + E)) of
// the pack graph. A lag ≤ 0 becomes a plain edge (a negative one is counted: it is tightened to
// 0, which can only lengthen the modelled makespan). When the collapsed form would have more
// constraints than 2 × (V + E) of the pack graph — many packs behind one long CPU chain give O(P²)
// constraints — the pack graph is expanded instead: every host node a fixed node between a start
// and an end event, every edge a constraint; O(V + E) nodes (`expanded`).
//
// Approximation. A pack's work node carries its duration from its start (PackTime::dur_ns) at
// each option; its port edges (pack_graph.h: work that enters the pack after its start, or
// leaves it before its end) become fixed lags, taken at `port_factors` (the factors of a plan
// around which the problem is linearised; factor 1 by default). The problem is exact for plans
// at those factors and approximate elsewhere. `emo optimize` builds it once, at the recording,
// re-evaluates every plan exactly with PackGraph::evaluate and improves it there with an exact
// local search; it does not re-linearise (driver/optimize.cpp, docs/optimize.md step 5).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "opt/problem.h"
#include "pack/pack_graph.h"

namespace emo::opt {

/// One option of a pack: run it at `clock_mhz`, its ops scaled by `factor` (its GPU work's time
/// at this clock over that at the max clock); `dynamic_energy_j` is its energy above the GPU's
/// idle power (J).
struct PackOption {
  double clock_mhz = 0;
  double factor = 1;
  double dynamic_energy_j = 0;
};

struct PackProblem {
  Problem problem;
  std::vector<int> work_node;      ///< Per pack: its work node in `problem`.
  std::vector<int> gpu_of_pack;    ///< Per pack: index into problem.gpus().
  std::vector<std::int32_t> device_of_gpu;  ///< Per problem GPU: the CUDA device.
  std::int64_t lag_nodes = 0;      ///< Fixed lag nodes created.
  std::int64_t negative_lags = 0;  ///< Lags < 0 tightened to 0.
  bool expanded = false;           ///< The whole pack graph was expanded (see the file comment).
};

/// Builds the problem. `options[p]` are pack p's options (at least one; factor > 0);
/// `device_of_pack[p]` its CUDA device; `idle_power_w` the GPUs' idle power (W), the same for
/// every device. A pack's work node takes time = pack_time(p, factor).dur_ns and energy =
/// dynamic_energy_j + idle_power_w × that time, so that the problem's energy (problem.h) is
/// idle power over the makespan on every GPU plus the packs' dynamic energy. `port_factors`
/// (empty, or one per pack): the factors at which port-edge lags are fixed (empty: 1).
/// `option_dur_ns` (empty, or one list per pack, one duration per option): each option's
/// pack_time(p, factor).dur_ns where the caller has them already (PackChoices::time: a pack's
/// timing at every option is the costliest part of the build), else computed here. Throws
/// std::invalid_argument on size mismatches or an empty option list.
PackProblem build_pack_problem(const pack::PackGraph& pg, const std::vector<std::vector<PackOption>>& options,
                               const std::vector<std::int32_t>& device_of_pack, double idle_power_w,
                               std::span<const double> port_factors = {},
                               std::span<const std::vector<TimeNs>> option_dur_ns = {});

}  // namespace emo::opt
