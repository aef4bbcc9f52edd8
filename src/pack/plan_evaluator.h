// Incremental what-if timing of a plan on the pack graph: "what is the makespan if this one
// pack ran slower?" without replaying the whole graph. Used by the optimiser's exact local
// search (policy/optimize.cpp), which asks it for every pack at every step.
//
// Method: the plan's schedule is kept (one PackGraph::evaluate at construction). A slower
// timing of pack p can only raise its end and the targets of its port edges; try_slower()
// propagates the rise forward in topological order from the first affected timepoint,
// recomputing only timepoints whose predecessors moved and stopping when the rise has died out
// (or the makespan passed a limit): O(scanned ranks + moved timepoints' edges). The makespan is
// the old one or the latest end that moved.
#pragma once

#include <climits>
#include <cstdint>
#include <vector>

#include "pack/pack_graph.h"

namespace emo::pack {

class PlanEvaluator {
 public:
  /// Evaluates `times` (one per pack, from PackGraph::pack_time) on `pg`, which must outlive
  /// this object. Throws std::invalid_argument as PackGraph::evaluate does.
  PlanEvaluator(const PackGraph& pg, std::vector<PackTime> times);

  /// The plan's makespan (ns) and schedule.
  TimeNs makespan_ns() const noexcept { return schedule_.makespan_ns; }
  const timing::Schedule& schedule() const noexcept { return schedule_; }
  const std::vector<PackTime>& times() const noexcept { return times_; }

  /// The makespan if pack p took timing `t` instead, the rest of the plan unchanged. `t` must
  /// be no faster than the current timing (dur_ns and every port lag >= the current ones: a
  /// lower clock); throws std::invalid_argument otherwise or on a bad pack index / size. With a
  /// `limit_ns`, stops as soon as the makespan exceeds it and returns a value > limit_ns (not
  /// necessarily the makespan).
  TimeNs try_slower(std::uint32_t p, const PackTime& t, TimeNs limit_ns = INT64_MAX) const;

  /// True when `t` is no faster than pack p's current timing anywhere (try_slower's
  /// precondition).
  bool is_slower(std::uint32_t p, const PackTime& t) const;

  /// Makes that change (same preconditions).
  void apply_slower(std::uint32_t p, PackTime t);

 private:
  /// Propagates pack p's new timing: the moved timepoints' times into scratch_ (listed in
  /// touched_); returns the new makespan. The caller consumes and clears them.
  TimeNs propagate(std::uint32_t p, const PackTime& t, TimeNs limit_ns) const;
  void clear_scratch() const;

  const PackGraph& pg_;
  std::vector<PackTime> times_;
  timing::Schedule schedule_;
  std::vector<TimeNs> lag_;                 // per edge of pg_.g, under times_
  std::vector<std::uint32_t> rank_;         // topological rank per timepoint
  std::vector<std::uint32_t> out_begin_;    // out-edges CSR: edge indices into pg_.g's in-CSR
  std::vector<std::uint32_t> out_edge_;
  std::vector<std::uint32_t> edge_to_;      // target timepoint per edge
  mutable std::vector<TimeNs> scratch_;     // per timepoint: moved time, or INT64_MIN
  mutable std::vector<std::uint32_t> touched_;
  mutable std::vector<std::uint8_t> queued_;   // per topological rank: pending
  mutable std::vector<std::uint32_t> marked_;  // ranks marked in this propagation
};

}  // namespace emo::pack
