// Writing JSON text by hand (line-oriented logs and writers that stream large traces): the one
// JSON string quoting of EMO, used by `emo run`'s log, the Kineto writer, the tracer's
// emo.trace/1 records and the trace overlay. Header-only and without fmt, so that the tracer's
// injection library (which links nothing of EMO's) uses it too.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace emo {

/// Length of the well-formed UTF-8 sequence that starts at s[i], or 0 when none does: the byte
/// ranges of the Unicode Standard's Table 3-7 (RFC 3629 §4), so an overlong form (C0 AF), a
/// surrogate (ED A0 80), a code point above U+10FFFF (F4 90 80 80), a stray continuation byte
/// (80) or a sequence cut short (E2 82 at the end) is not one.
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) lo = 0xA0;  // no overlong 3-byte form
    if (lead == 0xED) hi = 0x9F;  // no surrogate D800..DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) lo = 0x90;  // no overlong 4-byte form
    if (lead == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // 80..C1 (continuation bytes, overlong 2-byte leads), F5..FF
  }
  if (i + n > s.size() || byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

/// `s` as a JSON string literal (RFC 8259 §7), always valid UTF-8 JSON text (RFC 8259 §8.1):
///   * `"` and `\` escaped with a backslash;
///   * the control characters U+0000..U+001F as \u00XX, lower-case hex (\n is \u000a: one form
///     for every control character; the two-letter escapes are optional in RFC 8259);
///   * everything else as is: `/` (escaping it is optional), DEL (0x7F), and well-formed UTF-8
///     (utf8_sequence_length), so "é" stays two bytes, not \u00e9;
///   * each byte of ill-formed UTF-8 as U+FFFD (EF BF BD), so a binary kernel name cannot make
///     the file unreadable.
/// Examples: json_quote("a\"b\\c\n") == R"("a\"b\\c\u000a")"; json_quote("bad\xFFz") ==
/// "\"bad\xEF\xBF\xBDz\"".
inline std::string json_quote(std::string_view s) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
    } else if (const std::size_t n = utf8_sequence_length(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    }
  }
  out += '"';
  return out;
}

}  // namespace emo
