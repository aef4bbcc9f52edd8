// Locating the real data of ../shared/data for tests.
//
// Tests that need real data call EMO_REQUIRE_DATA(relative_path): when the data directory is
// absent the test is skipped with a loud message, except when CI=true, where it fails.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

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

/// A stable gtest name for a parameter that is a data file: the file name without its folders and
/// extensions, every character but letters and digits as '_' ("kineto/hta_triton.json.gz" ->
/// "hta_triton"). For INSTANTIATE_TEST_SUITE_P's name generator, instead of gtest's default
/// (parameter bytes for a struct).
inline std::string data_file_test_name(std::string_view path) {
  std::string s(path.substr(path.rfind('/') + 1));
  s = s.substr(0, s.find('.'));
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
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
