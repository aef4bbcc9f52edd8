// The MPI transport of the decomposed solve (job/job_solve.h): the RankWorker (job/rank_worker.h)
// of process 0 sends each step to the processes that loaded the ranks (load_own_traces_mpi,
// job/load_job.h) and gathers their answers; every other process serves those steps with a
// ThreadRankWorker over its own traces. Only ports, cuts, port reductions and policy sections
// cross (job/messages.h over job/mpi_comm.h); the traces never move.
#pragma once

#include "driver/optimize.h"
#include "job/job_solve.h"
#include "job/load_job.h"
#include "job/rank_worker.h"
#include "model/gpu_catalog.h"

namespace emo::job {

/// solve_decomposed with the ranks reduced and solved by the processes of an MPI job (`emo optimize
/// --mpi`), on process 0; every other process runs serve_decomposed_mpi meanwhile. `share` is
/// process 0's, from load_own_traces_mpi(paths, …), and `ports` linked from the digests it returned.
/// Each rank is reduced and solved by the process that loaded it (trace i of paths by process
/// i % K), on its own how.threads threads (its worker passed through how.wrap_worker); only ports,
/// cuts, port reductions and policy sections cross (CBOR). The result is the same as
/// solve_decomposed's on the same traces. Releases `share` on every way out (MpiShare::release).
/// Throws what solve_decomposed throws, an error of another process (InputError as it was thrown,
/// anything else as std::runtime_error(what)), std::invalid_argument when `share` is not process 0's.
/// Built without MPI: InputError("--mpi", "emo was built without MPI").
DecomposedSolve solve_decomposed_mpi(const JobPorts& ports, MpiShare& share, const model::GpuSpec& gpu,
                                     const driver::OptimizeOptions& options, const DecomposedOptions& how = {});

/// A process other than 0 of an MPI job after load_own_traces_mpi(…, share): answers process 0's
/// commands — send its traces (gather_traces_mpi), reduce its ranks to ports, solve a round of
/// solve_decomposed_mpi, run them at static clocks (on how.threads threads, its worker passed
/// through how.wrap_worker; an error is sent back, not thrown) — until it is told to finish
/// (returns, share released) or that another process failed (throws MpiPeerFailed; the caller
/// exits 2 silently). `options` are the job's, as process 0's.
/// Built without MPI: InputError("--mpi", "emo was built without MPI").
void serve_decomposed_mpi(MpiShare& share, const driver::OptimizeOptions& options, const DecomposedOptions& how = {});

}  // namespace emo::job
