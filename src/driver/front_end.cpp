#include "driver/front_end.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"

namespace emo::driver {

model::GpuCatalog::Match resolve_gpu(std::string_view name) {
  const auto& catalog = model::GpuCatalog::builtin();
  model::GpuCatalog::Match m = catalog.resolve(name);
  if (m.spec == nullptr) (void)catalog.at(name);  // throws: unknown GPU, with the known ids
  return m;
}

std::optional<model::GpuCatalog::Match> one_gpu_model(const std::string& path, const std::vector<trace::GpuInfo>& gpus,
                                                      std::string_view give) {
  const auto& catalog = model::GpuCatalog::builtin();
  const trace::GpuInfo* first = nullptr;
  std::optional<model::GpuCatalog::Match> model;
  for (const trace::GpuInfo& g : gpus) {
    model::GpuCatalog::Match m = catalog.resolve(g.name);
    if (m.spec == nullptr) continue;
    if (!model) {
      first = &g, model = std::move(m);
    } else if (m.spec != model->spec) {
      throw InputError(path, fmt::format("its GPUs are not one model (GPU {}: '{}', GPU {}: '{}'); give {} to "
                                         "optimise them all as one",
                                         first->device, first->name, g.device, g.name, give));
    }
  }
  return model;
}

model::GpuCatalog::Match resolve_trace_gpu(const trace::Trace& t, std::string_view name, std::string_view give) {
  if (!name.empty()) return resolve_gpu(name);
  if (t.meta.gpus.empty()) throw InputError(t.meta.path, fmt::format("the trace names no GPU; give {}", give));
  if (std::optional<model::GpuCatalog::Match> m = one_gpu_model(t.meta.path, t.meta.gpus, give)) return *m;
  throw InputError(t.meta.path, fmt::format("the trace's GPU '{}' is not in the GPU catalog; give {}",
                                            t.meta.gpus.front().name, give));
}

double parse_max_slowdown(std::string_view text) {
  const std::string value(text);
  std::string num = value;
  const bool percent = !num.empty() && num.back() == '%';
  if (percent) num.pop_back();
  double v = NAN;
  std::size_t used = 0;
  try {
    v = std::stod(num, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != num.size() || !std::isfinite(v) || v < 0) {
    throw ArgumentError("max_slowdown", value,
                        "expected a fraction >= 0 such as 0.05, or a percentage such as 5% (at most 5 % slower "
                        "than every GPU at its max clock)");
  }
  if (percent) v /= 100.0;
  else if (v > 1.0) {
    throw ArgumentError("max_slowdown", value,
                        fmt::format("a fraction is expected and {} would mean +{:.0f} %; for {} % write {} or {}%",
                                    value, 100 * v, value, v / 100.0, value));
  }
  if (v > 10) throw ArgumentError("max_slowdown", value, "more than 1000 % is surely a mistake");
  return v;
}

std::optional<TimeNs> parse_min_pack_ms(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const std::string value(text);
  double ms = 0;
  std::size_t used = 0;
  try {
    ms = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || !std::isfinite(ms)) throw ArgumentError("min_pack_ms", value, "not a number of milliseconds");
  if (ms <= 0 || ms > 3.6e6) throw ArgumentError("min_pack_ms", value, "must be > 0 and at most 3600000 (one hour)");
  const TimeNs ns = ms_to_ns(ms);
  if (ns <= 0) throw ArgumentError("min_pack_ms", value, "shorter than 1 ns");
  return ns;
}

TimeNs target_of(TimeNs ns, double fraction) {
  return static_cast<TimeNs>(std::floor(static_cast<double>(ns) * (1 + fraction)));
}

}  // namespace emo::driver
