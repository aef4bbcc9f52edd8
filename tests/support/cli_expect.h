// Checks of a command-line tool's bad-argument contract, shared by the tests of emo_make_job.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "core/file_io.h"

namespace emo::testing {

/// Runs `binary ARGS 2> dir/err` for each ARGS: expects exit code 2 and exactly one line on stderr.
inline void expect_exit_two_with_one_line(const std::string& binary, std::initializer_list<const char*> arg_lists,
                                          const std::filesystem::path& dir) {
  for (const char* args : arg_lists) {
    const std::string err = (dir / "err").string();
    const std::string cmd = binary + " " + args + " 2> " + err;
    const int rc = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(rc)) << cmd;
    EXPECT_EQ(WEXITSTATUS(rc), 2) << cmd;
    const std::string text(read_file(err).view());
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << cmd << ": " << text;
  }
}

}  // namespace emo::testing
