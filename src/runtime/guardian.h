// The guardian: clocks reset even after `kill -9` of `emo run` (docs/runtime.md, "The guardian").
//
// `emo run` starts a small process, `emo __guardian FD`, before it touches any clock: fork, then
// setsid (its own session and process group, out of the job's and the terminal's signal path),
// then exec of emo itself with only a socket (FD) and /dev/null as stdin/stdout open. The parent
// tells it, one text line per message, which GPUs it is about to lock, BEFORE each first lock:
//     lock NVML_INDEX         about to lock this GPU's clocks (NVML index: the same driver
//                             enumeration in both processes; CUDA_VISIBLE_DEVICES does not apply)
//     state PATH              the lock record to remove once the clocks are reset
//     job PGID                the command's process group
//     job-exited              the command has exited (its process group is not to be touched)
//     done                    clocks already reset: exit without touching anything
// When the socket reaches end-of-file without "done" (the parent died, SIGKILL included, or it
// threw before resetting), the guardian resets the SM and memory locked clocks of every GPU
// announced, removes the lock record, sends SIGTERM to the command's process group (SIGKILL
// after kGuardianGraceS when members are left) and exits. It ignores SIGINT, SIGHUP, SIGTERM
// and SIGPIPE. It answers "ready" once NVML is open (or "error MESSAGE").
//
// The lock record (one file per `emo run`, `emo-run-PID.locks` in lock_state_dir()) is what the
// stale-lock note reads when both `emo run` and its guardian died (OOM killer, a killed session).
// The directory is trusted only when it is this user's own (open_state_dir): a directory another
// user can write could hold a symlink where a record is written, or a planted record naming GPUs
// that the next `emo run` (as root) would reset (issue 28).
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

#include "runtime/nvml.h"

namespace emo::runtime {

/// Seconds the guardian waits after SIGTERM to the command's process group before SIGKILL.
inline constexpr double kGuardianGraceS = 10;

/// Where lock records live: $EMO_STATE_DIR, else $XDG_RUNTIME_DIR/emo, else /tmp/emo-EUID.
std::string lock_state_dir();

/// Opens the lock-record directory `dir` and checks that it is this process's own: a directory
/// (not a symbolic link) owned by the effective uid with neither group nor others allowed to
/// write (mode & 022 == 0). When `create` and `dir` is missing, creates it with mode 0700 (missing
/// parents with the umask). The checks are made on the opened descriptor (fstat, and the same
/// device/inode as the lstat of the path), so a directory swapped in after the check is not used
/// through it. Returns an O_DIRECTORY, close-on-exec descriptor the caller closes, or -1 when `dir`
/// is missing and not `create`. Throws emo::InputError(dir, "refusing this lock-record directory:
/// it is owned by uid 65534, not by uid 0; ...") naming the failed check, or when it cannot be
/// created or opened.
int open_state_dir(const std::string& dir, bool create);

/// A lock record whose `emo run` is no longer alive.
struct StaleLocks {
  std::string path;            ///< The record file.
  long pid = 0;                ///< The `emo run` that wrote it.
  std::vector<unsigned> gpus;  ///< NVML indices whose clocks it had locked.
};

/// The contents (at most `max_bytes`) of the file `name` in the directory `dir_fd` when it is a
/// regular file owned by the effective uid, opened with O_NOFOLLOW (a symbolic link there is not
/// followed); "" otherwise or when it cannot be read.
std::string read_owned_file(int dir_fd, const char* name, std::size_t max_bytes = 64 * 1024);

/// The lock records in `dir` whose pid is dead (kill(pid, 0) fails with ESRCH), sorted by path.
/// Unparseable records and a missing directory yield nothing. (A reused pid hides a record.)
/// Only a directory that passes open_state_dir's checks is read (else its emo::InputError is
/// thrown), and in it only regular files owned by the effective uid, opened with O_NOFOLLOW (a
/// symbolic link at a record's name is skipped), each read up to 64 KiB.
std::vector<StaleLocks> find_stale_locks(const std::string& dir);

/// One line for the user: "a previous emo run (pid 4242) left clocks locked on GPU 0, 1".
std::string stale_note(const StaleLocks& s);

/// Resets GPU `index`'s SM locked clocks, then its memory locked clocks. Returns false when the
/// GPU does not support memory locked clocks (NVML "not supported", ignored). Throws NvmlError
/// for anything else (no such GPU, no permission, no driver).
bool reset_locked_clocks(Nvml& nvml, unsigned index);

/// The parent's end of the guardian. Not copyable; the destructor closes the socket, which makes
/// a guardian not told done() reset every announced GPU.
class Guardian {
 public:
  /// Starts `command` + the socket's descriptor number as the last argument (e.g. {"/usr/bin/emo",
  /// "__guardian"}) and waits (up to 30 s) for its "ready". `state_dir` holds the lock record: it
  /// is opened (created 0700 when missing) and checked first, by open_state_dir. Throws
  /// emo::InputError when the directory is refused (then nothing is started), or the guardian
  /// cannot start or cannot open NVML: no clock has been touched.
  explicit Guardian(const std::vector<std::string>& command, std::string state_dir = lock_state_dir());
  ~Guardian();
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;

  /// Call before locking any clock of GPU `nvml_index`: the first time for a GPU, tells the
  /// guardian and rewrites the lock record. Never throws; a guardian gone is reported once on
  /// stderr (clocks are then reset only by `emo run` itself).
  void will_lock(unsigned nvml_index);
  /// The command was started in process group `pgid`.
  void job_started(pid_t pgid);
  /// The command has exited (the guardian will not signal its process group).
  void job_exited();
  /// Every clock has been reset: removes the lock record, tells the guardian, and reaps it
  /// (waits up to 1 s).
  void done();

  pid_t pid() const noexcept { return pid_; }
  const std::string& state_path() const noexcept { return state_path_; }

 private:
  void send(const std::string& line);
  void write_record();

  int fd_ = -1;
  int dir_fd_ = -1;  // state_dir_ as checked by open_state_dir; records are written through it
  pid_t pid_ = -1;
  std::string state_dir_, state_path_, record_name_;
  std::set<unsigned> gpus_;
  bool warned_ = false;
  bool done_ = false;
};

/// The guardian process itself (`emo __guardian FD`): opens NVML, answers "ready" on `fd`, reads
/// messages until "done" (returns 0, touches nothing) or end-of-file (resets every announced GPU,
/// removes the lock record, stops the command's process group, returns 0). Returns 2 when NVML
/// cannot be opened (after sending "error MESSAGE").
int run_guardian(int fd);

}  // namespace emo::runtime
