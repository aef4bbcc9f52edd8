// The bridge from the GPU catalog and the op classes to the packer: how every front end packs a
// trace. Kept out of model/gpu_catalog.h so that users of the catalog do not pull in the packer.
#pragma once

#include <optional>
#include <string>

#include "core/timestamp.h"
#include "pack/packer.h"
#include "trace/trace.h"

namespace emo::model {

/// How `emo pack`, `emo optimize` and the Python package pack a trace: min_pack `min_pack_ns` (named
/// `option` in reports) or, without it, min_pack_for(trace); per op its clock_sensitivity
/// (model/op_class.h) for the phase cuts. Never throws.
pack::PackOptions pack_options_for(const trace::Trace& trace, std::optional<TimeNs> min_pack_ns,
                                   const std::string& option);

}  // namespace emo::model
