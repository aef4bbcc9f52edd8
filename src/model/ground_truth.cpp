#include "model/ground_truth.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/error.h"

namespace emo::model {
namespace {

/// One calibration sample: normalised clock and value ratios to the op's value at f_max.
struct Sample {
  double x, time_ratio, power_ratio;
  std::size_t op;
};

/// Samples of `ops` with x ≥ kCalibrationMinX, normalised by each op's point at its max clock.
std::vector<Sample> samples_of(const std::vector<CalibrationOp>& ops) {
  std::vector<Sample> out;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& pts = ops[i].sweep.points;
    auto top = std::find_if(pts.begin(), pts.end(),
                            [&](const ClockPoint& p) { return p.clock_mhz == ops[i].max_clock_mhz; });
    if (top == pts.end()) continue;
    for (const auto& p : pts) {
      const double x = p.clock_mhz / ops[i].max_clock_mhz;
      if (x < kCalibrationMinX) continue;
      out.push_back({x, p.time_s / top->time_s, p.power_w() / top->power_w(), i});
    }
  }
  return out;
}

constexpr double kExponents[] = {1, 1.5, 2, 3, 4, 6, 8, 12, 16};

double time_sse(const std::vector<Sample>& s, double beta, double p, std::size_t only_op = SIZE_MAX) {
  ClassCurve c;
  c.beta = beta, c.p = p;
  double sse = 0;
  for (const auto& v : s) {
    if (only_op != SIZE_MAX && v.op != only_op) continue;
    const double e = c.time_ratio(v.x) / v.time_ratio - 1;
    sse += e * e;
  }
  return sse;
}

/// Best β on a 0.0025 grid for a fixed p.
double best_beta(const std::vector<Sample>& s, double p, std::size_t only_op = SIZE_MAX) {
  double best = 0, best_sse = std::numeric_limits<double>::infinity();
  for (int i = 0; i <= 400; ++i) {
    const double sse = time_sse(s, i / 400.0, p, only_op);
    if (sse < best_sse) best_sse = sse, best = i / 400.0;
  }
  return best;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

}  // namespace

double ClassCurve::time_ratio(double x, double beta_op) const {
  return std::pow(1 - beta_op + beta_op * std::pow(x, -p), 1.0 / p);
}

double ClassCurve::power_ratio(double x) const {
  auto g = [&](double xx) {
    const double v = 1 + k * std::max(0.0, xx - x_knee);
    return xx * v * v;
  };
  return s + (1 - s) * g(x) / g(1.0);
}

ClassCurve calibrate_class(const std::vector<CalibrationOp>& ops) {
  const auto samples = samples_of(ops);
  if (samples.empty()) throw std::invalid_argument("calibrate_class: no calibration points");
  ClassCurve c;
  // Time: (p, β) on the grid.
  double best_sse = std::numeric_limits<double>::infinity();
  for (double p : kExponents) {
    const double beta = best_beta(samples, p);
    const double sse = time_sse(samples, beta, p);
    if (sse < best_sse * (1 - 1e-9)) best_sse = sse, c.beta = beta, c.p = p;
  }
  c.time_rms = std::sqrt(best_sse / static_cast<double>(samples.size()));
  std::vector<double> betas, levels;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (std::none_of(samples.begin(), samples.end(), [&](const Sample& v) { return v.op == i; })) continue;
    betas.push_back(best_beta(samples, c.p, i));
    ++c.ops;
    if (ops[i].power_limit_w > 0) {
      for (const auto& p : ops[i].sweep.points)
        if (p.clock_mhz == ops[i].max_clock_mhz) levels.push_back(p.power_w() / ops[i].power_limit_w);
    }
  }
  c.beta_sd = stddev(betas);
  c.points = samples.size();
  // Power: (x_knee, k) on the grid, s by linear least squares on relative residuals, in [0, 1].
  best_sse = std::numeric_limits<double>::infinity();
  ClassCurve trial = c;
  for (int ik = 30; ik <= 100; ++ik) {
    for (int jk = 0; jk <= 100; ++jk) {
      trial.x_knee = ik / 100.0, trial.k = jk / 20.0, trial.s = 0;
      double num = 0, den = 0;
      for (const auto& v : samples) {
        const double g = trial.power_ratio(v.x);  // s = 0: g(x)/g(1)
        const double a = (1 - g) / v.power_ratio, b = (v.power_ratio - g) / v.power_ratio;
        num += a * b, den += a * a;
      }
      trial.s = den > 0 ? std::clamp(num / den, 0.0, 1.0) : 0.0;
      double sse = 0;
      for (const auto& v : samples) {
        const double e = trial.power_ratio(v.x) / v.power_ratio - 1;
        sse += e * e;
      }
      if (sse < best_sse * (1 - 1e-9)) {
        best_sse = sse;
        c.s = trial.s, c.x_knee = trial.x_knee, c.k = trial.k;
      }
    }
  }
  c.power_rms = std::sqrt(best_sse / static_cast<double>(samples.size()));
  c.power_level = levels.empty() ? 0 : mean(levels);
  c.power_level_sd = stddev(levels);
  return c;
}

std::vector<CalibrationOp> load_calibration_ops(const std::string& data_dir) {
  std::vector<CalibrationOp> out;
  auto top_clock = [](const MeasurementSet& set) {
    double f = 0;
    for (const auto& op : set.ops)
      for (const auto& p : op.points) f = std::max(f, p.clock_mhz);
    return f;
  };
  {
    const auto set = load_measurements(data_dir + "/perseus/stage_profile/gpt3-175b+a100_sxm_bf16.csv");
    const double f = top_clock(set);
    for (const auto& op : set.ops) out.push_back({OpClass::kCompute, op, f, 0.0});
  }
  {
    const auto set = load_measurements(data_dir + "/dvfs/kerneltuner_synthetic_fp32_a100_pcie.json");
    const double f = top_clock(set);
    for (const auto& op : set.ops) out.push_back({OpClass::kCompute, op, f, 250.0});  // A100 PCIe TDP
  }
  {
    const std::string path = data_dir + "/dvfs/v100-dvfs-real.csv";
    const auto set = load_measurements(path);
    const double f = top_clock(set);
    for (const auto& op : set.ops) {
      auto dram = op.activity.find("DRAMA"), sm = op.activity.find("SMACT");
      if (dram == op.activity.end() || sm == op.activity.end())
        throw InputError(path, "calibration needs the DRAMA and SMACT columns");
      OpClass cls = OpClass::kMixed;
      if (dram->second >= 0.6) cls = OpClass::kMemory;
      else if (dram->second <= 0.25 && sm->second >= 0.75) cls = OpClass::kCompute;
      out.push_back({cls, op, f, 300.0});  // V100 SXM2 TDP
    }
  }
  return out;
}

GroundTruth calibrate_ground_truth(const std::string& data_dir) {
  const auto ops = load_calibration_ops(data_dir);
  GroundTruth gt;
  auto of_class = [&](OpClass c) {
    std::vector<CalibrationOp> v;
    for (const auto& op : ops)
      if (op.cls == c) v.push_back(op);
    return v;
  };
  gt.curves[static_cast<int>(OpClass::kCompute)] = calibrate_class(of_class(OpClass::kCompute));
  gt.curves[static_cast<int>(OpClass::kCompute)].source =
      "measured: Perseus GPT-3 stages (A100 SXM), KernelTuner fp32 kernel (A100 PCIe), V100 kernels "
      "with DRAMA <= 0.25 and SMACT >= 0.75";
  gt.curves[static_cast<int>(OpClass::kMemory)] = calibrate_class(of_class(OpClass::kMemory));
  gt.curves[static_cast<int>(OpClass::kMemory)].source = "measured: V100 kernels with DRAMA >= 0.6";
  gt.curves[static_cast<int>(OpClass::kMixed)] = calibrate_class(ops);
  gt.curves[static_cast<int>(OpClass::kMixed)].source = "measured: every op of the three files";
  ClassCurve comm = gt.curve(OpClass::kMixed);
  comm.beta = 0.1, comm.p = 1, comm.beta_sd = 0.05, comm.power_level = 0, comm.power_level_sd = 0;
  comm.time_rms = comm.power_rms = 0, comm.ops = comm.points = 0;
  comm.source = "assumption: no measured clock sweep of NCCL kernels; time 10 % clock-scaled (link-bound), "
                "power shape of the mixed class, level = the GPU's blocked power";
  gt.curves[static_cast<int>(OpClass::kCommunication)] = comm;

  // Noise from adjacent 15 MHz steps of the Perseus sweep.
  const auto set = load_measurements(data_dir + "/perseus/stage_profile/gpt3-175b+a100_sxm_bf16.csv");
  double st = 0, se = 0;
  std::size_t n = 0;
  for (const auto& op : set.ops) {
    for (std::size_t i = 1; i + 1 < op.points.size(); ++i) {
      const auto &a = op.points[i - 1], &b = op.points[i], &c = op.points[i + 1];
      const double dt = std::log(a.time_s) - 2 * std::log(b.time_s) + std::log(c.time_s);
      const double de = std::log(a.energy_j) - 2 * std::log(b.energy_j) + std::log(c.energy_j);
      st += dt * dt, se += de * de, ++n;
    }
  }
  if (n == 0) throw InputError(data_dir, "Perseus stage profile has too few clocks to estimate noise");
  gt.noise.time_sd = std::sqrt(st / static_cast<double>(n) / 6);
  gt.noise.energy_sd = std::sqrt(se / static_cast<double>(n) / 6);
  gt.noise.samples = n;
  gt.noise.source = "measured: second differences of ln(time), ln(energy) over adjacent 15 MHz clocks of "
                    "the Perseus A100 stage profile";
  return gt;
}

const GroundTruth& builtin_ground_truth() {
  // Output of `emo model calibrate` on ../shared/data (2026-11-30), rounded to 4 digits; the test
  // GroundTruth.BuiltinMatchesCalibration recalibrates and compares.
  static const GroundTruth gt = [] {
    GroundTruth g;
    auto set = [&](OpClass c, ClassCurve v) { g.curves[static_cast<int>(c)] = std::move(v); };
    //                  beta    p   beta_sd  s       x_knee k     level   level_sd time_rms power_rms ops pts
    set(OpClass::kCompute, {0.36, 16, 0.2692, 0.1059, 0.76, 0.75, 0.5381, 0.1174, 0.0151, 0.0237, 22, 649,
                            "measured: Perseus GPT-3 stages (A100 SXM), KernelTuner fp32 kernel (A100 PCIe), "
                            "V100 kernels with DRAMA <= 0.25 and SMACT >= 0.75"});
    set(OpClass::kMemory, {0.0175, 16, 0.1143, 0.0927, 0.87, 0.20, 0.5739, 0.0916, 0.0764, 0.0576, 7, 49,
                           "measured: V100 kernels with DRAMA >= 0.6"});
    set(OpClass::kMixed, {0.4825, 8, 0.2790, 0.2317, 0.73, 1.05, 0.5301, 0.1309, 0.0463, 0.0529, 37, 754,
                          "measured: every op of the three files"});
    set(OpClass::kCommunication,
        {0.1, 1, 0.05, 0.2317, 0.73, 1.05, 0, 0, 0, 0, 0, 0,
         "assumption: no measured clock sweep of NCCL kernels; time 10 % clock-scaled (link-bound), power "
         "shape of the mixed class, level = the GPU's blocked power"});
    g.noise = {0.0013, 0.0049, 576,
               "measured: second differences of ln(time), ln(energy) over adjacent 15 MHz clocks of the "
               "Perseus A100 stage profile"};
    return g;
  }();
  return gt;
}

}  // namespace emo::model
