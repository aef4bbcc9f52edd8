// When may each collective of a job start at the latest, and where between its earliest and its
// latest start should the decomposed solve pin it (docs/multi-rank.md, "Pins that follow the
// slack"; issue 26). Works on the ranks' port reductions (timing/ports.h), never on the job's graph.
//
// time_job gives each collective instance c its earliest transfer start EST(c) at the ranks'
// recorded (max-clock) durations. latest_transfer_starts is the backward pass of the same
// constraints: with E(c) = S(c) + T(c) (T: the longest participant's transfer), every rank's end
// ≥ each of its ports' ends and ≥ E(q) + lag for its lags into the end, and S(p) ≥ E(q) + lag for
// its lags between ports, the latest S(c) such that every rank ends by `deadline_ns`:
//
//   LE(c) = min( deadline, min over participants' lags c→end (deadline − k·lag),
//                          min over lags c→q (LS(q) − k·lag), lags c→E(q) (LE(q) − k·lag) )
//   LS(c) = LE(c) − T(c)
//
// (k = lag_scale, the lags stretched). The total float of c is LS(c) − EST(c): how much later c
// may start with every other collective free to move. It is shared by every rank on the longest
// path through c: pinning c at its latest start gives all of it to the ranks before c and none to
// the ranks after. float_pins shares it in proportion to the work before and after c on that
// path (the "float distribution" of project scheduling, e.g. Kelley & Walker 1959's total float
// spread over a path's activities): with A(c) = EST(c) − w and B(c) = w + M0 − LS0(c) (the longest
// paths from the job's start to c and from c to its end at the max clock),
//
//   P(c) = w + A(c) · (deadline − w) / (A(c) + B(c)),
//
// then raised to every predecessor's P + T + k·lag and capped at LS(c), in topological order,
// so that the pins are consistent (each rank can meet them at the max clock). On the critical
// path A + B = M0 and P(c) = w + k·A(c): the proportional stretch of the pins (issue 16); off it,
// each collective gets the share of its path's float that its position on the path gives it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "timing/ports.h"

namespace emo::timing {

/// Per instance: its latest transfer start (job clock, ns) such that every rank of `ranks` ends
/// by `deadline_ns`, its lags scaled by `lag_scale` (≥ 1; 1: as recorded), T(c) the longest
/// participant's duration. nullopt when the instances' order has a cycle (ranks disagreeing on
/// the order; time_job counts such breaks): no backward pass is defined then. Throws
/// std::invalid_argument for an instance id out of range. O(Σ ports + Σ lags + instances).
std::optional<std::vector<TimeNs>> latest_transfer_starts(std::span<const RankPorts> ranks, std::size_t instances,
                                                          TimeNs deadline_ns, double lag_scale = 1.0);

/// Pins of the decomposed solve (file comment): per instance, a transfer start between the
/// stretched earliest start and the latest start, the float shared along the path. `forward` is
/// time_job(ranks, instances) at the max clock (start_ns w, makespan M0); `budget_ns` the job's
/// allowed makespan (≥ M0); `lag_scale` = budget_ns / M0 stretches the ranks' own lags as the
/// proportional pins do. nullopt when latest_transfer_starts is (a cycle). Throws
/// std::invalid_argument when `forward` does not match `instances`.
std::optional<std::vector<TimeNs>> float_pins(std::span<const RankPorts> ranks, std::size_t instances,
                                              const JobTiming& forward, TimeNs budget_ns);

}  // namespace emo::timing
