// Dependency-aware kernel packing (docs/design.md §3): per GPU, a partition of its timeline into packs,
// windows that each hold every GPU op (all streams) that runs in them and run at one clock.
//
// Packs are built from *islands*: maximal runs of a device's GPU ops whose recorded intervals
// overlap (any stream). An island is never split, so every pack is a run of consecutive islands.
// A pack may end at a *boundary* between islands (Cut): after an island whose op feeds a host
// call (host sync, blocking copy) or another device, before an island whose op is bound (at the
// recorded times) by an outside dependency that the pack's start does not carry (a launch from
// another CPU chain, a launch-starved gap after GPU-bound work, a wait on an earlier pack's
// work), where a collective starts or ends, or where criticality changes. It ends at the first
// boundary where it is at least min_pack long and the rest of the device's timeline is too:
// every pack is at least min_pack long unless the device's whole timeline is shorter
// (forced_short). No boundary has to be cut: the pack graph (pack_graph.h) contracts any run of
// islands exactly, with port edges where work enters or leaves the pack away from its start
// and end. (A first version cut at every host sync and entry to keep a single-node contraction
// exact; on a trace that syncs after every kernel that made 1337 packs far shorter than the
// clock-switch latency, which no clock policy can follow.)
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dep_graph.h"
#include "timing/timing.h"
#include "trace/trace.h"

namespace emo::pack {

using graph::DepGraph;

/// Pack index of a graph node that is not a GPU op (Packing::pack_of).
inline constexpr std::uint32_t kNoPack = UINT32_MAX;

/// Why a pack starts where it does.
enum class Cut : std::uint8_t {
  kFirst,        ///< The device's first pack.
  kHostSync,     ///< The previous island feeds a host call (sync, blocking copy).
  kEntry,        ///< An outside dependency, not carried by the pack's start, binds an op here.
  kCollective,   ///< A collective kernel starts here or ended the previous island.
  kCriticality,  ///< Criticality changes here.
  kPhase,        ///< The work's clock sensitivity changes here (phase_starts).
};
inline constexpr int kCutCount = 6;
/// "first", "host_sync", "entry", "collective", "criticality", "phase".
std::string_view cut_name(Cut c) noexcept;

/// One pack: a window of one device's timeline. Times are recorded (trace) ns.
struct Pack {
  std::int32_t device = 0;
  std::uint32_t first = 0;     ///< Its GPU ops are Packing::nodes[first, first + count).
  std::uint32_t count = 0;
  std::uint32_t islands = 0;   ///< Islands merged into it.
  TimeNs start_ns = 0;         ///< Recorded start of its earliest op.
  TimeNs end_ns = 0;           ///< Recorded end of its latest op.
  TimeNs span_ns = 0;          ///< Start to the next pack's start on the device (the time its
                               ///< clock holds); for the device's last pack, end - start.
  Cut starts_at = Cut::kFirst;
  bool forced_short = false;   ///< span_ns < min_pack_ns.
  bool critical = false;       ///< Holds an op with zero slack.
  TimeNs dur_ns() const noexcept { return end_ns - start_ns; }
};

/// Counts describing a packing.
struct PackingStats {
  std::array<std::int64_t, kCutCount> cuts{};  ///< Packs per Cut reason.
  std::int64_t islands = 0;
  std::int64_t forced_short = 0;
  /// Ops feeding a host call (or another device) that end before their pack ends: host syncs
  /// inside a pack, which the pack graph follows through exit ports.
  std::int64_t mid_pack_exits = 0;
};

/// The packs of every device of a graph.
struct Packing {
  TimeNs min_pack_ns = 0;
  std::vector<Pack> packs;            ///< By device, then time.
  std::vector<std::uint32_t> nodes;   ///< Graph nodes of GPU ops, grouped by pack, each pack's
                                      ///< in recorded start order.
  std::vector<std::uint32_t> pack_of; ///< Per graph node: its pack, or kNoPack (host nodes).
  PackingStats stats;

  std::span<const std::uint32_t> ops_of(std::uint32_t pack) const {
    return {nodes.data() + packs[pack].first, packs[pack].count};
  }
};

/// How to pack. The packer knows no GPU: the caller chooses min_pack (the driver and the CLI take
/// the GPU's clock-switch latency from the catalog, model::min_pack_for).
struct PackOptions {
  TimeNs min_pack_ns = 0;       ///< Shortest pack, ns; > 0 (required).
  std::string min_pack_source{};  ///< Where min_pack came from, for reports ("--min-pack-ms", ...).
  /// Per trace op row: how its time responds to the SM clock, 0 (not at all) to 1 (∝ 1/f); the
  /// caller's estimate (model::clock_sensitivity from op classes). Empty: no phase cuts.
  std::vector<float> op_sensitivity{};
};

/// Phase cuts (docs/packing.md): a device's islands are grouped into blocks of at least
/// kPhaseBlockFraction × min_pack of busy time; a stretch of blocks is split in two where the
/// busy-time-weighted mean sensitivity of the two sides differs most (binary segmentation, the
/// classic change-point method), while both sides span ≥ min_pack and the means differ by ≥
/// kPhaseMinContrast; each side is split again the same way.
inline constexpr double kPhaseBlockFraction = 0.5;
inline constexpr double kPhaseMinContrast = 0.02;

/// A linked job's work with less slack than this × min_pack counts as critical for the packs'
/// criticality boundaries (docs/packing.md, "A linked job"): a clock that holds for min_pack cannot
/// spend a sliver of slack, and jitter between ranks leaves such slivers on critical work.
inline constexpr double kNearCriticalFraction = 0.05;

/// The phase starts of one device's timeline: `busy_ns[i]`, `sensitivity[i]` (busy-time-weighted
/// mean) and `start_ns[i]` of its islands in time order, `end_ns` the device's last end. Returns
/// the island indices (> 0, ascending) where a phase starts. O(n log n).
std::vector<std::size_t> phase_starts(std::span<const TimeNs> start_ns, std::span<const TimeNs> busy_ns,
                                      std::span<const double> sensitivity, TimeNs end_ns, TimeNs min_pack_ns);

/// Packs every GPU op of `g` (all devices, all streams). `s` is the replay of `g` with its own
/// durations (the recorded times) and `node_slack` the per-node slack of that schedule
/// (timing::slack). O(nodes + edges). Throws std::invalid_argument when min_pack_ns <= 0 or
/// the spans do not match the graph.
Packing pack_timeline(const trace::Trace& trace, const DepGraph& g, const timing::Schedule& s,
                      std::span<const TimeNs> node_slack, const PackOptions& options = {});

}  // namespace emo::pack
