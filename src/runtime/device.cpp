#include "runtime/device.h"

#include <algorithm>
#include <cmath>

#include "core/units.h"

namespace emo::runtime {

int repetitions_for(double time_s, const Device& device, int periods) {
  const double period_s = ms_to_s(device.energy_counter_period_ms());
  if (!(time_s > 0)) return 1;
  return std::max(1, static_cast<int>(std::ceil(periods * period_s / time_s)));
}

}  // namespace emo::runtime
