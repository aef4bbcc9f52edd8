#include "model/measurements.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/units.h"

namespace emo::model {
namespace {

/// Collects points per op in first-appearance order, then averages repeats at one clock.
class Collector {
 public:
  void add(const std::string& op, ClockPoint p) {
    auto [it, inserted] = index_.try_emplace(op, ops_.size());
    if (inserted) ops_.push_back({op, {}, {}});
    ops_[it->second].points.push_back(p);
  }
  std::vector<OpMeasurements> finish() {
    for (auto& op : ops_) {
      std::map<double, std::pair<ClockPoint, int>> by_clock;
      for (const auto& p : op.points) {
        auto& [sum, n] = by_clock[p.clock_mhz];
        sum.clock_mhz = p.clock_mhz;
        sum.time_s += p.time_s;
        sum.energy_j += p.energy_j;
        ++n;
      }
      op.points.clear();
      for (auto& [clock, acc] : by_clock) {
        acc.first.time_s /= acc.second;
        acc.first.energy_j /= acc.second;
        op.points.push_back(acc.first);
      }
    }
    return std::move(ops_);
  }

 private:
  std::vector<OpMeasurements> ops_;
  std::unordered_map<std::string, std::size_t> index_;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '"')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_csv(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

double parse_number(std::string_view text, const std::string& path, std::size_t line_no,
                    std::string_view column) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) {
    throw InputError(path, fmt::format("line {}: column '{}' is not a number: '{}'", line_no, column,
                                       one_line(text, 40)));
  }
  return v;
}

void check_point(const ClockPoint& p, const std::string& path, const std::string& where) {
  if (!(p.clock_mhz > 0) || !(p.time_s > 0) || !(p.energy_j > 0)) {
    throw InputError(path, fmt::format("{}: clock, time and energy must be positive (got {} MHz, "
                                       "{} s, {} J)",
                                       where, p.clock_mhz, p.time_s, p.energy_j));
  }
}

/// The lines of `content` that hold more than whitespace (without their '\n').
std::vector<std::string_view> non_blank_lines(std::string_view content) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < content.size()) {
    std::size_t nl = content.find('\n', start);
    if (nl == std::string_view::npos) nl = content.size();
    std::string_view line = content.substr(start, nl - start);
    if (!trim(line).empty()) lines.push_back(line);
    start = nl + 1;
  }
  return lines;
}

MeasurementSet parse_csv(std::string_view content, const std::string& path) {
  const std::vector<std::string_view> lines = non_blank_lines(content);
  if (lines.empty()) throw InputError(path, "empty file");
  const auto header = split_csv(lines.front());
  auto col = [&](std::string_view name) -> int {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<int>(i);
    return -1;
  };
  MeasurementSet set;
  set.path = path;
  int c_clock, c_time, c_energy = -1, c_power = -1, c_a, c_b;
  double time_scale;
  if (col("stage") >= 0 && col("instruction") >= 0 && col("frequency") >= 0) {
    set.format = MeasurementFormat::kPerseusStageProfile;
    c_a = col("stage"), c_b = col("instruction"), c_clock = col("frequency"), c_time = col("time"),
    c_energy = col("energy");
    time_scale = 1.0;
    if (c_time < 0 || c_energy < 0)
      throw InputError(path, "Perseus stage profile lacks a 'time' or 'energy' column");
  } else if (col("core_frequency") >= 0 || col("benchmark") >= 0) {
    set.format = MeasurementFormat::kNvDvfsBenchmark;
    c_a = col("benchmark"), c_b = col("kernel"), c_clock = col("core_frequency"),
    c_time = col("time"), c_power = col("average_power");
    time_scale = kSPerMs;  // ms
    for (auto [c, name] : {std::pair{c_a, "benchmark"}, {c_b, "kernel"}, {c_clock, "core_frequency"},
                           {c_time, "time"}, {c_power, "average_power"}}) {
      if (c < 0) throw InputError(path, fmt::format("NV-DVFS-Benchmark CSV lacks column '{}'", name));
    }
  } else {
    throw InputError(path, "unknown measurement layout: expected a Perseus stage profile "
                           "(stage,instruction,frequency,time,energy), an NV-DVFS-Benchmark CSV or a "
                           "KernelTuner JSON cache");
  }
  if (lines.size() < 2) throw InputError(path, "no data rows after the header");
  const std::size_t needed =
      static_cast<std::size_t>(std::max({c_a, c_b, c_clock, c_time, c_energy, c_power})) + 1;
  Collector collector;
  // NV-DVFS: activity ratios at each op's highest clock.
  std::vector<std::pair<std::string, int>> activity_cols;
  if (set.format == MeasurementFormat::kNvDvfsBenchmark) {
    for (const char* name : {"DRAMA", "SMACT", "FP32A", "FP64A", "TENSO"})
      if (col(name) >= 0) activity_cols.emplace_back(name, col(name));
  }
  std::map<std::string, std::pair<double, std::map<std::string, double>>> activity;  // op -> (clock, ratios)
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::size_t line_no = i + 1;
    const auto f = split_csv(lines[i]);
    if (f.size() < needed || f.size() != header.size()) {
      throw InputError(path, fmt::format("line {}: {} fields, the header has {}", line_no, f.size(),
                                         header.size()));
    }
    ClockPoint p;
    p.clock_mhz = parse_number(f[c_clock], path, line_no, header[c_clock]);
    p.time_s = parse_number(f[c_time], path, line_no, header[c_time]) * time_scale;
    std::string op;
    if (set.format == MeasurementFormat::kPerseusStageProfile) {
      p.energy_j = parse_number(f[c_energy], path, line_no, header[c_energy]);
      op = fmt::format("stage {} {}", f[c_a], f[c_b]);
    } else {
      p.energy_j = parse_number(f[c_power], path, line_no, header[c_power]) * p.time_s;
      op = fmt::format("{}/{}", f[c_a], f[c_b]);
      auto& [clock, ratios] = activity[op];
      if (p.clock_mhz >= clock) {
        clock = p.clock_mhz;
        for (const auto& [name, c] : activity_cols) ratios[name] = parse_number(f[c], path, line_no, name);
      }
    }
    check_point(p, path, fmt::format("line {}", line_no));
    collector.add(op, p);
  }
  set.ops = collector.finish();
  for (auto& op : set.ops) {
    if (auto it = activity.find(op.op); it != activity.end()) op.activity = it->second.second;
  }
  return set;
}

double json_number(const nlohmann::json& entry, const char* key, const std::string& path,
                   const std::string& config) {
  auto it = entry.find(key);
  if (it == entry.end()) throw InputError(path, fmt::format("cache entry '{}' lacks '{}'", one_line(config, 60), key));
  if (!it->is_number()) {
    throw InputError(path, fmt::format("cache entry '{}': '{}' is not a number", one_line(config, 60), key));
  }
  return it->get<double>();
}

MeasurementSet parse_kerneltuner(std::string_view content, const std::string& path) {
  nlohmann::json doc = nlohmann::json::parse(content, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw InputError(path, "invalid JSON");
  if (!doc.is_object() || !doc.contains("cache") || !doc["cache"].is_object()) {
    throw InputError(path, "JSON is not a KernelTuner cache (no 'cache' object)");
  }
  const auto& cache = doc["cache"];
  if (cache.empty()) throw InputError(path, "KernelTuner cache has no entries");
  const std::string kernel =
      doc.contains("kernel_name") && doc["kernel_name"].is_string() ? doc["kernel_name"].get<std::string>() : "kernel";
  std::vector<std::string> keys;
  if (doc.contains("tune_params_keys") && doc["tune_params_keys"].is_array()) {
    for (const auto& k : doc["tune_params_keys"])
      if (k.is_string() && k.get<std::string>() != "nvml_gr_clock") keys.push_back(k.get<std::string>());
  }
  MeasurementSet set;
  set.path = path;
  set.format = MeasurementFormat::kKernelTunerCache;
  Collector collector;
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    const auto& e = it.value();
    if (!e.is_object()) throw InputError(path, fmt::format("cache entry '{}' is not an object", one_line(it.key(), 60)));
    ClockPoint p;
    p.clock_mhz = json_number(e, "nvml_gr_clock", path, it.key());
    p.time_s = ms_to_s(json_number(e, "time", path, it.key()));
    p.energy_j = json_number(e, "nvml_power", path, it.key()) * p.time_s;
    check_point(p, path, fmt::format("cache entry '{}'", one_line(it.key(), 60)));
    std::string config;
    for (const auto& k : keys) {
      if (!config.empty()) config += ',';
      config += e.contains(k) ? e[k].dump() : "?";
    }
    collector.add(config.empty() ? kernel : fmt::format("{}[{}]", kernel, config), p);
  }
  set.ops = collector.finish();
  return set;
}

}  // namespace

std::string_view format_name(MeasurementFormat format) {
  switch (format) {
    case MeasurementFormat::kPerseusStageProfile: return "perseus-stage-profile";
    case MeasurementFormat::kNvDvfsBenchmark: return "nv-dvfs-benchmark";
    case MeasurementFormat::kKernelTunerCache: return "kerneltuner-cache";
  }
  return "unknown";
}

std::size_t MeasurementSet::point_count() const {
  std::size_t n = 0;
  for (const auto& op : ops) n += op.points.size();
  return n;
}

MeasurementSet parse_measurements(std::string_view content, const std::string& path) {
  std::size_t i = 0;
  if (content.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // UTF-8 BOM
  while (i < content.size() && std::isspace(static_cast<unsigned char>(content[i]))) ++i;
  if (i == content.size()) throw InputError(path, "empty file");
  if (content.find('\0') != std::string_view::npos) throw InputError(path, "binary content, not a measurement CSV or JSON");
  if (content[i] == '{') return parse_kerneltuner(content.substr(i), path);
  return parse_csv(content.substr(i), path);
}

MeasurementSet load_measurements(const std::string& path) {
  const auto buffer = read_maybe_gzip(path);
  return parse_measurements(buffer.view(), path);
}

}  // namespace emo::model
