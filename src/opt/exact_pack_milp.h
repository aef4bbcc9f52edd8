// The exact pack-plan optimum: the cheapest choice of one option per pack whose makespan on the
// EXACT pack graph (pack/pack_graph.h: pack durations AND port-edge lags at the chosen option's
// factor) stays within a limit, as a mixed-integer linear program solved by COIN-OR CBC. It is
// the reference that opt::solve_within (pack_search.h, a linearised solver plus an exact local
// search) is measured against (`emo optimize --true-optimum`, docs/optimize.md "True optimum").
//
// Formulation. Binaries x_pk (pack p at option k, Σ_k x_pk = 1), a continuous time t_v per kept
// timepoint v and the makespan M, from the window start (in units of the median pack's
// duration / 1000: exact_pack_milp.cpp, time_unit_ns):
//   minimise   Σ_pk max(0, dynamic_energy_pk) x_pk + idle_w · gpus · M
//   subject to t_v ≥ t_u + L                    fixed edge u → v (lag L, collapsed below)
//              t_v ≥ t_u + Σ_k l_pk x_pk         variable edge of pack p: its duration S_p → E_p
//                                                 (PackTime::dur_ns) or a port edge
//                                                 (PackTime::port_lags_ns)
//              t_v ≥ r_v,  M ≥ t_v + T_v,  M ≥ M_0,  M ≤ limit
// For a fixed x the least t satisfying the constraints is the pack graph's replay (a longest
// path), and M's objective weight pushes it to the replay's makespan, so the MILP optimum is
// min over feasible choices of PackChoices::predicted_energy (exact, not a relaxation; when
// idle_w · gpus = 0, M is free up to the limit and the energy term is the same).
//
// Reduction (exact). Only the packs' start/end timepoints and the endpoints of port edges have
// option-dependent constraints ("kept" timepoints). Every other timepoint is fixed given its
// predecessors, so the fixed paths between kept timepoints collapse into single edges with their
// longest fixed lag: one forward longest-path pass per kept timepoint (and one from the origin,
// the releases and pinned starts) through non-kept timepoints only, stopping at kept ones; r_v is
// the origin pass's value at v, T_v the longest fixed path from v to any node end (0 when v is an
// end), M_0 the origin's (and 0: the makespan is never negative). This is the collapse of
// opt::build_pack_problem with the port edges left variable. When the collapsed form would hold
// more than 2 × (V + E) + 64 fixed edges, every timepoint is kept instead (`expanded`).
// Dominated options are dropped first: option k of pack p when another option j has a duration
// and every port lag ≤ k's and an effective energy (max(0, dynamic)) ≤ k's (ties: the faster
// option stays) — swapping k for j never raises the makespan or the energy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "opt/pack_search.h"

namespace emo::opt {

/// The pack graph reduced to its kept timepoints (see the file comment). Times are ns relative
/// to the pack graph's window start; INT64_MIN stands for "no constraint".
struct ReducedPackGraph {
  struct Edge {
    std::int32_t from = 0, to = 0;  ///< Indices into `timepoint`.
    TimeNs lag_ns = 0;              ///< Fixed edges only.
    std::uint32_t pack = 0;         ///< Variable edges: the pack whose option sets the lag.
    std::int32_t port = -1;         ///< Variable edges: index into PackTime::port_lags_ns; -1 = dur_ns.
  };
  std::vector<std::uint32_t> timepoint;  ///< Kept pack-graph timepoints.
  std::vector<TimeNs> release_ns;        ///< Per kept timepoint: r_v, INT64_MIN when none.
  std::vector<TimeNs> tail_ns;           ///< Per kept timepoint: T_v, INT64_MIN when it reaches no end.
  TimeNs makespan_floor_ns = 0;          ///< M_0 (≥ 0).
  std::vector<Edge> fixed;               ///< One per (from, to): the longest fixed lag.
  std::vector<Edge> variable;            ///< Pack durations and port edges.
  bool expanded = false;                 ///< Every timepoint kept.
};

/// Reduces `pg` with one graph::KeptPaths pass per kept timepoint (and one from the replay's
/// sources): O(Σ over kept timepoints of the fixed arcs each follows + the span of topological
/// positions it reaches / 64), at most O(kept · (V + E)) of the pack graph. Edges dropped to break
/// cycles (kDroppedLag) are ignored, as in the replay.
ReducedPackGraph reduce_pack_graph(const pack::PackGraph& pg);

/// The longest-path makespan of `r` with every pack's timing `times` (size packs): the check that
/// the reduction keeps PackGraph::evaluate's makespan. O(kept + edges · log).
TimeNs reduced_makespan(const ReducedPackGraph& r, const std::vector<pack::PackTime>& times);

struct ExactPackOptions {
  std::size_t max_packs = 200;    ///< Larger instances throw (CBC's time grows quickly).
  double time_limit_s = 120;      ///< CBC wall-clock limit per solve.
  double relative_gap = 1e-7;     ///< Stop when (best − bound) / best is below this.
  std::vector<int> start;         ///< Optional MIP start (a choice, one option per pack); used when
                                  ///< it fits the limit. Speeds CBC up; does not change the optimum.
};

/// What CBC did.
enum class ExactStatus : std::uint8_t {
  kOptimal,     ///< Proven optimal (within relative_gap).
  kTimeLimit,   ///< Stopped by the time limit with a solution; `gap` bounds its distance.
  kInfeasible,  ///< No choice fits the limit (every pack at its fastest option overshoots).
  kNoSolution,  ///< Stopped by the time limit without a solution.
};
/// "optimal", "time_limit", "infeasible", "no_solution".
const char* exact_status_name(ExactStatus s) noexcept;

struct ExactPackResult {
  ExactStatus status = ExactStatus::kNoSolution;
  std::vector<int> choice;      ///< Option per pack (original indices); empty without a solution.
  TimeNs makespan_ns = 0;       ///< PackChoices::schedule(choice).makespan_ns (exact, recomputed).
  double energy_j = 0;          ///< PackChoices::predicted_energy at that makespan (recomputed).
  double lower_bound_j = 0;     ///< CBC's best bound on the optimum energy (not always updated
                                ///< when CBC proves optimality).
  double gap = 0;               ///< kTimeLimit: (energy − bound) / energy, ≥ 0; 0 when optimal.
  double seconds = 0;           ///< Wall time: reduction and every CBC solve.
  int solves = 0;               ///< CBC solves (a re-solve follows a numerical overshoot of the limit).
  std::size_t timepoints = 0, fixed_edges = 0, variable_edges = 0, binaries = 0;  ///< MILP size.
  bool expanded = false;        ///< ReducedPackGraph::expanded.
};

/// The cheapest choice of `pc` whose exact pack-graph makespan is ≤ `limit_ns`, by CBC (see the
/// file comment). When CBC's solution overshoots the limit by its feasibility tolerance, the
/// limit is tightened by the overshoot and CBC re-run (at most 3 solves). Throws
/// std::invalid_argument when pc.packs() > options.max_packs or options.start has the wrong size.
ExactPackResult solve_exact_pack(const PackChoices& pc, TimeNs limit_ns, const ExactPackOptions& options = {});

}  // namespace emo::opt
