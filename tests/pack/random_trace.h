// A random CUDA-like trace generator for property tests of the pack graph and of what is built on
// it (tests/pack/pack_graph_test.cpp, tests/opt/exact_pack_milp_test.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/hand_trace.h"
#include "pack/test_rng.h"

namespace emo::testing {

/// A random trace as a CUDA program would record it: `threads` CPU threads issuing kernel
/// launches onto `streams` streams of `devices` GPUs, device and stream syncs (with records),
/// and cross-stream event waits (with records). The GPU honours stream order, launch times and
/// event waits; some kernels queue behind others (GPU-bound), some wait for their launch.
inline trace::Trace random_trace(std::uint64_t seed, int threads, int devices, int streams, int steps) {
  Rng r{seed};
  HandTrace h;
  std::vector<TimeNs> cpu(threads, 0);
  const int S = devices * streams;
  std::vector<TimeNs> stream_end(S, 0);     // when each stream's last op ends
  std::vector<TimeNs> stream_ready(S, 0);   // event waits not yet consumed
  std::vector<TimeNs> stream_last_launch(S, INT64_MIN);
  std::int64_t corr = 1;
  auto stream_id = [&](int s) { return static_cast<std::int64_t>(7 + s % streams); };
  auto device_of = [&](int s) { return static_cast<std::int32_t>(s / streams); };
  for (int i = 0; i < steps; ++i) {
    const int th = static_cast<int>(r.next() % threads);
    TimeNs& t = cpu[th];
    t += r.in(0, r.chance(20) ? 400 : 20);  // CPU work between calls
    const int action = static_cast<int>(r.next() % 100);
    if (action < 75) {  // launch
      // Streams' launch times must not go backwards (the builder pairs syncs by launch time).
      int s = static_cast<int>(r.next() % S);
      t = std::max(t, stream_last_launch[s] + 1);
      const TimeNs call_dur = r.in(2, 6);
      h.call("cudaLaunchKernel", t, call_dur, corr, th + 1);
      const TimeNs start = std::max({t + r.in(3, 8), stream_end[s], stream_ready[s]});
      const TimeNs dur = r.in(1, r.chance(30) ? 200 : 40);
      h.kernel("k" + std::to_string(corr), start, dur, stream_id(s), corr, device_of(s));
      stream_end[s] = start + dur;
      stream_ready[s] = 0;
      stream_last_launch[s] = t;
      t += call_dur;
      ++corr;
    } else if (action < 85) {  // device sync (record): returns after every stream of the device
      const std::int32_t d = static_cast<std::int32_t>(r.next() % devices);
      TimeNs done = t;
      for (int s = d * streams; s < (d + 1) * streams; ++s) {
        if (stream_last_launch[s] != INT64_MIN) done = std::max(done, stream_end[s]);
      }
      const TimeNs dur = done - t + r.in(1, 4);
      h.call("cudaDeviceSynchronize", t, dur, corr, th + 1);
      h.sync(SyncKind::kContextSync, t, dur, corr, d);
      t += dur;
      ++corr;
    } else if (action < 92 && streams > 1) {  // event record on a, wait on b (records)
      const int a = static_cast<int>(r.next() % S);
      int b = device_of(a) * streams + static_cast<int>(r.next() % streams);
      if (b == a) continue;
      h.call("cudaEventRecord", t, 2, corr, th + 1);
      const std::int64_t rec_corr = corr++;
      const TimeNs ready = stream_last_launch[a] == INT64_MIN ? 0 : stream_end[a];
      t += 3;
      h.call("cudaStreamWaitEvent", t, 2, corr, th + 1);
      h.sync(SyncKind::kStreamWaitEvent, t, 2, corr, device_of(a), stream_id(b), stream_id(a), rec_corr);
      ++corr;
      t += 2;
      stream_ready[b] = std::max(stream_ready[b], ready);
      // The wait binds the next op launched on b from now on.
      stream_last_launch[b] = std::max(stream_last_launch[b], t - 1);
    } else {  // stream sync (record) on one stream
      const int s = static_cast<int>(r.next() % S);
      const TimeNs done = stream_last_launch[s] == INT64_MIN ? t : std::max(t, stream_end[s]);
      const TimeNs dur = done - t + r.in(1, 4);
      h.call("cudaStreamSynchronize", t, dur, corr, th + 1);
      h.sync(SyncKind::kStreamSync, t, dur, corr, device_of(s), stream_id(s));
      t += dur;
      ++corr;
    }
  }
  return h.finish();
}

}  // namespace emo::testing
