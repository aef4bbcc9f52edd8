#include "runtime/gpu_router.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace emo::runtime {
namespace {

/// Lower case; a PCI bus id's domain ("00000000:3b:00.0") cut to its last 4 digits.
std::string canonical_gpu_id(std::string_view id) {
  std::string s(id);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t colon = s.find(':');
  if (!s.starts_with("gpu-") && colon != std::string::npos && colon > 4) s.erase(0, colon - 4);
  return s;
}

}  // namespace

bool same_gpu_id(std::string_view a, std::string_view b) {
  return !a.empty() && !b.empty() && canonical_gpu_id(a) == canonical_gpu_id(b);
}

GpuRouter::GpuRouter(const policy::Policy& p, std::vector<GpuIdentity> gpus) : gpus_(std::move(gpus)) {
  for (const auto& g : p.gpus) {
    section_rank_[g.device] = g.rank;
    order_.push_back(g.device);
    job_ = job_ || g.rank >= 0;
  }
}

std::string GpuRouter::claim(const ProcessHello& h) {
  const auto who = fmt::format("process {} (rank {})", h.pid, h.rank);
  const auto sec = section_rank_.find(h.device);
  if (sec == section_rank_.end()) return fmt::format("{} follows section {}, which the policy does not have", who, h.device);
  if (job_ && h.rank >= 0 && sec->second != h.rank) {
    return fmt::format("{} claims section {}, which is rank {}'s", who, h.device, sec->second);
  }
  std::int32_t gpu = -1;
  if (!gpus_.empty()) {
    for (const auto& g : gpus_) {
      if (same_gpu_id(g.uuid, h.gpu_id) || same_gpu_id(g.pci_bus_id, h.gpu_id)) gpu = g.nvml_index;
    }
    if (gpu < 0) return fmt::format("{} runs on GPU '{}', which is not among the GPUs emo run drives (NVML sees no such GPU, or the policy does not name it)", who, h.gpu_id);
  }
  if (const auto o = owner_.find(h.device); o != owner_.end()) {
    if (o->second.pid == h.pid && o->second.gpu == gpu) return "";  // the same hello again
    return fmt::format("{} claims section {}, already claimed by process {}", who, h.device, o->second.pid);
  }
  for (const auto& [device, o] : owner_) {
    if (gpu >= 0 && o.gpu == gpu) {
      return fmt::format("{} claims GPU {} for section {}, already claimed by process {} for section {}", who, gpu,
                         h.device, o.pid, device);
    }
  }
  owner_[h.device] = {h.pid, gpu};
  return "";
}

bool GpuRouter::accepts(const PackStarted& p) const {
  if (!section_rank_.contains(p.device)) return false;
  if (const auto o = owner_.find(p.device); o != owner_.end()) return o->second.pid == p.pid;
  if (gpus_.empty()) return true;
  return std::any_of(gpus_.begin(), gpus_.end(), [&](const GpuIdentity& g) { return g.nvml_index == p.device; });
}

std::int32_t GpuRouter::gpu_of(std::int32_t device) const {
  const auto o = owner_.find(device);
  return o != owner_.end() && o->second.gpu >= 0 ? o->second.gpu : device;
}

std::vector<std::int32_t> GpuRouter::unclaimed() const {
  std::vector<std::int32_t> out;
  for (std::int32_t d : order_) {
    if (!owner_.contains(d)) out.push_back(d);
  }
  return out;
}

}  // namespace emo::runtime
