// Random, realistic small traces for tests (issue 15): in-memory emo::trace::Trace objects shaped
// like a PyTorch-profiler (Kineto) recording of a training loop on one GPU, so that the whole
// pipeline (graph, slack, packs, optimize) can be checked on many traces no one recorded.
//
// What a generated trace holds (all times integer ns, every figure drawn from the seed):
//  - 1–2 CPU threads (pid 100, tids 1001, 1002) that launch GPU work through runtime API calls
//    (cudaLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync), each with a correlation id linking it
//    to its GPU op on device 0; thread 0 runs the training loop, thread 1 (when present) is a
//    side thread (data copies, small kernels on the last stream, its own stream syncs);
//  - 1–3 GPU streams (ids 7, 20, 24), each a FIFO: an op starts at the latest of its launch
//    (call start + launch latency), the end of the stream's previous op and any event it waits on;
//  - kernels of every op class of model/op_class.h, by name: GEMM/conv/attention (compute),
//    elementwise/reduce/softmax/norm (memory), NCCL collectives (communication, each with a
//    collective-table row) and unrecognised names (mixed), plus memcpy and memset ops; durations
//    log-uniform from a few µs to a few ms per class;
//  - stretches that are GPU-bound (launches a few µs apart, the GPU queue grows) and CPU-bound
//    (launches separated by 0.1–3 ms of CPU work, the GPU idles);
//  - host syncs with their Kineto `cuda_sync` records: cudaStreamSynchronize,
//    cudaDeviceSynchronize (end of every iteration), cudaEventSynchronize, blocking DtoH cudaMemcpy
//    (no record: the graph infers it by name), and cross-stream waits (cudaEventRecord on one
//    stream, cudaStreamWaitEvent on another, with a record naming both streams);
//  - one ProfilerStep#N annotation per iteration on thread 0.
// The timestamps come from a small discrete-event simulation of the threads and streams, so every
// dependency the graph builder derives is consistent with them: replaying the trace's own
// durations reproduces it (replay error 0).
//
// Meta: Kineto format, path "synthetic:" + describe(params), GPU 0 an "NVIDIA A100-SXM4-80GB",
// rank 0 (world size 2 when it has NCCL kernels, else 1). The rows are written through
// tests/graph/hand_trace.h (so the library needs GoogleTest's headers).
#pragma once

#include <cstdint>
#include <string>

#include "trace/trace.h"

namespace emo::testing {

/// The knobs of one random trace.
struct RandomTraceParams {
  std::uint64_t seed = 1;      ///< Everything else is drawn from it (same params, same trace).
  int threads = 1;             ///< CPU threads launching work: 1 or 2.
  int streams = 1;             ///< GPU streams: 1 to 3.
  int iterations = 4;          ///< Training-loop iterations (each ends with cudaDeviceSynchronize); ≥ 1.
  int ops_per_iteration = 40;  ///< GPU ops thread 0 launches per iteration (about; a stretch may overrun); ≥ 1.
  double cpu_bound = 0.3;      ///< Share of thread 0's stretches that are CPU-bound, in [0, 1].
  double time_scale = 1.0;     ///< Multiplies every GPU op duration and CPU gap; > 0.
};

/// The parameters of seed `seed`: threads, streams, iterations, ops per iteration and CPU-bound
/// share and time scale drawn from it (1–2 threads, 1–3 streams, 3–8 iterations, 20–60 ops,
/// 0.05–0.7 CPU-bound, time scale 1–4): spans of about 30 ms to 1 s, 1 to ~20 packs of 20 ms.
RandomTraceParams random_trace_params(std::uint64_t seed);

/// "seed=N threads=T streams=S iterations=I ops=O cpu_bound=C scale=X", for failure messages.
std::string describe(const RandomTraceParams& p);

/// The trace of `p` (finished: Trace::finish() called). Deterministic in `p`. Throws
/// std::invalid_argument when a parameter is out of its range.
trace::Trace random_trace(const RandomTraceParams& p);

}  // namespace emo::testing
