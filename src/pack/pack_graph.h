// The pack graph (docs/design.md §3): the dependency graph with each pack contracted into one node.
//
// Nodes: pack p is node p (p < packs), its start S_p the start of its first op (the earliest
// recorded start) and its end E_p the end of its last; every host node of the op graph
// (API calls: CPU work and the waits it records) stays a fixed-duration node P + h; then *port
// nodes*, zero-duration nodes that stand for one op timepoint inside a pack where the pack
// meets the rest of the graph away from its start and end (below). The pack graph *is* a
// graph::DepGraph (`g`), so timing::replay, timing::slack and timing::critical_path work on it
// unchanged at the recorded timings.
//
// Contraction (exact, by max-plus linearity). Inside a pack, its ops and the edges among them
// are its internal model; an op's time is the max over everything that enters the pack of
// (that source's time + the longest internal path from where it enters to the op), each op's
// duration scaled by the pack's factor. So with L_f(v -> x) the longest internal path at
// factor f from member timepoint v to member x (or to the pack's end, the latest op end):
//   * an edge u -> first op's start (lag l) becomes u -> S_p (lag l); the pack's duration at
//     f is L_f(first op's start -> pack end);
//   * an edge u -> v into any other op timepoint becomes a *port edge* u -> E_p with lag
//     l + L_f(v -> end) (and u -> X with l + L_f(v -> x) for each exit port x that v reaches);
//   * an op timepoint x with an edge leaving the pack is an *exit*: the edge leaves from E_p
//     when x is always the pack's end (every op end reaches x), else from an exit port node X
//     whose start takes a port edge from every source that reaches x (S_p included);
//   * an op with a pinned start (release r) other than the first op gets a release port node
//     (release r) with port edges to the targets it reaches;
//   * an entry reaches an exit port directly only through paths that meet no other exit port;
//     other paths go through the port edges between exit ports (t_lo below).
// Port edges take their lags from the pack's factor (PackTime::port_lags_ns); every other edge
// is fixed. Parallel fixed edges keep the largest lag. Replaying the pack graph with the packs'
// recorded timings reproduces every recorded time, and at any factors it reproduces the op
// graph's times of every pack's start, end and exits: the contraction error is 0 up to the
// ns rounding of scaled op durations (tests). The price is a pack graph with one port edge per
// edge entering a pack (and per exit it reaches): docs/packing.md gives the sizes.
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

/// A pack's timing at one clock (one scale factor of its ops' durations).
struct PackTime {
  TimeNs dur_ns = 0;                  ///< From its start (first op's start) to its end, through
                                      ///< the work that waits for the first op.
  std::vector<TimeNs> port_lags_ns;   ///< Lags of its port edges (PackGraph::pe_begin order).
};

/// True when `t` is no faster than `from` anywhere: the same number of port lags, its duration
/// and every lag at least `from`'s (a timing at a lower clock of the same pack). O(port edges),
/// branch-free over the lags (a compared timing is almost always no faster).
bool no_faster(const PackTime& t, const PackTime& from) noexcept;

/// Kind of a port node.
enum class PortKind : std::uint8_t {
  kExit,     ///< An op timepoint inside the pack with an edge leaving it.
  kRelease,  ///< The pinned start (release time) of an op that is not the pack's first.
};

/// The contracted graph and the packs' internal models.
struct PackGraph {
  graph::DepGraph g;                   ///< Nodes: packs, host nodes, port nodes. g.op[p] is
                                       ///< the trace row of pack p's first op; g.dur[p] its
                                       ///< dur_ns at factor 1; g.gpu[p] = 1; port edges carry
                                       ///< their lags at factor 1, so timing::replay, slack
                                       ///< and critical_path on g are the recorded case.
  std::uint32_t packs = 0;             ///< P.
  std::vector<std::uint32_t> host_node;  ///< Pack-graph node P + h is op-graph node host_node[h].
  std::int64_t cycle_edges = 0;        ///< Edges dropped to break cycles (0 unless the op
                                       ///< graph's own edges contradict each other).

  // Port nodes: node P + host_node.size() + i.
  std::vector<std::uint32_t> port_pack;    ///< Its pack.
  std::vector<std::uint32_t> port_member;  ///< The member timepoint it stands for (global).
  std::vector<PortKind> port_kind;

  // Internal models, in CSR form: pack p's member timepoints (its ops' starts and ends, in the
  // op graph's topological order) are m_tp[m_begin[p] .. m_begin[p + 1]).
  std::vector<std::uint32_t> m_begin;    ///< size packs + 1
  std::vector<std::uint32_t> m_first;    ///< Per pack: the member of its first op's start (the
                                         ///< earliest recorded start; no member binds it).
  std::vector<std::uint32_t> m_tp;       ///< Op-graph timepoint.
  std::vector<std::int32_t> m_start;     ///< For an end: its start's member index (global); -1.
  std::vector<TimeNs> m_dur;             ///< For an end: the op's intrinsic duration (ns).
  std::vector<std::uint32_t> m_in_begin; ///< Internal edges into member m:
  std::vector<std::uint32_t> m_in_from;  ///<   from member m_in_from[k] (global index),
  std::vector<TimeNs> m_in_lag;          ///<   with lag m_in_lag[k].
  std::vector<std::uint8_t> m_exit;      ///< 1 for a member with an exit port.

  // Targets of pack p: t_member[t_begin[p] .. t_begin[p + 1]); the first is the pack's end
  // (UINT32_MAX), the others its exit port members (global member index) in topological order.
  // An exit port's port edges come from the entries in its *region* — the members with a path
  // to it that meets no other exit port — and from the other exit ports on the region's border,
  // with lags the longest paths inside the region (pack_graph.cpp, emit_ports; exact, and
  // O(entries + exits) edges on a stream with a host sync after every op instead of
  // O(entries x exits)). t_lo is the lowest member of the region (of the pack for the end).
  std::vector<std::uint32_t> t_begin;
  std::vector<std::uint32_t> t_member;
  std::vector<std::uint32_t> t_lo;

  // Port edges of pack p: pe_begin[p] .. pe_begin[p + 1), sorted by target. Lag at factor f:
  // pe_base[k] + L_f(pe_entry[k] -> target pe_target[k]).
  std::vector<std::uint32_t> pe_begin;   ///< size packs + 1
  std::vector<std::uint32_t> pe_edge;    ///< Index into g's edges (in-CSR).
  std::vector<std::uint32_t> pe_entry;   ///< Member where the source enters (global).
  std::vector<std::uint32_t> pe_target;  ///< Index into t_member (global).
  std::vector<TimeNs> pe_base;           ///< Lag of the op-graph edge (0 for S_p and releases).
  std::vector<std::uint32_t> edge_port;  ///< Per g edge: its port edge index, or UINT32_MAX.

  std::size_t nodes() const noexcept { return g.nodes(); }
  std::size_t port_edges() const noexcept { return pe_entry.size(); }

  /// Pack p's timing with its ops' durations scaled by `factor` (> 0): one backward
  /// longest-path pass over its internal model per target (over [t_lo, target]), O(members x
  /// targets of the pack) at worst, about O(members) when host syncs follow ops in order.
  PackTime pack_time(std::uint32_t pack, double factor) const;

  /// Every pack's timing at its factor: size packs. Throws std::invalid_argument when
  /// factors.size() != packs or a factor is not finite and > 0.
  std::vector<PackTime> pack_times(std::span<const double> factors) const;

  /// The pack graph replayed with the packs' timings `times` (size packs; each from pack_time
  /// of that pack) and the host nodes' own durations: s.start(p), s.end(p) are pack p's times,
  /// s.makespan_ns the makespan. O(V + E) of the pack graph. Throws std::invalid_argument on a
  /// size mismatch.
  timing::Schedule evaluate(std::span<const PackTime> times) const;
  /// The same with each pack's timing by pointer (none null): no copy of the timings (the
  /// optimiser's exact evaluations of a choice among cached timings).
  timing::Schedule evaluate(std::span<const PackTime* const> times) const;

  /// evaluate(pack_times(factors)).
  timing::Schedule evaluate_factors(std::span<const double> factors) const;

  /// A copy of g with the packs' durations and port-edge lags of `times`: timing::slack and
  /// timing::critical_path of a what-if schedule. Throws std::invalid_argument on a size
  /// mismatch.
  graph::DepGraph graph_at(std::span<const PackTime> times) const;

  /// Bytes held, for memory accounting.
  std::size_t memory_bytes() const noexcept;
};

/// Per pack, how much later the work that others wait for may end: the least slack (timing::
/// latest_times on `at` − the time in `s`, ≥ 0) over the pack's end and its exit ports, where `at`
/// is pg.graph_at(times) and `s` its schedule (pg.evaluate(times)). Not timing::slack's value of
/// the pack node alone: work leaves a pack at its exit ports too, so a pack whose end has slack may
/// hold an op on the critical path. Throws std::invalid_argument when `at` or `s` is not of `pg`'s
/// size. O(V + E).
std::vector<TimeNs> pack_slack(const PackGraph& pg, const graph::DepGraph& at, const timing::Schedule& s);

/// Contracts `g` by `packing` (from pack_timeline on the same graph). O(V + E + sum over packs
/// of members x targets). Throws std::invalid_argument when the packing is not of `g` or leaves
/// a GPU op out.
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
