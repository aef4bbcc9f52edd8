// A small scalar JSON scanner for the parts of a Kineto file that are not the events array:
// the top-level object's members before and after `traceEvents`, and exact event boundaries
// where the fast chunking heuristic of the reader needs a fallback.
//
// It skips values (string-aware, tracking bracket depth) but does not validate them; what it
// returns is parsed again by a real JSON parser (simdjson, nlohmann-json).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace emo::trace::kineto {

/// Thrown by JsonScanner on malformed or truncated text; `offset` is the byte position.
struct ScanError {
  std::size_t offset;
  std::string problem;
};

/// Scanner over `text` (NUL padding after text.size() is not required).
class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text) : text_(text) {}

  /// Index of the first non-whitespace byte at or after `pos` (text.size() at the end).
  std::size_t skip_ws(std::size_t pos) const noexcept;
  /// `pos` at an opening quote: index just past the closing quote. Throws ScanError.
  std::size_t skip_string(std::size_t pos) const;
  /// `pos` at the first byte of a value: index just past the value. Throws ScanError.
  std::size_t skip_value(std::size_t pos) const;
  /// `pos` inside an array at depth 0 (just after '[' or ','): index of the ']' that closes it.
  /// Throws ScanError when the text ends first ("array not closed").
  std::size_t find_array_end(std::size_t pos) const;
  /// Raw text of the string whose opening quote is at `pos` (without quotes, escapes kept).
  std::string_view string_at(std::size_t pos) const;

  /// Expects byte `c` at skip_ws(pos); returns the index after it. Throws ScanError naming
  /// `what` otherwise.
  std::size_t expect(std::size_t pos, char c, std::string_view what) const;

  std::string_view text() const noexcept { return text_; }

 private:
  /// Scans from `pos` with `depth` open brackets; returns the index of the bracket that closes
  /// the outermost one (string-aware). Throws ScanError when the text ends first.
  std::size_t close_of(std::size_t pos, int depth) const;

  std::string_view text_;
};

}  // namespace emo::trace::kineto
