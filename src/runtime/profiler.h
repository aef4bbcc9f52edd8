// Profiling units of work (packs) on a Device at a few SM clocks and fitting their clock models
// (docs/design.md §4: 2–5 clocks per pack instead of every clock).
#pragma once

#include <vector>

#include "model/clock_model.h"
#include "runtime/device.h"

namespace emo::runtime {

/// The K profiling clocks: the supported clocks nearest f_max · linspace(1, 0.5, K) (on A100, K = 3
/// gives 1410, 1065, 705 MHz). Half the max clock is as low as slack is usually worth going (below
/// it static power makes energy rise again on the measured sweeps) and the fit then interpolates
/// over the whole range the optimiser uses instead of extrapolating (docs/models.md: extrapolation
/// far below the fitted clocks is where the models fail). `supported` descending. Throws std::invalid_argument for K < 2 or
/// fewer than K distinct supported clocks.
std::vector<double> profiling_clocks(const std::vector<double>& supported, int k);

/// Clocks at which a model fitted on `profiled` is trusted: supported clocks ≥ the lowest profiled
/// clock (interpolation only: docs/models.md shows extrapolation below the fitted clocks is where
/// the models fail), descending.
std::vector<double> trusted_clocks(const std::vector<double>& supported, const std::vector<double>& profiled);

struct ProfileResult {
  std::vector<model::ClockPoint> points;  ///< One per profiled clock (mean per run).
  model::ClockModel model;                ///< Fitted on `points`.
  int runs = 0;                           ///< Total runs (repetitions over all clocks).
  double device_time_s = 0;               ///< Device time spent, runs only (switches excluded).
  bool simulated = false;
};

/// Runs `work` at each of `clocks` (repeated so that each clock spans ≥ `counter_periods` energy-
/// counter periods, from a first timing run at the first clock); `model` is left unfitted (one
/// clock is enough). Throws what Device::run throws, and std::invalid_argument when `clocks` is
/// empty or a measurement has zero energy or time.
ProfileResult measure_work(Device& device, Work work, const std::vector<double>& clocks, int counter_periods = 50);

/// measure_work, then the model fitted on the points (model::fit_clock_model). Throws what
/// measure_work and the fit throw.
ProfileResult profile_work(Device& device, Work work, const std::vector<double>& clocks, int counter_periods = 50);

}  // namespace emo::runtime
