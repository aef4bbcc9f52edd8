// Range checks of integers read with nlohmann-json, whose get<T>() wraps a value outside T's range
// (2^32 + 1 read as an int32 is 1). Header-only and generic over the JSON type, so that the base
// of the pipeline does not link nlohmann-json; used by the Kineto reader (distributedInfo) and the
// policy reader.
#pragma once

#include <cstdint>

namespace emo {

/// True when `v` (an integer: v.is_number_integer()) lies in [lowest, highest]. A value stored as
/// unsigned is compared as unsigned (get<std::int64_t>() of one above INT64_MAX would wrap to a
/// negative). `highest` ≥ 0. O(1).
template <typename Json>
bool integer_within(const Json& v, std::int64_t lowest, std::int64_t highest) {
  if (v.is_number_unsigned()) {
    const auto u = v.template get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(highest) && (lowest <= 0 || u >= static_cast<std::uint64_t>(lowest));
  }
  const auto i = v.template get<std::int64_t>();
  return i >= lowest && i <= highest;
}

}  // namespace emo
