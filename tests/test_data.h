// Locating the real data of ../shared/data for tests.
//
// Tests that need real data call EMO_REQUIRE_DATA(relative_path): when the data directory is
// absent the test is skipped with a loud message, except when CI=true, where it fails.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace emo::testing {

/// The data directory: $EMO_DATA_DIR, else ../shared/data beside the checkout.
inline std::filesystem::path data_dir() {
  if (const char* env = std::getenv("EMO_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return EMO_DEFAULT_DATA_DIR;
}

inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

/// Scratch directory for a test's own files (removed at the start of each use).
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("emo-test-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace emo::testing

/// Declares `const std::string var` = full path of `rel` under the data dir, or skips/fails.
#define EMO_REQUIRE_DATA(var, rel)                                                           \
  const std::string var = (::emo::testing::data_dir() / (rel)).string();                    \
  if (!std::filesystem::exists(var)) {                                                       \
    if (::emo::testing::in_ci()) {                                                           \
      FAIL() << "real data missing in CI: " << var;                                          \
    }                                                                                        \
    GTEST_SKIP() << "\n*** SKIPPED: real data not found at " << var                          \
                 << " (set EMO_DATA_DIR) ***\n";                                            \
  }
