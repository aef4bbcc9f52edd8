// A clock policy: what `emo optimize` decides and `emo run` applies (docs/design.md §6). Schema in
// docs/policy.md ("emo.policy/1").
//
// Per GPU, the packs of one iteration in order; each pack says how to recognise its start on the
// GPU (its first op's name, stream and ordinal), when it starts relative to the iteration's start,
// and the SM clock to run it at, with the predicted time and energy.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace emo::policy {

inline constexpr std::string_view kSchema = "emo.policy/1";

/// How `emo run` sees a pack start (docs/policy.md "How a pack start is observed"): the call that
/// enqueues the observed op, as the tracer follows it (tracer::watch_kind_of_api).
enum class ObservedBy : std::uint8_t {
  kKernel,  ///< A kernel launch (cudaLaunchKernel*, cuLaunchKernel*).
  kCopy,    ///< An asynchronous copy (cudaMemcpy*Async, cuMemcpy*Async).
  kMemset,  ///< An asynchronous memset (cudaMemsetAsync, cuMemsetD*Async).
  kGraph,   ///< A CUDA graph launch (cudaGraphLaunch, cuGraphLaunch), the pack starting inside it.
  kNone,    ///< Nothing the tracer follows: `emo run` refuses the policy.
};
/// "kernel", "copy", "memset", "graph", "none".
std::string_view observed_by_name(ObservedBy o) noexcept;
/// The inverse of observed_by_name; nullopt for another word.
std::optional<ObservedBy> observed_by_of(std::string_view name) noexcept;

/// The graph launch a pack start inside a CUDA graph is observed by. Graph handles differ between
/// runs, so a graph is known by its identity: its kernel count and the name of its first kernel.
struct GraphStart {
  std::int64_t kernels = 0;   ///< Kernels of one launch of the graph.
  std::string first_kernel{}; ///< Name of the launch's first kernel (by start).
  std::int64_t index = 0;     ///< The pack's first op among the launch's GPU ops (start order), from 0.
};

/// How to recognise the op that starts a pack, or the op it is observed by (its *anchor*).
struct PackStart {
  std::string op_name;        ///< The first op's name (kernel name, or "Memcpy HtoD ..."); for a moved start, the anchor's.
  std::int64_t stream = 0;    ///< Stream of the observed call (the graph launch's for kGraph).
  /// The observed call's position in the iteration on that GPU (from 0) among: kernel launches
  /// of that name (kKernel), copy calls (kCopy), memset calls (kMemset), launches of graphs of
  /// that identity (kGraph).
  std::int64_t ordinal = 0;
  ObservedBy observed_by = ObservedBy::kKernel;
  /// Predicted start of the observed op relative to the iteration's start, ns, when it is not
  /// the pack's start (a graph launch, a moved start); nullopt: the pack's own start_offset_ns.
  std::optional<std::int64_t> anchor_offset_ns{};
  GraphStart graph{};         ///< For kGraph.
  /// The pack's first op's name when that op cannot be observed and the start was moved to the
  /// nearest observable op (the anchor); "" when not moved.
  std::string moved_from{};
};

struct PackClock {
  std::int32_t index = 0;               ///< Position in the GPU's pack list, from 0.
  PackStart start;
  std::int64_t start_offset_ns = 0;     ///< Start relative to the iteration's start, as predicted.
  /// Offset of the op the start is observed by (start.anchor_offset_ns, else start_offset_ns).
  std::int64_t anchor_offset_ns() const noexcept { return start.anchor_offset_ns.value_or(start_offset_ns); }
  std::int64_t duration_ns = 0;         ///< Duration at the chosen clock, as predicted.
  std::int64_t ops = 0;                 ///< GPU ops in the pack.
  double clock_mhz = 0;                 ///< SM clock to lock for the pack, MHz.
  double predicted_energy_j = 0;        ///< Predicted energy of the pack at that clock, J.
  /// How early (ns before its start) a switch *down* into this pack is asked for, when the pack
  /// before it has the slack for the switch to land early in its tail (docs/runtime.md, "When a
  /// switch down is asked"); -1: a quarter of the switch latency (runtime/switch_timing.h).
  /// Optional in the JSON ("down_lead_ns", an integer ≥ 0; written when ≥ 0).
  std::int64_t down_lead_ns = -1;
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

/// Pack starts of `p` per way of observation, indexed by ObservedBy.
std::array<std::int64_t, 5> observation_counts(const Policy& p) noexcept;

/// JSON text of `p` (2-space indented).
std::string to_json(const Policy& p);

/// Parses a policy; `origin` names it in errors. Throws emo::InputError(origin, problem) when the
/// text is not JSON, the schema is not emo.policy/1, a field is missing or of the wrong type, an
/// integer is outside its field's range (device, rank and index are 32-bit), a clock is not
/// positive, switch_latency_ms is negative, 'gpus' is empty, a device is negative, a rank is
/// below -1, two sections name the same (rank, device), packs are not in start order, or a
/// start's observed_by is unknown. A
/// start without observed_by (a policy written before issue 32) is a kernel launch, unless its
/// op is a copy or memset ("Memcpy…", "Memset…", "[CUDA memcpy…", "[CUDA memset…"): those were
/// counted among ops of their name, which the tracer cannot follow, so they are kNone.
Policy parse_policy(std::string_view json, const std::string& origin);

/// Reads and parses a policy file. Throws emo::InputError as parse_policy, or for a missing file.
Policy load_policy(const std::string& path);

}  // namespace emo::policy
