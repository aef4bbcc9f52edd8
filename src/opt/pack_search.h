// The pack-plan search: the cheapest choice of one option (clock) per pack whose makespan on the
// EXACT pack graph stays within a target. The fast solver works on the linearised pack problem
// (opt/pack_problem.h: port-edge lags fixed at the recording), so its plans are re-evaluated on the
// pack graph, repaired when they overshoot, and polished there by an exact local search.
//
// A choice is one option index per pack; options descend in clock (index 0 = f_max). Predicted
// energy of a choice = idle power × makespan × GPUs + Σ the packs' dynamic energies (the energy
// accounting of opt/problem.h and docs/design.md §4) + the switch heads, where priced (SwitchHeads).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/units.h"
#include "opt/pack_problem.h"
#include "opt/solver.h"
#include "pack/pack_graph.h"
#include "timing/timing.h"

namespace emo::opt {

/// The clock-switch heads that a plan's prediction prices (issue 26, item 3: switch latency in
/// the prediction). A switch *down* is asked for a quarter of a switch latency before its pack and
/// takes effect three quarters of one into it (runtime/switch_timing.h, the rule `emo run` and the
/// simulated device share): the pack's first `head_ns` run at the clock of the pack before it on
/// its GPU. A switch up takes effect at its pack's start and costs nothing here. Passed in as
/// figures (opt is below runtime in the pipeline); docs/optimize.md, "Switch heads".
struct SwitchHeads {
  TimeNs head_ns = 0;                   ///< latency − the switch-down lead, ns; 0: nothing priced.
  std::vector<std::int32_t> before;     ///< Per pack: the pack before it on its GPU (-1: none).
  /// Per pack: its GPU ops as (recorded start − the pack's recorded start, recorded duration), ns.
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> ops;
};

/// The packs' options and the two ways of scoring a choice (predicted energy, exact schedule).
/// Pack timings (PackGraph::pack_time at an option's factor) are computed once and cached.
class PackChoices {
 public:
  /// `options[p]`: pack p's options, descending clock, non-empty; `idle_w` each GPU's idle power
  /// (W); `gpus` the number of GPUs that draw it over the makespan. Throws std::invalid_argument
  /// when options.size() != pg.packs, a pack has no option, or idle_w or gpus is negative or not
  /// a number (the predicted energy must not fall as the makespan grows: polish relies on it).
  PackChoices(const pack::PackGraph& pg, std::vector<std::vector<PackOption>> options, double idle_w, double gpus);

  const pack::PackGraph& graph() const noexcept { return *pg_; }
  const std::vector<std::vector<PackOption>>& options() const noexcept { return options_; }
  std::size_t packs() const noexcept { return options_.size(); }
  double idle_w() const noexcept { return idle_w_; }
  double gpus() const noexcept { return gpus_; }
  /// The idle energy (J) of every GPU over `ns`: idle_w × gpus × ns (predicted_energy's first
  /// term, in its order of operations).
  double idle_energy_j(TimeNs ns) const noexcept { return idle_w_ * gpus_ * static_cast<double>(ns) * kSPerNs; }

  /// Idle power over the makespan on every GPU plus the packs' dynamic energy (negative dynamic
  /// energies count as 0) plus their switch heads (switch_head_energy_j), J. `makespan_ns` ≥ 0.
  double predicted_energy(const std::vector<int>& choice, TimeNs makespan_ns) const;
  /// Prices the switch heads from now on (default: none): each pack's head share at each of its
  /// options is computed here, O(ops × options), and `heads.ops` is not kept. Throws
  /// std::invalid_argument when head_ns < 0, or `before`/`ops` are not one entry per pack, or
  /// `before` names no pack or p itself.
  void set_switch_heads(const SwitchHeads& heads);
  /// The head priced, ns (0: none).
  TimeNs switch_head_ns() const noexcept { return head_ns_; }
  /// The dynamic energy (J, ≥ 0) that pack p's switch head adds at `choice`: 0 unless its clock f
  /// is below f_b, the clock of the pack before it; else the share of its work in the head times
  /// D(f_b) − D(f) (D: its dynamic energy at a clock, negative as 0). The share: its ops' recorded
  /// busy time within the first head_ns / factor(f_b) of its recorded span (the head runs at
  /// f_b, where the pack's timeline is its recording × factor(f_b)) over all its busy time; the
  /// work, and so the energy, taken as spread over the busy time (gaps hold none). f_b is looked
  /// up among p's options (the highest at or below it).
  double switch_head_energy_j(const std::vector<int>& choice, std::size_t p) const;
  /// The change of predicted_energy (J) when pack p moves from option choice[p] to k, the
  /// makespan unchanged: its dynamic energy, its own switch head and the heads of the packs it
  /// comes before. O(options of p and of those packs) instead of predicted_energy's O(P + their
  /// options); equal to the difference of two predicted_energy calls up to rounding (the sums
  /// are taken in another order). `choice` is changed while heads are read, restored before
  /// returning.
  double move_energy_j(std::vector<int>& choice, std::size_t p, int k) const;
  /// Pack p's timing at option k, computed once.
  const pack::PackTime& time(std::size_t p, int k) const;
  /// Takes the timings `other` has computed (on the same pack graph) for the options of this one
  /// whose factor is the same, to the bit: a re-plan after a refit computes only the packs whose
  /// fit changed (pack_time is a pure function of the pack and the factor). Returns how many were
  /// taken. Throws std::invalid_argument when `other` is of another pack graph. O(Σ options ×
  /// other's options of the same pack) at worst (each option's factor looked up among them).
  std::size_t reuse_times(const PackChoices& other);
  /// Computes every pack's timing at every option. Afterwards time() only reads, so the const
  /// members may be called from several threads at once (before, time() fills a cache: one thread).
  void compute_all_times() const;
  /// Every pack's timing at the choice.
  std::vector<pack::PackTime> times(const std::vector<int>& choice) const;
  /// The pack graph evaluated exactly at the choice. O(V + E) of the pack graph.
  timing::Schedule schedule(const std::vector<int>& choice) const;
  /// The clock (MHz) of each pack at the choice.
  std::vector<double> clocks(const std::vector<int>& choice) const;
  /// Every pack at option min(k, its last): that choice (uniform_choice), and its exact makespan
  /// (ns), evaluated once per k and remembered — the static plans best_static_choice scores at
  /// every target of the same options. Fills a cache: one thread at a time, as time().
  std::vector<int> uniform_choice(std::size_t k) const;
  TimeNs uniform_makespan_ns(std::size_t k) const;
  /// The makespan (ns) with every pack at its smallest factor (a lower bound of every choice's
  /// makespan when each pack's times grow with its factor), evaluated once. One thread, as time().
  TimeNs fastest_makespan_ns() const;

 private:
  const pack::PackGraph* pg_;
  std::vector<std::vector<PackOption>> options_;
  double idle_w_ = 0, gpus_ = 1;
  TimeNs head_ns_ = 0;
  std::vector<std::int32_t> before_;             ///< SwitchHeads::before.
  std::vector<std::uint32_t> after_begin_, after_;  ///< CSR: the packs whose pack before is p.
  std::vector<std::vector<double>> head_share_;  ///< [p][k]: the share of p's work in a head at option k's clock.
  mutable std::vector<std::vector<std::optional<pack::PackTime>>> cache_;
  mutable std::vector<TimeNs> uniform_makespan_;  ///< By k; -1: not evaluated yet.
  mutable TimeNs fastest_makespan_ = -1;
};

/// Counters of one search (reported by `emo optimize --json`).
struct SearchStats {
  int deadline_repairs = 0;  ///< Re-solves after the exact re-evaluation overshot.
  int polish_moves = 0;      ///< Exact local-search moves applied to the solver's plan.
  int greedy_wins = 0;       ///< Searches where the local search from f_max beat the solver's plan.
  int static_wins = 0;       ///< Searches where the local search from the best static plan won.
};

/// Pack durations are rounded to whole ns per op (pack::scale_ns), so an exact makespan may exceed
/// the solver's by a few ns: 1 µs of tolerance on the model's target (the device run checks the
/// real one).
inline constexpr TimeNs kRoundingNs = 1000;

/// The exact makespan a plan for `target_ns` may reach: the target + kRoundingNs — except, with
/// `exact_floor` (FastSolverOptions::exact_floor: the latency target is +0 %), at the floor, a
/// target at or below the makespan of every pack at option 0 (the predicted baseline), where it is
/// the target itself: a plan predicted over the baseline there is a slower plan, not a rounding
/// (the balanced 4 × 8 pipeline at +0 %: a plan predicted 197 ns over the baseline measured
/// 1,203 ns over, and the baseline was kept; docs/multi-rank.md). O(1); with `exact_floor`, the
/// first call on `pc` times every pack at option 0 (PackChoices::uniform_makespan_ns fills its
/// cache: not to be called from several threads at once).
TimeNs search_limit_ns(const PackChoices& pc, TimeNs target_ns, bool exact_floor);

/// Repairs `choice` whose exact makespan exceeds `limit_ns`: repeatedly sets every pack with zero
/// slack in the exact schedule (pack::pack_slack: at its end or at an exit port — before stop 49
/// its end alone, which missed a pack whose critical work leaves it mid-pack) and not already at
/// option 0 to option 0. nullopt when it still
/// does not fit and no critical pack is left to raise. O(P · (V + E)) of the pack graph at most.
std::optional<std::vector<int>> raise_critical(const PackChoices& pc, std::vector<int> choice, TimeNs limit_ns);

/// Exact local search on the pack graph: repeatedly makes the best move — one pack 1, 2, 4 or 8
/// options slower, saving predicted energy, the exact makespan within `limit_ns` — until none is
/// left or `max_moves` were made. Best: a move that keeps the makespan before one that lengthens
/// it; among the first the largest saving (J), among the others the largest saving per ns of
/// makespan (the rate rule of the discrete time–cost trade-off: the budget goes where it buys the
/// most energy, so critical work is slowed evenly; docs/optimize.md stage 4). Candidates are
/// timed incrementally by pack::PlanEvaluator, a move's energy by PackChoices::move_energy_j.
/// Adds the moves made to `moves`. The result never exceeds `limit_ns` when `choice` does not.
std::vector<int> polish(const PackChoices& pc, std::vector<int> choice, TimeNs limit_ns, int max_moves, int& moves);

/// Above this many packs (a job of many ranks), polish() applies many moves per round
/// (polish_batched in pack_search.cpp): the one-move-per-round search costs O(P) incremental
/// updates of the whole pack graph, each O(graph), and a job's graph grows with its ranks.
/// Every shared single-rank trace has far fewer packs. 256 since stop 42 (128 before): the 8 × 16
/// pipeline of docs/multi-rank.md (170 packs) saves more with one move per round (15.86 against
/// 14.93 % at +1 %, 41 s either way); the 8-rank data-parallel job (266 packs) took 376 s that
/// way against 194 s batched, for 12.79 against 12.56 %.
inline constexpr std::size_t kBatchPolishPacks = 256;
/// Rounds of the batched polish at most (it ends sooner when no move is left; 64 since stop 42,
/// 16 before: with the rate rule the 8 × 16 pipeline, batched, converged within 64 and 16 left
/// 0.5 points of its savings).
inline constexpr int kBatchPolishRounds = 64;

/// The cheapest choice whose exact pack-graph makespan is within search_limit_ns(pc, target_ns,
/// solver.options().exact_floor): the fast solver on `pp` at a deadline tightened by each overshoot of the exact re-evaluation (at
/// most 8 tries; at the fastest deadline, raise_critical repairs the plan), starting from the best
/// static plan (best_static_choice; every pack at option 0 when none fits), then polish(); the
/// same polish from every pack at option 0 and from the best static plan compete, and the
/// cheapest prediction wins — never worse than the best static plan. Which of those two starts
/// run: solver.options() (FastSolverOptions::polish_from_max, polish_from_static,
/// polish_from_max_at_baseline_only). Counts into `stats`.
std::vector<int> solve_within(const PackChoices& pc, const PackProblem& pp, FastSolver& solver, TimeNs target_ns,
                              SearchStats& stats);

/// The static plans' best: among the uniform choices (every pack at option index k, clamped to its
/// last option; options share their clocks, so one clock for every pack) whose exact makespan is
/// within `limit_ns`, the one of least predicted energy; nullopt when none fits. O(K · (V + E))
/// the first time on `pc` (each k's makespan is remembered: PackChoices::uniform_makespan_ns),
/// O(K · P) at any other limit; where every pack's factors rise with k (then so does the
/// makespan), only the k up to the last within the limit (found by bisection) are evaluated:
/// O((k* + log K) · (V + E)). Not thread-safe on one `pc` (it fills that cache).
std::optional<std::vector<int>> best_static_choice(const PackChoices& pc, TimeNs limit_ns);

/// The per-device static plans' best (each device its own clock for all its packs; issue 26):
/// greedy descent from `start` (a per-device static choice, e.g. best_static_choice's) — each step
/// moves the one device whose next lower clock (option index + 1) saves the most predicted energy
/// with the exact makespan within `limit_ns`, until no such move is left. `device_of_pack` (size
/// packs) names each pack's device. Every device at one clock is a per-device static plan, so
/// started from the best static plan the result is never predicted costlier. O(D² K · (V + E)) at
/// worst for D devices and K clocks. Throws std::invalid_argument when the sizes differ.
std::vector<int> best_per_device_static_choice(const PackChoices& pc, const std::vector<std::int32_t>& device_of_pack,
                                               std::vector<int> start, TimeNs limit_ns);

/// Per pack, the option of `s` (a solution of the pack problem `pp`).
std::vector<int> choice_of(const PackProblem& pp, const Solution& s);

}  // namespace emo::opt
