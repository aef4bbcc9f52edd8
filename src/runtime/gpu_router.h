// Which GPU each policy section's clock switches go to, from the processes' hello lines
// (docs/runtime.md, "Many GPUs, many processes"). Pure: fed hello lines and pack starts, it answers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.h"
#include "runtime/progress_protocol.h"

namespace emo::runtime {

/// One GPU `emo run` may set clocks on: its NVML index and identities.
struct GpuIdentity {
  std::int32_t nvml_index = 0;
  std::string uuid;        ///< nvmlDeviceGetUUID, e.g. "GPU-5a1c…".
  std::string pci_bus_id;  ///< e.g. "00000000:3B:00.0" ("" when not known).
};

/// True when `a` and `b` name the same GPU: UUIDs equal ignoring case, or PCI bus ids equal
/// ignoring case and the domain's leading zeros ("00000000:3B:00.0" == "0000:3b:00.0").
bool same_gpu_id(std::string_view a, std::string_view b);

/// Which GPU each policy section's clock switches go to. Pure: fed hello lines, it answers.
///
/// A section nobody claimed goes to the NVML GPU of the section's own index (the one-process
/// behaviour: CUDA and NVML order agree, docs/runtime.md). A hello claims section DEVICE for its
/// process on the GPU it names. Rules (each refusal is one warning line; the hello is ignored
/// and that process's pack starts with it):
///   * the section must exist; in a job policy (sections with ranks) a hello that names a rank
///     must name the section's rank;
///   * its GPU must be one of `gpus` (when `gpus` is empty, as in a dry run without NVML, the
///     claim is kept without a GPU);
///   * first come, first served: a second process claiming a claimed section, or a claimed GPU
///     for another section, is refused (two processes cannot both own one GPU's clock).
class GpuRouter {
 public:
  GpuRouter(const policy::Policy& p, std::vector<GpuIdentity> gpus);

  /// Records a hello. Returns "" when accepted, else the warning (without a prefix).
  std::string claim(const ProcessHello& h);
  /// Whether to plan on a pack start: its section is claimed by its process, or unclaimed and
  /// its index is one of the GPUs (the one-process case). Unknown sections: false.
  bool accepts(const PackStarted& p) const;
  /// NVML index of the GPU section `device`'s switches go to: the claimed GPU, else `device`.
  std::int32_t gpu_of(std::int32_t device) const;
  /// Sections (by device) no process has claimed, in policy order.
  std::vector<std::int32_t> unclaimed() const;
  std::size_t claims() const noexcept { return owner_.size(); }

 private:
  struct Owner {
    std::int64_t pid = 0;
    std::int32_t gpu = -1;  ///< NVML index, -1 = unknown (no identities).
  };
  std::map<std::int32_t, std::int32_t> section_rank_;  ///< device -> rank (-1 none)
  std::vector<std::int32_t> order_;                     ///< sections in policy order
  bool job_ = false;                                    ///< some section has a rank
  std::vector<GpuIdentity> gpus_;
  std::map<std::int32_t, Owner> owner_;                 ///< section -> owner
};

}  // namespace emo::runtime
