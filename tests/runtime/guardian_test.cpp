// The guardian (runtime/guardian.h) without exec of emo: lock records and the stale-lock scan,
// reset_locked_clocks against the recording NVML stand-in, run_guardian() in a forked child
// (what it resets on end-of-file, that "done" makes it touch nothing), and the parent's end
// (Guardian) talking to a shell script that records what it is told.
#include "runtime/guardian.h"

#include "core/error.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace emo::runtime {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A fresh folder for lock records and the stand-in's call log; NVML is the stand-in with 3 GPUs.
class GuardianTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("guardian_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("EMO_NVML_LIBRARY", EMO_FAKE_NVML, 1);
    setenv("EMO_FAKE_NVML_LOG", (dir_ / "nvml.log").c_str(), 1);
    setenv("EMO_FAKE_NVML_GPUS", "NVIDIA A100-SXM4-80GB,NVIDIA A100-SXM4-80GB,NVIDIA A100-SXM4-80GB", 1);
    unsetenv("EMO_FAKE_NVML_FAIL");
  }
  void TearDown() override {
    for (const char* v : {"EMO_NVML_LIBRARY", "EMO_FAKE_NVML_LOG", "EMO_FAKE_NVML_GPUS", "EMO_FAKE_NVML_FAIL"}) unsetenv(v);
    fs::remove_all(dir_);
  }
  /// The stand-in's setter calls ("nvmlDeviceReset...", "nvmlDeviceSet..."), one string.
  std::string setters() const {
    std::ifstream in(dir_ / "nvml.log");
    std::string out;
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("nvmlDeviceSet") || line.starts_with("nvmlDeviceReset")) out += line + ";";
    }
    return out;
  }
  /// Runs run_guardian() in a forked child, sends `messages`, closes the socket; returns its exit code.
  int guardian_told(const std::string& messages) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(sv[0]);
      _exit(run_guardian(sv[1]));
    }
    ::close(sv[1]);
    char ready[6] = {};
    EXPECT_EQ(::read(sv[0], ready, 6), 6);
    EXPECT_EQ(std::string(ready, 6), "ready\n");
    EXPECT_EQ(::write(sv[0], messages.data(), messages.size()), static_cast<ssize_t>(messages.size()));
    ::close(sv[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  fs::path dir_;
};

TEST_F(GuardianTest, StaleLocksAreRecordsOfDeadPidsOnly) {
  const pid_t dead = ::fork();
  if (dead == 0) _exit(0);
  ::waitpid(dead, nullptr, 0);
  std::ofstream(dir_ / ("emo-run-" + std::to_string(dead) + ".locks")) << "emo-locks/1\npid " << dead << "\ngpu 0\ngpu 2\n";
  std::ofstream(dir_ / "emo-run-1.locks") << "emo-locks/1\npid " << ::getpid() << "\ngpu 1\n";  // alive
  std::ofstream(dir_ / "emo-run-2.locks") << "not a record\n";
  std::ofstream(dir_ / "other.txt") << "emo-locks/1\npid " << dead << "\ngpu 1\n";
  const auto stale = find_stale_locks(dir_.string());
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].pid, dead);
  EXPECT_EQ(stale[0].gpus, (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(stale_note(stale[0]), "a previous emo run (pid " + std::to_string(dead) + ") left clocks locked on GPU 0, 2");
  EXPECT_TRUE(find_stale_locks((dir_ / "missing").string()).empty());
}

TEST_F(GuardianTest, StateDirFromTheEnvironment) {
  setenv("EMO_STATE_DIR", "/x/state", 1);
  EXPECT_EQ(lock_state_dir(), "/x/state");
  unsetenv("EMO_STATE_DIR");
  setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
  EXPECT_EQ(lock_state_dir(), "/run/user/7/emo");
  unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(lock_state_dir(), "/tmp/emo-" + std::to_string(::geteuid()));
}

// ---- issue 28: the lock-record directory must be this user's own ---------------------------------

/// The one-line refusal open_state_dir gives for `dir` with `problem`.
std::string refusal(const fs::path& dir, const std::string& problem) {
  return dir.string() + ": refusing this lock-record directory: " + problem +
         "; emo keeps lock records only in a directory of its own, mode 0700 "
         "(remove it, or set EMO_STATE_DIR to such a directory)";
}

/// The InputError message `f` throws, or "" when it throws none.
template <class F>
std::string thrown(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

constexpr uid_t kNobody = 65534;

TEST_F(GuardianTest, StateDirIsCreated0700ByItsOwner) {
  const fs::path state = dir_ / "a" / "state";
  EXPECT_EQ(open_state_dir(state.string(), false), -1);  // missing, not created
  EXPECT_FALSE(fs::exists(state));
  const mode_t old = ::umask(0);  // the mode must not depend on the umask
  const int fd = open_state_dir(state.string(), true);
  ::umask(old);
  ASSERT_GE(fd, 0);
  ::close(fd);
  struct stat st {};
  ASSERT_EQ(::lstat(state.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST_F(GuardianTest, StateDirOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to uid 65534";
  const fs::path state = dir_ / "state";
  fs::create_directories(state);
  ::chmod(state.c_str(), 0700);
  ASSERT_EQ(::chown(state.c_str(), kNobody, kNobody), 0);
  const std::string want = refusal(state, "it is owned by uid 65534, not by uid 0");
  EXPECT_EQ(thrown([&] { open_state_dir(state.string(), true); }), want);
  EXPECT_EQ(thrown([&] { find_stale_locks(state.string()); }), want);
  // The guardian is never started (the stand-in would write "started").
  const std::string started = (dir_ / "started").string();
  EXPECT_EQ(thrown([&] { Guardian({"/bin/sh", "-c", "echo x > " + started + "; echo ready >&\"$1\"", "sh"},
                                  state.string()); }),
            want);
  EXPECT_FALSE(fs::exists(started));
}

TEST_F(GuardianTest, StateDirThatOthersMayWriteIsRefused) {
  const fs::path state = dir_ / "state";
  fs::create_directories(state);
  for (const mode_t mode : {01777, 0777, 0770, 0720, 0702}) {
    ASSERT_EQ(::chmod(state.c_str(), mode), 0);
    EXPECT_EQ(thrown([&] { open_state_dir(state.string(), true); }),
              refusal(state, fmt::format("its group or others may write to it (mode {:04o})", mode)));
    EXPECT_EQ(thrown([&] { find_stale_locks(state.string()); }),
              refusal(state, fmt::format("its group or others may write to it (mode {:04o})", mode)));
  }
  ASSERT_EQ(::chmod(state.c_str(), 0755), 0);  // readable by others is fine
  const int fd = open_state_dir(state.string(), true);
  EXPECT_GE(fd, 0);
  ::close(fd);
}

TEST_F(GuardianTest, StateDirThatIsASymlinkIsRefused) {
  const fs::path real = dir_ / "real", link = dir_ / "state";
  fs::create_directories(real);
  ::chmod(real.c_str(), 0700);
  fs::create_directory_symlink(real, link);
  EXPECT_EQ(thrown([&] { open_state_dir(link.string(), true); }), refusal(link, "it is a symbolic link"));
  EXPECT_EQ(thrown([&] { find_stale_locks(link.string()); }), refusal(link, "it is a symbolic link"));
  std::ofstream(dir_ / "file") << "x";
  EXPECT_EQ(thrown([&] { open_state_dir((dir_ / "file").string(), true); }),
            refusal(dir_ / "file", "it is not a directory"));
}

TEST_F(GuardianTest, OnlyRegularRecordsOfThisUserAreBelieved) {
  const pid_t dead = ::fork();
  if (dead == 0) _exit(0);
  ::waitpid(dead, nullptr, 0);
  const fs::path state = dir_ / "state", elsewhere = dir_ / "elsewhere.locks";
  fs::create_directories(state);
  ::chmod(state.c_str(), 0700);
  const std::string record = "emo-locks/1\npid " + std::to_string(dead) + "\ngpu 1\n";
  std::ofstream(elsewhere) << record;
  fs::create_symlink(elsewhere, state / "emo-run-1.locks");  // a link at a record's name: not followed
  std::ofstream(state / "emo-run-3.locks") << record;          // the one a real run would leave
  const auto stale = find_stale_locks(state.string());
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].path, (state / "emo-run-3.locks").string());
  if (::geteuid() == 0) {  // a record another user owns (only root could have put it there) is not believed
    ASSERT_EQ(::chown((state / "emo-run-3.locks").c_str(), kNobody, kNobody), 0);
    EXPECT_TRUE(find_stale_locks(state.string()).empty());
  }
}

TEST_F(GuardianTest, TheRecordIsNotWrittenThroughAPlantedLink) {
  const std::vector<std::string> command = {"/bin/sh", "-c", "echo ready >&\"$1\"; cat <&\"$1\" > /dev/null", "sh"};
  const fs::path state = dir_ / "state", victim = dir_ / "victim";
  std::ofstream(victim) << "precious\n";
  Guardian g(command, state.string());
  // What the old code wrote through: the record's name + ".tmp", and the record's name itself.
  fs::create_symlink(victim, g.state_path() + ".tmp");
  g.will_lock(2);
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_FALSE(fs::is_symlink(g.state_path()));
  EXPECT_EQ(slurp(g.state_path()), "emo-locks/1\npid " + std::to_string(::getpid()) + "\ngpu 2\n");
  fs::remove(g.state_path());
  fs::create_symlink(victim, g.state_path());
  g.will_lock(0);  // replaces the link itself (rename), never writes through it
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_FALSE(fs::is_symlink(g.state_path()));
  EXPECT_EQ(slurp(g.state_path()), "emo-locks/1\npid " + std::to_string(::getpid()) + "\ngpu 0\ngpu 2\n");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(state)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"emo-run-" + std::to_string(::getpid()) + ".locks",
                                             "emo-run-" + std::to_string(::getpid()) + ".locks.tmp"}))
      << "no temporary file left behind";
  g.done();
}

TEST_F(GuardianTest, ResetLockedClocksResetsSmThenMemory) {
  const auto nvml = Nvml::open();
  EXPECT_TRUE(reset_locked_clocks(*nvml, 1));
  EXPECT_EQ(setters(), "nvmlDeviceResetGpuLockedClocks 1;nvmlDeviceResetMemoryLockedClocks 1;");
  setenv("EMO_FAKE_NVML_FAIL", "nvmlDeviceResetMemoryLockedClocks=3", 1);  // not supported: not an error
  EXPECT_FALSE(reset_locked_clocks(*Nvml::open(), 0));
  setenv("EMO_FAKE_NVML_FAIL", "nvmlDeviceResetGpuLockedClocks=4", 1);
  EXPECT_THROW(reset_locked_clocks(*Nvml::open(), 0), NvmlError);
}

TEST_F(GuardianTest, EndOfFileResetsEveryAnnouncedGpuAndRemovesTheRecord) {
  const fs::path record = dir_ / "emo-run-1.locks";
  std::ofstream(record) << "emo-locks/1\npid 1\ngpu 2\ngpu 0\n";
  EXPECT_EQ(guardian_told("state " + record.string() + "\nlock 2\nlock 0\nlock 2\n"), 0);
  EXPECT_EQ(setters(),
            "nvmlDeviceResetGpuLockedClocks 0;nvmlDeviceResetMemoryLockedClocks 0;"
            "nvmlDeviceResetGpuLockedClocks 2;nvmlDeviceResetMemoryLockedClocks 2;");
  EXPECT_FALSE(fs::exists(record));
}

TEST_F(GuardianTest, DoneMeansTouchNothing) {
  const fs::path record = dir_ / "emo-run-1.locks";
  std::ofstream(record) << "emo-locks/1\npid 1\ngpu 1\n";
  EXPECT_EQ(guardian_told("state " + record.string() + "\nlock 1\ndone\n"), 0);
  EXPECT_EQ(setters(), "");
  EXPECT_TRUE(fs::exists(record));  // the parent removes it before "done"
}

TEST_F(GuardianTest, NoNvmlMeansAnErrorAnswer) {
  setenv("EMO_FAKE_NVML_FAIL", "nvmlInit_v2=9", 1);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const pid_t pid = ::fork();
  if (pid == 0) _exit(run_guardian(sv[1]));
  ::close(sv[1]);
  char buf[256] = {};
  const ssize_t n = ::read(sv[0], buf, sizeof buf - 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "error NVML: nvmlInit failed: the NVIDIA driver is not loaded\n");
  EXPECT_EQ(WEXITSTATUS(status), 2);
  ::close(sv[0]);
}

TEST_F(GuardianTest, ParentEndSendsLocksOnceWritesAndRemovesTheRecord) {
  // A stand-in guardian: lists its open descriptors, answers ready, records what it is told.
  const std::string told = (dir_ / "told").string(), fds = (dir_ / "fds").string();
  const std::vector<std::string> command = {
      "/bin/sh", "-c", "(ls /proc/$$/fd > " + fds + "); echo ready >&\"$1\"; cat <&\"$1\" > " + told, "sh"};
  const std::string state = (dir_ / "state").string();
  {
    Guardian g(command, state);
    const std::string path = state + "/emo-run-" + std::to_string(::getpid()) + ".locks";
    EXPECT_EQ(g.state_path(), path);
    g.will_lock(1);
    g.will_lock(0);
    g.will_lock(1);
    EXPECT_EQ(slurp(path), "emo-locks/1\npid " + std::to_string(::getpid()) + "\ngpu 0\ngpu 1\n");
    g.job_started(4242);
    g.job_exited();
    g.done();
    EXPECT_FALSE(fs::exists(path));
    EXPECT_EQ(slurp(told), "state " + path + "\nlock 1\nlock 0\njob 4242\njob-exited\ndone\n");
  }
  std::string listed = slurp(fds);
  EXPECT_EQ(listed, "0\n1\n2\n3\n") << "the guardian must hold only stdin, stdout, stderr and its socket";
}

TEST_F(GuardianTest, AGuardianThatCannotStartIsAnInputError) {
  EXPECT_THROW(Guardian({"/bin/sh", "-c", "exit 0", "sh"}, dir_.string()), InputError);
  EXPECT_THROW(Guardian({(dir_ / "no-such-program").string()}, dir_.string()), InputError);
}

}  // namespace
}  // namespace emo::runtime
