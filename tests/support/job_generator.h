// Synthetic multi-rank jobs derived from one real rank trace (issue 16; docs/synthetic-jobs.md).
//
// Real traces of every rank of one job are scarce. This generator takes one real rank trace and
// derives the N traces that an N-rank job of that rank's program would record: every rank runs
// the source's program, with its compute kernels jittered (and one straggler rank slower), its
// collectives coupled with those of the other ranks of its process group, and its host clock
// shifted by an offset. The outputs are SYNTHETIC: the program, the CPU side and every kernel
// name, size and base duration are the source's; the coupling, the jitter, the straggler, the
// offsets and the process groups are made up here.
//
// How the times are made (so that they are what the job would record if it ran):
//  1. The dependency graph of the source (graph::build_graph, whole trace) is the graph of every
//     rank: each rank is a copy of the source.
//  2. Node durations per rank: a compute kernel (a kernel that is not a collective) takes the
//     source's duration × (1 + jitter·z) (z standard normal, drawn from (seed, rank, op row)),
//     × (1 + straggler_slowdown) on the straggler; a collective takes its transfer time T
//     (transfer_ns); memcpy, memset and host calls keep the source's graph durations.
//  3. The N copies are replayed together (the longest-path replay of timing::replay, with the
//     graph's own lags), coupled at the collectives exactly as the joint graph of trace/job.h
//     couples them: a collective ends on every participant at (latest start among the
//     participants of its group) + T. A rank's recorded collective duration is thus its wait
//     for the last participant plus T.
//  4. Each rank's ops take their replayed start and end. Ops that are not graph nodes (framework
//     ops, annotations such as ProfilerStep#N, GPU annotations, sync records, calls on threads
//     the graph leaves out) move with their track: on each host thread (GPU stream) the node
//     timepoints form a monotone map from recorded to replayed time; a time between two of them
//     keeps its distance to the earlier one, capped at the later one. Nesting on a thread is
//     kept, so `--annotation ProfilerStep` windows still hold their calls. A track with no node
//     (a thread that never launches GPU work) keeps its recorded times; a sync record moves with
//     the call of its correlation id.
//  5. Every timestamp of rank r gets its clock offset offset_ns(r) added.
// Why T = the smallest recorded duration among the source's collectives of the same kernel
// name and message size: each source kernel includes its wait for its original peers; the
// smallest one is the closest the source comes to a wait-free transfer (an upper bound on it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/timestamp.h"
#include "graph/dep_graph.h"
#include "trace/trace.h"

namespace emo::testing {

/// The knobs of a synthetic job.
struct JobSpec {
  int ranks = 2;                     ///< World size N, ≥ 1.
  int straggler = -1;                ///< Rank whose compute kernels are slower, or -1 for none.
  double straggler_slowdown = 0.10;  ///< Its compute kernels take (1 + this) × longer; ≥ 0.
  double jitter = 0.01;              ///< Relative standard deviation of each compute kernel's
                                     ///< duration per rank, ≥ 0 (factor floored at 0).
  TimeNs max_offset_ns = 0;          ///< Host clock offsets drawn uniformly in ±this (ns), ≥ 0.
  std::uint64_t seed = 1;            ///< Jitter and offsets are drawn from it (same spec, same job).
  int group_size = 0;                ///< 0: one process group of all ranks; else consecutive
                                     ///< groups of this many ranks (the last may be smaller),
                                     ///< named "g<k>"; every collective runs within its group.
};

/// "ranks=N straggler=R slowdown=S jitter=J max_offset_ns=O group_size=G seed=X".
std::string describe(const JobSpec& spec);

/// A job derived from one source trace (see the file comment). Construction does the joint
/// replay of all ranks (O(N × (V + E)) time, 16·N·V bytes for the times); rank_trace() then makes
/// one rank's trace, so that a large job can be written one rank at a time.
class JobGenerator {
 public:
  /// Builds the source's graph and replays the job. `source` must outlive the generator.
  /// Throws std::invalid_argument for a spec out of range (ranks < 1, straggler ≥ ranks,
  /// negative slowdown, jitter or offset, group_size < 0) or a source with no GPU op.
  JobGenerator(const trace::Trace& source, const JobSpec& spec);

  /// The finished trace of rank `rank` (0 ≤ rank < ranks): meta.rank, meta.world_size, path
  /// "synthetic:<source path>#rank<r>", every collective kernel with group "g<k>", its ranks
  /// "[a, b, ...]", group size and a per-group sequence number (its index among the source's
  /// collectives, 0-based); all timestamps include offset_ns(rank). Throws std::out_of_range
  /// for a rank outside the job.
  trace::Trace rank_trace(int rank) const;

  /// Rank r's host clock offset, ns, added to all its timestamps: uniform in ±max_offset_ns.
  TimeNs offset_ns(int rank) const;
  /// Transfer time T of source collective row `c` (index into source.collectives), ns.
  TimeNs transfer_ns(std::size_t c) const { return transfer_ns_.at(c); }
  /// The job's span without the offsets: latest end − earliest start of any graph node, ns.
  TimeNs span_ns() const noexcept { return span_ns_; }
  const JobSpec& spec() const noexcept { return spec_; }
  /// The process group of `rank`: its index k (name "g<k>"), and its first and one-past-last rank.
  struct Group {
    int index, first, last;
  };
  Group group_of(int rank) const;

 private:
  TimeNs node_dur(std::uint32_t node, int rank) const;
  void replay();
  void write_times(trace::Trace& t, int rank) const;
  void label_collectives(trace::Trace& t, int rank) const;

  const trace::Trace& source_;
  JobSpec spec_;
  graph::DepGraph graph_;
  std::vector<std::uint8_t> node_class_;    ///< 0 other, 1 compute kernel, 2 collective.
  std::vector<TimeNs> node_transfer_;       ///< T of collective nodes (else 0).
  std::vector<TimeNs> transfer_ns_;         ///< T per source collective row.
  std::vector<TimeNs> time_;                ///< time_[tp * ranks + r]: replayed timepoints.
  TimeNs span_ns_ = 0;
};

/// Every rank's trace of the job (JobGenerator(source, spec).rank_trace(r) for r = 0 .. N-1).
/// Holds N copies of the source in memory: for large N write ranks one at a time instead.
/// Throws as JobGenerator.
std::vector<trace::Trace> generate_job(const trace::Trace& source, const JobSpec& spec);

}  // namespace emo::testing
