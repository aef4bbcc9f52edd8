#include "driver/load_job.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "trace/load.h"
#include "trace/reduce.h"
#include "trace/trace_bytes.h"

#ifdef EMO_WITH_MPI
#include <mpi.h>
#endif

namespace emo::driver {
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
  std::atomic<std::size_t> next{0}, first_failed{n};
  const auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      if (i > first_failed.load()) continue;
      try {
        trace::Trace t = trace::load_trace(paths[i]);
        r.traces[i] = options.reduce ? trace::reduce_for_optimize(std::move(t)) : std::move(t);
      } catch (...) {
        errors[i] = std::current_exception();
        std::size_t seen = first_failed.load();
        while (i < seen && !first_failed.compare_exchange_weak(seen, i)) {}
      }
    }
  };
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min(options.threads == 0 ? hw : static_cast<std::size_t>(options.threads), n);
  std::vector<std::thread> pool;
  for (std::size_t k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
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

constexpr int kTagSize = 1601, kTagChunk = 1602, kTagError = 1603;
constexpr std::uint64_t kChunkBytes = std::uint64_t{1} << 30;  // well under MPI's 2^31 - 1 count

void finalize_mpi() {
  int done = 0;
  MPI_Finalized(&done);
  if (done == 0) MPI_Finalize();
}

/// MPI_Init when needed, MPI_Finalize at the end of the scope when this object called MPI_Init,
/// or at exit after finalize_at_exit().
class MpiSession {
 public:
  MpiSession() {
    int init = 0;
    MPI_Initialized(&init);
    ours_ = init == 0;
    if (ours_) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() {
    if (ours_) finalize_mpi();
  }
  /// Leaves MPI up until the process exits: after an error, process 0 prints it on its way out
  /// and the others, waiting in MPI_Finalize for it, exit only then (mpirun kills the processes
  /// still running when one exits non-zero, so an early exit could cut process 0's message off).
  void finalize_at_exit() {
    if (ours_) std::atexit(finalize_mpi);
    ours_ = false;
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  std::size_t rank() const { return static_cast<std::size_t>(rank_); }
  std::size_t size() const { return static_cast<std::size_t>(size_); }

 private:
  bool ours_ = false;
  int rank_ = 0, size_ = 1;
};

/// Sends `bytes` to `dest`: its size, then chunks of at most kChunkBytes.
void send_bytes(const std::string& bytes, int dest, int tag) {
  const std::uint64_t size = bytes.size();
  MPI_Send(&size, 1, MPI_UINT64_T, dest, tag == kTagError ? kTagError : kTagSize, MPI_COMM_WORLD);
  for (std::uint64_t at = 0; at < size; at += kChunkBytes) {
    const int count = static_cast<int>(std::min(kChunkBytes, size - at));
    MPI_Send(bytes.data() + at, count, MPI_BYTE, dest, tag, MPI_COMM_WORLD);
  }
}

std::string recv_bytes(int source, int tag) {
  std::uint64_t size = 0;
  MPI_Recv(&size, 1, MPI_UINT64_T, source, tag == kTagError ? kTagError : kTagSize, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  std::string bytes(size, '\0');
  for (std::uint64_t at = 0; at < size; at += kChunkBytes) {
    const int count = static_cast<int>(std::min(kChunkBytes, size - at));
    MPI_Recv(bytes.data() + at, count, MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return bytes;
}

/// An error as "I|path\nproblem" (InputError) or "X|what", to cross to process 0.
std::string encode_error(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const InputError& x) {
    return "I|" + x.path() + "\n" + x.problem();
  } catch (const std::exception& x) {
    return std::string("X|") + x.what();
  } catch (...) {
    return "X|unknown error";
  }
}

[[noreturn]] void throw_decoded(const std::string& s) {
  const std::string body = s.substr(2);
  if (s.starts_with("I|")) {
    const auto nl = body.find('\n');
    throw InputError(body.substr(0, nl), nl == std::string::npos ? "" : body.substr(nl + 1));
  }
  throw std::runtime_error(body);
}

/// Every process learns whether some file failed (no process is left waiting); process 0 also
/// gets the error of the lowest failing index, encoded. Returns nullopt when no file failed.
std::optional<std::string> agree_on_error(const MpiSession& mpi, const Loaded& local, std::size_t n) {
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

/// Process 0 receives every trace from its owner in index order (each owner sends its own in
/// ascending order, and MPI keeps the order of messages between two processes).
std::vector<trace::Trace> gather_at_root(const MpiSession& mpi, Loaded& local, const std::vector<std::string>& paths) {
  const std::size_t k = mpi.size(), p = mpi.rank();
  std::vector<trace::Trace> out;
  if (p != 0) {
    for (auto& t : local.traces) {
      const std::string bytes = trace::to_bytes(*t);
      t.reset();
      send_bytes(bytes, 0, kTagChunk);
    }
    return out;
  }
  std::exception_ptr error;  // receive everything even after an error, so no sender blocks
  out.reserve(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (i % k == 0) {
      out.push_back(std::move(*local.traces[i / k]));
      continue;
    }
    const std::string bytes = recv_bytes(static_cast<int>(i % k), kTagChunk);
    try {
      out.push_back(trace::from_bytes(bytes, paths[i]));
    } catch (...) {
      if (!error) error = std::current_exception();
      out.emplace_back();
    }
  }
  if (error) std::rethrow_exception(error);
  return out;
}

}  // namespace

std::vector<trace::Trace> load_traces_mpi(const std::vector<std::string>& paths, const LoadOptions& options) {
  std::optional<std::string> error;
  std::vector<trace::Trace> out;
  bool root = true;
  {
    MpiSession mpi;
    root = mpi.rank() == 0;
    std::vector<std::string> mine;
    for (std::size_t i = mpi.rank(); i < paths.size(); i += mpi.size()) mine.push_back(paths[i]);
    Loaded local = load_indexed(mine, options);
    error = agree_on_error(mpi, local, paths.size());
    if (error) mpi.finalize_at_exit();
    else out = gather_at_root(mpi, local, paths);
  }  // MPI_Finalize here, unless an error leaves it to the exit
  if (error && !root) throw MpiPeerFailed();
  if (error) throw_decoded(*error);
  return out;
}

#else

std::vector<trace::Trace> load_traces_mpi(const std::vector<std::string>&, const LoadOptions&) {
  throw InputError("--mpi", "emo was built without MPI");
}

#endif

}  // namespace emo::driver
