// What a process of a many-GPU job tells `emo run` about itself (docs/runtime.md, "Many GPUs,
// many processes"), in plain C++ so that it is tested without CUDA: its rank from the launcher's
// environment, the policy section it follows, its GPU's identity (the UUID, which
// CUDA_VISIBLE_DEVICES does not remap, unlike the CUDA device ordinal) and the lines it writes
// to the progress pipe:
//   H PID RANK SECTION GPU_ID              once per CUDA device the process launches on
//   P SECTION PACK ITERATION T_NS PID      per pack start (T_NS: CLOCK_MONOTONIC)
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "tracer/pack_matcher.h"

namespace emo::tracer {

/// A process's place in a distributed job; -1 where the environment does not say.
struct ProcessRank {
  std::int32_t rank = -1;        ///< Global rank.
  std::int32_t local_rank = -1;  ///< Rank on this node.
};

/// The rank variables of the launchers, in the order they are read (the first set wins):
/// global: RANK (torchrun), OMPI_COMM_WORLD_RANK (Open MPI), PMIX_RANK, PMI_RANK (MPICH,
/// Intel MPI), SLURM_PROCID (srun); local: LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
/// MPI_LOCALRANKID, SLURM_LOCALID. A value that is not a non-negative integer is skipped.
/// `getenv` is std::getenv in the tracer, a map in the tests.
ProcessRank rank_from_environment(const std::function<const char*(const char*)>& getenv);

/// NVML's text form of a GPU UUID (the 16 bytes of CUDA's CUuuid / cudaDeviceProp::uuid):
/// "GPU-" then 8-4-4-4-12 lower-case hex digits, e.g. "GPU-00112233-4455-6677-8899-aabbccddeeff".
std::string uuid_text(const std::array<std::uint8_t, 16>& bytes);

/// The policy section (WatchSection::device) a process follows on its CUDA device `cuda_device`.
/// In a job's list (some section has a rank ≥ 0): the section of the process's `rank`, nullopt
/// when it has no rank or no section is its rank's (it then reports nothing). Otherwise the
/// section numbered like the CUDA device (the one-process policies of a multi-GPU trace).
std::optional<std::int32_t> section_for(const WatchList& w, std::int32_t rank, std::int32_t cuda_device);

/// "H PID RANK SECTION GPU_ID\n"; an empty `gpu_id` is written "-".
std::string hello_line(std::int64_t pid, std::int32_t rank, std::int32_t section, std::string_view gpu_id);

/// "P SECTION PACK ITERATION T_NS PID\n" for a pack start `hit` (hit.device is the section).
std::string progress_line(const PackHit& hit, std::int64_t t_ns, std::int64_t pid);

}  // namespace emo::tracer
