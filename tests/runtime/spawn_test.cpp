// The one fork + exec (runtime/spawn.h): the child's exit code comes back, an environment override
// is what the child sees, descriptors are handed over as asked, and a program that cannot be
// executed is an InputError in the parent, not a child exiting 127. Uses /bin/sh only.
#include "runtime/spawn.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace emo::runtime {
namespace {

/// Waits for `pid`; its exit code, or -1 when a signal ended it.
int exit_code_of(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -2;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Runs `script` under /bin/sh with its stdout on a pipe; returns what it printed.
std::string output_of(const std::string& script, std::optional<std::vector<std::string>> env = std::nullopt) {
  int out[2];
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.env = std::move(env);
  o.fds = {{out[1], STDOUT_FILENO}};
  const pid_t pid = spawn(o);
  ::close(out[1]);
  std::string text;
  char buf[256];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  EXPECT_EQ(exit_code_of(pid), 0);
  return text;
}

TEST(MergedEnvironment, OverridesReplaceRemoveAndAppend) {
  // By hand: A kept; B replaced by the override (which moves to the end); C removed by "C"; D new.
  EXPECT_EQ(merged_environment({"A=1", "B=2", "C=3"}, {"B=20", "D=4", "C"}),
            (std::vector<std::string>{"A=1", "B=20", "D=4"}));
  // Two overrides of one name: the later one; a name is the text before the first '='.
  EXPECT_EQ(merged_environment({"X=a=b", "XY=1"}, {"X=1", "X=2"}), (std::vector<std::string>{"XY=1", "X=2"}));
  EXPECT_EQ(merged_environment({"A=1"}, {}), (std::vector<std::string>{"A=1"}));
}

TEST(Spawn, TheChildsExitCodeComesBack) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "exit 7"};
  EXPECT_EQ(exit_code_of(spawn(o)), 7);
  o.argv = {"sh", "-c", "exit 0"};  // found in PATH
  EXPECT_EQ(exit_code_of(spawn(o)), 0);
}

TEST(Spawn, TheChildSeesTheMergedEnvironment) {
  ::setenv("EMO_SPAWN_TEST_KEPT", "parent", 1);
  ::setenv("EMO_SPAWN_TEST_REPLACED", "parent", 1);
  ::setenv("EMO_SPAWN_TEST_REMOVED", "parent", 1);
  const auto env = merged_environment({"EMO_SPAWN_TEST_REPLACED=override", "EMO_SPAWN_TEST_REMOVED", "EMO_SPAWN_TEST_NEW=new"});
  EXPECT_EQ(output_of("printf '%s %s %s %s' \"$EMO_SPAWN_TEST_KEPT\" \"$EMO_SPAWN_TEST_REPLACED\" "
                      "\"${EMO_SPAWN_TEST_REMOVED-unset}\" \"$EMO_SPAWN_TEST_NEW\"",
                      env),
            "parent override unset new");
  // Without `env`, emo's own environment.
  EXPECT_EQ(output_of("printf %s \"$EMO_SPAWN_TEST_REPLACED\""), "parent");
  for (const char* n : {"EMO_SPAWN_TEST_KEPT", "EMO_SPAWN_TEST_REPLACED", "EMO_SPAWN_TEST_REMOVED"}) ::unsetenv(n);
}

TEST(Spawn, AKeptDescriptorSurvivesExecAndOthersAreClosed) {
  int kept[2], other[2];
  ASSERT_EQ(::pipe2(kept, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(other, 0), 0);  // not close-on-exec: only close_from closes it
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "printf kept >&" + std::to_string(kept[1]) + " && ! { printf x >&" + std::to_string(other[1]) +
                                 "; } 2>/dev/null"};
  ASSERT_GT(other[1], kept[1]) << "descriptors are numbered in creation order";
  o.fds = {{kept[1], kept[1]}};
  o.close_from = kept[1] + 1;
  const pid_t pid = spawn(o);
  ::close(kept[1]);
  ::close(other[1]);
  char buf[16] = {};
  EXPECT_EQ(::read(kept[0], buf, sizeof buf), 4);
  EXPECT_EQ(std::string(buf), "kept");
  EXPECT_EQ(exit_code_of(pid), 0) << "the descriptor above close_from must be closed in the child";
  for (int fd : {kept[0], other[0]}) ::close(fd);
}

TEST(Spawn, AProgramThatCannotRunIsAnInputErrorNotACrash) {
  SpawnOptions o;
  o.argv = {"/no/such/program", "x"};
  try {
    spawn(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/no/such/program: cannot run the command: No such file or directory");
  }
  o.argv = {"emo-no-such-program-in-path"};
  EXPECT_THROW(spawn(o), InputError);
  o.argv = {"/dev/null"};  // exists, not executable
  o.search_path = false;
  try {
    spawn(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/null: cannot run the command: Permission denied");
  }
  o.argv = {};
  EXPECT_THROW(spawn(o), std::invalid_argument);
}

TEST(Spawn, ANewProcessGroupIsTheChildsOwn) {
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "read x"};  // waits until the pipe is closed
  o.fds = {{out[0], STDIN_FILENO}};
  o.new_process_group = true;
  const pid_t pid = spawn(o);
  EXPECT_EQ(::getpgid(pid), pid);
  EXPECT_NE(::getpgid(pid), ::getpgrp());
  ::close(out[1]);
  ::close(out[0]);
  EXPECT_EQ(exit_code_of(pid), 1);  // `read` at end-of-file
}

}  // namespace
}  // namespace emo::runtime
