// What `emo pack` writes: the JSON object, the text summary and the Perfetto overlay of a PackRun.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "pack/pack_run.h"
#include "trace/trace.h"

namespace emo::output {

/// The `emo pack --json` object: path, window, min_pack_ns, min_pack_source, ops (GPU ops),
/// packs, compression_ratio (ops / packs), forced_short, cuts {reason: packs}, makespan_ns,
/// contraction_error, contraction {uniform [...], per_pack [...], uniform_error,
/// per_pack_error}, pack_graph {nodes, edges, port_edges, exit_ports, release_ports,
/// cycle_edges}, stats {islands, mid_pack_exits}, and gpus [{device, ops, pack_count, forced_short, busy_ns,
/// packs [{id, start_ns, end_ns, dur_ns, span_ns, ops, streams, slack_ns, critical,
/// starts_at, forced_short}]}].
nlohmann::json to_json(const trace::Trace& trace, const pack::PackRun& r);

/// Human-readable summary (per GPU, the first packs).
std::string to_text(const trace::Trace& trace, const pack::PackRun& r);

/// The `emo analyze` overlay (output::write_overlay) plus one track of packs per GPU
/// ("EMO packs, GPU d"; in a linked job "EMO packs, rank R (GPU d)", sorted beside that rank's GPU),
/// each pack an event with args {pack, ops, slack_ns, span_ns, critical,
/// starts_at, forced_short} and, when `pack_clock_mhz` is given (one clock per pack: `emo optimize`,
/// the plan's), clock_mhz; `emo pack` has no clock and writes none. `labels` (by device) are shown
/// beside a GPU's pack track (e.g. its savings). Throws std::invalid_argument
/// when pack_clock_mhz is neither empty nor one per pack, emo::InputError when `path` cannot be
/// written.
void write_pack_overlay(const trace::Trace& trace, const pack::PackRun& r, const std::string& path,
                        std::span<const double> pack_clock_mhz = {},
                        const std::map<std::int32_t, std::string>& labels = {});

}  // namespace emo::output
