// The packing options `emo pack` uses by default: min_pack from the GPU catalog (model::min_pack_for).
#pragma once

#include "model/gpu_catalog.h"
#include "pack/packer.h"

namespace emo::testing {

inline pack::PackOptions catalog_min_pack(const trace::Trace& t) {
  const model::MinPack m = model::min_pack_for(t);
  return {m.ns, m.source};
}

}  // namespace emo::testing
