#include "job/load_job.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/parallel.h"
#include "trace/load.h"
#include "trace/reduce.h"
#include "trace/trace_bytes.h"

#ifdef EMO_WITH_MPI
#include <mpi.h>

#include "job/messages.h"
#include "job/mpi_comm.h"
#endif

namespace emo::job {
namespace {

/// The traces loaded, or the lowest index that failed (== paths.size() when none) and its error.
struct Loaded {
  std::vector<std::optional<trace::Trace>> traces;
  std::size_t failed = 0;
  std::exception_ptr error;
};

/// Loads every file; a worker skips the files after the lowest failure seen so far, but every
/// file before it is still loaded, so `failed` is the lowest failing index whatever the timing.
Loaded load_indexed(const std::vector<std::string>& paths, const LoadOptions& options) {
  if (options.threads < 0) throw ArgumentError("threads", std::to_string(options.threads), "must be >= 0");
  const std::size_t n = paths.size();
  Loaded r;
  r.traces.resize(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> first_failed{n};
  parallel_for(n, options.threads, [&](std::size_t i) {
    if (i > first_failed.load()) return;
    try {
      trace::Trace t = trace::load_trace(paths[i]);
      r.traces[i] = options.reduce ? trace::reduce_for_optimize(std::move(t)) : std::move(t);
    } catch (...) {
      errors[i] = std::current_exception();
      std::size_t seen = first_failed.load();
      while (i < seen && !first_failed.compare_exchange_weak(seen, i)) {}
    }
  });
  r.failed = first_failed.load();
  if (r.failed < n) r.error = errors[r.failed];
  return r;
}

}  // namespace

std::vector<trace::Trace> load_traces(const std::vector<std::string>& paths, const LoadOptions& options) {
  Loaded r = load_indexed(paths, options);
  if (r.error) std::rethrow_exception(r.error);
  std::vector<trace::Trace> out;
  out.reserve(paths.size());
  for (auto& t : r.traces) out.push_back(std::move(*t));
  return out;
}

#ifdef EMO_WITH_MPI
namespace {

constexpr int kTagChunk = 1602, kTagError = 1603, kTagDigest = 1606;
using messages::encode_error, messages::throw_decoded, mpi::recv_bytes, mpi::send_bytes;

/// Every process learns whether some file failed (no process is left waiting); process 0 also
/// gets the error of the lowest failing index, encoded. Returns nullopt when no file failed.
std::optional<std::string> agree_on_error(const mpi::Session& mpi, const Loaded& local, std::size_t n) {
  const std::size_t k = mpi.size(), p = mpi.rank();
  const std::uint64_t mine = local.error ? p + local.failed * k : n;
  std::uint64_t lowest = n;
  MPI_Allreduce(&mine, &lowest, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  if (lowest >= n) return std::nullopt;
  const std::size_t owner = lowest % k;
  if (owner == p && p != 0) send_bytes(encode_error(local.error), 0, kTagError);
  if (p != 0) return std::string();
  return owner == 0 ? encode_error(local.error) : recv_bytes(static_cast<int>(owner), kTagError);
}

/// Process 0 receives every process's digests (sent in the order of its own paths).
std::vector<trace::RankDigest> gather_digests(const mpi::Session& mpi, const std::vector<trace::Trace>& own, std::size_t n) {
  const std::size_t k = mpi.size(), p = mpi.rank();
  if (p != 0) {
    std::vector<trace::RankDigest> mine;
    for (const trace::Trace& t : own) mine.push_back(trace::digest(t));
    send_bytes(messages::encode_digests(mine), 0, kTagDigest);
    return {};
  }
  std::vector<trace::RankDigest> out(n);
  for (std::size_t i = 0; i < n; i += k) out[i] = trace::digest(own[i / k]);
  for (std::size_t q = 1; q < k && q < n; ++q) {
    std::vector<trace::RankDigest> theirs = messages::decode_digests(recv_bytes(static_cast<int>(q), kTagDigest));
    for (std::size_t j = 0; j < theirs.size(); ++j) out.at(q + j * k) = std::move(theirs[j]);
  }
  return out;
}

}  // namespace

std::vector<trace::RankDigest> load_own_traces_mpi(const std::vector<std::string>& paths, const LoadOptions& options,
                                                   MpiShare& share) {
  std::optional<std::string> error;
  std::vector<trace::RankDigest> out;
  bool root = true;
  {
    mpi::Session mpi;
    root = mpi.rank() == 0;
    std::vector<std::string> mine;
    for (std::size_t i = mpi.rank(); i < paths.size(); i += mpi.size()) mine.push_back(paths[i]);
    Loaded local = load_indexed(mine, options);
    error = agree_on_error(mpi, local, paths.size());
    if (error) {
      mpi.finalize_at_exit();
    } else {
      for (auto& t : local.traces) share.traces.push_back(std::move(*t));
      local.traces.clear();
      out = gather_digests(mpi, share.traces, paths.size());
      share.process = mpi.rank();
      share.processes = mpi.size();
      share.paths = paths;
      share.finalize_ = mpi.keep();
      share.active_ = true;
    }
  }  // MPI_Finalize here after an error (at exit), else the share keeps MPI up
  if (error && !root) throw MpiPeerFailed();
  if (error) throw_decoded(*error);
  return out;
}

std::vector<trace::Trace> gather_traces_mpi(MpiShare& share) {
  if (!share.active() || share.process != 0) throw std::invalid_argument("gather_traces_mpi: not process 0 of a kept MPI load");
  const std::size_t k = share.processes, n = share.paths.size();
  for (std::size_t q = 1; q < k; ++q) send_bytes(mpi::kGather, static_cast<int>(q), mpi::kTagCommand);
  std::vector<trace::Trace> out;
  out.reserve(n);
  std::exception_ptr error;  // receive everything even after an error, so no sender blocks
  for (std::size_t i = 0; i < n; ++i) {
    if (i % k == 0) {
      out.push_back(std::move(share.traces[i / k]));
      continue;
    }
    const std::string bytes = recv_bytes(static_cast<int>(i % k), kTagChunk);
    try {
      out.push_back(trace::from_bytes(bytes, share.paths[i]));
    } catch (...) {
      if (!error) error = std::current_exception();
      out.emplace_back();
    }
  }
  share.traces.clear();
  if (error) std::rethrow_exception(error);
  return out;
}

void send_own_traces_mpi(MpiShare& share) {
  for (trace::Trace& t : share.traces) {
    send_bytes(trace::to_bytes(t), 0, kTagChunk);
    t = trace::Trace{};
  }
  share.traces.clear();
}

MpiShare::~MpiShare() { release(std::uncaught_exceptions() == 0); }

void MpiShare::release(bool ok) {
  if (!active_) return;
  active_ = false;
  traces.clear();
  if (process == 0) {
    for (std::size_t q = 1; q < processes; ++q) send_bytes(ok ? mpi::kDone : mpi::kAbort, static_cast<int>(q), mpi::kTagCommand);
  }
  if (finalize_ && ok) mpi::finalize();
  else if (finalize_) mpi::finalize_at_exit();
}

#else

std::vector<trace::RankDigest> load_own_traces_mpi(const std::vector<std::string>&, const LoadOptions&, MpiShare&) {
  throw InputError("--mpi", "emo was built without MPI");
}

std::vector<trace::Trace> gather_traces_mpi(MpiShare&) { throw InputError("--mpi", "emo was built without MPI"); }

void send_own_traces_mpi(MpiShare&) {}

MpiShare::~MpiShare() = default;

void MpiShare::release(bool) {}

#endif

}  // namespace emo::job
