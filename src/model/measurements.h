// Measured (SM clock, time, energy) points per operation, read from clock-sweep files.
//
// Three layouts are recognised from the content (not the file name):
//  - Perseus stage profile CSV (ml-energy/zeus, SOSP'24 artifact):
//      header `stage,instruction,frequency,time,energy`; frequency in MHz, time in s, energy in J.
//      Operation name: "stage S INSTRUCTION", e.g. "stage 0 forward".
//  - NV-DVFS-Benchmark CSV (blackjack2015/NV-DVFS-Benchmark, v100-dvfs-real.csv): columns
//      `benchmark`, `kernel`, `core_frequency` (MHz), `time` (ms), `average_power` (W), among
//      many others. Operation name "BENCHMARK/KERNEL"; energy = average_power × time.
//  - KernelTuner JSON cache (KernelTuner/kernel_tuner_tutorial): object with `cache`, mapping a
//      configuration key to an entry with `nvml_gr_clock` (MHz), `time` (ms), `nvml_power` (W).
//      Operation name: `kernel_name` plus the configuration without its clock, e.g.
//      "fp32_kernel[1024,64,1024]"; energy = nvml_power × time.
// Points of one operation at the same clock (repeated measurements) are averaged.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace emo::model {

/// One measurement of a piece of GPU work at one locked SM clock.
struct ClockPoint {
  double clock_mhz = 0;  ///< SM (graphics) clock, MHz.
  double time_s = 0;     ///< Run time, seconds.
  double energy_j = 0;   ///< GPU energy over that run, joules.
  /// Average power over the run, watts (energy / time).
  double power_w() const { return time_s > 0 ? energy_j / time_s : 0.0; }
};

/// All measured points of one operation, sorted by ascending clock, one point per clock.
struct OpMeasurements {
  std::string op;
  std::vector<ClockPoint> points;
  /// NV-DVFS-Benchmark only: DCGM activity ratios (0..1) at the op's highest measured clock, for
  /// the columns present among DRAMA (DRAM), SMACT (SM active), FP32A, FP64A, TENSO (tensor).
  /// Empty for the other layouts.
  std::map<std::string, double> activity;
};

enum class MeasurementFormat { kPerseusStageProfile, kNvDvfsBenchmark, kKernelTunerCache };

/// "perseus-stage-profile", "nv-dvfs-benchmark" or "kerneltuner-cache".
std::string_view format_name(MeasurementFormat format);

/// The contents of one measurement file. Operations keep their order of first appearance.
struct MeasurementSet {
  std::string path;
  MeasurementFormat format = MeasurementFormat::kPerseusStageProfile;
  std::vector<OpMeasurements> ops;
  std::size_t point_count() const;
};

/// Reads `path` and detects its format from the content. Throws emo::InputError with a one-line
/// reason naming the file when it is missing, empty, of an unknown layout, lacks a needed column
/// or field, or holds a non-numeric or non-positive clock, time or energy.
MeasurementSet load_measurements(const std::string& path);

/// As load_measurements, on content already in memory; `path` only names the file in errors.
MeasurementSet parse_measurements(std::string_view content, const std::string& path);

}  // namespace emo::model
