// Errors raised while reading user input (trace files, options).
//
// Every reader reports bad input by throwing emo::InputError. Its what() is one line that names
// the file and the problem, e.g. "trace.json.gz: truncated gzip stream (ends after 1042 bytes)".
// The CLI turns it into exit code 2. Internal bugs stay std::logic_error and friends.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace emo {

/// Bad input: a file that is missing, unreadable, truncated, malformed or of an unknown format.
/// `path()` is the file as the user named it; `problem()` is the reason without the path.
class InputError : public std::runtime_error {
 public:
  InputError(std::string path, std::string problem);

  const std::string& path() const noexcept { return path_; }
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string path_;
  std::string problem_;
};

/// A bad argument to a library call: `field()` names the parameter (e.g. "max_slowdown"),
/// `value()` the value given, `problem()` what is wrong with it. Library code throws it in the
/// library's own words; the CLI names the option that carried the value (cli/commands.h,
/// option_error).
class ArgumentError : public std::invalid_argument {
 public:
  ArgumentError(std::string field, std::string value, std::string problem);

  const std::string& field() const noexcept { return field_; }
  const std::string& value() const noexcept { return value_; }
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string field_;
  std::string value_;
  std::string problem_;
};

/// Flattens a message to one line (newlines and tabs become spaces) and clips it to `max_chars`,
/// so that a hostile input cannot make an error message span screens.
std::string one_line(std::string_view text, std::size_t max_chars = 300);

}  // namespace emo
