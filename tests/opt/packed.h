// A trace analysed, packed and contracted to its pack graph, for the tests of the pack-plan
// searches (tests/opt): the packing as `emo optimize` makes it at min pack `min_pack` (ns).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pack/pack_graph.h"
#include "pack/packer.h"
#include "timing/analysis.h"

namespace emo::testing {

struct Packed {
  timing::Analysis analysis;
  pack::Packing packing;
  pack::PackGraph pg;
};

inline Packed pack_of(const trace::Trace& t, TimeNs min_pack) {
  Packed p{timing::analyze(t, graph::Window{}, {}), {}, {}};
  p.packing = pack::pack_timeline(t, p.analysis.graph, p.analysis.schedule, p.analysis.node_slack, {min_pack, "test"});
  p.pg = pack::contract(p.analysis.graph, p.packing);
  return p;
}

/// The number of distinct devices of the packs.
inline double devices_of(const pack::Packing& p) {
  std::vector<std::int32_t> d;
  for (const auto& k : p.packs) {
    if (std::find(d.begin(), d.end(), k.device) == d.end()) d.push_back(k.device);
  }
  return static_cast<double>(d.size());
}

}  // namespace emo::testing
