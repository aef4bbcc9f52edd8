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
#include "output/model_output.h"

namespace emo::cli {
namespace {

struct ModelCheckOptions {
  std::string file;
  std::vector<double> fit_clocks;
  std::string json_out;
};

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
  if (o.json_out != "-") fmt::print("{}", output::check_text(o.file, set, o.fit_clocks, report));
  if (!o.json_out.empty()) {
    const nlohmann::json doc = output::check_json(o.file, set, o.fit_clocks, report);
    write_output(o.json_out, doc.dump(2) + "\n");
  }
  return 0;
}

int run_model_calibrate(const std::string& data_dir, const std::string& json_out) {
  const model::GroundTruth gt = model::calibrate_ground_truth(data_dir);
  const model::GroundTruth& builtin = model::builtin_ground_truth();
  if (json_out != "-") fmt::print("{}", output::calibrate_text(data_dir, gt, builtin));
  if (!json_out.empty()) {
    nlohmann::json doc = output::ground_truth_json(gt);
    doc["data_dir"] = data_dir;
    doc["builtin"] = output::ground_truth_json(builtin);
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
