// What one whole-iteration run spent, broken down for the report (issue 18): the time and energy
// of each pack, and the power of every GPU over the iteration. Computed from the GPU ops of a
// run (start, duration, power above idle) — on the simulated device, runtime::run_on_sim's ops.
// A real GPU's policy run measures neither (its profiling runs measure packs alone).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/units.h"

namespace emo::runtime {

/// One GPU op as it ran: its graph node, its device, its pack (index into pack::Packing::packs, or
/// kNoRunPack), start relative to the window start (ns), duration (ns) and power above the GPU's
/// idle power (W).
struct RunOp {
  std::uint32_t node = 0;
  std::int32_t device = 0;
  std::uint32_t pack = 0;
  TimeNs start_ns = 0, dur_ns = 0;
  double above_idle_w = 0;
};
/// RunOp::pack of an op in no pack (pack::kNoPack).
inline constexpr std::uint32_t kNoRunPack = UINT32_MAX;

/// One pack in a run, on the basis of its predicted figures (driver::plan_policy): its time is
/// its first op's start to its last op's end, its energy the idle power over that time plus its
/// ops' energy above idle.
struct PackCost {
  TimeNs start_ns = 0;   ///< First op's start, relative to the window start (ns).
  TimeNs time_ns = 0;    ///< ns; 0 for a pack with no op in the run.
  double energy_j = 0;   ///< J.
};

/// Every pack of a run, and the rest: the packs' energies plus outside_energy_j is the run's
/// energy; per device, the packs' times plus that device's part of outside_ns is the makespan.
struct PackCosts {
  std::vector<PackCost> packs;  ///< Per pack id; empty when not measured.
  TimeNs outside_ns = 0;        ///< Σ over devices of makespan − Σ its packs' times (gaps between
                                ///< packs, lead-in and tail; negative where packs overlapped in the run).
  double outside_energy_j = 0;  ///< Idle power over outside_ns + ops in no pack above idle, J.
};

/// Power of every GPU together over one iteration: the mean over each of power_w.size() equal
/// intervals of [0, duration_ns). Σ power_w[i] × duration_ns / size (in s) is the run's energy.
struct PowerSeries {
  TimeNs duration_ns = 0;        ///< The run's makespan.
  std::vector<double> power_w;   ///< W per interval; empty when not measured.
};

/// Per pack (`packs` of them) the PackCost of `ops`, and the rest, for a run of `makespan_ns` on
/// the devices that ran an op (idle power `idle_w` each). Example: one device, idle 50 W,
/// makespan 10 ns, pack 0 = {op [1, 4) at +100 W}, no other op → pack 0 {1, 3 ns, 3e-9·150 J},
/// outside 7 ns, 7e-9·50 J. Throws std::invalid_argument for an op whose pack is ≥ `packs` (and
/// not kNoRunPack). O(ops + packs).
PackCosts pack_costs(std::span<const RunOp> ops, std::size_t packs, TimeNs makespan_ns, double idle_w);

/// The power of the devices that ran an op over [0, makespan_ns) as `bins` equal intervals:
/// idle_w per device + each op's above_idle_w × its overlap with the interval / the interval.
/// Ops are clipped to [0, makespan_ns). Throws std::invalid_argument when bins < 1 or
/// makespan_ns < 0. O(ops × bins an op covers + bins).
PowerSeries power_series(std::span<const RunOp> ops, TimeNs makespan_ns, double idle_w, int bins);

/// Bins of the power series a run measures for the report (runtime backends).
inline constexpr int kPowerBins = 400;

}  // namespace emo::runtime
