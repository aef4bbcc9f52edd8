// Clock–time–power–energy models of one piece of GPU work (docs/design.md §4), fitted from a few measured
// clocks and predicting at the others.
//
// Forms (x = f / f_ref, f_ref = the highest fitted clock):
//   time   t(f) = (t_mem^p + (t_comp · f_ref / f)^p)^(1/p)   t_mem, t_comp ≥ 0, p ∈ {1, 8}  [s]
//          A clock-independent part t_mem (memory/latency bound) and a part that scales with the
//          cycle time (compute bound), combined by a generalised mean: p = 1 is their sum (the
//          docs/design.md §4 form), p = 8 a smooth maximum (roofline: whichever bound dominates, with a
//          knee between). Both are fitted and the one with the smaller time residual kept (the
//          sum on ties). Non-increasing in f by construction. Measured (docs/models.md): with 3
//          clocks the smooth maximum cuts the time error median from 1.22 % to 0.34 % on Perseus
//          A100 and from 4.45 % to 2.66 % on the V100 sweep, whose memory-bound kernels are flat
//          above a knee and scale as 1/f below it; p = 8 from a sweep of p = 2..32 (docs/models.md).
//   power  P(f) = P_static + b · x^γ                 P_static, b ≥ 0, 1 ≤ γ ≤ 10  [W]
//          Static power plus dynamic power C·V²·f, where V rises with f above a knee, so the
//          dynamic part grows faster than linearly; γ is fitted (grid of 0.05) instead of fixing
//          the cubic because the measured sweeps disagree: Perseus A100 stage power needs γ ≈ 4–5
//          over 990–1410 MHz, V100 kernels γ ≈ 2–4. b ≥ 0 and γ ≥ 1 make P increasing and convex.
//          With 2 clocks γ is fixed at 3 (2 unknowns). Chosen by measured error (docs/models.md):
//          on Perseus with 3 clocks the energy median error is 2.4 % with fitted γ, 3.4 % with
//          P_static + a·x + b·x³.
//   energy E(f) = P(f) · t(f)                                            [J]
// Fitting is least squares on relative residuals ((model − measured) / measured) under the
// nonnegativity constraints, solved exactly by enumerating active sets (γ by grid search).
// With many points (≥ FitOptions::table_min_points) and a parametric residual above
// FitOptions::table_max_residual, a table model is used inside the measured range: the measured
// time and power, made monotone first (time non-increasing, power non-decreasing, by
// pool-adjacent-violators), interpolated between adjacent measured clocks along the parametric
// model's curve (interpolate_along: a chord across a 1065–1305 MHz gap over the roofline knee
// overstated a pipeline pack's time at 1245 MHz by 1.2 % of its max-clock time, half its
// slowdown — docs/models.md); outside it the parametric model extrapolates.
// Sources: Perseus (Chung et al., SOSP'24) time/energy profiles; Mei et al., "A survey and
// measurement study of GPU DVFS" (NV-DVFS-Benchmark) for the time and power shapes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/measurements.h"

namespace emo::model {

/// t(f) = (t_mem^p + (t_comp · f_ref / f)^p)^(1/p), seconds; p = 1 is t_mem + t_comp · f_ref / f.
struct TimeModel {
  double t_mem_s = 0;     ///< Clock-independent time, s.
  double t_comp_s = 0;    ///< Clock-scaled time at f_ref, s.
  double f_ref_mhz = 1;   ///< Reference clock, MHz.
  double p = 1;           ///< Exponent of the generalised mean: 1 = sum, kSmoothMaxExponent = roofline.
  double at(double clock_mhz) const;
  /// Compute-bound share of the terms at f_ref: t_comp / (t_mem + t_comp).
  double beta() const;
};

/// Exponent of the smooth-maximum time form (docs/models.md: sweep of p = 2..32 on the measured files).
inline constexpr double kSmoothMaxExponent = 8.0;

/// P(f) = P_static + b · (f/f_ref)^γ, watts.
struct PowerModel {
  double p_static_w = 0;  ///< W.
  double b_w = 0;         ///< Dynamic power at f_ref, W.
  double gamma = 3;       ///< Exponent of the dynamic power, ≥ 1.
  double f_ref_mhz = 1;   ///< Reference clock, MHz.
  double at(double clock_mhz) const;
};

/// Relative fit residuals ((model − measured) / measured) over the fitted points.
struct FitResiduals {
  double time_rms = 0, time_max = 0;      ///< Fractions of the measured time.
  double power_rms = 0, power_max = 0;    ///< Fractions of the measured power.
  double energy_rms = 0, energy_max = 0;  ///< Fractions of the measured energy.
};

struct FitOptions {
  std::size_t table_min_points = 6;   ///< Use the table model from this many points up ...
  double table_max_residual = 0.005;  ///< ... when the parametric max time/power residual exceeds this.
};

/// A fitted model of one operation.
class ClockModel {
 public:
  enum class Kind { kParametric, kTable };

  Kind kind() const { return kind_; }
  const TimeModel& time_model() const { return time_; }
  const PowerModel& power_model() const { return power_; }
  const FitResiduals& residuals() const { return residuals_; }  ///< Of the model actually used.
  const FitResiduals& parametric_residuals() const { return parametric_residuals_; }
  /// The fitted clocks, ascending, MHz.
  const std::vector<double>& fitted_clocks() const { return clocks_; }

  double time_s(double clock_mhz) const;    ///< Predicted time, s.
  double power_w(double clock_mhz) const;   ///< Predicted average power, W.
  double energy_j(double clock_mhz) const { return power_w(clock_mhz) * time_s(clock_mhz); }

 private:
  friend ClockModel fit_clock_model(const std::vector<ClockPoint>&, const FitOptions&);
  Kind kind_ = Kind::kParametric;
  TimeModel time_;
  PowerModel power_;
  FitResiduals residuals_, parametric_residuals_;
  std::vector<double> clocks_;
  std::vector<double> table_time_, table_power_;  // monotone, at clocks_ (table kind only)
};

/// Piecewise-linear interpolation of `ys` over ascending `xs` (same size, non-empty) at `x`;
/// constant outside [xs.front(), xs.back()]; exactly ys[i] at x == xs[i].
double interpolate(const std::vector<double>& xs, const std::vector<double>& ys, double x);

/// Interpolation of `ys` over ascending `xs` (same size, non-empty) at `x` along the curve `shape`
/// (a function of x, monotone on each interval): between xs[i−1] and xs[i] the share of the way is
/// (shape(x) − shape(xs[i−1])) / (shape(xs[i]) − shape(xs[i−1])) instead of the share of the
/// interval, so a gap that spans a bend of the curve (a roofline knee) follows the bend instead of
/// its chord; linear where shape is flat on the interval (equal ends). Exactly ys[i] at x == xs[i];
/// constant outside [xs.front(), xs.back()]; monotone in x when ys and shape are.
double interpolate_along(const std::vector<double>& xs, const std::vector<double>& ys, double x,
                         const std::function<double(double)>& shape);

/// Fits a model to points at ≥ 2 distinct positive clocks (repeats at one clock are averaged).
/// Throws std::invalid_argument when there are fewer, or a value is not positive and finite.
ClockModel fit_clock_model(const std::vector<ClockPoint>& points, const FitOptions& options = {});

/// Least squares min ‖A x − y‖ subject to x ≥ 0, for n ≤ 4 columns, exact (active-set enumeration).
/// `a` is row-major, rows × n. Among solutions whose residual is within 1e-12 relative of the
/// best, the first in `preference` (lists of column subsets as bit masks) wins, then fewer columns.
std::vector<double> nnls_small(const std::vector<double>& a, const std::vector<double>& y, int n,
                               const std::vector<unsigned>& preference = {});

/// Error of a model at one measured clock that was not used for fitting.
struct CheckPoint {
  double clock_mhz = 0;
  double time_s = 0, time_pred_s = 0;      ///< Measured and predicted, s.
  double energy_j = 0, energy_pred_j = 0;  ///< Measured and predicted, J.
  double time_err = 0, energy_err = 0;     ///< |predicted − measured| / measured.
};

/// One operation of a fit check: the model fitted on `fit_clocks`, checked on `points`.
struct OpCheck {
  std::string op;
  std::vector<double> fit_clocks;  ///< The op's measured clocks nearest the requested ones, MHz.
  ClockModel model;
  std::vector<CheckPoint> points;  ///< Every other measured clock of the op, ascending.
  double time_err_median = 0, time_err_max = 0, energy_err_median = 0, energy_err_max = 0;
};

/// Result of `emo model check`: errors pooled over all ops' check points.
struct CheckReport {
  std::vector<double> requested_clocks;
  std::vector<OpCheck> ops;        ///< Ops that could be fitted (≥ 2 distinct nearest clocks).
  std::vector<std::string> skipped;  ///< Ops with fewer than 2 distinct nearest clocks.
  std::size_t points = 0;          ///< Check points over all ops.
  double time_err_median = 0, time_err_max = 0, energy_err_median = 0, energy_err_max = 0;
};

/// Fits every op of `set` from its measured clocks nearest each of `fit_clocks` (ties go to the
/// higher clock) and measures the error on all its other clocks. Throws std::invalid_argument
/// when fewer than 2 distinct clocks are requested.
CheckReport check_fit(const MeasurementSet& set, const std::vector<double>& fit_clocks,
                      const FitOptions& options = {});

/// Median of `v` (mean of the middle two for an even count); 0 for an empty vector.
double median(std::vector<double> v);

}  // namespace emo::model
