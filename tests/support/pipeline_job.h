// Synthetic pipeline-parallel jobs (issue 26; docs/synthetic-jobs.md): the traces that every rank
// of a 1F1B (or interleaved 1F1B) pipeline, optionally with data-parallel replicas, would record.
//
// Unlike support/job_generator.h (N data-parallel copies of one real rank), no real trace holds
// such a job's program: it is made up here, from a few things taken from one real rank trace
// (JobSource: kernel names and their relative durations, the host's launch-call duration and
// CPU gap between calls, the GPU). Everything about the job's shape is made up: stages, the
// schedule, micro-batches, pass times, transfer times, process groups.
//
// The program of each rank (stage s of replica r is rank s × dp + r, Megatron's order):
//  - one host thread launches everything, in schedule order: a cudaLaunchKernel per kernel
//    (correlation id → its kernel), CPU gaps between calls; it runs ahead of the GPU and waits
//    at the end of each iteration in cudaDeviceSynchronize (a "Context Sync" record);
//  - compute stream kComputeStream: the passes (layers × kernels), each receive (an NCCL
//    SendRecv kernel, `Src Rank`/`Dst Rank`, posted on the compute stream just before the pass
//    that needs it: it starts when the stream gets there and ends when the data has arrived, so
//    its recorded duration is wait + transfer), and with dp > 1 the gradient all-reduce of the
//    stage's data-parallel group (process group + `Seq`) after the last backward pass;
//  - send stream kSendStream: each send, after the pass that produced its data (cudaEventRecord
//    on the compute stream, cudaStreamWaitEvent with its "Stream Wait Event" record);
//  - a ProfilerStep#N annotation per iteration, from its first call to the end of its sync.
// Times: one longest-path replay of every rank together (graph::topological_order): each op
// starts at max(its stream's previous op's end, its launch call's end, the event it waits for);
// a transfer or collective ends on every participant at max(their starts) + its transfer time
// (EMO's joint graph, trace/job.h); a sync call ends sync_return_ns after the device's last op.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/timestamp.h"
#include "trace/trace.h"

namespace emo::testing {

/// One kernel of a layer of a forward pass: its name and its relative duration (any unit).
struct PassKernel {
  std::string name;
  double weight = 1.0;
};

/// Host-side timing of the made-up program, ns.
struct HostTiming {
  TimeNs launch_ns = 5'000;        ///< A cudaLaunchKernel call; its kernel starts no earlier than its end.
  TimeNs gap_ns = 10'000;          ///< CPU time between two consecutive calls of the thread.
  TimeNs event_call_ns = 2'000;    ///< cudaEventRecord and cudaStreamWaitEvent calls.
  TimeNs sync_return_ns = 10'000;  ///< cudaDeviceSynchronize returns this long after the device's
                                   ///< last op ends (and takes at least this long).
};

/// What a generated job takes from a real rank trace (job_source) or from a test.
struct JobSource {
  std::string path;             ///< The source trace, for the label ("" for a test's own).
  std::vector<PassKernel> layer;  ///< The kernels of one layer of a forward pass, in order; ≥ 1.
  std::string p2p_kernel = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
  std::string allreduce_kernel = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  HostTiming host;
  trace::GpuInfo gpu;           ///< Every rank's deviceProperties (device 0).
};

/// The JobSource of a real rank trace: `layer` = the `kernels_per_layer` compute kernel names
/// (kernels that are not collectives) of largest total recorded time, in order of first
/// appearance, each weighted by its mean recorded duration; the p2p and all-reduce kernel names
/// of its first SendRecv and AllReduce kernels where it has them; host.launch_ns = the median
/// duration of its calls that launched a kernel, host.gap_ns = the median CPU gap (≥ 0) between
/// two consecutive such calls of a thread (defaults where it has none); the other host times are
/// HostTiming's defaults; gpu = its first GPU. Throws std::invalid_argument when it has no
/// compute kernel or kernels_per_layer < 1.
JobSource job_source(const trace::Trace& src, int kernels_per_layer);

/// Round host times for hand-worked jobs (support/pipeline_job_test.cpp, output/job_report_test.cpp):
/// every call 10 µs, no CPU gap, a sync returns 1 ms after the device's last op; one kernel per
/// pass ("gemm"); an A100-SXM4-80GB.
JobSource hand_worked_source();

/// The knobs of a pipeline job. Times in ns.
struct PipelineSpec {
  int stages = 4;                 ///< Pipeline stages S (ranks per replica), ≥ 1.
  int microbatches = 8;           ///< Micro-batches M per iteration, ≥ 1.
  int virtual_stages = 1;         ///< V model chunks per rank; > 1: interleaved 1F1B (Megatron),
                                  ///< M a multiple of S.
  int dp = 1;                     ///< Data-parallel replicas R of the pipeline, ≥ 1.
  int iterations = 1;             ///< Iterations (profiler steps), ≥ 1.
  int layers = 2;                 ///< Layers per pass (per chunk), each JobSource::layer, ≥ 1.
  TimeNs forward_ns = 13'000'000; ///< One micro-batch's forward pass on a stage of scale 1
                                  ///< (all its chunks together), > 0.
  double backward_ratio = 2.0;    ///< Backward pass = this × forward, > 0.
  std::vector<double> stage_scale = {};  ///< Per stage, its passes' time factor (> 0); empty = all 1.
  TimeNs p2p_ns = 100'000;        ///< Transfer time of one activation or gradient, > 0.
  std::int64_t p2p_elems = 4'194'304;       ///< Its message size (label only).
  TimeNs allreduce_ns = 5'000'000;          ///< Transfer time of a stage's gradient all-reduce (dp > 1).
  std::int64_t allreduce_elems = 167'772'160;  ///< Its message size (label only).
  int tp = 1;                     ///< Tensor-parallel ranks per stage (and replica), ≥ 1; > 1: an
                                  ///< all-reduce over them after each layer of each pass.
  TimeNs tp_allreduce_ns = 200'000;           ///< Its transfer time, > 0.
  std::int64_t tp_allreduce_elems = 8'388'608;  ///< Its message size (label only).
  bool moe = false;               ///< Each layer also has an MoE block over the stage's
                                  ///< data-parallel group (dp ≥ 2): all-to-all, experts, all-to-all.
  double expert_share = 0.5;      ///< The experts' share of a layer's time (of a balanced rank), in (0, 1).
  double expert_imbalance = 0.5;  ///< The hot rank's experts take (1 + this) × as long, ≥ 0.
  TimeNs all_to_all_ns = 300'000;             ///< Transfer time of an all-to-all, > 0.
  std::int64_t all_to_all_elems = 4'194'304;  ///< Its message size (label only).
  int slow_replica = -1;          ///< Replica whose compute kernels are slower, or -1.
  double replica_slowdown = 0.06; ///< Its kernels take (1 + this) × longer, ≥ 0.
  int straggler = -1;             ///< Rank whose compute kernels are slower, or -1.
  double straggler_slowdown = 0.10;  ///< Its kernels take (1 + this) × longer, ≥ 0.
  double jitter = 0.0;            ///< Relative standard deviation of each compute kernel, ≥ 0.
  TimeNs max_offset_ns = 0;       ///< Host clock offsets drawn uniformly in ±this, ≥ 0.
  std::uint64_t seed = 1;
};

/// "stages=4 microbatches=8 virtual_stages=1 dp=1 ...".
std::string describe(const PipelineSpec& spec);

/// A made-up pipeline job (see the file comment): construction builds every rank's program and
/// replays them together, O(ops + edges); rank_trace() then makes one rank's trace.
class PipelineJob {
 public:
  static constexpr std::int64_t kComputeStream = 7;
  static constexpr std::int64_t kSendStream = 20;

  /// Throws std::invalid_argument for a spec or source out of range (the message says which),
  /// std::logic_error when the schedule deadlocks or its sends and receives between two ranks
  /// come in different orders (a bug of the schedule, not of the input).
  PipelineJob(JobSource source, PipelineSpec spec);
  /// The constructor's checks of `spec` and `source`: throws std::invalid_argument, one line
  /// saying what is out of range ("pipeline spec: ... (stages=...)").
  static void check(const PipelineSpec& spec, const JobSource& source);

  /// Stage s, replica r, tensor-parallel index t is rank (s × dp + r) × tp + t (Megatron's order).
  int ranks() const noexcept { return spec_.stages * spec_.dp * spec_.tp; }
  int stage_of(int rank) const noexcept { return rank / (spec_.dp * spec_.tp); }
  int replica_of(int rank) const noexcept { return rank / spec_.tp % spec_.dp; }
  int tp_of(int rank) const noexcept { return rank % spec_.tp; }
  /// Rank r's host clock offset, ns, added to all its timestamps: uniform in ±max_offset_ns.
  TimeNs offset_ns(int rank) const;
  /// Latest end − earliest start of any op of the job, without offsets, ns.
  TimeNs span_ns() const noexcept { return span_ns_; }
  /// Σ of rank r's compute kernels' durations (passes only, no transfer), ns.
  TimeNs compute_ns(int rank) const;
  /// Point-to-point transfers (send/recv pairs) and group collectives of the job.
  std::int64_t transfers() const noexcept { return transfers_; }
  std::int64_t collectives() const noexcept { return collectives_; }
  const PipelineSpec& spec() const noexcept { return spec_; }
  const JobSource& source() const noexcept { return source_; }

  /// Rank r's trace, as read from a file (finish() called), its timestamps + offset_ns(r).
  /// Throws std::out_of_range for a rank outside the job.
  trace::Trace rank_trace(int rank) const;

  /// One op of the job: a host call (kind kRuntime) or a kernel.
  struct Op {
    std::int32_t rank = 0;
    trace::OpKind kind = trace::OpKind::kRuntime;
    bool compute = false;                    ///< A kernel of a pass (not a transfer).
    std::int64_t stream = trace::kNone;      ///< Kernels only.
    std::uint32_t name = 0;                  ///< Into names_.
    TimeNs dur = 0;                          ///< Intrinsic: a call's, a kernel's, a transfer's T.
    std::int64_t correlation = trace::kNone;
    std::int32_t coll = -1;                  ///< Into colls_ (NCCL kernels).
    std::int32_t sync = -1;                  ///< Into syncs_ (calls with a sync record).
  };
  /// Collective metadata of an NCCL kernel (Kineto args).
  struct Coll {
    std::string name;                        ///< "send", "recv", "allreduce".
    std::string group, group_ranks;          ///< "" for point-to-point.
    std::int32_t group_size = -1;
    std::int64_t elems = 0;
    std::int64_t seq = trace::kNone;
    std::int32_t src = -1, dst = -1;         ///< Point-to-point only.
  };
  /// A sync record of a call.
  struct Sync {
    trace::SyncKind kind = trace::SyncKind::kContextSync;
    std::int64_t stream = trace::kNone, event_stream = trace::kNone, record_correlation = trace::kNone;
  };
  /// A ProfilerStep#iteration annotation: from the start of op first to the end of op last.
  struct Step {
    std::int32_t rank = 0, iteration = 0;
    std::uint32_t first = 0, last = 0;
  };
  struct Edge {
    std::uint32_t from, to;  ///< Timepoints: 2 × op (start), 2 × op + 1 (end).
    TimeNs lag;
  };

 private:
  friend class PipelineBuilder;
  void replay();

  JobSource source_;
  PipelineSpec spec_;
  std::vector<std::string> names_;
  std::vector<Op> ops_;
  std::vector<Coll> colls_;
  std::vector<Sync> syncs_;
  std::vector<Step> steps_;
  std::vector<Edge> edges_;
  std::vector<std::uint32_t> rank_begin_;  ///< ops_ of rank r: [rank_begin_[r], rank_begin_[r + 1]).
  std::vector<TimeNs> time_;               ///< Per timepoint, replayed.
  TimeNs span_ns_ = 0;
  std::int64_t transfers_ = 0, collectives_ = 0;
};

}  // namespace emo::testing
