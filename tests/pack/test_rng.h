// A small deterministic generator for the randomised pack tests (splitmix64): the same seed
// gives the same cases on every platform.
#pragma once

#include <cstdint>

#include "core/timestamp.h"

namespace emo::testing {

struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi].
  TimeNs in(TimeNs lo, TimeNs hi) { return lo + static_cast<TimeNs>(next() % static_cast<std::uint64_t>(hi - lo + 1)); }
  /// True with probability percent / 100.
  bool chance(int percent) { return static_cast<int>(next() % 100) < percent; }
};

}  // namespace emo::testing
