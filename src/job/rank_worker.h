// The seam of the decomposed solve (job/job_solve.h): the per-rank work — reduce a rank to its
// collective ports, solve it against its cut, run it at static clocks — behind one interface,
// RankWorker, wherever the ranks are. ThreadRankWorker does it in this process, on a thread pool;
// the MPI transport (job/mpi_worker.h) does it on the processes that loaded the ranks, each of them
// with a ThreadRankWorker of its own. A test injects a fault by wrapping a process's worker
// (DecomposedOptions::wrap_worker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/progress.h"
#include "core/timestamp.h"
#include "driver/optimize.h"
#include "model/gpu_catalog.h"
#include "policy/policy.h"
#include "runtime/sim_run.h"
#include "timing/ports.h"
#include "trace/trace.h"

namespace emo::job {

/// One rank of a decomposed solve, as the result reports it.
struct RankSolve {
  std::int32_t rank = -1;
  std::int64_t packs = 0;
  std::int64_t pinned = 0;         ///< Its collectives pinned by the cross-rank problem.
  TimeNs wait_ns = 0;              ///< Its slack before its collectives at the max clock (sum, ns).
  double mean_clock_mhz = 0;       ///< Time-weighted mean SM clock of its GPU ops in the plan.
  double own_savings = 0;          ///< Its cut's own evaluation: 1 − energy / baseline (simulated).
  bool own_met = true;             ///< Its cut's measured run kept the job's end and its pins.
};

/// A rank's run (on the simulated device, its own graph) reduced to its ports, and its ops'
/// energy above the GPU's idle power (J).
struct RankRun {
  timing::PortGraph ports;
  double above_idle_j = 0;
};

/// What the job keeps of one rank's solve (its OptimizeResult is dropped: it holds the graph).
struct RankPlan {
  policy::GpuPolicy section;              ///< Its policy section (device and rank set by the job).
  policy::Policy policy;                  ///< Its own policy's header, without sections (rank 0's heads the job's).
  std::vector<double> option_clocks_mhz;  ///< The SM clocks (MHz) its solve offered, descending.
  RankSolve solve;                        ///< rank and wait_ns are set by the job.
  RankRun plan;                           ///< Its plan run on its own graph (the policy's switches as emo run issues them),
                                          ///< its collectives released at its cut's pins (the composition's first pass).
  std::vector<std::pair<double, RankRun>> statics;  ///< Round 0: its run at the max clock (MHz, run): the baseline.
};

/// A pack of a rank's plan in the report's job view (job/job_view.h): its first op's start and
/// last op's end in the rank's simulated run (ns; on the rank's own clock from a RankWorker, on
/// the job's in a JobView), its SM clock and its ops.
struct RankLanePack {
  TimeNs start_ns = 0, end_ns = 0;
  double clock_mhz = 0;
  std::int64_t ops = 0;
};

/// A rank's packs in the job view, by start.
using RankLane = std::vector<RankLanePack>;

/// What a worker keeps of a rank's last solve. For RankWorker::released, always: per node of its
/// graph with open pins the SM clock its plan runs it at (MHz; 0 for host nodes; 4 bytes per node),
/// its policy's clock requests as `emo run` issues them (and the clock before the first: its last
/// pack's), and the last released run (its releases
/// and its reduction: a rank whose releases did not change is not run again). For RankWorker::lanes
/// (DecomposedOptions::lanes) also: per node its pack in the plan (UINT32_MAX: none), the packs'
/// clocks (MHz) and the last plan run's node durations (ns); about 12 bytes per node more.
struct RankKeptPlan {
  std::vector<float> node_clock_mhz;
  std::vector<runtime::ClockRequest> requests;
  std::map<std::int32_t, double> initial_clock_mhz;  ///< Its GPU's clock before its first request.
  std::vector<TimeNs> last_release_ns;  ///< Per port: the releases of the last run.
  RankRun last_run;
  std::vector<std::uint32_t> pack_of_node;
  std::vector<double> pack_clock_mhz;
  std::vector<TimeNs> dur_ns;
};

struct PortedGraph;  // job/rank_worker.cpp: a rank's graph with its collectives as open ports

/// The per-rank work of a decomposed solve for the ranks a worker holds (all of them, or one
/// process's share), in their order. Each call is one step for every such rank; an error of any
/// rank is thrown after every rank is done.
class RankWorker {
 public:
  virtual ~RankWorker() = default;
  /// Step 0: every rank reduced to its ports at its recorded durations.
  virtual std::vector<timing::PortGraph> recorded() = 0;
  /// Step 2: every rank solved against its cut (`cuts`: one per rank) of round `round` (0 first:
  /// each RankPlan then also holds its run at the max clock, statics), with `rank_slowdown` of the
  /// target its own (its solve's max_slowdown: the round's share, job/job_solve.h; ≥ 0).
  virtual std::vector<RankPlan> solve(std::vector<trace::JobCut>& cuts, int round, double rank_slowdown) = 0;
  /// Step 3's fixed point (job/job_solve.h): every rank's last plan (solve()'s: its SM clocks and
  /// its policy's clock requests, as `emo run` issues them) run again with each of its collectives'
  /// transfers starting no earlier than its pin in `releases` (one JobCut per rank, its pins those of
  /// the rank's cut in order; start_ns on the rank's clock: the job's transfer starts of the last
  /// composition; end_ns unused), reduced to its ports on its graph with open pins. Per rank.
  /// Throws std::logic_error before any solve() (from another MPI process: std::runtime_error, as
  /// every error it sends back), std::invalid_argument when `releases` do not
  /// match the ranks' pins.
  virtual std::vector<RankRun> released(const std::vector<trace::JobCut>& releases) = 0;
  /// Every rank run at each SM clock of `clocks_mhz`: per rank, per clock.
  virtual std::vector<std::vector<RankRun>> statics(const std::vector<double>& clocks_mhz) = 0;
  /// Every rank's energy above idle (J) at each SM clock of `clocks_mhz` — statics()' runs'
  /// RankRun::above_idle_j to the bit, without their reduction to ports (the job-level static
  /// search's lower bounds, job_solve.h StaticSearch): per rank, per clock. This default takes it
  /// from statics().
  virtual std::vector<std::vector<double>> static_energies(const std::vector<double>& clocks_mhz);
  /// The job view (a report, job/job_view.h): every rank's packs of its last solve's plan — or,
  /// with static_mhz > 0, every pack at that static clock — in the same simulated run as solve()'s
  /// plan run (statics()' run at that clock), timed on its own graph with port p ending at
  /// port_end_ns[rank][p] (the rank's own clock: the job's instance ends minus its offset). Per
  /// rank its packs (RankLane). This default throws std::logic_error (a worker that keeps no plans).
  virtual std::vector<RankLane> lanes(const std::vector<std::vector<TimeNs>>& port_end_ns, double static_mhz);
};

/// Given this process's in-process worker, the worker to use instead (e.g. a test's wrapper that
/// fails); called once per worker built.
using RankWorkerWrap = std::function<std::unique_ptr<RankWorker>(std::unique_ptr<RankWorker>)>;

/// Options of solve_decomposed (and of each process's part under MPI).
struct DecomposedOptions {
  int threads = 0;                   ///< Ranks solved at once (0: the machine's cores).
  ProgressSink* progress = nullptr;  ///< Told "ranks" done of the total (not owned).
  RankWorkerWrap wrap_worker{};      ///< Empty: the in-process worker as it is (tests wrap it).
  bool lanes = false;                ///< Keep each rank's last plan (RankKeptPlan) and draw the job view
                                     ///< (DecomposedSolve::view; `emo optimize --report/--overlay`).
};

/// Share of the latency target each rank's own solve gets (step 2): the rank may reach a
/// collective that much of the makespan after its pin. Its problem needs some room: with none, the
/// pack problem's linearisation (opt/pack_problem.h) leaves it no plan but the max clock near every
/// pin. The pins are stretched by the rest less the composition's reserve, (1 + s) / (1 + s × (kRankShare +
/// kComposeReserve)) − 1 (job/job_solve.h). Chosen on the
/// generated 8-rank job at +0.5 % (docs/multi-rank.md: 0 gave 12.6 % savings, 0.1 gave 13.8 %).
inline constexpr double kRankShare = 0.1;

/// Each rank's own options (step 2): the job's `options`, max_slowdown × kRankShare (the first
/// round's share; each RankWorker::solve sets its round's, job::first_split / next_split), planned
/// at that target alone (no target ladder: its cost would be paid once per rank).
driver::OptimizeOptions rank_options(const driver::OptimizeOptions& options);

/// The run-noise seed of the rank at `position` in the job on the simulated device (ranks draw their
/// ops' noise independently): seed + 1 + 1,000,003 × (position + 1).
std::uint64_t rank_noise_seed(std::uint64_t seed, std::size_t position);

/// `how.wrap_worker(w)`, or `w` when there is no wrapper.
std::unique_ptr<RankWorker> wrapped(std::unique_ptr<RankWorker> w, const DecomposedOptions& how);

/// The ranks `traces` (their positions in the job `position`, their linked collectives as open
/// pins `open`: JobPorts::open) worked in this process on how.threads threads, with progress to
/// how.progress. `options` are each rank's own (rank_options of the job's); `gpu` is simulated.
/// `traces` is borrowed (a solve sets and clears a trace's meta.cut) and must outlive the worker.
/// Throws std::invalid_argument when the three do not match; its steps throw what
/// driver::optimize() and runtime::run_on_sim throw.
class ThreadRankWorker : public RankWorker {
 public:
  ThreadRankWorker(std::vector<trace::Trace>& traces, std::vector<std::size_t> position, std::vector<trace::JobCut> open,
                   const model::GpuSpec& gpu, const driver::OptimizeOptions& options, const DecomposedOptions& how);
  ~ThreadRankWorker() override;
  std::vector<timing::PortGraph> recorded() override;
  std::vector<RankPlan> solve(std::vector<trace::JobCut>& cuts, int round, double rank_slowdown) override;
  std::vector<RankRun> released(const std::vector<trace::JobCut>& releases) override;
  std::vector<std::vector<RankRun>> statics(const std::vector<double>& clocks_mhz) override;
  std::vector<std::vector<double>> static_energies(const std::vector<double>& clocks_mhz) override;
  std::vector<RankLane> lanes(const std::vector<std::vector<TimeNs>>& port_end_ns, double static_mhz) override;

 private:
  std::vector<trace::Trace>& traces_;
  std::vector<std::size_t> position_;
  std::vector<trace::JobCut> open_;
  const model::GpuSpec& gpu_;
  driver::OptimizeOptions options_;
  int threads_ = 0;
  ProgressSink* progress_ = nullptr;
  bool keep_ = false;                 // DecomposedOptions::lanes
  std::vector<RankKeptPlan> kept_;    // per rank, its last solve's plan
  // Per rank, its graph with its collectives as open ports, built at its first step and kept: every
  // step runs or reduces it (a solve, each composition pass, each batch of static clocks), and
  // building it was half of a released run (docs/multi-rank.md, "How far it scales"). About
  // 100 bytes per node: 4 MB for a rank of the generated jobs' 41,000 nodes.
  std::vector<std::unique_ptr<PortedGraph>> graphs_;
  PortedGraph& graph(std::size_t i);
};

}  // namespace emo::job
