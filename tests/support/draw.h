// Deterministic random draws for the synthetic-job generators (support/job_generator.h,
// support/pipeline_job.h): a value is a pure function of (seed, a, b, salt), so the same rank
// gets the same draws whatever the size of the job and whatever order ranks are made in.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace emo::testing {

/// splitmix64 finaliser (Steele, Lea, Flood 2014): a well-mixed 64-bit value of x.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A uniform double in (0, 1) drawn from (seed, a, b, salt): the same arguments, the same value.
inline double uniform(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t salt) {
  const std::uint64_t h = mix(mix(mix(mix(seed) ^ a) ^ b) ^ salt);
  return (static_cast<double>(h >> 11) + 0.5) / 9007199254740992.0;  // 2^53
}

/// A standard normal value drawn from (seed, a, b, salt) and (…, salt + 1) (Box–Muller).
inline double normal(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t salt) {
  const double u1 = uniform(seed, a, b, salt);
  const double u2 = uniform(seed, a, b, salt + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace emo::testing
