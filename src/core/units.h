// Unit conversions by name: timestamps and durations are integer nanoseconds (TimeNs); models,
// energies and reports use seconds, joules and watts. Use these instead of bare 1e-9 / 1e9.
#pragma once

#include <cmath>

#include "core/timestamp.h"

namespace emo {

inline constexpr double kNsPerS = 1e9;
inline constexpr double kNsPerMs = 1e6;
inline constexpr double kNsPerUs = 1e3;
inline constexpr double kSPerNs = 1e-9;
inline constexpr double kMsPerNs = 1e-6;
inline constexpr double kSPerMs = 1e-3;

// Conversions to coarser units multiply by the reciprocal (1e-9, 1e-6), as EMO always has: the
// figures of every earlier run are reproduced to the last bit. For the same reason a product
// written `watts * ns * kSPerNs` (grouped left to right) stays so: energy_j() groups it as
// watts * (ns * 1e-9), which can differ in the last bit.

/// ns → s (double).
constexpr double ns_to_s(TimeNs ns) noexcept { return static_cast<double>(ns) * kSPerNs; }
/// ns → ms (double).
constexpr double ns_to_ms(TimeNs ns) noexcept { return static_cast<double>(ns) * kMsPerNs; }
/// s → ns, rounded to the nearest ns. `s` must be finite and within ±kMaxAbsTimeNs ns.
inline TimeNs s_to_ns(double s) noexcept { return static_cast<TimeNs>(std::llround(s * kNsPerS)); }
/// s → ns, rounded down (a deadline that must not be exceeded).
inline TimeNs s_to_ns_floor(double s) noexcept { return static_cast<TimeNs>(std::floor(s * kNsPerS)); }
/// ms → s (double).
constexpr double ms_to_s(double ms) noexcept { return ms * kSPerMs; }
/// ms → ns, rounded to the nearest ns.
inline TimeNs ms_to_ns(double ms) noexcept { return static_cast<TimeNs>(std::llround(ms * kNsPerMs)); }
/// Energy (J) of `watts` held for `ns`.
constexpr double energy_j(double watts, TimeNs ns) noexcept { return watts * ns_to_s(ns); }

}  // namespace emo
