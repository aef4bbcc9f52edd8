#include "policy/policy.h"

#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_integer.h"

namespace emo::policy {
namespace {

using nlohmann::json;

/// Field `key` of `obj` as T; InputError naming `where` and the key when absent or mistyped.
template <typename T>
T field(const json& obj, const char* key, const std::string& origin, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) throw InputError(origin, fmt::format("{}: missing '{}'", where, key));
  const bool ok = [&] {
    if constexpr (std::is_same_v<T, std::string>) return it->is_string();
    else if constexpr (std::is_same_v<T, bool>) return it->is_boolean();
    else if constexpr (std::is_integral_v<T>) return it->is_number_integer();
    else return it->is_number();
  }();
  if (!ok) throw InputError(origin, fmt::format("{}: '{}' has the wrong type", where, key));
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {  // get<T> would wrap: refused
    if (!integer_within(*it, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()))
      throw InputError(origin, fmt::format("{}: '{}' is out of range ({})", where, key, it->dump()));
  }
  return it->get<T>();
}

constexpr std::array<std::string_view, 5> kObservedByNames = {"kernel", "copy", "memset", "graph", "none"};

json start_json(const PackStart& s) {
  json j = {{"op_name", s.op_name}, {"stream", s.stream}, {"ordinal", s.ordinal},
            {"observed_by", observed_by_name(s.observed_by)}};
  if (s.anchor_offset_ns) j["anchor_offset_ns"] = *s.anchor_offset_ns;
  if (s.observed_by == ObservedBy::kGraph) {
    j["graph"] = {{"kernels", s.graph.kernels}, {"first_kernel", s.graph.first_kernel}, {"index", s.graph.index}};
  }
  if (!s.moved_from.empty()) j["moved_from"] = s.moved_from;
  return j;
}

/// True for a copy's or memset's name as the readers write it.
bool copy_or_memset_name(std::string_view n) {
  return n.starts_with("Memcpy") || n.starts_with("Memset") || n.starts_with("[CUDA memcpy") ||
         n.starts_with("[CUDA memset");
}

PackStart parse_start(const json& start, const std::string& origin, const std::string& w) {
  PackStart s;
  s.op_name = field<std::string>(start, "op_name", origin, w);
  s.stream = field<std::int64_t>(start, "stream", origin, w);
  s.ordinal = field<std::int64_t>(start, "ordinal", origin, w);
  if (!start.contains("observed_by")) {  // before issue 32
    s.observed_by = copy_or_memset_name(s.op_name) ? ObservedBy::kNone : ObservedBy::kKernel;
    return s;
  }
  const auto by = field<std::string>(start, "observed_by", origin, w);
  const auto o = observed_by_of(by);
  if (!o) throw InputError(origin, fmt::format("{}: observed_by '{}' is not one of kernel, copy, memset, graph, none", w, one_line(by, 40)));
  s.observed_by = *o;
  if (start.contains("anchor_offset_ns")) s.anchor_offset_ns = field<std::int64_t>(start, "anchor_offset_ns", origin, w);
  if (s.observed_by == ObservedBy::kGraph) {
    auto g = start.find("graph");
    if (g == start.end() || !g->is_object()) throw InputError(origin, w + ": observed_by graph without object 'graph'");
    s.graph.kernels = field<std::int64_t>(*g, "kernels", origin, w + ".graph");
    s.graph.first_kernel = field<std::string>(*g, "first_kernel", origin, w + ".graph");
    s.graph.index = field<std::int64_t>(*g, "index", origin, w + ".graph");
  }
  if (start.contains("moved_from")) s.moved_from = field<std::string>(start, "moved_from", origin, w);
  return s;
}

}  // namespace

std::string_view observed_by_name(ObservedBy o) noexcept { return kObservedByNames[static_cast<std::size_t>(o)]; }

std::optional<ObservedBy> observed_by_of(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kObservedByNames.size(); ++i) {
    if (kObservedByNames[i] == name) return static_cast<ObservedBy>(i);
  }
  return std::nullopt;
}

std::array<std::int64_t, 5> observation_counts(const Policy& p) noexcept {
  std::array<std::int64_t, 5> n{};
  for (const auto& g : p.gpus) {
    for (const auto& k : g.packs) ++n[static_cast<std::size_t>(k.start.observed_by)];
  }
  return n;
}

std::string to_json(const Policy& p) {
  json gpus = json::array();
  for (const auto& g : p.gpus) {
    json packs = json::array();
    for (const auto& k : g.packs) {
      json pack = {{"index", k.index},
                   {"start", start_json(k.start)},
                   {"start_offset_ns", k.start_offset_ns},
                   {"duration_ns", k.duration_ns},
                   {"ops", k.ops},
                   {"clock_mhz", k.clock_mhz},
                   {"predicted_energy_j", k.predicted_energy_j}};
      if (k.down_lead_ns >= 0) pack["down_lead_ns"] = k.down_lead_ns;  // optional
      packs.push_back(std::move(pack));
    }
    gpus.push_back({{"device", g.device}, {"rank", g.rank}, {"default_clock_mhz", g.default_clock_mhz},
                    {"packs", std::move(packs)}});
  }
  json doc = {{"schema", p.schema},
              {"emo_version", p.emo_version},
              {"gpu", p.gpu},
              {"trace", p.trace},
              {"iteration_marker", p.iteration_marker},
              {"max_slowdown", p.max_slowdown},
              {"latency_target_ns", p.latency_target_ns},
              {"baseline", {{"time_ns", p.baseline_time_ns}, {"energy_j", p.baseline_energy_j}}},
              {"predicted", {{"time_ns", p.predicted_time_ns}, {"energy_j", p.predicted_energy_j}}},
              {"switch_latency_ms", p.switch_latency_ms},
              {"simulated", p.simulated},
              {"gpus", std::move(gpus)}};
  if (p.min_switch_interval_ms > 0) doc["min_switch_interval_ms"] = p.min_switch_interval_ms;  // optional
  return doc.dump(2) + "\n";
}

Policy parse_policy(std::string_view text, const std::string& origin) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw InputError(origin, "not valid JSON");
  if (!doc.is_object()) throw InputError(origin, "a policy must be a JSON object");
  Policy p;
  p.schema = field<std::string>(doc, "schema", origin, "policy");
  if (p.schema != kSchema)
    throw InputError(origin, fmt::format("schema '{}' is not {}", one_line(p.schema, 40), kSchema));
  p.emo_version = field<std::string>(doc, "emo_version", origin, "policy");
  p.gpu = field<std::string>(doc, "gpu", origin, "policy");
  p.trace = field<std::string>(doc, "trace", origin, "policy");
  p.iteration_marker = field<std::string>(doc, "iteration_marker", origin, "policy");
  p.max_slowdown = field<double>(doc, "max_slowdown", origin, "policy");
  p.latency_target_ns = field<std::int64_t>(doc, "latency_target_ns", origin, "policy");
  for (auto [key, t, e] : {std::tuple{"baseline", &p.baseline_time_ns, &p.baseline_energy_j},
                           std::tuple{"predicted", &p.predicted_time_ns, &p.predicted_energy_j}}) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_object()) throw InputError(origin, fmt::format("policy: missing object '{}'", key));
    *t = field<std::int64_t>(*it, "time_ns", origin, key);
    *e = field<double>(*it, "energy_j", origin, key);
  }
  p.switch_latency_ms = field<double>(doc, "switch_latency_ms", origin, "policy");
  if (!(p.switch_latency_ms >= 0) || !std::isfinite(p.switch_latency_ms))
    throw InputError(origin, fmt::format("policy: switch_latency_ms {} is not a finite number ≥ 0", p.switch_latency_ms));
  p.simulated = field<bool>(doc, "simulated", origin, "policy");
  if (doc.contains("min_switch_interval_ms")) {  // optional: absent in policies before issue 17
    p.min_switch_interval_ms = field<double>(doc, "min_switch_interval_ms", origin, "policy");
    if (!(p.min_switch_interval_ms >= 0)) throw InputError(origin, "policy: min_switch_interval_ms is negative");
  }
  auto gpus = doc.find("gpus");
  if (gpus == doc.end() || !gpus->is_array()) throw InputError(origin, "policy: missing array 'gpus'");
  if (gpus->empty()) throw InputError(origin, "policy: 'gpus' is empty (no GPU to set a clock on)");
  std::set<std::pair<std::int32_t, std::int32_t>> sections;  // (rank, device) of each section
  for (std::size_t gi = 0; gi < gpus->size(); ++gi) {
    const json& g = (*gpus)[gi];
    const std::string where = fmt::format("gpus[{}]", gi);
    if (!g.is_object()) throw InputError(origin, where + ": not an object");
    GpuPolicy gp;
    gp.device = field<std::int32_t>(g, "device", origin, where);
    gp.rank = field<std::int32_t>(g, "rank", origin, where);
    if (gp.device < 0) throw InputError(origin, fmt::format("{}: device {} is negative", where, gp.device));
    if (gp.rank < -1) throw InputError(origin, fmt::format("{}: rank {} is below -1 (not distributed)", where, gp.rank));
    if (!sections.insert({gp.rank, gp.device}).second)
      throw InputError(origin, fmt::format("{}: a second section for rank {}, device {}", where, gp.rank, gp.device));
    gp.default_clock_mhz = field<double>(g, "default_clock_mhz", origin, where);
    auto packs = g.find("packs");
    if (packs == g.end() || !packs->is_array()) throw InputError(origin, where + ": missing array 'packs'");
    for (std::size_t ki = 0; ki < packs->size(); ++ki) {
      const json& k = (*packs)[ki];
      const std::string w = fmt::format("{}.packs[{}]", where, ki);
      if (!k.is_object()) throw InputError(origin, w + ": not an object");
      PackClock pc;
      pc.index = field<std::int32_t>(k, "index", origin, w);
      auto start = k.find("start");
      if (start == k.end() || !start->is_object()) throw InputError(origin, w + ": missing object 'start'");
      pc.start = parse_start(*start, origin, w + ".start");
      pc.start_offset_ns = field<std::int64_t>(k, "start_offset_ns", origin, w);
      pc.duration_ns = field<std::int64_t>(k, "duration_ns", origin, w);
      pc.ops = field<std::int64_t>(k, "ops", origin, w);
      pc.clock_mhz = field<double>(k, "clock_mhz", origin, w);
      pc.predicted_energy_j = field<double>(k, "predicted_energy_j", origin, w);
      if (!(pc.clock_mhz > 0)) throw InputError(origin, fmt::format("{}: clock_mhz {} is not positive", w, pc.clock_mhz));
      if (pc.start.ordinal < 0 || pc.duration_ns < 0)
        throw InputError(origin, w + ": negative ordinal or duration");
      if (k.contains("down_lead_ns")) {  // optional: absent in policies before stop 49
        pc.down_lead_ns = field<std::int64_t>(k, "down_lead_ns", origin, w);
        if (pc.down_lead_ns < 0) throw InputError(origin, w + ": down_lead_ns is negative");
      }
      if (!gp.packs.empty() && pc.start_offset_ns < gp.packs.back().start_offset_ns)
        throw InputError(origin, w + ": packs are not in start order");
      gp.packs.push_back(std::move(pc));
    }
    p.gpus.push_back(std::move(gp));
  }
  return p;
}

Policy load_policy(const std::string& path) {
  const PaddedBuffer buf = read_file(path);
  return parse_policy(buf.view(), path);
}

}  // namespace emo::policy
