#include "model/gpu_catalog.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/units.h"
#include "model/op_class.h"

namespace emo::model {

extern const char* const kBuiltinCatalogJson;  // generated from data/gpu_catalog.json

namespace {

/// Lower case, without "nvidia"/"tesla" prefixes, spaces, dashes and underscores.
std::string normalise(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '-' || c == '_') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (std::string_view prefix : {"nvidia", "tesla"}) {
    if (out.starts_with(prefix)) out.erase(0, prefix.size());
  }
  return out;
}

std::vector<double> clock_list(const nlohmann::json& j, const std::string& where) {
  std::vector<double> out;
  if (j.is_array()) {
    for (const auto& v : j) out.push_back(v.get<double>());
  } else if (j.is_object()) {
    const double lo = j.at("min").get<double>();
    const double hi = j.at("max").get<double>();
    const double step = j.at("step").get<double>();
    if (!(step > 0) || lo > hi) throw std::invalid_argument(where + ": bad clock range");
    // NVML takes and reports whole MHz; a fractional step (V100: about 7.5 MHz) gives the
    // integer clocks below each multiple (1530, 1522, 1515, 1507, ...), as NVML lists them.
    for (int k = 0;; ++k) {
      const double f = hi - k * step;
      if (f < lo - 1e-9) break;
      out.push_back(std::floor(f + 1e-9));
    }
    out.erase(std::unique(out.begin(), out.end()), out.end());
  } else {
    throw std::invalid_argument(where + ": clocks must be a list or {min, max, step}");
  }
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

}  // namespace

double GpuSpec::nearest_sm_clock(double mhz) const {
  double best = sm_clocks_mhz.empty() ? mhz : sm_clocks_mhz.front();
  for (double f : sm_clocks_mhz) {
    if (std::abs(f - mhz) < std::abs(best - mhz)) best = f;
  }
  return best;
}

GpuCatalog GpuCatalog::parse(std::string_view text, const std::string& origin) {
  GpuCatalog c;
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    for (const auto& g : doc.at("gpus")) {
      GpuSpec s;
      s.id = g.at("id").get<std::string>();
      s.nvml_names = g.at("nvml_names").get<std::vector<std::string>>();
      s.sm_clocks_mhz = clock_list(g.at("sm_clock_mhz"), s.id);
      s.memory_clocks_mhz = g.at("memory_clock_mhz").get<std::vector<double>>();
      const auto& p = g.at("power_limit_w");
      s.power_limit_min_w = p.at("min").get<double>();
      s.power_limit_max_w = p.at("max").get<double>();
      s.power_limit_default_w = p.at("default").get<double>();
      s.idle_power_w = g.at("idle_power_w").get<double>();
      if (!g.at("blocked_power_w").is_null()) s.blocked_power_w = g.at("blocked_power_w").get<double>();
      s.switch_latency_ms = g.at("switch_latency_ms").get<double>();
      if (g.contains("min_switch_interval_ms")) {  // optional (issue 17); its source is then required
        s.min_switch_interval_ms = g.at("min_switch_interval_ms").get<double>();
        if (!g.contains("min_switch_interval_ms_source")) {
          throw std::invalid_argument(fmt::format("{}: 'min_switch_interval_ms' has no source", s.id));
        }
      }
      for (const auto& [key, value] : g.items()) {
        if (key.ends_with("_source")) {
          s.sources[key.substr(0, key.size() - 7)] = value.get<std::string>();
        }
      }
      for (const char* field : {"sm_clock_mhz", "memory_clock_mhz", "power_limit_w", "idle_power_w",
                                "blocked_power_w", "switch_latency_ms"}) {
        if (s.sources.count(field) == 0) {
          throw std::invalid_argument(fmt::format("{}: '{}' has no source", s.id, field));
        }
      }
      c.gpus_.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(origin, fmt::format("bad GPU catalog: {}", e.what()));
  } catch (const std::invalid_argument& e) {
    throw InputError(origin, fmt::format("bad GPU catalog: {}", e.what()));
  }
  return c;
}

const GpuCatalog& GpuCatalog::builtin() {
  static const GpuCatalog c = parse(kBuiltinCatalogJson, "data/gpu_catalog.json");
  return c;
}

const GpuSpec* GpuCatalog::find(std::string_view name) const {
  const std::string want = normalise(name);
  for (const GpuSpec& g : gpus_) {
    if (normalise(g.id) == want) return &g;
    for (const std::string& n : g.nvml_names) {
      if (normalise(n) == want) return &g;
    }
  }
  return nullptr;
}

namespace {

/// A normalised name without a trailing memory size ("v100sxm216gb" -> "v100sxm2").
std::string without_memory(const std::string& n) {
  if (!n.ends_with("gb")) return n;
  std::size_t i = n.size() - 2;
  while (i > 0 && std::isdigit(static_cast<unsigned char>(n[i - 1]))) --i;
  return i < n.size() - 2 ? n.substr(0, i) : n;
}

}  // namespace

GpuCatalog::Match GpuCatalog::resolve(std::string_view name) const {
  const std::string want = normalise(name);
  for (const GpuSpec& g : gpus_) {
    if (normalise(g.id) == want) return {&g, fmt::format("'{}' is the catalog id", name), false};
    for (const std::string& n : g.nvml_names) {
      if (normalise(n) == want) {
        return {&g, fmt::format("'{}' is listed among the NVML names of {} (same SM clock range and "
                                "power model; memory size does not enter the model)", name, g.id),
                false};
      }
    }
  }
  const std::string family = without_memory(want);
  if (family != want) {
    for (const GpuSpec& g : gpus_) {
      if (without_memory(normalise(g.id)) == family) {
        return {&g, fmt::format("assumption: '{}' is not in the catalog; {} is the same GPU with "
                                "another memory size (the model uses SM clocks and power, not the "
                                "memory size)", name, g.id),
                true};
      }
    }
  }
  return {};
}

const GpuSpec& GpuCatalog::at(std::string_view name) const {
  if (const GpuSpec* g = resolve(name).spec) return *g;
  std::vector<std::string> ids;
  for (const GpuSpec& g : gpus_) ids.push_back(g.id);
  throw ArgumentError("gpu", std::string(name), fmt::format("unknown GPU; known: {}", fmt::join(ids, ", ")));
}

bool has_collectives(const trace::Trace& trace) {
  if (trace.collectives.size() > 0) return true;
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const trace::OpKind k = trace.ops.kind[i];
    if (k == trace::OpKind::kKernel && classify_op(k, trace.strings.view(trace.ops.name[i])) == OpClass::kCommunication) {
      return true;
    }
  }
  return false;
}

MinPack min_pack_for(const trace::Trace& trace) {
  double best_ms = 0;
  std::string from;
  for (const trace::GpuInfo& gpu : trace.meta.gpus) {
    const GpuSpec* spec = GpuCatalog::builtin().find(gpu.name);
    if (spec != nullptr && spec->switch_latency_ms > best_ms) {
      best_ms = spec->switch_latency_ms;
      from = spec->id;
    }
  }
  if (best_ms > 0)
    return {ms_to_ns(best_ms), fmt::format("GPU catalog: {} clock-switch latency", from)};
  return {kFallbackMinPackNs, "default (the trace's GPU is not in the GPU catalog)"};
}

}  // namespace emo::model
