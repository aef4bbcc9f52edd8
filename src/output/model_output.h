// What `emo model check` and `emo model calibrate` write: text and JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/clock_model.h"
#include "model/ground_truth.h"
#include "model/measurements.h"

namespace emo::output {

/// The fitted parameters and residuals of one clock model (kind, f_ref_mhz, t_mem_s, t_comp_s,
/// time_form, time_p, beta, p_static_w, p_dynamic_w, gamma, residuals {...}).
nlohmann::json model_json(const model::ClockModel& m);

/// `emo model check` as text: per op, its fit and its errors on the other clocks; then the totals.
std::string check_text(const std::string& file, const model::MeasurementSet& set, const std::vector<double>& fit_clocks,
                       const model::CheckReport& report);

/// `emo model check --json`: file, format, fit_clocks, ops, points, the error medians and maxima,
/// skipped_ops and per_op [{op, fit_clocks, model, points, errors, check [...]}].
nlohmann::json check_json(const std::string& file, const model::MeasurementSet& set,
                          const std::vector<double>& fit_clocks, const model::CheckReport& report);

/// The class curves and noise of a ground truth: {classes {name: {...}}, noise {...}}.
nlohmann::json ground_truth_json(const model::GroundTruth& gt);

/// `emo model calibrate` as text: the calibrated curves per class, the noise, and how far the
/// compiled-in values are from them.
std::string calibrate_text(const std::string& data_dir, const model::GroundTruth& gt,
                           const model::GroundTruth& builtin);

}  // namespace emo::output
