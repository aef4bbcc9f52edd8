#include "pack/pack_run.h"

#include <algorithm>
#include <cstdint>

namespace emo::pack {

PackRun run_pack(const trace::Trace& trace, const graph::Window& window, const PackOptions& o,
                 const ContractionOptions& check) {
  PackRun r;
  r.analysis = timing::analyze(trace, window, {});
  r.min_pack_source = o.min_pack_source;
  const timing::Analysis& a = r.analysis;
  r.packing = pack_timeline(trace, a.graph, a.schedule, a.node_slack, o);
  r.pack_graph = contract(a.graph, r.packing);
  r.pack_schedule = timing::replay(r.pack_graph.g, r.pack_graph.g.dur);
  // A pack's slack: the least slack of its ops (0 when it holds a critical op). Not the pack
  // node's own slack: work that leaves a pack before its end does so through exit ports.
  r.pack_slack.assign(r.pack_graph.packs, 0);
  for (std::uint32_t p = 0; p < r.pack_graph.packs; ++p) {
    TimeNs least = INT64_MAX;
    for (const std::uint32_t n : r.packing.ops_of(p)) least = std::min(least, a.node_slack[n]);
    r.pack_slack[p] = r.packing.packs[p].count == 0 ? 0 : least;
  }
  r.contraction = check_contraction(a.graph, r.packing, r.pack_graph, check);
  return r;
}

}  // namespace emo::pack
