#include "trace/kineto/json_scan.h"

#include <cstring>

#include <fmt/format.h>

namespace emo::trace::kineto {
namespace {

constexpr bool is_ws(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string describe(std::string_view text, std::size_t pos) {
  if (pos >= text.size()) return "end of input";
  const char c = text[pos];
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
  }
  return fmt::format("'{}'", c);
}

}  // namespace

std::size_t JsonScanner::skip_ws(std::size_t pos) const noexcept {
  while (pos < text_.size() && is_ws(text_[pos])) ++pos;
  return pos;
}

std::size_t JsonScanner::skip_string(std::size_t pos) const {
  const std::size_t open = pos;
  ++pos;  // opening quote
  for (;;) {
    const void* q = std::memchr(text_.data() + pos, '"', text_.size() - pos);
    if (q == nullptr) throw ScanError{open, "unterminated string"};
    std::size_t quote = static_cast<const char*>(q) - text_.data();
    // The quote is escaped when preceded by an odd number of backslashes.
    std::size_t backslashes = 0;
    while (quote - backslashes > open + 1 && text_[quote - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return quote + 1;
    pos = quote + 1;
  }
}

std::string_view JsonScanner::string_at(std::size_t pos) const {
  const std::size_t end = skip_string(pos);
  return text_.substr(pos + 1, end - pos - 2);
}

std::size_t JsonScanner::skip_value(std::size_t pos) const {
  pos = skip_ws(pos);
  if (pos >= text_.size()) throw ScanError{pos, "expected a value, found end of input"};
  const char c = text_[pos];
  if (c == '"') return skip_string(pos);
  if (c == '{' || c == '[') return close_of(pos + 1, 1) + 1;
  // Scalar: number, true, false, null. Runs to the next delimiter.
  const std::size_t start = pos;
  while (pos < text_.size() && !is_ws(text_[pos]) && text_[pos] != ',' && text_[pos] != '}' &&
         text_[pos] != ']') {
    ++pos;
  }
  if (pos == start) throw ScanError{pos, fmt::format("expected a value, found {}", describe(text_, pos))};
  return pos;
}

std::size_t JsonScanner::close_of(std::size_t pos, int depth) const {
  while (pos < text_.size()) {
    const char d = text_[pos];
    if (d == '"') {
      pos = skip_string(pos);
      continue;
    }
    if (d == '{' || d == '[') {
      ++depth;
    } else if ((d == '}' || d == ']') && --depth == 0) {
      return pos;
    }
    ++pos;
  }
  throw ScanError{pos, "truncated: an object or array is not closed"};
}

std::size_t JsonScanner::find_array_end(std::size_t pos) const {
  std::size_t end;
  try {
    end = close_of(pos, 1);
  } catch (const ScanError& e) {
    throw ScanError{e.offset, "truncated: the traceEvents array is not closed"};
  }
  if (text_[end] != ']') throw ScanError{end, "unbalanced '}' inside the events array"};
  return end;
}

std::size_t JsonScanner::expect(std::size_t pos, char c, std::string_view what) const {
  pos = skip_ws(pos);
  if (pos >= text_.size() || text_[pos] != c) {
    throw ScanError{pos, fmt::format("expected {} ('{}'), found {}", what, c, describe(text_, pos))};
  }
  return pos + 1;
}

}  // namespace emo::trace::kineto
