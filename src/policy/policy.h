// A clock policy: what `emo optimize` decides and `emo run` applies (docs/design.md §6). Schema in
// docs/policy.md ("emo.policy/1").
//
// Per GPU, the packs of one iteration in order; each pack says how to recognise its start on the
// GPU (its first op's name, stream and ordinal), when it starts relative to the iteration's start,
// and the SM clock to run it at, with the predicted time and energy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace emo::policy {

inline constexpr std::string_view kSchema = "emo.policy/1";

/// How to recognise the GPU op that starts a pack.
struct PackStart {
  std::string op_name;        ///< The first op's name (kernel name, or "Memcpy HtoD ...").
  std::int64_t stream = 0;    ///< Its stream.
  std::int64_t ordinal = 0;   ///< How many ops of that name on that GPU precede it in the iteration.
};

struct PackClock {
  std::int32_t index = 0;               ///< Position in the GPU's pack list, from 0.
  PackStart start;
  std::int64_t start_offset_ns = 0;     ///< Start relative to the iteration's start, as predicted.
  std::int64_t duration_ns = 0;         ///< Duration at the chosen clock, as predicted.
  std::int64_t ops = 0;                 ///< GPU ops in the pack.
  double clock_mhz = 0;                 ///< SM clock to lock for the pack, MHz.
  double predicted_energy_j = 0;        ///< Predicted energy of the pack at that clock, J.
};

struct GpuPolicy {
  std::int32_t device = 0;              ///< CUDA device index in the trace.
  std::int32_t rank = -1;               ///< Distributed rank, -1 when not distributed.
  double default_clock_mhz = 0;         ///< Clock between iterations / after the last pack.
  std::vector<PackClock> packs;         ///< In start order.
};

struct Policy {
  std::string schema = std::string(kSchema);
  std::string emo_version;
  std::string gpu;                      ///< GPU catalog id, e.g. "A100-SXM4-80GB".
  std::string trace;                    ///< Trace the policy was computed from.
  std::string iteration_marker;         ///< Annotation that delimits an iteration ("" = whole trace).
  double max_slowdown = 0;              ///< Latency target as a fraction over the baseline.
  std::int64_t latency_target_ns = 0;
  std::int64_t baseline_time_ns = 0;    ///< Every GPU at its max clock, predicted.
  double baseline_energy_j = 0;
  std::int64_t predicted_time_ns = 0;   ///< With this policy.
  double predicted_energy_j = 0;
  double switch_latency_ms = 0;         ///< Switches are issued this early.
  /// Least time between two clock switches on one GPU, ms (0 = none); the runtime defers sooner
  /// switches. emo optimize writes model::GpuSpec::min_switch_interval_ms for a trace with
  /// collectives packed at least that long (--min-pack-ms). Optional in the JSON (written when > 0).
  double min_switch_interval_ms = 0;
  bool simulated = false;               ///< True when the predictions come from a simulated device.
  std::vector<GpuPolicy> gpus;
};

/// JSON text of `p` (2-space indented).
std::string to_json(const Policy& p);

/// Parses a policy; `origin` names it in errors. Throws emo::InputError(origin, problem) when the
/// text is not JSON, the schema is not emo.policy/1, a field is missing or of the wrong type, a
/// clock is not positive, or packs are not in start order.
Policy parse_policy(std::string_view json, const std::string& origin);

/// Reads and parses a policy file. Throws emo::InputError as parse_policy, or for a missing file.
Policy load_policy(const std::string& path);

}  // namespace emo::policy
