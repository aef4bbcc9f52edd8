#include "core/timestamp.h"

#include <charconv>

#include <fmt/format.h>

#include "core/units.h"

namespace emo {
namespace {

__extension__ typedef unsigned __int128 u128;  // GCC/Clang extension; exact 10^k arithmetic
__extension__ typedef __int128 i128;

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

std::string_view trim_right(std::string_view s) noexcept {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' ||
                        s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

std::optional<TimeNs> parse_us_to_ns(std::string_view text) noexcept {
  text = trim_right(text);
  std::size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  // Mantissa digits accumulate into a 128-bit integer; `scale` counts digits after the point.
  u128 mantissa = 0;
  int scale = 0;
  int digits = 0;
  bool any = false;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    any = true;
    if (digits < 36) {
      mantissa = mantissa * 10 + static_cast<unsigned>(text[i] - '0');
      if (mantissa != 0) ++digits;
    } else {
      --scale;  // too many integer digits to keep: count them as a power of ten
    }
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    bool frac_any = false;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      frac_any = true;
      if (digits < 36) {
        mantissa = mantissa * 10 + static_cast<unsigned>(text[i] - '0');
        if (mantissa != 0) ++digits;
        ++scale;
      }
    }
    if (!frac_any) return std::nullopt;
  }
  if (!any) return std::nullopt;
  int exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    bool exp_any = false;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      exp_any = true;
      if (exponent < 10000) exponent = exponent * 10 + (text[i] - '0');
    }
    if (!exp_any) return std::nullopt;
    if (exp_negative) exponent = -exponent;
  }
  if (i != text.size()) return std::nullopt;

  // value_ns = mantissa * 10^(3 + exponent - scale)
  int power = 3 + exponent - scale;
  constexpr u128 kLimit = static_cast<u128>(INT64_MAX) + 1;
  if (mantissa == 0) return 0;
  if (power >= 0) {
    for (; power > 0; --power) {
      mantissa *= 10;
      if (mantissa > kLimit) return std::nullopt;
    }
  } else {
    if (power < -38) return 0;
    u128 divisor = 1;
    for (; power < 0; ++power) divisor *= 10;
    const u128 q = mantissa / divisor;
    const u128 r = mantissa % divisor;
    mantissa = q + (r * 2 >= divisor ? 1 : 0);  // half away from zero (sign applied below)
  }
  if (mantissa > kLimit || (!negative && mantissa == kLimit)) return std::nullopt;
  const auto magnitude = static_cast<u128>(mantissa);
  return negative ? static_cast<TimeNs>(-static_cast<i128>(magnitude))
                  : static_cast<TimeNs>(magnitude);
}

std::string format_duration(TimeNs ns) {
  const double v = static_cast<double>(ns);
  if (ns >= 1'000'000'000 || ns <= -1'000'000'000) return fmt::format("{:.3f} s", v / kNsPerS);
  if (ns >= 1'000'000 || ns <= -1'000'000) return fmt::format("{:.3f} ms", v / kNsPerMs);
  return fmt::format("{:.3f} us", v / kNsPerUs);
}

std::optional<std::int64_t> parse_int64(std::string_view text) noexcept {
  text = trim_right(text);
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace emo
