// Running a command from a test and reading what it printed (the headless-browser tests of the
// HTML report: tests/output/html_report_test.cpp, tests/output/job_report_test.cpp).
#pragma once

#include <array>
#include <cstdio>
#include <memory>
#include <string>

namespace emo::testing {

/// The standard output of `cmd` (run by /bin/sh), or "" when it cannot run.
inline std::string capture(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return "";
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p.get())) out.append(buf.data(), n);
  return out;
}

}  // namespace emo::testing
