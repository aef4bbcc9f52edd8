// The pack graph (DESIGN §3): the dependency graph with each pack contracted into one node.
//
// Nodes: pack p is node p (p < packs); every host node of the op graph (API calls: CPU work
// and the waits it records) stays a fixed-duration node P + h. Each node has a start and an end
// timepoint as in graph::DepGraph, and the pack graph *is* a graph::DepGraph (`g`), so
// timing::replay, timing::slack and timing::critical_path work on it unchanged.
//
// Contraction. An op-graph edge u -> v (lag l) whose ends are not in the same pack becomes
// pg(u) -> pg(v) with lag l + adj(u) - adj(v), where a GPU op's start maps to its pack's start
// with adj = its recorded offset from that start (>= 0), its end to its pack's end with adj =
// its recorded end - the pack's recorded end (<= 0), and host timepoints map to themselves
// (adj = 0). Parallel edges keep the largest lag. Replaying the pack graph with the packs'
// recorded durations therefore reproduces every recorded time.
//
// A pack's duration at a scale factor f (all its ops' durations x f, rounded to ns) follows
// its internal model: the pack's ops with the edges among them, replayed from the pack's start;
// an op whose recorded start no pack-internal edge explains (an outside dependency bound it)
// is held at its recorded offset from the pack's start. See docs/packing.md for why this is
// exact where the packer put boundaries, and where it is not.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/dep_graph.h"
#include "pack/packer.h"
#include "timing/timing.h"

namespace emo::pack {

/// An op duration scaled by `factor`, rounded to the nearest ns. Both the op graph and the pack
/// models scale with this function, so that they compare exactly.
TimeNs scale_ns(TimeNs dur_ns, double factor) noexcept;

/// No anchored part (PackTime::anchored_ns).
inline constexpr TimeNs kNoAnchoredPart = INT64_MIN;

/// A pack's timing at one clock (one scale factor): its end is
///   E = max(S + dur_ns, A + anchored_ns)
/// where S is the pack's start and A the time its anchor would start it (the anchor
/// timepoint + the lag of its edge into the pack's earliest op). dur_ns covers the work that
/// waits for the pack's start; anchored_ns the work paced by the anchor (ops launched from the
/// same CPU chain, Packing::follows_anchor). A launch-paced pack that starts late (S > A)
/// catches up, as the op graph does, instead of shifting all its work by the delay.
struct PackTime {
  TimeNs dur_ns = 0;
  TimeNs anchored_ns = kNoAnchoredPart;
};

/// The contracted graph and the packs' internal models.
struct PackGraph {
  graph::DepGraph g;                   ///< Nodes: packs, then host nodes. g.op[p] is the trace
                                       ///< row of pack p's earliest op; g.dur[p] its dur_ns at
                                       ///< factor 1; g.gpu[p] = 1. The anchor edges (below)
                                       ///< carry anchored_ns at factor 1, so timing::replay,
                                       ///< slack and critical_path on g are the recorded case.
  std::uint32_t packs = 0;             ///< P.
  std::vector<std::uint32_t> host_node;  ///< Pack-graph node P + h is op-graph node host_node[h].
  std::int64_t cycle_edges = 0;        ///< Edges dropped because contraction closed a cycle.
  std::vector<std::uint32_t> anchor_edge;  ///< Per pack: index (into g's edges) of the edge
                                           ///< anchor -> E(pack), or UINT32_MAX.
  std::vector<TimeNs> anchor_base_lag;     ///< Its lag without anchored_ns.

  // Internal models, in CSR form: pack p's member timepoints (its ops' starts and ends, in the
  // op graph's topological order) are m_tp[m_begin[p] .. m_begin[p + 1]).
  std::vector<std::uint32_t> m_begin;    ///< size packs + 1
  std::vector<std::uint32_t> m_tp;       ///< Op-graph timepoint.
  std::vector<std::int32_t> m_start;     ///< For an end: its start's member index (global); -1.
  std::vector<TimeNs> m_dur;             ///< For an end: the op's intrinsic duration (ns).
  std::vector<TimeNs> m_anchor;          ///< Recorded offset from the pack's start at which an
                                         ///< outside dependency holds it (see m_anchor_kind).
  std::vector<std::uint8_t> m_anchor_kind;  ///< 0: none; bit 1: held to the pack's start;
                                            ///< bit 2: held to the pack's anchor.
  std::vector<std::uint32_t> m_in_begin; ///< Internal edges into member m:
  std::vector<std::uint32_t> m_in_from;  ///<   from member m_in_from[k] (global index),
  std::vector<TimeNs> m_in_lag;          ///<   with lag m_in_lag[k].
  std::vector<std::uint32_t> m_anchored_ops;  ///< Per pack: ops held by an outside dependency
                                              ///< at an offset > 0 (start or anchor).

  std::size_t nodes() const noexcept { return g.nodes(); }

  /// Pack p's timing with its ops' durations scaled by `factor` (> 0): its internal model
  /// replayed, O(ops of the pack). At factor 1, max(S + dur_ns, A + anchored_ns) is the
  /// recorded end. anchored_ns is kNoAnchoredPart when no op follows the anchor; it counts
  /// only for packs with an anchor edge (anchor_edge[p] != UINT32_MAX).
  PackTime pack_time(std::uint32_t pack, double factor) const;

  /// Every pack's timing at its factor: size packs. Throws std::invalid_argument when
  /// factors.size() != packs or a factor is not finite and > 0.
  std::vector<PackTime> pack_times(std::span<const double> factors) const;

  /// The pack graph replayed with the packs' timings `times` (size packs) and the host nodes'
  /// own durations: s.start(p), s.end(p) are pack p's times, s.makespan_ns the makespan.
  /// O(V + E) of the pack graph. Throws std::invalid_argument on a size mismatch.
  timing::Schedule evaluate(std::span<const PackTime> times) const;

  /// evaluate(pack_times(factors)).
  timing::Schedule evaluate_factors(std::span<const double> factors) const;

  /// Bytes held, for memory accounting.
  std::size_t memory_bytes() const noexcept;
};

/// Contracts `g` by `packing` (from pack_timeline on the same graph). O(V + E).
PackGraph contract(const graph::DepGraph& g, const Packing& packing);

/// The op graph's node durations with every GPU op of pack p scaled by factors[p] (scale_ns),
/// host nodes unchanged: the op-graph side of the exactness check. Throws std::invalid_argument
/// when factors.size() != packs.
std::vector<TimeNs> scaled_op_durations(const graph::DepGraph& g, const Packing& packing,
                                        std::span<const double> factors);

/// One exactness case: the op graph and the pack graph at the same factors.
struct ContractionCase {
  std::string label;             ///< "x1.1" (uniform) or "per-pack #3".
  TimeNs op_makespan_ns = 0;     ///< timing::replay of the op graph, scaled_op_durations.
  TimeNs pack_makespan_ns = 0;   ///< PackGraph::evaluate_factors.
  double error = 0.0;            ///< |pack - op| / op (0 when op == 0).
};

/// The exactness figures of a contraction.
struct ContractionReport {
  std::vector<ContractionCase> uniform;   ///< One case per uniform factor.
  std::vector<ContractionCase> per_pack;  ///< Random factor per pack, per case.
  double uniform_error = 0.0;             ///< Max error over `uniform`.
  double per_pack_error = 0.0;            ///< Max error over `per_pack`.
  double contraction_error = 0.0;         ///< Max of both.
};

struct ContractionOptions {
  std::vector<double> uniform_factors{1.0, 1.1, 1.3, 2.0};
  std::vector<double> per_pack_factors{1.0, 1.1, 1.3, 2.0};  ///< Drawn from, per pack.
  int per_pack_cases = 8;
  std::uint64_t seed = 1;  ///< Same seed, same cases.
};

/// Compares the pack graph's makespan with the op graph's (every op of a pack scaled by that
/// pack's factor, timing::replay) for uniform factors and for random per-pack factors.
/// O(cases x (V + E)).
ContractionReport check_contraction(const graph::DepGraph& g, const Packing& packing,
                                    const PackGraph& pg, const ContractionOptions& options = {});

}  // namespace emo::pack
