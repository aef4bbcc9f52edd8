#include "core/error.h"

#include <algorithm>

namespace emo {

InputError::InputError(std::string path, std::string problem)
    : std::runtime_error(path + ": " + one_line(problem)), path_(std::move(path)),
      problem_(one_line(problem)) {}

ArgumentError::ArgumentError(std::string field, std::string value, std::string problem)
    : std::invalid_argument(field + " " + value + ": " + one_line(problem)), field_(std::move(field)),
      value_(std::move(value)), problem_(one_line(problem)) {}

std::string one_line(std::string_view text, std::size_t max_chars) {
  std::string out;
  out.reserve(std::min(text.size(), max_chars));
  for (char c : text) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : (u < 0x20 ? '?' : c);
  }
  return out;
}

}  // namespace emo
