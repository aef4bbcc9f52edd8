// The MPI transport's primitives: bytes between the processes of MPI_COMM_WORLD, and the session,
// shared by job/load_job.cpp (loading) and job/mpi_worker.cpp (the decomposed solve); what the
// bytes say is job/messages.h. Internal to src/job, and only built with MPI (EMO_WITH_MPI); no MPI
// type appears here.
#pragma once

#include <cstddef>
#include <string>

namespace emo::job::mpi {

/// MPI_Init when MPI is not initialised yet. MPI_Finalize at the end of the scope when this object
/// called MPI_Init, unless keep() or finalize_at_exit() moved that elsewhere.
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  /// Leaves MPI up until the process exits: after an error, process 0 prints it on its way out
  /// and the others, waiting in MPI_Finalize for it, exit only then (mpirun kills the processes
  /// still running when one exits non-zero, so an early exit could cut process 0's message off).
  void finalize_at_exit();
  /// Leaves MPI up past this scope; returns whether this object had called MPI_Init (the caller
  /// then finalises: finalize() or finalize_at_exit()).
  bool keep();
  std::size_t rank() const { return static_cast<std::size_t>(rank_); }
  std::size_t size() const { return static_cast<std::size_t>(size_); }

 private:
  bool ours_ = false;
  int rank_ = 0, size_ = 1;
};

/// MPI_Finalize now, unless MPI is already finalised.
void finalize();
/// MPI_Finalize when the process exits (std::atexit; see Session::finalize_at_exit).
void finalize_at_exit();

/// Sends `bytes` to process `dest`: its size (tag + kSizeTag), then chunks of at most 1 GiB (tag),
/// so that a message may exceed MPI's 2 GiB count limit.
void send_bytes(const std::string& bytes, int dest, int tag);
/// Receives what send_bytes(…, tag) sent from `source`. Waits for it without spinning a core
/// (probes, sleeping up to 2 ms between probes): the processes share cores with the solve.
std::string recv_bytes(int source, int tag);
inline constexpr int kSizeTag = 1000;

/// The decomposed solve's messages (job/mpi_worker.cpp): process 0 sends each other process a
/// command (kTagCommand): kDone (finish), kAbort (another process failed: exit 2), or a round of
/// rank solves; each answers a round on kTagReply.
inline constexpr int kTagCommand = 1604, kTagReply = 1605;
inline constexpr const char* kDone = "D";
/// Send your traces to process 0 (gather_traces_mpi): the job is not solved decomposed.
inline constexpr const char* kGather = "G";
inline constexpr const char* kAbort = "A";

}  // namespace emo::job::mpi
