// `emo model check FILE --fit-clocks LIST [--json FILE|-]`: fits each operation's clock model
// from a few measured clocks and reports the error on all its other measured clocks.
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "model/clock_model.h"
#include "model/measurements.h"
#include "trace/error.h"

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
  if (o.json_out != "-") {
    fmt::print("{}: {} ({} ops, {} points)\n", o.file, model::format_name(set.format), set.ops.size(),
               set.point_count());
    fmt::print("fit clocks (MHz): {}\n", fmt::join(o.fit_clocks, ","));
    for (const auto& c : report.ops) {
      const auto& t = c.model.time_model();
      const auto& p = c.model.power_model();
      fmt::print("  {:<48} fit@{:<22} beta {:.2f}  P={:.1f}+{:.1f}x^{:.2f} W  time err med {:.2f}% "
                 "max {:.2f}%  energy err med {:.2f}% max {:.2f}%\n",
                 c.op, fmt::format("{}", fmt::join(c.fit_clocks, ",")), t.beta(), p.p_static_w, p.b_w,
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
  return [check, opts]() -> int {
    if (!check->parsed()) return -1;
    return run_model_check(*opts);
  };
}

}  // namespace emo::cli
