#include "tracer/process_identity.h"

#include <charconv>
#include <cstdio>

namespace emo::tracer {
namespace {

/// The first of `names` set to a non-negative integer, else -1.
std::int32_t first_int(const std::function<const char*(const char*)>& getenv, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    const char* v = getenv(n);
    if (v == nullptr) continue;
    const std::string_view s(v);
    std::int32_t out = -1;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    if (!s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size() && out >= 0) return out;
  }
  return -1;
}

}  // namespace

ProcessRank rank_from_environment(const std::function<const char*(const char*)>& getenv) {
  return {first_int(getenv, {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}),
          first_int(getenv, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})};
}

std::string uuid_text(const std::array<std::uint8_t, 16>& b) {
  char out[48];
  std::snprintf(out, sizeof out, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

std::optional<std::int32_t> section_for(const WatchList& w, std::int32_t rank, std::int32_t cuda_device) {
  bool job = false;
  for (const auto& g : w.sections) job = job || g.rank >= 0;
  if (!job) return cuda_device;
  if (rank < 0) return std::nullopt;
  for (const auto& g : w.sections) {
    if (g.rank == rank) return g.device;
  }
  return std::nullopt;
}

std::string hello_line(std::int64_t pid, std::int32_t rank, std::int32_t section, std::string_view gpu_id) {
  return "H " + std::to_string(pid) + ' ' + std::to_string(rank) + ' ' + std::to_string(section) + ' ' +
         (gpu_id.empty() ? std::string("-") : std::string(gpu_id)) + '\n';
}

std::string progress_line(const PackHit& hit, std::int64_t t_ns, std::int64_t pid) {
  return "P " + std::to_string(hit.device) + ' ' + std::to_string(hit.pack) + ' ' + std::to_string(hit.iteration) +
         ' ' + std::to_string(t_ns) + ' ' + std::to_string(pid) + '\n';
}

}  // namespace emo::tracer
