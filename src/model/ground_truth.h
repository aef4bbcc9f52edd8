// Ground truth for the simulated device: how the time and power of each class of GPU work change
// with the SM clock, calibrated on the measured clock sweeps in ../shared/data (issue 4).
//
// In normalised clock x = f / f_max (f_max = the highest clock of the sweep or GPU):
//   time ratio   τ(x) = t(f) / t(f_max) = (1 − β + β · x^(−p))^(1/p)
//                β ∈ [0, 1]: the share of t^p that scales with the cycle time at f_max (p = 1: the
//                compute-bound share of docs/design.md §4's t_mem + t_comp/f; p > 1: a smooth roofline).
//   power ratio  π(x) = P(f) / P(f_max) = s + (1 − s) · g(x) / g(1),  g(x) = x · v(x)²,
//                v(x) = 1 + k · max(0, x − x_knee)
//                Static share s plus dynamic power C·V²·f with a voltage that is flat below a knee
//                and rises linearly above it (the DVFS table's shape; Mei et al., "A survey and
//                measurement study of GPU DVFS", 2017).
//   level        P(f_max) = power_level · (the GPU's default power limit).
// Calibration pools every point of the class's ops (each op normalised by its own value at the
// sweep's highest clock) with x ≥ kCalibrationMinX, and chooses (p, β) and (s, x_knee, k) by grid
// search on squared relative error. Per-op spread: β and the power level fitted per op, their
// standard deviations. Run-to-run noise: from adjacent clocks of the 15-MHz-step Perseus sweep,
// σ = rms(second difference of ln value) / √6 (the second difference of three independent
// samples with equal noise has variance 6σ²; the smooth curve's own curvature is negligible at
// 15 MHz steps).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "model/measurements.h"
#include "model/op_class.h"

namespace emo::model {

/// Points below this normalised clock are left out of calibration: the V100 sweep's rows at
/// 405–600 MHz (x < 0.44) are a different regime (docs/models.md).
inline constexpr double kCalibrationMinX = 0.5;

/// Time and power of one class of GPU work as functions of the normalised SM clock.
struct ClassCurve {
  double beta = 0.5;         ///< Clock-scaled share of t^p at f_max, [0, 1].
  double p = 1;              ///< Generalised-mean exponent, ≥ 1.
  double beta_sd = 0;        ///< Per-op standard deviation of β.
  double s = 0.3;            ///< Static share of the power at f_max, [0, 1].
  double x_knee = 0.7;       ///< Voltage knee, normalised clock.
  double k = 1;              ///< Voltage slope above the knee, per unit of x.
  double power_level = 0.5;  ///< P(f_max) / default power limit.
  double power_level_sd = 0; ///< Per-op standard deviation of power_level.
  double time_rms = 0;       ///< Rms relative error of the class curve on its calibration points.
  double power_rms = 0;      ///< Same for power.
  std::size_t ops = 0, points = 0;  ///< Calibration ops and points (0: an assumption, not fitted).
  std::string source;        ///< Which files (or "assumption: ...").

  /// τ(x) with this curve's β (or `beta_op`).
  double time_ratio(double x, double beta_op) const;
  double time_ratio(double x) const { return time_ratio(x, beta); }
  /// π(x), ≥ s, increasing in x.
  double power_ratio(double x) const;
};

/// Run-to-run noise of a measurement: relative standard deviations.
struct NoiseLevel {
  double time_sd = 0;    ///< Of the run time.
  double energy_sd = 0;  ///< Of the energy.
  std::size_t samples = 0;
  std::string source;
};

/// The ground-truth parameter set: one curve per OpClass (indexed by the enum), plus noise.
struct GroundTruth {
  std::array<ClassCurve, kOpClassCount> curves;
  NoiseLevel noise;
  const ClassCurve& curve(OpClass c) const { return curves[static_cast<int>(c)]; }
};

/// One op's calibration sweep and its evidence of class.
struct CalibrationOp {
  OpClass cls = OpClass::kMixed;
  OpMeasurements sweep;
  double max_clock_mhz = 0;    ///< Normalising clock (the sweep file's highest clock).
  double power_limit_w = 0;    ///< Default power limit of the GPU measured; 0 = level unknown.
};

/// Selects the calibration ops from the three measured files in `data_dir` (../shared/data):
///  - perseus/stage_profile/gpt3-175b+a100_sxm_bf16.csv: all 16 stage passes → compute (GPT-3
///    stages are GEMM-dominated); power level unknown (a stage's energy spans several GPUs);
///  - dvfs/kerneltuner_synthetic_fp32_a100_pcie.json: the fp32 kernel → compute (A100 PCIe,
///    250 W limit);
///  - dvfs/v100-dvfs-real.csv: kernels with DRAM activity `DRAMA` ≥ 0.6 at the top clock →
///    memory; `DRAMA` ≤ 0.25 and `SMACT` ≥ 0.75 → compute; the rest → mixed (V100 SXM2, 300 W).
/// Throws emo::InputError when a file is missing or malformed.
std::vector<CalibrationOp> load_calibration_ops(const std::string& data_dir);

/// Fits one class curve on `ops` (all of one class). Throws std::invalid_argument when no op has
/// ≥ 2 points at x ≥ kCalibrationMinX.
ClassCurve calibrate_class(const std::vector<CalibrationOp>& ops);

/// Calibrates compute, memory and mixed curves from load_calibration_ops (mixed pools every op);
/// communication is an assumption (no measured sweep of NCCL kernels: β = 0.1, p = 1, the mixed
/// power shape, level set by the GPU's blocked power — see SimDevice); noise from Perseus.
GroundTruth calibrate_ground_truth(const std::string& data_dir);

/// The calibrated values compiled into EMO (what calibrate_ground_truth returned on
/// ../shared/data; a test checks that they still agree). Recorded in docs/simulated-device.md.
const GroundTruth& builtin_ground_truth();

}  // namespace emo::model
