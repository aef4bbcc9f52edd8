// A rank's graph reduced to its collective ports, and a job timed from its ranks' reductions
// (docs/multi-rank.md, "The reduced cross-rank problem"; issue 16).
//
// Ranks of a job are coupled only through their linked collectives: collective c's transfer
// starts when its last participant arrives, and ends on every participant together. So what the
// job's timing needs of a rank is small: for each of its ports (linked collective kernels) when
// the rank arrives there, as a function of when the earlier collectives ended. In max-plus terms,
// with E(q) the end of port q (decided by the job) and S(p) the start of port p (the rank's
// arrival):
//
//   S(p)     = max( R(p),   max_q E(q) + D(q→p) )       R: the rank's own sources (releases)
//   end of r = max( R(end), max_q E(q) + D(q→end), max_p E(p) )
//
// where D(q→p) is the longest path in the rank's graph from E(q) to S(p) that passes through no
// other port's end. reduce_to_ports computes R and D with one forward pass per port (O(ports ×
// (V + E)), each pass starting at its port's end), and keeps only the lags no chain through other
// ports already implies: D(q→p) is dropped when some path q → m → ... → p through ports, each
// port m counted with its own duration, is at least as long (E(m) ≥ S(m) + dur(m), so the chain
// bounds S(p) from below as tightly). A rank whose collectives are a chain keeps O(ports) lags.
//
// Passes that stop where a chain takes over. The passes run latest port end first, so when the
// pass from E(q) reaches the start of a later port m (at d = D(q→m)), m's own pass is done: a
// timepoint x the pass reaches at v with v ≤ d + dur(m) + (m's pass's value at x) lies only on
// paths that the chain q → m → … bounds at least as tightly (E(m) ≥ S(m) + dur(m)), so the pass
// drops x and does not follow its arcs. The lags kept are those of the full passes (a path
// through a dropped x is never longer than the chain, so the full pass would have pruned it), and
// a pass stops soon after the next ports: about O(V + E) per rank in all where ports are spread
// along it, instead of O(ports × (V + E)). Measured in bench/ (docs/multi-rank.md, "How far it scales").
//
// time_job composes the ranks' reductions: instances in topological order; an instance's
// transfer starts at the latest arrival of its participants (on the job's clock: each rank's
// offset added) and ends after the longest of its participants' durations. Exact for the job's
// graph built from the ranks' graphs so coupled (tests/timing/ports_test.cpp checks it against
// the full replay of such a graph).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graph/dep_graph.h"

namespace emo::timing {

/// `to` of a PortLag that constrains the rank's end rather than a port.
inline constexpr std::uint32_t kRankEnd = UINT32_MAX;

/// A lag between ports of one rank: S(to) ≥ E(from) + lag_ns (to = kRankEnd: the rank's end ≥ it).
/// With into_end, the constraint is on E(to) (an edge into the port kernel's end; rare).
struct PortLag {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  TimeNs lag_ns = 0;
  bool into_end = false;
};

/// One rank reduced to its ports (see the file comment). Times on the rank's own clock (ns).
struct PortGraph {
  std::vector<TimeNs> release_ns;        ///< Per port: R(p), INT64_MIN when only port ends constrain it.
  std::vector<TimeNs> end_release_ns;    ///< Per port: the rank's own constraint on E(p) (INT64_MIN: none).
  std::vector<TimeNs> dur_ns;            ///< Per port: its duration (the transfer, as run).
  TimeNs end_release_ns_rank = INT64_MIN;  ///< R(end): the latest node end reached from no port's end.
  TimeNs window_start_ns = 0;            ///< The rank's graph's window start.
  std::vector<PortLag> lags;             ///< The lags kept, by `from` then `to`.
};

/// Reduces `g` with node durations `dur` (size g.nodes(), ns) to the ports `port_node` (nodes of
/// g, distinct): the port's start is the rank's arrival, its end is left to the job (no S → E
/// path through a port). Releases and lags as graph::longest_path (timing::replay) reads them;
/// a node whose every constraint was dropped keeps its recorded start, as there. Throws
/// std::invalid_argument for a size mismatch or a port outside g. O(ports × (V + E) + lags) at worst;
/// far less where a pass stops where a chain takes over (file comment).
PortGraph reduce_to_ports(const graph::DepGraph& g, std::span<const TimeNs> dur, std::span<const std::uint32_t> port_node);

/// One rank of a job for time_job: its reduction, the instance each port belongs to (0 ..
/// instances − 1) and its clock offset (added to its times to put them on the job's clock).
struct RankPorts {
  const PortGraph* graph = nullptr;
  std::span<const std::int64_t> instance;
  TimeNs offset_ns = 0;
};

/// The job's timing from its ranks' reductions (job clock, ns).
struct JobTiming {
  std::vector<TimeNs> transfer_start_ns;  ///< Per instance: its last participant's arrival.
  std::vector<TimeNs> end_ns;             ///< Per instance: when it ends on every participant.
  std::vector<std::vector<TimeNs>> arrival_ns;  ///< Per rank, per port: the rank's arrival S(p).
  std::vector<TimeNs> rank_end_ns;        ///< Per rank: its last node's end.
  TimeNs start_ns = 0;                    ///< The job's window start: min over ranks.
  TimeNs makespan_ns = 0;                 ///< max rank end − start_ns.
  std::int64_t cycle_breaks = 0;          ///< Instances timed before all their predecessors (a cycle
                                          ///< across ranks: a mismatched link), each from those done.
  /// Per rank: Σ over its ports of (transfer start − own arrival), ns ≥ 0: its slack before collectives.
  std::vector<TimeNs> wait_ns;
};

/// Times a job of `ranks` whose ports form `instances` collective instances (each instance's
/// participants are the ports naming it). A cycle among instances (ranks disagreeing on the
/// order) is broken by timing the blocked instance with the earliest arrival known from its
/// finished predecessors, ignoring the others (counted in cycle_breaks). Throws
/// std::invalid_argument for an instance id out of range or a port count that differs from the
/// graph's. O(Σ ports + Σ lags + instances × cycle breaks).
JobTiming time_job(std::span<const RankPorts> ranks, std::size_t instances);

}  // namespace emo::timing

namespace emo::timing {

/// One stretch of a job's critical path (job_critical_path): rank `rank` (index into the ranks
/// given) holds the path over [start_ns, end_ns] (job clock, ns). A stretch starts at the end of
/// the collective instance `from_instance` (−1: at the rank's own window start, where the path
/// begins) and ends where instance `to_instance` ends (−1: at the rank's end, the job's end); its
/// last collective's transfer is part of it when the rank was that instance's last arrival.
struct JobPathStretch {
  std::uint32_t rank = 0;
  TimeNs start_ns = 0, end_ns = 0;
  std::int64_t from_instance = -1;
  std::int64_t to_instance = -1;
};

/// The critical path of a job timed by time_job(ranks, instances) = `jt`, by rank, in time order,
/// found by backtracking from the job's end over the reductions' constraints that hold with
/// equality (exact integers):
///
///  1. The job ends at the latest rank end (ties: the lowest rank index), r. Its end is bound by
///     one of: a port's instance ending there (go to 2 with that instance), a lag q → end
///     (E(q) + lag: the stretch on r starts at E(q); go to 2 with q's instance), its own release
///     (the stretch starts at r's window start: the path begins).
///  2. Instance c: its transfer starts at its last participant's arrival, so the path goes to that
///     participant (ties: the rank the path is on, then the lowest index), r', whose stretch ends
///     at E(c) (it waited for no one). Its arrival S(p) is bound by a lag q → p (E(q) + lag: the
///     stretch starts at E(q); repeat 2 with q's instance) or by its release (it starts at r''s
///     window start: the path begins). An instance whose end its transfer does not set (a
///     participant's own constraint on its end, PortGraph::end_release_ns or an into-end lag) is
///     followed the same way from that participant.
///
/// Where a lag and a release bind together, the lag is taken (the path goes on through the
/// collectives). Consecutive stretches on one rank are merged. A broken cycle (jt.cycle_breaks)
/// can make an instance bind itself: the backtrack stops at an instance it has seen. Times are
/// on the job's clock (each rank's offset added), as jt's.
///
/// Example (tests/timing/job_path_test.cpp): ranks A, B, C; A arrives at c0 last (100), c0 ends
/// at 120; B arrives at c1 at 120 + 80 = 200, last, c1 ends at 210; C ends at 210 + 90 = 300, the
/// job's end: stretches A [0, 120], B [120, 210], C [210, 300].
/// O(Σ ports + Σ lags) per instance on the path. Throws std::invalid_argument when `jt` is not
/// time_job's on these ranks (sizes differ).
std::vector<JobPathStretch> job_critical_path(std::span<const RankPorts> ranks, std::size_t instances, const JobTiming& jt);

/// The rank's timepoints (graph::DepGraph::start_tp / end_tp; size 2 × g.nodes(), ns on the rank's
/// own clock) when its nodes take `dur` (size g.nodes()) and each port `port_node[p]` ends at
/// `port_end_ns[p]` — the rank's side of a job timed from the reductions (reduce_to_ports of the
/// same g, dur and ports; the job's instance ends minus the rank's offset): every other timepoint
/// as graph::longest_path takes it, so each port's start is the arrival time_job computed. A
/// port end given as INT64_MIN is left to its start + duration. O(V + E). Throws
/// std::invalid_argument on a size mismatch or a port outside g.
std::vector<TimeNs> time_with_port_ends(const graph::DepGraph& g, std::span<const TimeNs> dur,
                                        std::span<const std::uint32_t> port_node, std::span<const TimeNs> port_end_ns);

}  // namespace emo::timing
