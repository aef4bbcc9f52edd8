// `emo pack`: analysis -> packing -> pack graph -> exactness check, and its JSON, text and
// Perfetto overlay.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "graph/dep_graph.h"
#include "pack/pack_graph.h"
#include "pack/packer.h"
#include "timing/analysis.h"
#include "trace/trace.h"

namespace emo::pack {

/// Everything `emo pack` computes.
struct PackRun {
  timing::Analysis analysis;        ///< Graph, recorded replay, slack, critical path.
  Packing packing;
  std::string min_pack_source;      ///< Where min_pack came from (option, catalog, default).
  PackGraph pack_graph;
  timing::Schedule pack_schedule;   ///< The pack graph at the packs' recorded durations.
  std::vector<TimeNs> pack_slack;   ///< Per pack: the least slack of its ops (ns, >= 0; 0 when critical).
  ContractionReport contraction;
};

/// Runs the analysis of `trace` in `window`, packs it with `options` (min_pack_ns > 0: the
/// caller's choice, e.g. model::min_pack_for), contracts it and checks the contraction.
/// Throws std::invalid_argument when options.min_pack_ns <= 0.
PackRun run_pack(const trace::Trace& trace, const graph::Window& window, const PackOptions& options,
                 const ContractionOptions& check = {});

/// The `emo pack --json` object: path, window, min_pack_ns, min_pack_source, ops (GPU ops),
/// packs, compression_ratio (ops / packs), forced_short, cuts {reason: packs}, makespan_ns,
/// contraction_error, contraction {uniform [...], per_pack [...], uniform_error,
/// per_pack_error}, pack_graph {nodes, edges, port_edges, exit_ports, release_ports,
/// cycle_edges}, stats {islands, mid_pack_exits}, and gpus [{device, ops, pack_count, forced_short, busy_ns,
/// packs [{id, start_ns, end_ns, dur_ns, span_ns, ops, streams, slack_ns, critical,
/// starts_at, forced_short}]}].
nlohmann::json to_json(const trace::Trace& trace, const PackRun& r);

/// Human-readable summary (per GPU, the first packs).
std::string to_text(const trace::Trace& trace, const PackRun& r);

/// The `emo analyze` overlay (timing::write_overlay) plus one track of packs per GPU
/// ("EMO packs, GPU d"). Throws emo::InputError when `path` cannot be written.
void write_pack_overlay(const trace::Trace& trace, const PackRun& r, const std::string& path);

}  // namespace emo::pack
