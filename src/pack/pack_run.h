// `emo pack` as one call: analysis -> packing -> pack graph -> exactness check (its JSON, text and
// Perfetto overlay are in output/pack_output.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

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

}  // namespace emo::pack
