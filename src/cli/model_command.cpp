// `emo model check FILE --fit-clocks LIST [--json FILE|-]`: fits each operation's clock model
// from a few measured clocks and reports the error on all its other measured clocks.
// `emo model calibrate [--data-dir DIR] [--json FILE|-]`: the simulated device's ground-truth class
// curves calibrated on the measured sweeps, next to the values compiled into EMO.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "model/clock_model.h"
#include "model/ground_truth.h"
#include "model/measurements.h"
#include "core/error.h"

namespace emo::cli {
namespace {

struct ModelCheckOptions {
  std::string file;
  std::vector<double> fit_clocks;
  std::string json_out;
};

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

int run_model_check(const ModelCheckOptions& o) {
  for (double f : o.fit_clocks) {
    if (!(f > 0) || !std::isfinite(f)) throw InputError("--fit-clocks", fmt::format("clock {} MHz is not positive", f));
  }
  const model::MeasurementSet set = model::load_measurements(o.file);
  model::CheckReport report;
  try {
    report = model::check_fit(set, o.fit_clocks);
  } catch (const std::invalid_argument& e) {
    throw InputError("--fit-clocks", e.what());
  }
  if (report.ops.empty()) {
    throw InputError(fmt::format("--fit-clocks {}", fmt::join(o.fit_clocks, ",")),
                     fmt::format("no op of {} has 2 distinct measured clocks nearest these; nothing was fitted", o.file));
  }
  if (o.json_out != "-") {
    fmt::print("{}: {} ({} ops, {} points)\n", o.file, model::format_name(set.format), set.ops.size(),
               set.point_count());
    fmt::print("fit clocks (MHz): {}\n", fmt::join(o.fit_clocks, ","));
    for (const auto& c : report.ops) {
      const auto& t = c.model.time_model();
      const auto& p = c.model.power_model();
      fmt::print("  {:<48} fit@{:<22} {:<10} beta {:.2f}  P={:.1f}+{:.1f}x^{:.2f} W  time err med {:.2f}% "
                 "max {:.2f}%  energy err med {:.2f}% max {:.2f}%\n",
                 c.op, fmt::format("{}", fmt::join(c.fit_clocks, ",")),
                 t.p == 1 ? "sum" : "smooth-max", t.beta(), p.p_static_w, p.b_w,
                 p.gamma, 100 * c.time_err_median, 100 * c.time_err_max, 100 * c.energy_err_median,
                 100 * c.energy_err_max);
    }
    for (const auto& s : report.skipped) fmt::print("  {}: skipped (fewer than 2 distinct clocks)\n", s);
    fmt::print("{} ops, {} check points: time error median {:.2f}% max {:.2f}%, energy error median "
               "{:.2f}% max {:.2f}%\n",
               report.ops.size(), report.points, 100 * report.time_err_median, 100 * report.time_err_max,
               100 * report.energy_err_median, 100 * report.energy_err_max);
  }
  if (!o.json_out.empty()) {
    nlohmann::json doc;
    doc["file"] = o.file;
    doc["format"] = std::string(model::format_name(set.format));
    doc["fit_clocks"] = o.fit_clocks;
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
    write_output(o.json_out, doc.dump(2) + "\n");
  }
  return 0;
}

nlohmann::json curve_json(const model::ClassCurve& c) {
  return {{"beta", c.beta},       {"p", c.p},
          {"beta_sd", c.beta_sd}, {"static_share", c.s},
          {"x_knee", c.x_knee},   {"voltage_slope", c.k},
          {"power_level", c.power_level}, {"power_level_sd", c.power_level_sd},
          {"time_rms", c.time_rms}, {"power_rms", c.power_rms},
          {"ops", c.ops},         {"points", c.points},
          {"source", c.source}};
}

nlohmann::json ground_truth_json(const model::GroundTruth& gt) {
  nlohmann::json curves = nlohmann::json::object();
  for (int i = 0; i < model::kOpClassCount; ++i)
    curves[std::string(model::op_class_name(static_cast<model::OpClass>(i)))] = curve_json(gt.curves[i]);
  return {{"classes", curves},
          {"noise", {{"time_sd", gt.noise.time_sd}, {"energy_sd", gt.noise.energy_sd},
                     {"samples", gt.noise.samples}, {"source", gt.noise.source}}}};
}

int run_model_calibrate(const std::string& data_dir, const std::string& json_out) {
  const model::GroundTruth gt = model::calibrate_ground_truth(data_dir);
  const model::GroundTruth& builtin = model::builtin_ground_truth();
  if (json_out != "-") {
    fmt::print("Ground truth of the simulated device, calibrated on {} (x = f / f_max, points with x >= {}):\n",
               data_dir, model::kCalibrationMinX);
    fmt::print("  {:<14} {:>6} {:>4} {:>7} {:>7} {:>7} {:>6} {:>7} {:>9} {:>8} {:>9} {:>5} {:>6}\n", "class", "beta",
               "p", "beta_sd", "static", "x_knee", "k", "level", "level_sd", "time_rms", "power_rms", "ops",
               "points");
    for (int i = 0; i < model::kOpClassCount; ++i) {
      const auto& c = gt.curves[i];
      fmt::print("  {:<14} {:>6.4f} {:>4} {:>7.4f} {:>7.4f} {:>7.2f} {:>6.2f} {:>7.4f} {:>9.4f} {:>7.2f}% {:>8.2f}% "
                 "{:>5} {:>6}\n",
                 model::op_class_name(static_cast<model::OpClass>(i)), c.beta, c.p, c.beta_sd, c.s, c.x_knee,
                 c.k, c.power_level, c.power_level_sd, 100 * c.time_rms, 100 * c.power_rms, c.ops, c.points);
    }
    fmt::print("  (communication: an assumption, not fitted — no measured sweep of NCCL kernels exists)\n");
    fmt::print("  noise: time sd {:.3f}%, energy sd {:.3f}% ({} samples)\n", 100 * gt.noise.time_sd,
               100 * gt.noise.energy_sd, gt.noise.samples);
    double worst = 0;
    for (int i = 0; i < model::kOpClassCount; ++i) {
      worst = std::max({worst, std::abs(gt.curves[i].beta - builtin.curves[i].beta),
                        std::abs(gt.curves[i].s - builtin.curves[i].s),
                        std::abs(gt.curves[i].power_level - builtin.curves[i].power_level)});
    }
    fmt::print("compiled-in values differ by at most {:.4f} (beta, static share, level)\n", worst);
  }
  if (!json_out.empty()) {
    nlohmann::json doc = ground_truth_json(gt);
    doc["data_dir"] = data_dir;
    doc["builtin"] = ground_truth_json(builtin);
    write_output(json_out, doc.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

Action add_model_command(CLI::App& app) {
  auto opts = std::make_shared<ModelCheckOptions>();
  CLI::App* cmd = app.add_subcommand("model", "Clock-time-energy models of GPU work");
  cmd->require_subcommand(1);
  CLI::App* check = cmd->add_subcommand(
      "check", "Fit each operation's model from a few measured clocks and report the error on its "
               "other measured clocks");
  check->add_option("file", opts->file,
                    "Measured clock sweep: Perseus stage-profile CSV, NV-DVFS-Benchmark CSV or "
                    "KernelTuner JSON cache")
      ->required();
  check->add_option("--fit-clocks", opts->fit_clocks,
                    "Comma-separated SM clocks (MHz) to fit from; each op uses its nearest measured "
                    "clocks")
      ->required()
      ->delimiter(',');
  check->add_option("--json", opts->json_out,
                    "Also write a JSON report to FILE ('-' = stdout only, no text)");
  const char* env_dir = std::getenv("EMO_DATA_DIR");
  auto data_dir = std::make_shared<std::string>(env_dir != nullptr && *env_dir ? env_dir : EMO_DEFAULT_DATA_DIR);
  auto calib_json = std::make_shared<std::string>();
  CLI::App* calibrate = cmd->add_subcommand(
      "calibrate", "Calibrate the simulated device's per-class clock curves on the measured sweeps "
                   "(Perseus, NV-DVFS, KernelTuner files under DIR)");
  calibrate->add_option("--data-dir", *data_dir, "Folder holding perseus/ and dvfs/ (default: $EMO_DATA_DIR, else ../shared/data beside the source tree)");
  calibrate->add_option("--json", *calib_json, "Also write JSON to FILE ('-' = stdout only, no text)");
  return [check, opts, calibrate, data_dir, calib_json]() -> int {
    if (calibrate->parsed()) return run_model_calibrate(*data_dir, *calib_json);
    if (!check->parsed()) return -1;
    return run_model_check(*opts);
  };
}

}  // namespace emo::cli
