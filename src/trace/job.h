// The traces of one distributed job, linked into one trace (docs/multi-rank.md).
//
// A job of N ranks is recorded as N traces, one per process, each on its own host clock. EMO
// links them: it recognises that they are ranks of one job, matches each collective kernel with
// its participants on the other ranks, estimates each rank's clock offset from the collectives'
// ends (a collective ends on all its participants together, when the last one's transfer ends),
// and merges the ranks into one Trace whose GPU device i is the i-th rank's GPU. The dependency
// graph (graph/dep_graph.h, EdgeType::kCollective) then makes each linked collective wait for its
// last participant, so every later stage — timing, slack, packs, the optimiser, the simulated
// device — sees the job as one graph.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "trace/trace.h"

namespace emo::trace {

/// How to link.
struct LinkOptions {
  /// The rank of each trace, in the order given (`--ranks 0,1,...`); empty: from the traces
  /// (Kineto distributedInfo, nsys MPI/NCCL ranges).
  std::vector<std::int32_t> ranks;
};

/// What linking reads of one rank's trace: its identity, span, GPU and collectives — a few kB,
/// so that the ranks of a large job can be linked without gathering their traces in one process
/// (the decomposed solve under MPI, job/job_solve.h).
struct RankDigest {
  /// One collective kernel (a row of the trace's CollectiveTable, in its order).
  struct Collective {
    std::string name;          ///< Collective name (CollectiveTable::name).
    std::string group;         ///< Process group name, "" when not recorded.
    std::int32_t group_ranks = -1;  ///< Its group's rank list: index into RankDigest::rank_lists, -1 if not recorded.
    std::int64_t stream = kNone;
    std::int64_t sequence = kNone;
    std::int32_t src_rank = static_cast<std::int32_t>(kNone);  ///< Point-to-point sender, kNone if not recorded.
    std::int32_t dst_rank = static_cast<std::int32_t>(kNone);  ///< Point-to-point receiver, likewise.
    TimeNs start_ns = 0;       ///< Recorded, on the trace's own clock.
    TimeNs end_ns = 0;
    std::uint32_t op = 0;      ///< Its kernel's row in the trace's OpTable.
  };
  std::string path;
  std::int32_t rank = -1;           ///< TraceMeta::rank.
  std::int32_t world_size = -1;     ///< TraceMeta::world_size.
  std::int32_t device = static_cast<std::int32_t>(kNone);  ///< Its one GPU (kNone: no GPU op).
  std::string device_error;         ///< Non-empty: GPU ops on several devices (linking throws it).
  std::string gpu_name;             ///< Its GPU's recorded name (TraceMeta::gpu_name), "" if unknown.
  std::vector<std::string> changed_on_load;  ///< trace::changed_on_load: what loading changed, for the CLI to say.
  TimeNs first_ns = 0;              ///< First recorded start (0 for an empty trace).
  TimeNs last_ns = 0;               ///< Last recorded end.
  std::vector<Collective> collectives;
  /// The distinct `Process Group Ranks` strings ("[0, 1, ...]") of its collectives, each once: a
  /// group's list grows with the group, and every collective of the group carries it.
  std::vector<std::string> rank_lists;
};

/// The digest of `t` (O(ops)).
RankDigest digest(const Trace& t);

/// Why `traces` are not the ranks of one job, or nullopt when they are: at least two traces,
/// every one with a known rank (from the trace or `options.ranks`), all of the same world size,
/// recorded within an hour of each other. Duplicated ranks are not a reason here: link_job
/// rejects them. `options.ranks`, when given, must have one entry per trace.
std::optional<std::string> not_one_job(const std::vector<Trace>& traces, const LinkOptions& options = {});
/// The same on the traces' digests.
std::optional<std::string> not_one_job(const std::vector<RankDigest>& traces, const LinkOptions& options = {});

/// The error of traces that are not one job where one is required (`emo analyze`, `emo pack`,
/// the Python job calls): InputError(`second`'s path, "not a rank of the same job as `first`:
/// `why`"), `why` being not_one_job's reason, the paths the first two traces'.
InputError not_one_job_error(const std::string& first, const std::string& second, const std::string& why);

/// Each rank's recorded GPU, in the digests' order, as GpuInfo{position, name} (the devices of the
/// job linked from them): what driver::one_gpu_model checks for one GPU model. O(ranks).
std::vector<GpuInfo> job_gpus(const std::vector<RankDigest>& digests);

/// How the ranks of one job link (link_ranks): the job's JobInfo (source_row empty: nothing is
/// merged) and, per rank in the order given, per collective of its digest, the linked instance's
/// id (kNone: not linked). Instance ids are 0 .. info.collectives_linked − 1.
struct JobLink {
  JobInfo info;
  std::vector<std::vector<std::int64_t>> match;
};

/// Matching and clock alignment of link_job (below), on the ranks' digests only: the traces need
/// not be in this process. Throws what link_job throws (the same errors, in the same order).
JobLink link_ranks(const std::vector<RankDigest>& ranks, const LinkOptions& options = {});

/// Links the traces of one job into one trace (the inputs are consumed).
///
/// Matching (docs/multi-rank.md): a point-to-point kernel that records its peer (PyTorch
/// `Src Rank` / `Dst Rank`; the end not recorded is its own rank) is matched by peer and order:
/// the k-th (s → d) kernel of rank s with the k-th (s → d) kernel of rank d. A collective with a
/// process group and a sequence number (PyTorch `Process Group Name` + `Seq`) is matched by
/// (group, sequence) among the ranks of its group (`Process Group Ranks`) that are present;
/// others by their order among the NCCL kernels of the same kind on the same stream. A collective
/// present on some of its participants only, a point-to-point kernel whose peer is not given, or
/// a kind (a (s → d) pair) whose counts differ between ranks, is left unlinked (a warning in
/// meta.job.warnings says which): an unlinked collective keeps its recorded duration, wait
/// included.
///
/// Clock offsets: the lowest rank is the reference (offset 0, whatever the order of the list);
/// each other rank's offset is the median, over the collectives it shares with an already aligned
/// rank, of (that rank's end − its own end), found breadth-first. Ranks that share no linked
/// collective with the reference's group, directly or through others (a job with a rank between
/// them missing), form groups of their own, each aligned from its lowest rank, which keeps its
/// recorded clock; a warning names each such group. The residual is what is left after alignment.
///
/// The traces are taken in rank order (`options.ranks`, else the ranks they record; in the order
/// given where a rank is unknown), so that any order of the same files gives the same trace.
/// The merged trace: ops of every rank in start order (after alignment), device = position in
/// rank order, host process ids made distinct per rank, correlation and external ids offset per
/// rank, strings re-interned; collectives.match gives each linked kernel its instance id.
/// meta.job describes the ranks (JobRank). The world size is the one the traces record, else
/// the number of traces or the highest rank + 1, whichever is more. Throws
/// emo::InputError(path, problem) for duplicated ranks, a rank outside the world size, a trace
/// with GPU ops on more than one device or with none, or `options.ranks` of the wrong length.
/// `options.ranks` overrides the ranks the traces record, with a warning for each one it changes.
Trace link_job(std::vector<Trace> traces, const LinkOptions& options = {});

/// In a linked trace: the position in meta.job.ranks of the rank op `row` belongs to (its GPU
/// for GPU ops, its process for host ops), or -1 in a trace of one process or when unknown.
std::int32_t job_rank_index(const Trace& t, std::uint32_t row) noexcept;

/// Parses `--ranks` text for `traces` traces: comma-separated non-negative integers ("0,1,2"),
/// or a range "0-7" (refused before it is built when it is not one rank per trace: "0-2147483647"
/// would take gigabytes). Throws emo::ArgumentError("--ranks", text, reason), also for empty text.
std::vector<std::int32_t> parse_ranks(const std::string& text, std::size_t traces);

}  // namespace emo::trace
