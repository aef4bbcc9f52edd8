// Loading the traces of a multi-rank job (issue 16): each rank's trace is read and reduced on its
// own, on a thread pool in one process (load_traces) or spread over the processes of an MPI job.
// Under MPI each process keeps its own and only their digests go to process 0 (load_own_traces_mpi);
// the decomposed solve (job/job_solve.h) never moves them, the joint solve gathers them
// (gather_traces_mpi).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "trace/job.h"
#include "trace/trace.h"

namespace emo::job {

struct LoadOptions {
  int threads = 0;      ///< Loading threads per process: 0 = hardware concurrency; at most one per file.
  bool reduce = true;   ///< Apply trace::reduce_for_optimize to each trace after loading.
};

/// Loads (trace::load_trace) and, with options.reduce, reduces every file of `paths` on
/// options.threads threads. Returns the traces in the order of `paths`.
/// Throws the error of the lowest-index file that fails (emo::InputError naming the file), the
/// same whatever the thread count and timing; ArgumentError for threads < 0.
std::vector<trace::Trace> load_traces(const std::vector<std::string>& paths, const LoadOptions& options);

/// Thrown by load_own_traces_mpi on the processes other than 0 when some file failed: process 0
/// throws the error itself (and prints it); the others should exit with status 2 silently.
class MpiPeerFailed : public std::runtime_error {
 public:
  MpiPeerFailed() : std::runtime_error("another MPI process reports the error") {}
};

/// What a process of an MPI job keeps for the decomposed solve (job/mpi_worker.h:
/// solve_decomposed_mpi on process 0, serve_decomposed_mpi on the others), filled by
/// load_own_traces_mpi(…, share): its own traces, and MPI left up until release(). Neither copied nor moved.
class MpiShare {
 public:
  std::size_t process = 0;            ///< p, this process's index in MPI_COMM_WORLD.
  std::size_t processes = 1;          ///< K.
  std::vector<std::string> paths;     ///< Every trace's path, in the order given.
  std::vector<trace::Trace> traces;   ///< Its own, reduced as loaded: traces[k] is that of paths[p + k K].

  MpiShare() = default;
  /// release(true), or release(false) when an exception is on its way out.
  ~MpiShare();
  MpiShare(const MpiShare&) = delete;
  MpiShare& operator=(const MpiShare&) = delete;
  /// Whether it was filled and not released yet.
  bool active() const { return active_; }
  /// Ends this process's part: on process 0, tells every other process to finish (`ok`) or to exit 2
  /// (`!ok`: it throws MpiPeerFailed there); then MPI_Finalize now (`ok`) or at exit (so that process
  /// 0 prints its error first). Drops `traces`. Does nothing when not active. Built without MPI: nothing.
  void release(bool ok);

 private:
  friend std::vector<trace::RankDigest> load_own_traces_mpi(const std::vector<std::string>&, const LoadOptions&, MpiShare&);
  bool active_ = false;
  bool finalize_ = false;  // this process called MPI_Init, so it finalises
};

/// The first step of `emo optimize --mpi`: process p of K loads and reduces the files i with
/// i % K == p (on its own options.threads threads) and keeps them in `share` (MPI stays up until
/// share.release()); only their digests (trace::digest: identity, GPU, collectives, a few kB)
/// go to process 0, which returns them in the order of `paths` (the others return an empty
/// vector), to link the job (trace::link_ranks) without its traces. Then process 0 either solves
/// the job decomposed with the others (job/mpi_worker.h: solve_decomposed_mpi, the others in
/// serve_decomposed_mpi), or gathers the traces (gather_traces_mpi). Calls MPI_Init when MPI is not
/// initialised yet; leaves an MPI initialised by the caller as it is.
/// Errors: when any file fails, all processes learn it (no hang); process 0 throws the error of the
/// lowest-index failing file (emo::InputError naming it), the others throw MpiPeerFailed; MPI is
/// then finalised at exit (std::atexit), so that the others wait there until process 0 has printed
/// the error and exits (mpirun kills what still runs once a process exits non-zero); `share` stays empty.
/// Built without MPI: throws InputError("--mpi", "emo was built without MPI").
std::vector<trace::RankDigest> load_own_traces_mpi(const std::vector<std::string>& paths, const LoadOptions& options,
                                                   MpiShare& share);

/// Process 0 after load_own_traces_mpi: every trace, in the order of the paths (its own moved out of
/// share.traces, the others sent by their processes, which serve_decomposed_mpi tells to). The
/// caller then releases the share. Throws std::invalid_argument when not process 0 of an active share.
std::vector<trace::Trace> gather_traces_mpi(MpiShare& share);

/// A process other than 0, told to by process 0 (mpi::kGather): sends its traces (trace::to_bytes)
/// to process 0 in the order of its paths, and drops them.
void send_own_traces_mpi(MpiShare& share);

}  // namespace emo::job
