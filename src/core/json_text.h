// Writing JSON text by hand (line-oriented logs and writers that stream large traces).
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace emo {

/// `s` as a JSON string literal: quotes added, `"` and `\` escaped, control characters as \uXXXX.
/// Example: json_quote("a\"b") == "\"a\\\"b\"". Bytes >= 0x80 pass through (UTF-8 stays UTF-8).
inline std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace emo
