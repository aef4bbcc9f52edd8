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
//      solve_decomposed_mpi): the rank's own trace cut out of the job
//      (trace::JobCut): each collective's transfer takes T_c and starts at L'_c — no earlier (the
//      others arrive then), no later (they would wait) — and the rank ends by the job's end. Its
//      slack before each collective (L'_c minus its own arrival) is its to spend. Solved by the
//      single-trace driver::optimize() with no further slowdown (its baseline already ends at the job's end).
//   3. Every rank arrives at every collective by L'_c, so every transfer starts by L'_c and the job
//      ends by w + (1 + s) M0: the plans compose. Each rank runs its plan on its own graph on the
//      simulated device (ideal switching; its own noise draws) and reduces the run to its ports;
//      the composition times the job, every collective waiting for its last participant. The
//      baseline and the static clocks are timed the same way.
//
// What this gives up against the joint solve: a rank cannot move slack from one collective to
// the next (the budget is fixed per interval by step 1), so the critical rank saves a little less.
// Measured against the joint solve in docs/multi-rank.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "job/load_job.h"
#include "driver/optimize.h"
#include "trace/job.h"
#include "policy/policy.h"
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

/// One rank of a decomposed solve.
struct RankSolve {
  std::int32_t rank = -1;
  std::int64_t packs = 0;
  std::int64_t pinned = 0;         ///< Its collectives pinned by the cross-rank problem.
  TimeNs wait_ns = 0;              ///< Its slack before its collectives at the max clock (sum, ns).
  double mean_clock_mhz = 0;       ///< Time-weighted mean SM clock of its GPU ops in the plan.
  double own_savings = 0;          ///< Its cut's own evaluation: 1 − energy / baseline (simulated).
  bool own_met = true;             ///< Its cut's measured run kept the job's end and its pins.
};

/// Share of the latency target each rank's own solve gets (step 2): the rank may reach a
/// collective that much of the makespan after its pin. Its problem needs some room: with none, the
/// pack problem's linearisation (opt/pack_problem.h) leaves it no plan but the max clock near every
/// pin. The pins are stretched by the rest, (1 + s) / (1 + s × kRankShare) − 1. Chosen on the
/// generated 8-rank job at +0.5 % (docs/multi-rank.md: 0 gave 12.6 % savings, 0.1 gave 13.8 %).
inline constexpr double kRankShare = 0.1;
/// Rounds at most: the composed plan is timed on the job; when it misses the target (a rank's
/// own share compounds over its collectives), the stretch is cut by the miss plus kRetryMargin and
/// every rank solved again, once.
inline constexpr int kDecomposedRounds = 2;
inline constexpr double kRetryMargin = 0.0005;

/// The decomposed solve's result. Every schedule is timed on the ranks' port reductions composed
/// (timing::time_job): exact for the ranks' graphs coupled at their collectives.
struct DecomposedSolve {
  double max_slowdown = 0;
  double pin_stretch = 0;          ///< The collectives' stretch of the last round (step 1).
  double rank_slowdown = 0;        ///< Each rank's own share (kRankShare × max_slowdown).
  int rounds = 0;                  ///< 1, or 2 when the first composed plan missed the target.
  driver::Evaluated own_plan;              ///< The composed plan (before the static comparison).
  driver::Evaluated static_best;           ///< The cheapest static clock within the target, among the clocks the
                                   ///< ranks' solves offered (driver::optimize()'s static curve; clock_mhz 0: none).
  bool static_kept = false;        ///< It was cheaper (or the composed plan missed): the policy locks it.
  TimeNs model_makespan_ns = 0;    ///< M0: the job timed at the recorded (max-clock) durations.
  driver::Evaluated baseline;              ///< Every GPU at its max clock.
  driver::Evaluated plan;                  ///< The kept plan (composed, or the static clock).
  TimeNs target_ns = 0;            ///< baseline × (1 + max_slowdown), floored.
  std::int64_t collectives_pinned = 0;  ///< Linked collective instances (step 1's variables).
  std::int64_t cycle_breaks = 0;   ///< Instances timed before their predecessors (timing::JobTiming).
  std::vector<RankSolve> ranks;    ///< In the job's order.
  policy::Policy policy;           ///< One section per rank: device = its position in the job.
  bool simulated = true;
  double savings() const { return baseline.energy_j > 0 ? 1.0 - plan.energy_j / baseline.energy_j : 0.0; }
  double slowdown() const {
    return baseline.time_ns > 0 ? static_cast<double>(plan.time_ns) / static_cast<double>(baseline.time_ns) - 1.0 : 0.0;
  }
};

/// Options of solve_decomposed.
struct DecomposedOptions {
  int threads = 0;                 ///< Ranks solved at once (0: the machine's cores).
  ProgressSink* progress = nullptr;  ///< Told "ranks" done of the total (not owned).
};

/// Ranks up to which `emo optimize --solve auto` (the default) solves a job jointly; above it,
/// decomposed. The joint solve of 8 ranks takes about 1 min, of 16 about 10 min (docs/multi-rank.md).
inline constexpr std::size_t kJointSolveMaxRanks = 8;

/// The run-noise seed of the rank at `position` in the job on the simulated device (ranks draw their
/// ops' noise independently): seed + 1 + 1,000,003 × (position + 1).
std::uint64_t rank_noise_seed(std::uint64_t seed, std::size_t position);

/// Solves the job `ports` (job_ports of the digests of `rank_traces`, which are the ranks' traces
/// in the job's order) by decomposition (file comment), each rank with `options` (its max_slowdown
/// is the job's; seed and profiling as driver::optimize()) on a simulated `gpu`, on how.threads threads.
/// No trace is merged and no graph of the whole job built: a rank's graph lives while it is solved
/// or reduced. Throws std::invalid_argument when the traces do not match `ports`, and what
/// driver::optimize() throws.
DecomposedSolve solve_decomposed(const JobPorts& ports, std::vector<trace::Trace> rank_traces, const model::GpuSpec& gpu,
                                 const driver::OptimizeOptions& options, const DecomposedOptions& how = {});

/// solve_decomposed with the ranks reduced and solved by the processes of an MPI job (`emo optimize
/// --mpi`), on process 0; every other process runs serve_decomposed_mpi meanwhile. `share` is
/// process 0's, from load_own_traces_mpi(paths, …), and `ports` linked from the digests it returned.
/// Each rank is reduced and solved by the process that loaded it (trace i of paths by process
/// i % K), on its own how.threads threads; only ports, cuts, port reductions and policy sections
/// cross (CBOR). The result is the same as solve_decomposed's on the same traces. Releases `share`
/// on every way out (MpiShare::release). Throws what solve_decomposed throws, an error of another
/// process (InputError as it was thrown, anything else as std::runtime_error(what)),
/// std::invalid_argument when `share` is not process 0's.
/// Built without MPI: InputError("--mpi", "emo was built without MPI").
DecomposedSolve solve_decomposed_mpi(const JobPorts& ports, MpiShare& share, const model::GpuSpec& gpu,
                                     const driver::OptimizeOptions& options, const DecomposedOptions& how = {});

/// A process other than 0 of an MPI job after load_own_traces_mpi(…, share): answers process 0's
/// commands — send its traces (gather_traces_mpi), reduce its ranks to ports, solve a round of
/// solve_decomposed_mpi (on how.threads threads; an error is sent back, not thrown) — until it is
/// told to finish (returns, share released) or that another process failed (throws
/// MpiPeerFailed; the caller exits 2 silently). `options` are the job's, as process 0's.
/// Built without MPI: InputError("--mpi", "emo was built without MPI").
void serve_decomposed_mpi(MpiShare& share, const driver::OptimizeOptions& options, const DecomposedOptions& how = {});

}  // namespace emo::job
