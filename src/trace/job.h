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

#include "trace/trace.h"

namespace emo::trace {

/// How to link.
struct LinkOptions {
  /// The rank of each trace, in the order given (`--ranks 0,1,...`); empty: from the traces
  /// (Kineto distributedInfo, nsys MPI/NCCL ranges).
  std::vector<std::int32_t> ranks;
};

/// Why `traces` are not the ranks of one job, or nullopt when they are: at least two traces,
/// every one with a known rank (from the trace or `options.ranks`), all of the same world size,
/// recorded within an hour of each other. Duplicated ranks are not a reason here: link_job
/// rejects them. `options.ranks`, when given, must have one entry per trace.
std::optional<std::string> not_one_job(const std::vector<Trace>& traces, const LinkOptions& options = {});

/// Links the traces of one job into one trace (the inputs are consumed).
///
/// Matching (docs/multi-rank.md): a collective with a process group and a sequence number
/// (PyTorch `Process Group Name` + `Seq`) is matched by (group, sequence) among the ranks of its
/// group (`Process Group Ranks`) that are present; others by their order among the NCCL kernels
/// of the same kind on the same stream. A collective present on some of its participants only,
/// or a kind whose counts differ between ranks, is left unlinked (a warning in meta.job.warnings
/// says which): an unlinked collective keeps its recorded duration, wait included.
///
/// Clock offsets: rank 0 of the list is the reference; each other rank's offset is the median,
/// over the collectives it shares with an already aligned rank, of (that rank's end − its own
/// end), found breadth-first. The residual is what is left after alignment.
///
/// The merged trace: ops of every rank in start order (after alignment), device = position in
/// the list, host process ids made distinct per rank, correlation and external ids offset per
/// rank, strings re-interned; collectives.match gives each linked kernel its instance id.
/// meta.job describes the ranks (JobRank). Throws emo::InputError(path, problem) for
/// duplicated ranks, a rank outside the world size, a trace with GPU ops on more than one
/// device, or `options.ranks` of the wrong length.
Trace link_job(std::vector<Trace> traces, const LinkOptions& options = {});

/// In a linked trace: the position in meta.job.ranks of the rank op `row` belongs to (its GPU
/// for GPU ops, its process for host ops), or -1 in a trace of one process or when unknown.
std::int32_t job_rank_index(const Trace& t, std::uint32_t row) noexcept;

/// Parses `--ranks` text: comma-separated non-negative integers ("0,1,2"), or a range "0-7".
/// Throws emo::ArgumentError("--ranks", text, reason).
std::vector<std::int32_t> parse_ranks(const std::string& text);

}  // namespace emo::trace
