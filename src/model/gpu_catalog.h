// The GPU catalog: clocks, power limits, idle and blocked power, clock-switch latency per GPU
// model, each figure with its source. The data is data/gpu_catalog.json, compiled into the
// library (so `emo` needs no data file at run time).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/timestamp.h"
#include "trace/trace.h"

namespace emo::model {

/// One GPU model. Units in the names: MHz, W, ms.
struct GpuSpec {
  std::string id;                         ///< e.g. "A100-SXM4-80GB" (what --gpu accepts)
  std::vector<std::string> nvml_names;    ///< e.g. "NVIDIA A100-SXM4-80GB"
  std::vector<double> sm_clocks_mhz;      ///< Supported SM clocks, descending.
  std::vector<double> memory_clocks_mhz;
  double power_limit_min_w = 0, power_limit_max_w = 0, power_limit_default_w = 0;
  double idle_power_w = 0;
  std::optional<double> blocked_power_w;  ///< Power while blocked in communication, if measured.
  double switch_latency_ms = 0;
  /// Least time between two clock switches on the GPU while collectives run, ms (0 = none):
  /// NCCL operators were reported to slow down when locked clocks change every ~50 ms
  /// (data/gpu_catalog.json gives the source; an assumption). Optional in the catalog.
  double min_switch_interval_ms = 0;
  std::map<std::string, std::string> sources;  ///< field -> "datasheet: ..." / "measured: ..." /
                                               ///< "assumption: ..."
  double max_sm_clock_mhz() const { return sm_clocks_mhz.empty() ? 0 : sm_clocks_mhz.front(); }
  /// The supported clock nearest to `mhz`.
  double nearest_sm_clock(double mhz) const;
};

class GpuCatalog {
 public:
  /// Parses a catalog document (schema of data/gpu_catalog.json). `origin` names it in errors.
  /// Throws emo::InputError on malformed input.
  static GpuCatalog parse(std::string_view json, const std::string& origin);
  /// The catalog compiled into EMO.
  static const GpuCatalog& builtin();

  /// Finds a GPU by id or NVML name, case-insensitively; "NVIDIA " and "Tesla " prefixes and
  /// spaces/dashes are ignored ("a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB" -> A100-SXM4-80GB).
  const GpuSpec* find(std::string_view name) const;
  /// As find(); throws emo::ArgumentError("gpu", NAME, "unknown GPU; known: ...") when absent.
  const GpuSpec& at(std::string_view name) const;

  /// A catalog entry for a GPU name, and why that one.
  struct Match {
    const GpuSpec* spec = nullptr;  ///< nullptr when nothing fits.
    std::string why;                ///< One sentence: exact id, listed NVML name, or assumption.
    bool assumed = false;           ///< True for a same-family fallback (memory size differs).
  };
  /// As find(), then, when nothing matches exactly, the entry of the same family and form factor
  /// that differs only in memory size ("Tesla V100-SXM2-16GB" -> V100-SXM2-32GB), stated as an
  /// assumption (the model uses SM clocks and power, not the memory size). Never throws.
  Match resolve(std::string_view name) const;
  const std::vector<GpuSpec>& gpus() const noexcept { return gpus_; }

 private:
  std::vector<GpuSpec> gpus_;
};

/// Shortest pack for a trace (docs/design.md §3: packs at least as long as a clock switch takes).
struct MinPack {
  TimeNs ns = 0;       ///< > 0.
  std::string source;  ///< Where the figure came from, for reports.
};

/// Used when none of the trace's GPUs is in the catalog: 20 ms, the catalog's assumed clock-switch
/// latency (data/gpu_catalog.json, "switch_latency_ms": an assumption for every entry).
inline constexpr TimeNs kFallbackMinPackNs = 20'000'000;

/// True when `trace` has collectives: rows in its collective table, or a GPU op that
/// classify_op() calls communication (an NCCL kernel, "nccl" in its name). Never throws.
bool has_collectives(const trace::Trace& trace);

/// Default min_pack for a trace: the largest clock-switch latency (GpuSpec::switch_latency_ms) of
/// its GPUs found in the built-in catalog, or kFallbackMinPackNs when none is found. Never throws.
/// Not the minimum switch interval (GpuSpec::min_switch_interval_ms), even with collectives: that
/// figure is an assumption, and as a minimum pack it costs measured savings and the multi-rank
/// plans their latency target (docs/gpu-catalog.md, "Minimum switch interval"); pass
/// `--min-pack-ms` of at least the interval to honour it (the policy then carries it).
MinPack min_pack_for(const trace::Trace& trace);

}  // namespace emo::model
