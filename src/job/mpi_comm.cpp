#include "job/mpi_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include <mpi.h>

namespace emo::job::mpi {
namespace {

constexpr std::uint64_t kChunkBytes = std::uint64_t{1} << 30;  // well under MPI's 2^31 - 1 count

}  // namespace

Session::Session() {
  int init = 0;
  MPI_Initialized(&init);
  ours_ = init == 0;
  if (ours_) MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Session::~Session() {
  if (ours_) finalize();
}

void Session::finalize_at_exit() {
  if (ours_) mpi::finalize_at_exit();
  ours_ = false;
}

bool Session::keep() {
  const bool was = ours_;
  ours_ = false;
  return was;
}

void finalize() {
  int done = 0;
  MPI_Finalized(&done);
  if (done == 0) MPI_Finalize();
}

void finalize_at_exit() { std::atexit(finalize); }

void send_bytes(const std::string& bytes, int dest, int tag) {
  const std::uint64_t size = bytes.size();
  MPI_Send(&size, 1, MPI_UINT64_T, dest, tag + kSizeTag, MPI_COMM_WORLD);
  for (std::uint64_t at = 0; at < size; at += kChunkBytes) {
    const int count = static_cast<int>(std::min(kChunkBytes, size - at));
    MPI_Send(bytes.data() + at, count, MPI_BYTE, dest, tag, MPI_COMM_WORLD);
  }
}

std::string recv_bytes(int source, int tag) {
  int ready = 0;
  for (auto nap = std::chrono::microseconds(50); ready == 0; nap = std::min(nap * 2, std::chrono::microseconds(2000))) {
    MPI_Iprobe(source, tag + kSizeTag, MPI_COMM_WORLD, &ready, MPI_STATUS_IGNORE);
    if (ready == 0) std::this_thread::sleep_for(nap);
  }
  std::uint64_t size = 0;
  MPI_Recv(&size, 1, MPI_UINT64_T, source, tag + kSizeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::string bytes(size, '\0');
  for (std::uint64_t at = 0; at < size; at += kChunkBytes) {
    const int count = static_cast<int>(std::min(kChunkBytes, size - at));
    MPI_Recv(bytes.data() + at, count, MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return bytes;
}

}  // namespace emo::job::mpi
