// The decomposed joint solve of a job of many ranks (docs/multi-rank.md, "Decomposed solve";
// issue 16). The joint solve (driver::optimize() on the linked trace) is one problem over every rank's
// packs; its cost grows about as N^3.4 with the ranks (16 ranks: ~10 min), so it stops at a few
// tens of ranks. Ranks are coupled only through their collectives, so the job decomposes:
//
//   0. Each rank's graph is reduced to its collective ports (timing/ports.h) where the rank's trace
//      is; only the reductions travel. Timing the job is composing them (timing::time_job).
//   1. Cross-rank problem (small): when each collective's transfer starts. The job is timed at
//      the recorded (max-clock) durations; collective c's transfer starts at L_c (its last
//      participant's arrival) and the job ends at M0 (makespan). The latency budget is spread in proportion to
//      time: the transfer of c may start at L'_c = w + (1 + s)(L_c − w) and the job end at
//      w + (1 + s) M0, w being the job's start, s the latency target.
//   2. One problem per rank (independent, in threads, or across MPI processes with
//      solve_decomposed_mpi, job/mpi_worker.h; the seam is RankWorker, job/rank_worker.h): the
//      rank's own trace cut out of the job
//      (trace::JobCut): each collective's transfer takes T_c and starts at L'_c — no earlier (the
//      others arrive then), no later (they would wait) — and the rank ends by the job's end. Its
//      slack before each collective (L'_c minus its own arrival) is its to spend. Solved by the
//      single-trace driver::optimize() with no further slowdown (its baseline already ends at the job's end).
//   3. Every rank arrives at every collective by L'_c, so every transfer starts by L'_c and the job
//      ends by w + (1 + s) M0: the plans compose. Each rank runs its plan on its own graph on the
//      simulated device (its policy's clock requests as `emo run` issues them: switch latency and
//      minimum interval; its own noise draws), its collectives' transfers starting at its cut's
//      pins, and reduces the run to its ports; the composition times the job, every collective
//      waiting for its last participant. A policy's switches are timed, not tied to ops: where a
//      transfer starts earlier than its pin, the work after it starts earlier, partly at the clock
//      of the pack before, so each rank is run again with its transfers starting where the
//      composition put them (RankWorker::released), and the job composed again, until no transfer
//      moves (a fixed point: the ranks' simultaneous run, up to each transfer's end — a rank's own
//      run ends the transfer after its own duration, the job after its longest participant's) or
//      kComposePasses compositions are done.
//      Without these passes a pipeline's lateness went from stage to stage (docs/multi-rank.md,
//      "Where it failed: pipelines"). The baseline and the static clocks — whose op times do not
//      depend on when ops start — are composed once.
//
// What this gives up against the joint solve: a rank cannot move slack from one collective to
// the next (the budget is fixed per interval by step 1), so the critical rank saves a little less.
// Measured against the joint solve in docs/multi-rank.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/timestamp.h"
#include "driver/optimize.h"
#include "job/job_view.h"
#include "job/rank_worker.h"
#include "model/gpu_catalog.h"
#include "policy/policy.h"
#include "trace/job.h"
#include "trace/trace.h"

namespace emo::job {

/// Per op row of `t`: the clock (MHz) of its pack in `r`'s kept plan; 0 outside every pack.
/// `r` must come from driver::optimize() on `t`.
std::vector<double> op_clocks(const trace::Trace& t, const driver::OptimizeResult& r);

/// One schedule of the linked job `job` run on its graph `g` (build_graph(job)) on a simulated
/// `gpu` (device seed `seed`, run noise seed + 1, as SimBackend): `node_clock_mhz` per node of g
/// (0 for host nodes), every op at its clock from its start (ideal switching: no switch latency).
/// Every figure is simulated. Throws what runtime::run_on_sim throws.
driver::Evaluated run_job_plan(const trace::Trace& job, const graph::DepGraph& g, const model::GpuSpec& gpu,
                               std::uint64_t seed, const std::vector<double>& node_clock_mhz);

/// Per node of `g`: `f_mhz` for GPU nodes, 0 for host nodes (a static schedule for run_job_plan).
std::vector<double> static_clocks(const graph::DepGraph& g, double f_mhz);

/// Throws std::invalid_argument("WHO: ...") unless `job` is a linked trace (trace::link_job) of
/// `rank_traces` ranks.
void check_rank_traces(const trace::Trace& job, std::size_t rank_traces, const char* who);

/// A job's ranks linked for the decomposed solve without merging their traces (trace::link_ranks on
/// their digests): each rank's linked collectives as ports (timing/ports.h).
struct JobPorts {
  trace::JobLink link;                    ///< Ranks in the order given (position = device in the policy).
  std::string path;                       ///< "job of N ranks (FIRST ...)", as trace::link_job names it.
  std::size_t instances = 0;              ///< Linked collective instances.
  std::vector<trace::JobCut> open;        ///< Per rank: a pin per linked collective, start kOpenPin,
                                          ///< transfer T = the shortest participant's recorded duration.
  std::vector<std::vector<std::int64_t>> instance;  ///< Per rank, per pin: its instance id.
};

/// The ports of the job `link` links from `digests` (the same, in the same order). Throws
/// std::invalid_argument when they differ in number.
JobPorts job_ports(const std::vector<trace::RankDigest>& digests, trace::JobLink link);

/// Rounds at most: the composed plan is timed on the job; while it misses the target (a rank's
/// own share compounds over its collectives; a rank whose transfers start before their pins runs
/// the work after them partly at the clock of the pack before), the stretch is cut by the miss plus
/// kRetryMargin — or, where no stretch would be left, the shares cut (next_split) — and every rank
/// solved again; not when nothing is left to cut. 4: on the generated pipelines of JobSolveProperty.Pipelines the second round still
/// missed by 0.04–0.2 % at +1 % and +3 % (the static clock kept, 2–5 % saved), the third was
/// within (12–15 %); a job whose first round is within (the data-parallel jobs of
/// docs/multi-rank.md) pays for one.
inline constexpr int kDecomposedRounds = 4;
inline constexpr double kRetryMargin = 0.0005;

/// Share of the latency target kept for the composition (step 3), as kRankShare is each rank's:
/// the first round's pins are stretched by (1 + s) / (1 + s × (kRankShare + kComposeReserve)) − 1.
/// A rank may reach a collective up to its own share after its pin (its cut only holds its end),
/// and every rank after that collective then starts late; composed over many ranks such delays,
/// each within one rank's share, add up. Measured (docs/multi-rank.md, "Stop 44"; the generated
/// data-parallel jobs at +0.5 %, no reserve): the first round's composition ended 155 µs inside
/// the pins' budget at 64 ranks and 594 µs past it at 1,024 — the ranks' share there is 590 µs, so
/// the plan missed the target by 8.5 µs and every rank was solved again (twice the time). One
/// share more is what the 1,024-rank job's composition took; with it the first round is within
/// the target at 16–1,024 ranks, for 0.06–0.19 points of savings at 16–256 ranks. Not a proof:
/// the rounds (kDecomposedRounds) remain for a job whose delays add up further.
inline constexpr double kComposeReserve = kRankShare;

/// By how much a later round divides the ranks' shares (and the composition's) when a tighter
/// stretch cannot absorb the miss (next_split). 4: on the 16-rank tensor-parallel and MoE jobs of
/// docs/multi-rank.md a share of 0.02 × the target composed within it (0.1 did not).
inline constexpr double kShareCut = 4;

/// Compositions of a round's plans at most (step 3's fixed point; the first from the runs released
/// at the cuts' pins). A fixed point was reached in 4–5 on the 16-rank pipeline of
/// docs/multi-rank.md, 4–6 on its 4- and 8-rank pipelines, 4 on its data-parallel jobs (16–1,024
/// ranks), 2–5 on the generated jobs of JobSolveProperty; the last composition's residual is
/// reported when none is reached. Each pass costs a run of every rank whose releases moved.
inline constexpr int kComposePasses = 8;

/// A job's energy (J) from its ranks' energy above idle summed (J) and its makespan (ns):
/// above + P_idle (W) · makespan · GPUs. The one expression the job's timing (every schedule of a
/// decomposed solve) and StaticSearch's energy bound use: the bound is exact only if both round alike.
inline double job_energy_j(double above_idle_j, double idle_w, TimeNs makespan_ns, std::size_t gpus) {
  return above_idle_j + idle_w * static_cast<double>(makespan_ns) * 1e-9 * static_cast<double>(gpus);
}

/// The decomposed solve's job-level static search: the cheapest static clock within the target,
/// every rank at the same clock (never worse than locking one clock). Each clock measured on the
/// job costs every rank a run reduced to its ports; this asks for as few as the bounds allow.
/// Exact under what the search assumes (as a scan from the max clock down, which it replaces):
/// the job's time never falls as the clock falls. Then, for clock i (index into `above_idle_j`,
/// descending clocks) with T_lb(i) the longest time measured at i or a higher clock (the
/// baseline's at least):
///   - T_lb(i) > target: i misses (a clock below one that misses);
///   - the job's energy at i, above(i) + P_idle · N · T(i) (job_solve.cpp evaluate()), is at least
///     E_lb(i) = above(i) + P_idle · N · T_lb(i), so i is left out when E_lb(i) exceeds the best
///     measured within the target (or equals it at a lower clock: ties go to the higher clock,
///     as in the scan).
/// The clocks left are asked in batches: while some of them are not known within (no clock at or
/// below them measured within), kStaticSplit evenly spaced among those (a k-ary search for the
/// lowest clock within: each batch cuts what is unknown about 5-fold); then the known-within ones
/// in order of E_lb, kStaticBatch at a time. Every clock kept is measured; with `above_idle_j`
/// exact (RankWorker::static_energies: statics()' own runs) the result is the scan's. Measured
/// (docs/multi-rank.md, "How far it scales" step 4): 9 clocks on the generated data-parallel jobs
/// at +0.5 % (the scan: 17–18), 9 at +0 % (the scan: 8), 15–16 at +5 %.
class StaticSearch {
 public:
  /// `above_idle_j`: per clock of the search (descending SM clocks below the max), the ranks'
  /// energy above idle, summed in rank order (J); `baseline`: the job at the max clock (within
  /// the target or not); `idle_w`: one GPU's idle power (W); `ranks`: the job's GPUs; `target_ns`:
  /// the latency target (ns). Throws std::invalid_argument when a figure is not finite or idle_w
  /// is negative (the energy bound needs energy to grow with time).
  StaticSearch(std::vector<double> above_idle_j, const driver::Evaluated& baseline, double idle_w, std::size_t ranks,
               TimeNs target_ns);
  /// The clocks (indices) to measure next; empty when the search is done.
  std::vector<std::size_t> next_batch() const;
  /// The job measured at clock `i` (time and energy as evaluate() gives them). Throws
  /// std::out_of_range for an index outside the search.
  void record(std::size_t i, const driver::Evaluated& run);
  /// The cheapest within the target so far (the baseline when it is within and nothing cheaper
  /// was measured); nullopt: none. Its clock_mhz is left as recorded.
  const std::optional<driver::Evaluated>& best() const { return best_; }
  /// Clocks measured so far.
  std::size_t measured() const { return measured_; }

 private:
  TimeNs time_bound(std::size_t i) const;
  double energy_bound(std::size_t i) const;
  bool beats_best(double energy_j, std::size_t i) const;
  bool open(std::size_t i) const;

  std::vector<double> above_;
  double idle_w_ = 0;
  std::size_t ranks_ = 0;
  TimeNs target_ns_ = 0;
  TimeNs baseline_ns_ = 0;
  std::vector<std::optional<TimeNs>> time_;  // per clock, once measured
  std::optional<driver::Evaluated> best_;
  std::size_t best_index_ = SIZE_MAX;        // SIZE_MAX: the baseline (above every clock)
  std::size_t measured_ = 0;
};

/// Clocks of a StaticSearch batch while the lowest clock within the target is unknown.
inline constexpr std::size_t kStaticSplit = 4;
/// Known-within clocks of a StaticSearch batch at most.
inline constexpr std::size_t kStaticBatch = 8;

/// Steps 0–1 of a decomposed solve: the job timed at its recorded (max-clock) durations from its
/// ranks' port reductions (timing::time_job).
struct RecordedJob {
  TimeNs makespan_ns = 0;               ///< M0, the job's recorded makespan (ns).
  std::int64_t collectives_pinned = 0;  ///< Linked collective instances (step 1's variables).
  std::int64_t cycle_breaks = 0;        ///< Instances timed before their predecessors (timing::JobTiming).
};

/// The reference of the target: every GPU at its max clock, from the ranks' first-round runs.
struct JobBaseline {
  driver::Evaluated run;  ///< Simulated; clock_mhz = the max SM clock.
  TimeNs target_ns = 0;   ///< The latency target: driver::target_of(run.time_ns, max_slowdown).
  std::vector<double> rank_above_idle_j;  ///< Per rank: its ops' energy above idle at the max clock (J).
};

/// Steps 2–3: the rounds of rank solves and their composition.
struct ComposedRounds {
  double rank_slowdown = 0;  ///< Each rank's own share in the last round (first_split, next_split).
  double compose_reserve = 0;  ///< The share kept for the composition in the last round (the same).
  double pin_stretch = 0;    ///< The collectives' stretch of the last round (step 1).
  int rounds = 0;            ///< Rounds of rank solves: 1, or up to kDecomposedRounds while the composed plan missed.
  int passes = 0;            ///< Compositions of the last round (step 3's fixed point).
  TimeNs residual_ns = 0;    ///< The last pass's largest move of a transfer start (0: a fixed point).
  driver::Evaluated plan;    ///< The composed plan, timed on the job (before the static comparison).
  std::vector<RankRun> runs;  ///< Per rank: its last round's plan run at the last composition's releases, reduced to its ports.
  policy::Policy policy;      ///< The composed plan's policy (DecomposedSolve::policy when it is kept).
};

/// The first round's split of the target `max_slowdown` into `c`: each rank's own share
/// (kRankShare), the composition's (kComposeReserve) and the collectives' stretch, the rest:
/// (1 + s) / (1 + s (kRankShare + kComposeReserve)) − 1. Never throws.
void first_split(ComposedRounds& c, double max_slowdown);

/// The next round's split after a round whose composition missed the target by `miss` (a fraction
/// of the target, > 0). Usually the stretch cut by the miss and kRetryMargin. Where that leaves no
/// stretch — the ranks' own shares, compounding over many collectives, make a miss that no
/// tighter stretch absorbs (measured, docs/multi-rank.md "Stop 44": 16-rank tensor-parallel and
/// MoE jobs, an all-reduce or all-to-all per layer, missed by 0.3 % at +0.5 % with no stretch
/// left) — the shares are divided by kShareCut and the stretch is what the target leaves beside
/// them. Then, with no share left, one round at no stretch. false when nothing is left to cut (no
/// stretch, no share): no further round. Throws std::invalid_argument when `miss` is not > 0.
bool next_split(ComposedRounds& c, double max_slowdown, double miss);

/// Never worse than locking one clock: the cheapest static clock within the target, among the
/// clocks every rank's solve offered (driver::optimize()'s static curve).
struct StaticChoice {
  driver::Evaluated best;  ///< clock_mhz 0: no static clock fits the target.
  bool kept = false;       ///< It was cheaper (or the composed plan missed): the policy locks it.
};

/// The decomposed solve's result, by step; every figure simulated. Every schedule is timed on the
/// ranks' port reductions composed (timing::time_job): exact for the ranks' graphs coupled at their
/// collectives.
struct DecomposedSolve {
  double max_slowdown = 0;
  RecordedJob recorded;         ///< Steps 0–1.
  JobBaseline baseline;         ///< The max clock and the target.
  ComposedRounds composed;      ///< Steps 2–3.
  StaticChoice static_choice;   ///< The static comparison.
  driver::Evaluated plan;       ///< The kept plan: composed.plan, or static_choice.best when kept.
  std::vector<RankSolve> ranks;  ///< In the job's order.
  policy::Policy policy;        ///< One section per rank: device = its position in the job.
  std::optional<JobView> view;  ///< With DecomposedOptions::lanes: the report's job view (job/job_view.h).
  bool simulated = true;
  double savings() const {
    return baseline.run.energy_j > 0 ? 1.0 - plan.energy_j / baseline.run.energy_j : 0.0;
  }
  double slowdown() const {
    return baseline.run.time_ns > 0
               ? static_cast<double>(plan.time_ns) / static_cast<double>(baseline.run.time_ns) - 1.0
               : 0.0;
  }
};

/// Ranks up to which `emo optimize --solve auto` (the default) solves a job jointly; above it,
/// decomposed. The joint solve of 8 ranks takes about 1 min, of 16 about 10 min (docs/multi-rank.md).
inline constexpr std::size_t kJointSolveMaxRanks = 8;

/// The steps of the file comment on the job `ports`, with the per-rank work done by `worker`
/// (which holds every rank of the job, in its order: a ThreadRankWorker, the MPI worker of
/// job/mpi_worker.h, or a test's). `options` are the job's (each rank gets rank_options of them).
/// Throws std::invalid_argument when the worker answers for other ranks, and what the worker throws.
DecomposedSolve decompose(const JobPorts& ports, const model::GpuSpec& gpu, const driver::OptimizeOptions& options,
                          RankWorker& worker);

/// Solves the job `ports` (job_ports of the digests of `rank_traces`, which are the ranks' traces
/// in the job's order) by decomposition (file comment), each rank with `options` (its max_slowdown
/// is the job's; seed and profiling as driver::optimize()) on a simulated `gpu`, on how.threads
/// threads, in a ThreadRankWorker (passed through how.wrap_worker); with how.lanes also the job view
/// (job_view). No trace is merged and no graph
/// of the whole job built: a rank's graph lives while it is solved or reduced. Throws
/// std::invalid_argument when the traces do not match `ports`, and what driver::optimize() throws.
DecomposedSolve solve_decomposed(const JobPorts& ports, std::vector<trace::Trace> rank_traces, const model::GpuSpec& gpu,
                                 const driver::OptimizeOptions& options, const DecomposedOptions& how = {});

}  // namespace emo::job
