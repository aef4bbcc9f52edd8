// A Chrome/Perfetto JSON trace of an analysis, for looking at slack in the Perfetto UI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "timing/analysis.h"

namespace emo::output {

/// Writes `path`: every op of the trace as a complete event ("X"; GPU ops on pid = device,
/// tid = stream; host ops on their pid/tid), with args {id, correlation, slack_ns, critical
/// (zero slack), on_critical_path}; the critical path as flow events (cat "critical_path") and
/// as its own track ("EMO critical path": GPU steps on tid 1, host steps on tid 2); and per GPU a
/// track of slack windows ("EMO slack windows, GPU d"). A linked job (trace/job.h) names its
/// processes by rank: "rank R GPU (file)", "rank R host", "EMO slack windows, rank R (GPU d)",
/// ordered rank by rank (process_sort_index: GPU 4d, host 4d + 1, slack windows 4d + 3, leaving
/// 4d + 2 to a later stage's track of that rank, e.g. its packs: rank_sort_index). Timestamps are µs with exact ns
/// fractions, relative to the trace's first op (otherData.emo_origin_ns holds it, in ns), since
/// Perfetto parses them as doubles. Throws emo::InputError when it cannot be written.
void write_overlay(const trace::Trace& trace, const timing::Analysis& a, const std::string& path);

/// A track that a later stage adds to the overlay (e.g. the packs of `emo pack`): one process
/// named `name` (pid `pid`, distinct from the trace's and EMO's own), tid 0, one complete event
/// per slice, timestamps relative to the same origin as the rest of the overlay.
struct OverlayTrack {
  struct Slice {
    std::string name;
    TimeNs start_ns = 0;  ///< Trace time (absolute ns).
    TimeNs dur_ns = 0;
    std::string args_json = "{}";  ///< A JSON object.
    std::int64_t tid = 0;          ///< Its thread in the track's process.
  };
  std::string name;
  std::int64_t pid = 0;
  std::vector<Slice> slices;
  std::string label;              ///< Shown beside the name (a "process_labels" event); "" = none.
  std::int64_t sort_index = -1;   ///< Its process_sort_index; -1 = none (after the sorted ones).
};

/// A flow arrow (cat "critical_path") of write_track_overlay: from the slice of process from_pid,
/// thread from_tid at from_ns to the one of to_pid, to_tid starting at to_ns (trace time, ns).
struct OverlayFlow {
  std::int64_t from_pid = 0, from_tid = 0;
  TimeNs from_ns = 0;
  std::int64_t to_pid = 0, to_tid = 0;
  TimeNs to_ns = 0;
};

/// An overlay of EMO's own tracks alone, no op of any trace (the decomposed solve's job view: its
/// ranks' ops stay with their processes): `tracks` written as write_overlay writes its extra
/// tracks, then `flows`; timestamps relative to `origin_ns` (otherData.emo_origin_ns; emo_trace =
/// `title`). Throws emo::InputError when `path` cannot be written.
void write_track_overlay(const std::string& path, const std::string& title, TimeNs origin_ns,
                         const std::vector<OverlayTrack>& tracks, const std::vector<OverlayFlow>& flows);

/// The process_sort_index of a linked job's rank at position `device` for its GPU (slot 0), host
/// (1), a later stage's track (2) and slack windows (3): 4 × device + slot.
constexpr std::int64_t rank_sort_index(std::int32_t device, int slot) { return 4 * std::int64_t{device} + slot; }

/// As above, with `extra` tracks appended.
void write_overlay(const trace::Trace& trace, const timing::Analysis& a, const std::string& path,
                   const std::vector<OverlayTrack>& extra);

}  // namespace emo::output
