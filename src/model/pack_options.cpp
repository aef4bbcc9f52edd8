#include "model/pack_options.h"

#include "model/gpu_catalog.h"
#include "model/op_class.h"

namespace emo::model {

pack::PackOptions pack_options_for(const trace::Trace& trace, std::optional<TimeNs> min_pack_ns,
                                   const std::string& option) {
  pack::PackOptions o;
  if (min_pack_ns) {
    o.min_pack_ns = *min_pack_ns, o.min_pack_source = option;
  } else {
    MinPack m = min_pack_for(trace);
    o.min_pack_ns = m.ns, o.min_pack_source = std::move(m.source);
  }
  o.op_sensitivity = clock_sensitivity(trace);
  return o;
}

}  // namespace emo::model
