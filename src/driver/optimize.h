// `emo optimize`: a trace in, a clock policy and its savings out (docs/design.md §1–§6 end to end),
// as six stages, each a function that returns a value (docs/optimize.md):
//
//   packs = pack::run_pack(trace)            graph, slack, packs, pack graph (stage 0: docs/packing.md)
//   1. profile(trace, packs, backend)        each pack measured at K clocks      → ProfileStage
//   2. fit(profile, ...)                     a clock model and options per pack  → FitStage
//   3. build_problem(packs, fit, ...)        choices, pack problem, target       → ProblemStage
//   4. plan(problem, solver, target)         cheapest plan within the target     → PlanStage
//   3½. refinement_clocks + add_profiles     each pack measured where the plan (and the best
//                                            static plan) decide; 2–4 again, ≤ kRefineRounds
//   5. plan_policy(builder, problem, plan, ...) the clock policy of a plan       → policy::Policy
//   6. evaluate(...)                         baseline, best static clock and the policy run on
//                                            the device; re-plans (4–5) while a run misses
//                                            (next_replan: a tighter model target, or a
//                                            conservative plan); static plans measured
//                                            as candidates; the cheapest measured kept → Evaluation
//
// optimize() runs them in order and returns every stage's value (OptimizeResult). Profiling and
// evaluation go through a runtime::OptimizeBackend: the simulated device (runtime/sim_backend.h,
// the default, every figure simulated) or a real GPU running the workload itself
// (driver/workload_backend.h, `emo optimize --device nvml`).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/progress.h"
#include "driver/policy_builder.h"
#include "graph/dep_graph.h"
#include "model/clock_model.h"
#include "model/gpu_catalog.h"
#include "opt/pack_search.h"
#include "pack/pack_run.h"
#include "policy/policy.h"
#include "runtime/backend.h"
#include "trace/trace.h"

namespace emo::driver {

/// Refinement rounds at most (stage 3½, refine()).
inline constexpr int kRefineRounds = 2;

struct OptimizeOptions {
  double max_slowdown = 0.05;               ///< Latency target: baseline makespan × (1 + this); ≥ 0, finite.
  int profile_clocks = 3;                   ///< K clocks per pack (runtime::profiling_clocks); ≥ 2.
  std::optional<TimeNs> min_pack_ns;        ///< Default: the catalog's switch latency (model::min_pack_for).
  std::uint64_t seed = 1;                   ///< Simulated device and evaluation noise.
  int frontier_points = 24;                 ///< Points of the predicted frontier (≥ 2; 0: none, as the
                                            ///< decomposed solve's per-rank solves, which show none).
  bool static_sweep = true;                 ///< Where the backend affords the runs (the simulated device):
                                            ///< every option clock measured as a static plan; false:
                                            ///< the models' best static clock run once and stepped clock
                                            ///< by clock as measured (the decomposed solve's per-rank
                                            ///< solves: the job's static clocks are compared on the job).
  int tighter_plans = 3;                    ///< Where runs are affordable, the plans for the first this
                                            ///< many tighter model targets (0, ¼, ½ of the way from the
                                            ///< predicted baseline) measured too (the per-rank solves: 1,
                                            ///< the plan at their predicted baseline).
  bool target_ladder = true;                ///< Plan on the target ladder where the backend affords the runs
                                            ///< (kTargetLadder; the simulated device); false: at the target
                                            ///< alone (the decomposed solve's per-rank solves).
  int refine_rounds = kRefineRounds;        ///< Refinement rounds at most, 0 … kRefineRounds (the
                                            ///< decomposed solve's per-rank solves: 1).
  bool polish_from_static = true;           ///< opt::FastSolverOptions::polish_from_static (the
                                            ///< decomposed solve's per-rank solves: false).
  bool polish_from_max_at_baseline_only = false;  ///< opt::FastSolverOptions::polish_from_max_at_baseline_only
                                                  ///< (the decomposed solve's per-rank solves: true).
  ProgressSink* progress = nullptr;         ///< Told each stage's progress (core/progress.h; not owned):
                                            ///< packing, profiling, refinement, frontier, evaluation.
};

/// One evaluated schedule (time and energy of one iteration window).
struct Evaluated {
  TimeNs time_ns = 0;
  double energy_j = 0;
  double clock_mhz = 0;  ///< For the static schedules.
};

/// One point of the predicted time–energy frontier.
struct FrontierPoint {
  double time_s = 0;    ///< s.
  double energy_j = 0;  ///< J.
};

/// Stage 1: what was profiled and what it cost.
struct ProfileStage {
  std::vector<double> profiled_clocks_mhz;  ///< The K clocks, descending.
  std::vector<double> option_clocks_mhz;    ///< Clocks offered to the optimiser (the trusted range), descending.
  runtime::PackProfiles measured;           ///< Per pack, one (clock, time, energy) point per profiled clock.
  std::int64_t pack_clock_profiles = 0;     ///< packs × K + the refinement profiles.
  std::int64_t refinement_profiles = 0;     ///< Pack-clock profiles added where the plan decides (refine()).
  int refinement_rounds = 0;                ///< Rounds of refine() that measured something (≤ kRefineRounds).
  std::int64_t every_clock_profiles = 0;    ///< packs × supported clocks (what profiling every clock costs).
  double switch_latency_ms = 0;             ///< The device's clock-switch latency (Device::switch_latency_ms).
};

/// Stage 2: the fitted model of each pack and its options at every option clock.
struct FitStage {
  std::vector<model::ClockModel> models;               ///< Per pack.
  std::vector<std::vector<opt::PackOption>> options;   ///< Per pack, descending clock (0 = f_max).
};

/// Stage 3: the problem over the packs. `choices` refers to the pack graph it was built on.
struct ProblemStage {
  opt::PackChoices choices;
  opt::PackProblem problem;
  Evaluated predicted_baseline;   ///< Every pack at f_max, from the models and the pack graph.
  TimeNs target_ns = 0;           ///< predicted_baseline × (1 + max_slowdown), floored.
};

/// Stage 4: a plan, evaluated exactly on the pack graph.
struct PlanStage {
  std::vector<int> choice;             ///< Option index per pack.
  std::vector<double> pack_clock_mhz;  ///< Clock per pack.
  timing::Schedule schedule;           ///< The pack graph at the plan.
  Evaluated predicted;                 ///< Predicted time and energy.
};

/// Which measured candidate stage 6 kept (Evaluation::kept): EMO's own plan as first validated,
/// its re-plan at the calibrated target, the lowest-clock probe, a plan of a tighter model target,
/// one static clock for every GPU, each GPU its own static clock, or — no candidate met the target
/// on its evaluation run — the baseline (every pack at f_max; docs/optimize.md "The target holds").
enum class KeptPlan { own, calibrated, probe, tighter, static_clock, per_gpu_static, baseline };

/// Stage 6's static references, returned by evaluate_static: the baseline run at f_max, the
/// measured target it defines and the static time–energy curve.
struct StaticSweep {
  Evaluated baseline;                      ///< Every pack at f_max, measured.
  Evaluated best;                          ///< The cheapest static run within the target (the baseline when none).
  std::vector<Evaluated> curve;            ///< Every static run measured, descending clock (the simulated
                                           ///< device: every option clock; a real GPU: the baseline and
                                           ///< the models' best static clock).
  TimeNs target_ns = 0;                    ///< The measured baseline × (1 + max_slowdown), floored (target_of).
  runtime::PowerSeries baseline_power;     ///< The baseline run's power over the iteration (issue 18's report;
                                           ///< empty on a real GPU).
  std::map<std::int32_t, double> baseline_gpu_j;  ///< Each GPU's energy in the baseline run, J, by device (a
                                           ///< linked job's rank position); sums to baseline.energy_j (issue 26's
                                           ///< job report; empty on a real GPU).
};

/// EMO's target ladder (issue 26; docs/optimize.md "A looser target never saves less"), as
/// fractions over the baseline. Where evaluation runs are affordable (the simulated device:
/// OptimizeBackend::static_oracle), optimize() plans at every point of it up to the target, in
/// ascending order, and keeps the cheapest measured plan within the target: the runs made for a
/// target are a prefix of those made for any looser one, so a looser target never keeps a costlier
/// plan. A target between two points is planned at the lower one and held to itself. Points: the
/// usual targets (0, 0.5, 1, 2, 3, 5, 10 %) and, between them, steps of at most 2× (each step is a
/// plan and its validation runs: 4 steps up to +1 %, 7 up to +5 %).
inline constexpr std::array<double, 18> kTargetLadder = {0,    0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1,
                                                        0.15, 0.2,    0.3,   0.5,  0.75, 1,    2,    5,     10};

/// The points of kTargetLadder at or below `max_slowdown` (within 1e-9 relative: 0.5 / 100 is the
/// point 0.005), ascending; at least {0}.
std::vector<double> ladder_steps(double max_slowdown);

/// Margins of a conservative re-plan (next_replan): the first at the floor, and the upper bound of
/// the first after a stuck tighter re-plan; its lower bound.
inline constexpr double kConservativeMargin = 0.25;
inline constexpr double kMinConservativeMargin = 0.02;
/// next_replan's `stuck`: a tighter re-plan whose run fell by less than 1/kStuckShare of its
/// prediction's fall did not reach the miss (stop 48: a generated 2 × 2 × 2 job at +5 %, three
/// tighter re-plans predicted 94, 86 and 110 µs faster, measured 0.8, 36 and 0.8 µs faster).
inline constexpr TimeNs kStuckShare = 4;

/// What validation's re-plans know of the runs so far (next_replan): the predicted baseline (ns),
/// the model's target (ns; the problem's to start with), the measured time of the run the last
/// tighter re-plan was to fix (ns; 0: none yet), the last conservative margin (0: none yet), and
/// the predicted time of the run the last tighter re-plan was to fix (ns; 0: not known).
struct ReplanState {
  TimeNs base_ns = 0;
  TimeNs model_target_ns = 0;
  TimeNs missed_ns = 0;
  double conservative_margin = 0;
  TimeNs missed_predicted_ns = 0;
};

/// A re-plan: at `model_target_ns`, on options made conservative by `conservative_margin` when it
/// is > 0 (each option's slowdown, factor − 1, grown by 1 + margin; driver::optimize's stage 6).
struct Replan {
  TimeNs model_target_ns = 0;
  double conservative_margin = 0;
};

/// The model target after a run that missed the measured target `target_ns` (all ns): `model_target_ns`
/// tightened by the miss plus 1 µs, or to predicted × target / measured (the model's relative error
/// on that plan) when lower; never below the predicted baseline `base_ns`. Validation's tighter
/// re-plans (next_replan) and the true optimum's re-solves (driver/true_optimum.h). Requires
/// measured_ns > 0. O(1).
TimeNs tighter_model_target_ns(TimeNs model_target_ns, TimeNs base_ns, TimeNs target_ns, TimeNs predicted_ns,
                               TimeNs measured_ns);

/// The re-plan after a run that missed the measured target `target_ns` (ns): its plan was predicted
/// at `predicted_ns`, it measured `measured_ns`. Updates `state`.
///  - Usually a **tighter model target** (tighter_model_target_ns).
///  - **Conservative** — the plan then leaves a margin on the slack it uses on every path — at the
///    floor (the model's target is the predicted baseline: nothing tighter is left; margin
///    kConservativeMargin), and when the run of a tighter re-plan fell by less than a quarter of
///    its prediction's fall (kStuckShare) from the run it was to fix, and rose by no more than its
///    prediction fell (`stuck`; where that run's prediction is unknown: measured no faster than
///    it): the miss is on a path the models time as not critical
///    (a pack's one clock factor mistimes an op inside it, e.g. a pinned collective's start on a
///    rank of a decomposed job solve; docs/optimize.md, stage 6), which a tighter makespan does not
///    reach. A re-plan measured slower than that is another plan that the models mistime by more
///    (their error differs from plan to plan: 0.45, 0.55, 0.96 ms on three plans of a 4 × 16
///    pipeline at +1 %, docs/multi-rank.md): a tighter target again, by that larger error.
///    The first margin there: twice the model's error on that run relative to the slowdown its plan
///    took, 2 (measured − predicted) / (predicted − base), within [kMinConservativeMargin,
///    kConservativeMargin] — e.g. 26 µs on a plan predicted 566 µs over its baseline: 0.09; a
///    plan predicted at or below the baseline gets kConservativeMargin, a run measured faster than
///    predicted the lower bound. Once a re-plan is conservative, every later one is too, its
///    margin ×4 (the model target is then left as it is).
/// Throws std::invalid_argument when measured_ns <= target_ns (the run met the target), or when
/// predicted_ns or measured_ns is not positive. O(1).
Replan next_replan(ReplanState& state, TimeNs target_ns, TimeNs predicted_ns, TimeNs measured_ns);

/// The next calibrated model target (validation's calibration, docs/optimize.md stage 6), all ns:
/// with no miss yet (`missed_ns` = 0), the model target that measures as the target — `target_ns`
/// × `predicted_ns` / `measured_ns` of the last plan measured within it (the models' relative
/// error on that plan, floored to the ns); once a calibrated plan missed, the midpoint of
/// `within_ns` (the highest model target measured within the target) and `missed_ns` (the lowest
/// measured over it): bisection, as a plan's measured time rises with its model target in steps.
/// Throws std::invalid_argument when missed_ns > 0 is not above within_ns, or with no miss when
/// predicted_ns or measured_ns is not positive or measured_ns > target_ns. O(1).
TimeNs next_calibration_target_ns(TimeNs target_ns, TimeNs within_ns, TimeNs missed_ns, TimeNs predicted_ns,
                                  TimeNs measured_ns);

/// How EMO's own plan was validated (validate): the re-plans beyond the first run.
struct Validation {
  Evaluated own_plan;                      ///< EMO's own plan as validated, measured, before any other
                                           ///< candidate is compared with it.
  int probe_runs = 0;                      ///< Lowest-clock probe runs (0 or 1).
  TimeNs calibrated_target_ns = 0;         ///< The kept calibrated plan's model target, else the last tried (0: not calibrated).
  int calibration_runs = 0;                ///< Runs of calibrated re-plans (0 to kCalibrationSteps, driver/optimize.cpp).
  double conservative_margin = 0;          ///< The last conservative re-plan's margin (next_replan: at
                                           ///< the floor 0.25, after a stuck tighter re-plan
                                           ///< 2 × error / slowdown within [0.02, 0.25]; ×4 each
                                           ///< next); 0: none was needed.
};

/// The other candidates measured against EMO's own plan.
struct Candidates {
  double static_mhz = 0;                   ///< The static candidate's clock (the models' best static plan, or the
                                           ///< kept static run's); 0: none fits, or it is the first plan.
  int static_runs = 0;                     ///< Static plans run as policies (0 on a real GPU, where the static
                                           ///< run is that plan).
  Evaluated per_gpu_static;                ///< The models' best per-GPU static plan (each GPU its own clock),
                                           ///< measured; time 0 when not run (one GPU, or it is another candidate).
  std::vector<double> per_gpu_static_mhz;  ///< Its clock per GPU (device order); empty when not run.
  int tighter_runs = 0;                    ///< Plans for tighter model targets measured (tighter_plans).
};

/// The kept plan's run, broken down (runtime::RunMeasurement; the simulated device measures every
/// part, a real GPU the switch count only).
struct RunBreakdown {
  std::int64_t clock_switches = 0;         ///< Clock changes per iteration.
  std::int64_t ops_at_other_clock = 0;     ///< GPU ops that ran before their pack's clock took effect.
  runtime::PowerSeries power;              ///< Power of every GPU over the iteration (issue 18's report).
  runtime::PackCosts packs;                ///< Per pack (empty for a kept static plan not run as a policy).
  std::map<std::int32_t, double> gpu_energy_j;  ///< Each GPU's energy, J, by device; sums to the run's energy
                                           ///< (issue 26's job report; empty on a real GPU).
};

/// Stage 6: what the device measured and how the kept plan was found, one sub-record per helper
/// that computes it.
struct Evaluation {
  StaticSweep statics;                     ///< evaluate_static.
  Validation validation;                   ///< validate.
  Candidates candidates;                   ///< The static, per-GPU static and tighter-target candidates.
  KeptPlan kept = KeptPlan::own;           ///< Which candidate is kept.
  Evaluated emo;                           ///< The kept plan's run (simulated: ground truth + noise).
  RunBreakdown emo_run;                    ///< Its breakdown.
  PlanStage plan;                          ///< The kept plan.
  policy::Policy policy;                   ///< Its policy.
  opt::SearchStats search;                 ///< Summed over every plan() call.
  int policy_runs = 0;                     ///< Every policy run (validation, probe, calibration, candidates).
  std::vector<double> ladder;              ///< The target ladder's points planned at (ladder_steps); empty: the
                                           ///< target alone (a real GPU, or OptimizeOptions::target_ladder off).
  double kept_step = -1;                   ///< The ladder point whose plan is kept (-1: none, or no ladder).
};

/// Stage 3's figures that the result reports (summary_of(ProblemStage)).
struct ModelTarget {
  Evaluated predicted_baseline;     ///< Every pack at f_max, from the models and the pack graph.
  TimeNs target_ns = 0;             ///< The models' latency target: predicted_baseline × (1 + max_slowdown).
  std::int64_t negative_lags = 0;   ///< From the problem reduction (opt::PackProblem).
};

/// Everything `emo optimize` computes for one trace: each stage's value.
struct OptimizeResult {
  std::string trace_path;
  std::string gpu;                  ///< Catalog id.
  bool simulated = true;
  std::string device_label;         ///< e.g. "GPU 0 (NVIDIA H200)"; "" on the simulated device.
  std::int64_t workload_runs = 0;   ///< Runs of the workload (a real GPU): profiling and evaluation.
  pack::PackRun packs;              ///< Stage 0: analysis, packing, pack graph, exactness.
  ProfileStage profile;
  FitStage fit;
  ModelTarget model;                ///< Stage 3.
  std::vector<FrontierPoint> frontier;  ///< Predicted, Pareto-filtered, ascending time (the kept plan included).
  Evaluation evaluation;            ///< Stage 6, with the kept plan (stage 4) and policy (stage 5).
  double profiling_iterations = 0;  ///< Profiling device time / the predicted baseline iteration.

  const PlanStage& plan() const { return evaluation.plan; }
  const policy::Policy& policy() const { return evaluation.policy; }
  double savings() const;   ///< 1 − EMO's energy / the baseline's (measured), 0 without a baseline.
  double slowdown() const;  ///< EMO's time / the baseline's − 1 (measured), 0 without a baseline.
};

/// The JSON word of `k` (--json's evaluation.kept): "own", "calibrated", "probe", "tighter",
/// "static", "per_gpu_static", "baseline".
const char* kept_name(KeptPlan k);

/// Stage 1: the K profiling clocks of the device, the option clocks (interpolation range only) and
/// every pack measured at the K clocks by `backend`. Throws std::invalid_argument naming
/// `profile_clocks` when K < 2 or the device has fewer clocks, and what the backend throws.
ProfileStage profile(const trace::Trace& trace, const pack::PackRun& packs, runtime::OptimizeBackend& backend,
                     int profile_clocks);

/// New pack-clock profiles per pack at most over every refinement round: with K = 3, at most 5
/// profiles per pack (issue 15's budget), against every supported clock (81 on an A100).
inline constexpr int kRefineProfilesPerPack = 2;

/// Stage 2: per pack, model::fit_clock_model on its measured points, and its options at every
/// option clock: time t(f) and energy E(f) are the model's, pinned to the measurements: each is
/// scaled by measured / model, interpolated linearly in clock between the pack's measured clocks,
/// so that an option at a measured clock is the measurement (the model gives the shape between).
/// factor = t(f) / t(f_max), dynamic energy = E(f) − idle_w × t(f). Throws emo::InputError (the
/// trace's path) when a pack's points cannot be fitted.
FitStage fit(const trace::Trace& trace, const ProfileStage& profile, double f_max, double idle_w);

/// Stage 3: the choices over `packs.pack_graph` (the result refers to it), the predicted
/// baseline, the models' target and the linearised pack problem (opt::build_pack_problem). The
/// choices price the switch heads of `switch_head_ns` (switch_heads_of; 0: none). `reuse`: the
/// choices of an earlier problem on the same packs (a planning before a refit), whose pack
/// timings are taken where an option's factor is the same (opt::PackChoices::reuse_times): the
/// same problem, built faster.
ProblemStage build_problem(const pack::PackRun& packs, FitStage fit, double idle_w, double max_slowdown,
                           TimeNs switch_head_ns, const opt::PackChoices* reuse = nullptr);

/// How long (ns) a pack entered by a switch down runs at the clock before it: the switch latency
/// less the switch-down lead (runtime::switch_lead_ns: 15 ms of a 20 ms latency). ≥ 0.
TimeNs switch_head_ns(double switch_latency_ms);

/// The switch heads of `packs` (opt::SwitchHeads): each pack's pack before it on its GPU in
/// recorded start order — the first pack's is the GPU's last, as an iteration starts at its last
/// pack's clock (runtime::switch_requests); none on a GPU of one pack — and its ops' recorded
/// offsets and durations.
opt::SwitchHeads switch_heads_of(const pack::PackRun& packs, TimeNs head_ns);

/// The figures of `problem` that OptimizeResult reports.
ModelTarget summary_of(const ProblemStage& problem);

/// Stage 3½, one round of "profile where you decide": per pack, the clock `plan` gives it, then the
/// clock of `static_choice` (the best static plan; may be empty), each only where the pack has no
/// measured point at that clock, and no more than kRefineProfilesPerPack beyond the K profiled
/// clocks over all rounds (`extra_profiles`: that budget; the target ladder grants it per step).
/// One list per pack (empty: nothing to measure).
std::vector<std::vector<double>> refinement_clocks(const ProblemStage& problem, const ProfileStage& profile,
                                                   const std::vector<int>& plan, const std::vector<int>& static_choice,
                                                   int extra_profiles = kRefineProfilesPerPack);

/// Adds `extra` (OptimizeBackend::profile_pack_clocks's points, one list per pack) to `profile`:
/// each pack's points stay in descending clock; runs, device time, pack_clock_profiles and
/// refinement_profiles grow. Throws std::invalid_argument when the pack counts differ.
void add_profiles(ProfileStage& profile, runtime::PackProfiles extra);

/// Stage 4: the cheapest plan whose exact pack-graph makespan is within `model_target_ns`
/// (opt::solve_within), its schedule and prediction. Adds its counters to `stats`.
PlanStage plan(const ProblemStage& problem, opt::FastSolver& solver, TimeNs model_target_ns, opt::SearchStats& stats);

/// How early a switch down into each pack may be asked for (policy::PackClock::down_lead_ns, ns;
/// -1: the runtime's default, a quarter of `latency_ns`; runtime/switch_timing.h), one per pack of
/// `choices` at `choice`, whose exact pack-graph schedule is `schedule` (choices.schedule(choice));
/// `packing` the packs' (their GPUs).
/// On each GPU, with packs in predicted start order, pack p entered by a switch down from the pack
/// b before it (f_b > f_p; not the GPU's first pack): the switch asked ℓ before p's start lands at
/// p's start when it takes the full latency, and in b's tail when it takes less — at worst (the
/// default rule's own assumption: a switch takes at least the default lead L/4) b's last ℓ − L/4
/// then run at f_p, at most (ℓ − L/4)(f_b / f_p − 1) longer (a pack's time at most inversely
/// proportional to its clock: a compute-bound op's; memory-bound ones slow less). So p gets the
/// largest ℓ ≤ min(latency_ns, b's predicted span) whose worst case fits the least slack
/// (timing::latest_times on the pack graph at the choice) of b's end and of b's exits at or after
/// p's start − that span, when that ℓ is above L/4; then all those worst cases at once — each such
/// b's duration and the lags of its port edges into those targets longer by its worst case — must
/// keep the makespan, else the half of them with the least slack to spare (the later ones on a tie)
/// goes back to the default lead, until they do. Example (Optimize.EarlyDownLeadsWorkedByHand):
/// latency 1200 ns, clocks 1600 → 800 → 400 MHz on three 1000-ns packs whose ends have 1000 and
/// 900 ns of slack: leads 1100 and 1200 each alone, together over the makespan: {-1, 1100, -1}.
/// O((V + E) log P) of the pack graph.
/// Throws std::invalid_argument when choice, packing or schedule is not of `choices`' pack graph,
/// or latency_ns < 0.
std::vector<TimeNs> early_down_leads(const opt::PackChoices& choices, const pack::Packing& packing,
                                     const std::vector<int>& choice, const timing::Schedule& schedule,
                                     TimeNs latency_ns);

/// Stage 5: the policy of `plan` on the builder's trace and packs (PolicyBuilder: one per packing,
/// for every plan of it): each pack at its clock, with its exact predicted start and end, its
/// predicted energy (dynamic energy + idle power over its span) and its switch-down lead
/// (early_down_leads at the GPU's switch latency).
policy::Policy plan_policy(const PolicyBuilder& builder, const ProblemStage& problem, const PlanStage& plan,
                           const model::GpuSpec& gpu, double max_slowdown, bool simulated);

/// The predicted frontier: `points` deadlines of the fast solver, each plan evaluated exactly on the
/// pack graph; when the problem's fastest point lands well above the baseline, 4 points of the
/// exact search fill the stretch; Pareto-filtered (opt::pareto_filter).
std::vector<FrontierPoint> predicted_frontier(const ProblemStage& problem, opt::FastSolver& solver, int points);

/// Stage 6: on the device, the baseline (every pack at f_max), the best static clock (an oracle
/// over every option clock when the backend affords it, else the clock the models predict best
/// within the target) and `first` (a plan and its policy). While a run misses the measured
/// target, re-plans (stages 4–5) as next_replan says (the model's target tightened by the miss,
/// or a conservative plan), up to backend.max_validation_runs() runs; then, when a run is left,
/// the calibrated re-plan and the lowest-clock probe (docs/optimize.md). The models' best static plan is measured too (a real GPU:
/// the static run is that plan), and where static runs are affordable stepped clock by clock.
/// Keeps the cheapest measured plan within the target, EMO's own or a static one. Throws what the
/// backend throws.
Evaluation evaluate(const trace::Trace& trace, const pack::PackRun& packs, const ProblemStage& problem,
                    opt::FastSolver& solver, const ProfileStage& profile, PlanStage first, const model::GpuSpec& gpu,
                    const OptimizeOptions& options, runtime::OptimizeBackend& backend);

/// Runs the whole pipeline for `trace` in `window` on `gpu`, with a simulated device. Throws
/// emo::ArgumentError for an impossible request (max_slowdown < 0 or not finite, profile_clocks < 2
/// or more than the GPU's clocks, frontier_points < 2) and emo::InputError when the window has no
/// GPU ops.
OptimizeResult optimize(const trace::Trace& trace, const graph::Window& window, const model::GpuSpec& gpu,
                        const OptimizeOptions& options);

/// The same pipeline with packs profiled and schedules evaluated on `backend` (options.seed is
/// the simulated backend's business). Throws what optimize() above throws, and what the
/// backend throws.
OptimizeResult optimize(const trace::Trace& trace, const graph::Window& window, const model::GpuSpec& gpu,
                        const OptimizeOptions& options, runtime::OptimizeBackend& backend);

}  // namespace emo::driver
