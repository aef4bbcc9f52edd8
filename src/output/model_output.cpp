#include "output/model_output.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace emo::output {

nlohmann::json model_json(const model::ClockModel& m) {
  const auto& t = m.time_model();
  const auto& p = m.power_model();
  const auto& r = m.residuals();
  return {{"kind", m.kind() == model::ClockModel::Kind::kTable ? "table" : "parametric"},
          {"f_ref_mhz", t.f_ref_mhz},
          {"t_mem_s", t.t_mem_s},
          {"t_comp_s", t.t_comp_s},
          {"time_form", t.p == 1 ? "sum" : "smooth_max"},
          {"time_p", t.p},
          {"beta", t.beta()},
          {"p_static_w", p.p_static_w},
          {"p_dynamic_w", p.b_w},
          {"gamma", p.gamma},
          {"residuals",
           {{"time_rms", r.time_rms}, {"time_max", r.time_max}, {"power_rms", r.power_rms},
            {"power_max", r.power_max}, {"energy_rms", r.energy_rms}, {"energy_max", r.energy_max}}}};
}

std::string check_text(const std::string& file, const model::MeasurementSet& set, const std::vector<double>& fit_clocks,
                       const model::CheckReport& report) {
  std::string out;
  out += fmt::format("{}: {} ({} ops, {} points)\n", file, model::format_name(set.format), set.ops.size(),
             set.point_count());
  out += fmt::format("fit clocks (MHz): {}\n", fmt::join(fit_clocks, ","));
  for (const auto& c : report.ops) {
    const auto& t = c.model.time_model();
    const auto& p = c.model.power_model();
    out += fmt::format("  {:<48} fit@{:<22} {:<10} beta {:.2f}  P={:.1f}+{:.1f}x^{:.2f} W  time err med {:.2f}% "
               "max {:.2f}%  energy err med {:.2f}% max {:.2f}%\n",
               c.op, fmt::format("{}", fmt::join(c.fit_clocks, ",")),
               t.p == 1 ? "sum" : "smooth-max", t.beta(), p.p_static_w, p.b_w,
               p.gamma, 100 * c.time_err_median, 100 * c.time_err_max, 100 * c.energy_err_median,
               100 * c.energy_err_max);
  }
  for (const auto& s : report.skipped) out += fmt::format("  {}: skipped (fewer than 2 distinct clocks)\n", s);
  out += fmt::format("{} ops, {} check points: time error median {:.2f}% max {:.2f}%, energy error median "
             "{:.2f}% max {:.2f}%\n",
             report.ops.size(), report.points, 100 * report.time_err_median, 100 * report.time_err_max,
             100 * report.energy_err_median, 100 * report.energy_err_max);
  return out;
}

nlohmann::json check_json(const std::string& file, const model::MeasurementSet& set,
                          const std::vector<double>& fit_clocks, const model::CheckReport& report) {
  nlohmann::json doc;
  doc["file"] = file;
  doc["format"] = std::string(model::format_name(set.format));
  doc["fit_clocks"] = fit_clocks;
  doc["ops"] = report.ops.size();
  doc["points"] = report.points;
  doc["time_err_median"] = report.time_err_median;
  doc["time_err_max"] = report.time_err_max;
  doc["energy_err_median"] = report.energy_err_median;
  doc["energy_err_max"] = report.energy_err_max;
  doc["skipped_ops"] = report.skipped;
  auto& per_op = doc["per_op"] = nlohmann::json::array();
  for (const auto& c : report.ops) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& p : c.points) {
      pts.push_back({{"clock_mhz", p.clock_mhz}, {"time_s", p.time_s}, {"time_pred_s", p.time_pred_s},
                     {"energy_j", p.energy_j}, {"energy_pred_j", p.energy_pred_j},
                     {"time_err", p.time_err}, {"energy_err", p.energy_err}});
    }
    per_op.push_back({{"op", c.op},
                      {"fit_clocks", c.fit_clocks},
                      {"model", model_json(c.model)},
                      {"points", c.points.size()},
                      {"time_err_median", c.time_err_median},
                      {"time_err_max", c.time_err_max},
                      {"energy_err_median", c.energy_err_median},
                      {"energy_err_max", c.energy_err_max},
                      {"check", std::move(pts)}});
  }
  return doc;
}

namespace {

nlohmann::json curve_json(const model::ClassCurve& c) {
  return {{"beta", c.beta},       {"p", c.p},
          {"beta_sd", c.beta_sd}, {"static_share", c.s},
          {"x_knee", c.x_knee},   {"voltage_slope", c.k},
          {"power_level", c.power_level}, {"power_level_sd", c.power_level_sd},
          {"time_rms", c.time_rms}, {"power_rms", c.power_rms},
          {"ops", c.ops},         {"points", c.points},
          {"source", c.source}};
}

}  // namespace

nlohmann::json ground_truth_json(const model::GroundTruth& gt) {
  nlohmann::json curves = nlohmann::json::object();
  for (int i = 0; i < model::kOpClassCount; ++i)
    curves[std::string(model::op_class_name(static_cast<model::OpClass>(i)))] = curve_json(gt.curves[i]);
  return {{"classes", curves},
          {"noise", {{"time_sd", gt.noise.time_sd}, {"energy_sd", gt.noise.energy_sd},
                     {"samples", gt.noise.samples}, {"source", gt.noise.source}}}};
}

std::string calibrate_text(const std::string& data_dir, const model::GroundTruth& gt,
                           const model::GroundTruth& builtin) {
  std::string out;
  out += fmt::format("Ground truth of the simulated device, calibrated on {} (x = f / f_max, points with x >= {}):\n",
             data_dir, model::kCalibrationMinX);
  out += fmt::format("  {:<14} {:>6} {:>4} {:>7} {:>7} {:>7} {:>6} {:>7} {:>9} {:>8} {:>9} {:>5} {:>6}\n", "class", "beta",
             "p", "beta_sd", "static", "x_knee", "k", "level", "level_sd", "time_rms", "power_rms", "ops",
             "points");
  for (int i = 0; i < model::kOpClassCount; ++i) {
    const auto& c = gt.curves[i];
    out += fmt::format("  {:<14} {:>6.4f} {:>4} {:>7.4f} {:>7.4f} {:>7.2f} {:>6.2f} {:>7.4f} {:>9.4f} {:>7.2f}% {:>8.2f}% "
               "{:>5} {:>6}\n",
               model::op_class_name(static_cast<model::OpClass>(i)), c.beta, c.p, c.beta_sd, c.s, c.x_knee,
               c.k, c.power_level, c.power_level_sd, 100 * c.time_rms, 100 * c.power_rms, c.ops, c.points);
  }
  out += fmt::format("  (communication: an assumption, not fitted — no measured sweep of NCCL kernels exists)\n");
  out += fmt::format("  noise: time sd {:.3f}%, energy sd {:.3f}% ({} samples)\n", 100 * gt.noise.time_sd,
             100 * gt.noise.energy_sd, gt.noise.samples);
  double worst = 0;
  for (int i = 0; i < model::kOpClassCount; ++i) {
    worst = std::max({worst, std::abs(gt.curves[i].beta - builtin.curves[i].beta),
                      std::abs(gt.curves[i].s - builtin.curves[i].s),
                      std::abs(gt.curves[i].power_level - builtin.curves[i].power_level)});
  }
  out += fmt::format("compiled-in values differ by at most {:.4f} (beta, static share, level)\n", worst);
  return out;
}

}  // namespace emo::output
