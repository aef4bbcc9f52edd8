// Exact conversion of decimal timestamps to integer nanoseconds.
//
// Trace formats write times as decimal text in microseconds ("1712195495519689.047"). A double
// holds 15-17 significant digits, so such a value read as a double loses its nanoseconds
// (1712195495519689.047 µs has 19 digits). We parse the text directly into int64 ns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace emo {

using TimeNs = std::int64_t;

/// Largest |timestamp| and duration a trace may hold: 3e18 ns (about 95 years from the epoch, the
/// year 2065). Readers reject values beyond it, so that end = start + dur and spans between any two
/// times (|difference| <= 3 * 3e18 < 2^63) never overflow int64.
inline constexpr TimeNs kMaxAbsTimeNs = 3'000'000'000'000'000'000;

/// True when start and dur are within kMaxAbsTimeNs (dur also >= 0).
constexpr bool time_in_range(TimeNs start, TimeNs dur) noexcept {
  return start >= -kMaxAbsTimeNs && start <= kMaxAbsTimeNs && dur >= 0 && dur <= kMaxAbsTimeNs;
}

/// Parses a JSON number written in microseconds into nanoseconds, exactly.
///
/// Accepts an optional '-', digits, an optional fraction and an optional exponent
/// ("12", "12.5", "1.2e3", "-3"); trailing whitespace is ignored. Digits below one nanosecond are
/// rounded half away from zero ("0.0005" -> 1 ns, "0.0004" -> 0 ns).
/// Examples: "1712195495519689.047" -> 1712195495519689047; "4.928" -> 4928; "2" -> 2000.
/// Returns nullopt when the text is not a number or the result does not fit in int64.
std::optional<TimeNs> parse_us_to_ns(std::string_view text) noexcept;

/// A duration for people: "1.232 s", "684.373 ms", "12.000 us" (three decimals; negative
/// durations keep their sign and unit by magnitude).
std::string format_duration(TimeNs ns);

/// Parses a decimal integer ("-12", "4294967295"); nullopt when not an integer or out of range.
std::optional<std::int64_t> parse_int64(std::string_view text) noexcept;

}  // namespace emo
