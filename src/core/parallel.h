// A small pool for independent items: item i of n handed to the next free thread, the calling
// thread working too. Used where a job's ranks are loaded (job/load_job.cpp) or solved
// (job/rank_worker.cpp); each caller keeps its own error policy inside `work`.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace emo {

/// Calls work(i) once for every i in [0, n), on min(threads, n) threads (threads <= 0: one per
/// core), the calling thread among them; after each item the calling thread does, calls
/// after_own_item() on it (e.g. to report progress, which must come from the calling thread).
/// Returns when every item is done. `work` must not throw (catch inside it); items run in no
/// particular order.
template <class Work, class AfterOwnItem>
void parallel_for(std::size_t n, int threads, Work&& work, AfterOwnItem&& after_own_item) {
  std::atomic<std::size_t> next{0};
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t k = std::max<std::size_t>(1, std::min(threads <= 0 ? hw : static_cast<std::size_t>(threads), n));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < k; ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) work(i);
    });
  }
  for (std::size_t i = next++; i < n; i = next++) {
    work(i);
    after_own_item();
  }
  for (std::thread& th : pool) th.join();
}

/// parallel_for without a per-item call on the calling thread.
template <class Work>
void parallel_for(std::size_t n, int threads, Work&& work) {
  parallel_for(n, threads, std::forward<Work>(work), [] {});
}

}  // namespace emo
