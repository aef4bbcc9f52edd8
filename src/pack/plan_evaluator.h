// Incremental what-if timing of a plan on the pack graph: "what is the makespan if this one
// pack ran slower?" without replaying the whole graph. Used by the optimiser's exact local
// search (opt::polish, src/opt/pack_search.cpp), which asks it for every pack at every step.
//
// Method: the plan's schedule E (earliest times, one PackGraph::evaluate at construction) and
// its latest times L (backward longest path from the makespan's end, as timing::slack) are kept.
// A slower timing of pack p raises only p's *changed edges*: its duration edge S_p -> E_p and
// its port edges u -> v, each to a new weight w'. With E'(u) the new time of each changed edge's
// source, the new end is exactly
//     end' = end + max(0, max over changed edges of E'(u) + w' - L(v)):
// it is at least that (E'(v) >= E'(u) + w', and a path of length end - L(v) leaves v), and at
// most that (by induction in topological order, E' <= L + that amount everywhere: releases and
// unchanged edges already fit L, and each changed edge fits by the choice of the amount).
// A source moves only when it follows one of p's changed targets in topological order (a
// pack whose own exits feed its later entries, through a host sync); then try_slower()
// propagates the rise forward from the targets through the timepoints that reach a source,
// visiting moved ones only, and remembers the sources' new times per timing tried until an
// apply_slower() changes a timepoint up to the last source. Otherwise E'(u) = E(u) and a try is
// O(p's port edges): one pass over E(u) - L(v) kept per changed edge. With a limit, the rise at
// the old source times (a lower bound) rejects a try whose makespan passes it without
// propagating. apply_slower() updates E forward from p's changed targets and L backward from its
// changed sources, through the timepoints that change only (O(V + E) at most). Internally the
// graph is renumbered by topological rank (dropped edges left out), so that every pass walks
// memory forward, and the pending timepoints of a pass are a bitset over ranks.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "pack/pack_graph.h"

namespace emo::pack {

class PlanEvaluator {
 public:
  /// Evaluates `times` (one per pack, from PackGraph::pack_time) on `pg`, which must outlive
  /// this object. Throws std::invalid_argument as PackGraph::evaluate does. O(V + E).
  PlanEvaluator(const PackGraph& pg, std::vector<PackTime> times);

  /// The plan's makespan (ns) and schedule (its last_node: the highest node ending at end_ns).
  TimeNs makespan_ns() const noexcept { return schedule_.makespan_ns; }
  const timing::Schedule& schedule() const noexcept { return schedule_; }
  const std::vector<PackTime>& times() const noexcept { return times_; }

  /// The makespan (ns) if pack p took timing `t` instead, the rest of the plan unchanged. `t`
  /// must be no faster than the current timing (dur_ns and every port lag >= the current ones:
  /// a lower clock); throws std::invalid_argument otherwise or on a bad pack index / size. With
  /// a `limit_ns`, a makespan above it may be answered by any value > limit_ns (a lower bound
  /// of it); a makespan within it is always exact. O(p's port edges), plus the local
  /// propagation described above for a pack that feeds itself.
  TimeNs try_slower(std::uint32_t p, const PackTime& t, TimeNs limit_ns = INT64_MAX) const;

  /// True when `t` is no faster than pack p's current timing anywhere (try_slower's
  /// precondition).
  bool is_slower(std::uint32_t p, const PackTime& t) const;

  /// try_slower(p, t, limit_ns) when is_slower(p, t), else nullopt (a model whose time is not
  /// monotone in the clock: not an error here), checking `t` once where the two calls check it
  /// twice (the local search asks this of every pack at every step). Throws
  /// std::invalid_argument on a bad pack index or port-lag count only.
  std::optional<TimeNs> try_if_slower(std::uint32_t p, const PackTime& t, TimeNs limit_ns = INT64_MAX) const;

  /// Makes that change (same preconditions). Visits only the timepoints whose earliest time or
  /// tail changes, and their neighbours: O(V + E) at most.
  void apply_slower(std::uint32_t p, PackTime t);

  /// Latest time (ns, absolute like schedule().time) of each timepoint that keeps the plan's
  /// end: size 2 × nodes, by timepoint. O(V).
  std::vector<TimeNs> latest() const;

 private:
  /// The rank-space graph, slots and schedule (members below) from pg_, times_, schedule_.
  void build_rank_graph();
  /// fb_first_, fb_last_, reach_begin_, reaches_. O(V + E) when packs do not overlap.
  void find_feedback();
  /// tail_ from in_lag_. O(V + E).
  void compute_tails();
  /// Throws std::invalid_argument unless `t` is a valid slower timing of pack p.
  void check_slower(std::uint32_t p, const PackTime& t) const;
  /// Throws std::invalid_argument on a bad pack index or port-lag count.
  void check_shape(std::uint32_t p, const PackTime& t) const;
  /// try_slower's answer for a `t` already checked.
  TimeNs try_checked(std::uint32_t p, const PackTime& t, TimeNs limit_ns) const;
  /// Propagates the new timing `t` of pack p (one that feeds itself) through the ranks that
  /// reach a source of its changed edges: the moved ranks' times into scratch_ (listed in
  /// touched_). The caller consumes and clears them.
  void propagate(std::uint32_t p, const PackTime& t) const;
  void clear_scratch() const;
  /// For a pack that feeds itself: the changed-edge slots whose source moves under `t`, with
  /// its new time E' (absolute ns); from source_cache_, else by propagate().
  const std::vector<std::pair<std::uint32_t, TimeNs>>& moved_sources(std::uint32_t p, const PackTime& t) const;
  /// slot_base_ from time_ and tail_. O(slots).
  void compute_slot_base();
  /// The passes of propagate() and apply_slower() over the ranks whose time (kForward, ascending
  /// rank: from pack p's changed targets) or tail (backward, descending: from its changed
  /// sources) may change, among those `keep(r)` accepts: `visit(r)` recomputes rank r and returns
  /// whether it changed; only then are r's successors (forward) or predecessors (backward)
  /// visited. Uses pending_, left clear.
  template <bool kForward, typename Keep, typename Visit>
  void visit_changed(std::uint32_t p, Keep&& keep, Visit&& visit) const;
  /// max(0, max over pack p's changed edges u -> v under `t` of E(u) + w' - L(v)) (ns).
  TimeNs rise_at_old_times(std::uint32_t p, const PackTime& t) const;

  const PackGraph& pg_;
  std::vector<PackTime> times_;
  timing::Schedule schedule_;  // by timepoint
  // The graph by topological rank (rank r is timepoint pg_.g.topo[r]). In-edges of rank r:
  // [in_begin_[r], in_begin_[r + 1]), an end's duration edge (from its start) first, dropped
  // edges left out; each with its source rank, lag under times_ and changed-edge slot.
  std::vector<std::uint32_t> in_begin_, in_from_, in_slot_;
  std::vector<TimeNs> in_lag_;
  std::vector<std::uint32_t> out_begin_, out_to_, out_edge_;  // out-edges of rank r: target
                                                              // rank, in-edge index
  std::vector<TimeNs> floor_;     // per rank: a start's release, else INT64_MIN
  std::vector<TimeNs> fallback_;  // per rank: its recorded start, when nothing constrains it
  std::vector<TimeNs> time_;      // per rank: E under times_
  std::vector<TimeNs> tail_;      // per rank: longest path to any end under times_ (>= 0);
                                  // L = schedule_.end_ns - tail_
  // Changed edges of pack p: slots [slot_begin_[p], slot_begin_[p + 1]), its duration edge then
  // its port edges in PackGraph::pe_begin order: source and target ranks, in-edge index
  // (UINT32_MAX for a dropped edge).
  std::vector<std::uint32_t> slot_begin_, slot_from_, slot_to_, slot_edge_;
  std::vector<TimeNs> slot_base_;  // per slot: E(source) + tail(target), contiguous per pack
  // Per pack whose changed edges' sources may move (one follows a changed target in rank):
  // the ranks [fb_first_, fb_last_] from its first target to its last source, and which of
  // them reach a source (reaches_[reach_begin_[p] + rank - fb_first_]). fb_last_ is
  // UINT32_MAX for the other packs.
  std::vector<std::uint32_t> fb_first_, fb_last_;
  std::vector<std::size_t> reach_begin_;
  std::vector<std::uint8_t> reaches_;
  // Per pack that feeds itself, the last few timings tried and their moved sources: they
  // depend only on the ranks up to fb_last_ (their times and in-edges), so they hold until
  // an apply_slower changes one of those (the polish tries the same 4 timings per pack in
  // every round).
  struct SourceTimes {
    PackTime t;
    std::vector<std::pair<std::uint32_t, TimeNs>> moved;  // (slot, E' of its source)
  };
  static constexpr std::size_t kSourceCacheSize = 8;
  mutable std::vector<std::vector<SourceTimes>> source_cache_;
  mutable std::vector<TimeNs> scratch_;        // per rank: moved time, or INT64_MIN
  mutable std::vector<std::uint32_t> touched_;  // ranks with a scratch_ time
  mutable std::vector<std::uint64_t> pending_;  // bitset of ranks to visit
};

}  // namespace emo::pack
