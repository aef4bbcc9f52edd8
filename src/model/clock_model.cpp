#include "model/clock_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace emo::model {
namespace {

/// Solves the n×n system m x = b in place (partial pivoting); false when singular.
bool solve(std::vector<double> m, std::vector<double> b, int n, std::vector<double>& x) {
  for (int c = 0; c < n; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(m[r * n + c]) > std::abs(m[piv * n + c])) piv = r;
    double scale = 0;
    for (int k = 0; k < n; ++k) scale = std::max(scale, std::abs(m[k * n + k]));
    if (std::abs(m[piv * n + c]) <= 1e-13 * std::max(scale, 1e-300)) return false;
    if (piv != c) {
      for (int k = 0; k < n; ++k) std::swap(m[c * n + k], m[piv * n + k]);
      std::swap(b[c], b[piv]);
    }
    for (int r = c + 1; r < n; ++r) {
      const double f = m[r * n + c] / m[c * n + c];
      for (int k = c; k < n; ++k) m[r * n + k] -= f * m[c * n + k];
      b[r] -= f * b[c];
    }
  }
  x.assign(n, 0);
  for (int r = n - 1; r >= 0; --r) {
    double s = b[r];
    for (int k = r + 1; k < n; ++k) s -= m[r * n + k] * x[k];
    x[r] = s / m[r * n + r];
  }
  return true;
}

/// Pool-adjacent-violators: the closest non-decreasing sequence (least squares, equal weights).
std::vector<double> isotonic_increasing(const std::vector<double>& y) {
  std::vector<double> value;
  std::vector<int> count;
  for (double v : y) {
    value.push_back(v);
    count.push_back(1);
    while (value.size() > 1 && value[value.size() - 2] > value.back()) {
      const int n = count.back() + count[count.size() - 2];
      const double merged = (value.back() * count.back() + value[value.size() - 2] * count[count.size() - 2]) / n;
      value.pop_back();
      count.pop_back();
      value.back() = merged;
      count.back() = n;
    }
  }
  std::vector<double> out;
  for (std::size_t i = 0; i < value.size(); ++i) out.insert(out.end(), count[i], value[i]);
  return out;
}

}  // namespace

double interpolate(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  return interpolate_along(xs, ys, x, [](double v) { return v; });  // along x itself: the chord
}

double interpolate_along(const std::vector<double>& xs, const std::vector<double>& ys, double x,
                         const std::function<double(double)>& shape) {
  auto it = std::upper_bound(xs.begin(), xs.end(), x);
  if (it == xs.begin()) return ys.front();
  if (it == xs.end()) return ys.back();
  const std::size_t i = static_cast<std::size_t>(it - xs.begin());
  double w = (x - xs[i - 1]) / (xs[i] - xs[i - 1]);  // linear where the shape is flat
  const double a = shape(xs[i - 1]), b = shape(xs[i]);
  if (std::abs(b - a) > 1e-12 * std::max(std::abs(a), std::abs(b))) w = std::clamp((shape(x) - a) / (b - a), 0.0, 1.0);
  return ys[i - 1] + w * (ys[i] - ys[i - 1]);
}

double TimeModel::beta() const {
  const double total = t_mem_s + t_comp_s;
  return total > 0 ? t_comp_s / total : 0.0;
}

double TimeModel::at(double clock_mhz) const {
  const double comp = t_comp_s * f_ref_mhz / clock_mhz;
  if (p == 1) return t_mem_s + comp;
  return std::pow(std::pow(t_mem_s, p) + std::pow(comp, p), 1.0 / p);
}

double PowerModel::at(double clock_mhz) const {
  return p_static_w + b_w * std::pow(clock_mhz / f_ref_mhz, gamma);
}

std::vector<double> nnls_small(const std::vector<double>& a, const std::vector<double>& y, int n,
                               const std::vector<unsigned>& preference) {
  if (n < 1 || n > 4 || a.size() != y.size() * static_cast<std::size_t>(n))
    throw std::invalid_argument("nnls_small: bad dimensions");
  const std::size_t rows = y.size();
  double yy = 0;
  for (double v : y) yy += v * v;
  struct Candidate {
    unsigned mask;
    std::vector<double> x;
    double rss;
  };
  std::vector<Candidate> feasible{{0u, std::vector<double>(n, 0.0), yy}};
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    std::vector<int> cols;
    for (int c = 0; c < n; ++c)
      if (mask & (1u << c)) cols.push_back(c);
    const int k = static_cast<int>(cols.size());
    if (static_cast<std::size_t>(k) > rows) continue;
    std::vector<double> m(k * k, 0.0), b(k, 0.0), xs;
    for (std::size_t r = 0; r < rows; ++r) {
      for (int i = 0; i < k; ++i) {
        b[i] += a[r * n + cols[i]] * y[r];
        for (int j = 0; j < k; ++j) m[i * k + j] += a[r * n + cols[i]] * a[r * n + cols[j]];
      }
    }
    if (!solve(m, b, k, xs)) continue;
    bool ok = true;
    std::vector<double> x(n, 0.0);
    for (int i = 0; i < k; ++i) {
      if (xs[i] < 0) ok = false;
      x[cols[i]] = xs[i];
    }
    if (!ok) continue;
    double rss = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      double p = 0;
      for (int c = 0; c < n; ++c) p += a[r * n + c] * x[c];
      rss += (p - y[r]) * (p - y[r]);
    }
    feasible.push_back({mask, std::move(x), rss});
  }
  double best = std::numeric_limits<double>::infinity();
  for (const auto& c : feasible) best = std::min(best, c.rss);
  const double tol = best * 1e-9 + yy * 1e-12;
  auto rank = [&](unsigned mask) {
    auto it = std::find(preference.begin(), preference.end(), mask);
    const int pref = it == preference.end() ? static_cast<int>(preference.size()) : static_cast<int>(it - preference.begin());
    return std::pair{pref, __builtin_popcount(mask)};
  };
  const Candidate* chosen = nullptr;
  for (const auto& c : feasible) {
    if (c.rss > best + tol) continue;
    if (chosen == nullptr || rank(c.mask) < rank(chosen->mask)) chosen = &c;
  }
  return chosen->x;
}

double ClockModel::time_s(double clock_mhz) const {
  if (kind_ == Kind::kTable && clock_mhz >= clocks_.front() && clock_mhz <= clocks_.back())
    return interpolate_along(clocks_, table_time_, clock_mhz, [this](double f) { return time_.at(f); });
  return time_.at(clock_mhz);
}

double ClockModel::power_w(double clock_mhz) const {
  if (kind_ == Kind::kTable && clock_mhz >= clocks_.front() && clock_mhz <= clocks_.back())
    return interpolate_along(clocks_, table_power_, clock_mhz, [this](double f) { return power_.at(f); });
  return power_.at(clock_mhz);
}

namespace {

/// The mean point per distinct clock, ascending clock. Throws std::invalid_argument on a point that
/// is not positive and finite, and when fewer than 2 distinct clocks are left.
std::vector<ClockPoint> mean_per_clock(const std::vector<ClockPoint>& points) {
  std::map<double, std::pair<ClockPoint, int>> by_clock;
  for (const auto& p : points) {
    if (!(p.clock_mhz > 0) || !(p.time_s > 0) || !(p.energy_j > 0) || !std::isfinite(p.clock_mhz) ||
        !std::isfinite(p.time_s) || !std::isfinite(p.energy_j))
      throw std::invalid_argument("fit_clock_model: clock, time and energy must be positive and finite");
    auto& [acc, n] = by_clock[p.clock_mhz];
    acc.clock_mhz = p.clock_mhz;
    acc.time_s += p.time_s;
    acc.energy_j += p.energy_j;
    ++n;
  }
  if (by_clock.size() < 2) throw std::invalid_argument("fit_clock_model: need points at >= 2 distinct clocks");
  std::vector<ClockPoint> pts;
  for (auto& [f, acc] : by_clock) {
    acc.first.time_s /= acc.second;
    acc.first.energy_j /= acc.second;
    pts.push_back(acc.first);
  }
  return pts;
}

/// Time, for p = 1 and p = kSmoothMaxExponent: t^p = t_mem^p + t_comp^p·(f_ref/f)^p is linear in
/// (t_mem^p, t_comp^p); rows scaled by 1/t^p so that the residuals are relative. The form with the
/// smaller rms relative time residual wins (the sum on ties).
TimeModel fit_time(const std::vector<ClockPoint>& pts, double f_ref) {
  std::vector<double> a, y;
  double best_time_rss = std::numeric_limits<double>::infinity();
  TimeModel best;
  for (const double p_exp : {1.0, kSmoothMaxExponent}) {
    a.clear();
    y.clear();
    for (const auto& p : pts) {
      const double tp = std::pow(p.time_s, p_exp);
      a.push_back(1.0 / tp);
      a.push_back(std::pow(f_ref / p.clock_mhz, p_exp) / tp);
      y.push_back(1.0);
    }
    const auto xt = nnls_small(a, y, 2, {0b11u});
    const TimeModel candidate{std::pow(xt[0], 1.0 / p_exp), std::pow(xt[1], 1.0 / p_exp), f_ref, p_exp};
    double rss = 0;
    for (const auto& p : pts) rss += std::pow(candidate.at(p.clock_mhz) / p.time_s - 1, 2);
    if (rss < best_time_rss - 1e-12) {
      best_time_rss = rss;
      best = candidate;
    }
  }
  return best;
}

/// Power P_static + b·(f/f_ref)^γ, relative residuals, for each γ of the grid (γ = 3 with 2 clocks).
PowerModel fit_power(const std::vector<ClockPoint>& pts, double f_ref) {
  std::vector<double> a, y;
  double best_rss = std::numeric_limits<double>::infinity();
  PowerModel best;
  const int g_lo = pts.size() <= 2 ? 60 : 20, g_hi = pts.size() <= 2 ? 60 : 200;  // γ = g / 20
  for (int g = g_lo; g <= g_hi; ++g) {
    const double gamma = g / 20.0;
    a.clear();
    y.clear();
    for (const auto& p : pts) {
      const double pw = p.power_w();
      a.push_back(1.0 / pw);
      a.push_back(std::pow(p.clock_mhz / f_ref, gamma) / pw);
      y.push_back(1.0);
    }
    const auto xp = nnls_small(a, y, 2, {0b11u});
    double rss = 0;
    for (std::size_t r = 0; r < pts.size(); ++r) {
      const double e = a[2 * r] * xp[0] + a[2 * r + 1] * xp[1] - 1.0;
      rss += e * e;
    }
    if (rss < best_rss * (1 - 1e-12)) {
      best_rss = rss;
      best = {xp[0], xp[1], gamma, f_ref};
    }
  }
  return best;
}

/// Relative residuals of `model` on `pts` (rms and max of time, power and energy).
FitResiduals residuals_of(const ClockModel& model, const std::vector<ClockPoint>& pts) {
  FitResiduals r;
  for (const auto& p : pts) {
    const double et = model.time_s(p.clock_mhz) / p.time_s - 1;
    const double ep = model.power_w(p.clock_mhz) / p.power_w() - 1;
    const double ee = model.energy_j(p.clock_mhz) / p.energy_j - 1;
    r.time_rms += et * et, r.power_rms += ep * ep, r.energy_rms += ee * ee;
    r.time_max = std::max(r.time_max, std::abs(et));
    r.power_max = std::max(r.power_max, std::abs(ep));
    r.energy_max = std::max(r.energy_max, std::abs(ee));
  }
  const double n = static_cast<double>(pts.size());
  r.time_rms = std::sqrt(r.time_rms / n), r.power_rms = std::sqrt(r.power_rms / n),
  r.energy_rms = std::sqrt(r.energy_rms / n);
  return r;
}

}  // namespace

ClockModel fit_clock_model(const std::vector<ClockPoint>& points, const FitOptions& options) {
  const std::vector<ClockPoint> pts = mean_per_clock(points);
  ClockModel m;
  for (const auto& p : pts) m.clocks_.push_back(p.clock_mhz);
  const double f_ref = pts.back().clock_mhz;
  m.time_ = fit_time(pts, f_ref);
  m.power_ = fit_power(pts, f_ref);
  m.parametric_residuals_ = m.residuals_ = residuals_of(m, pts);
  if (pts.size() >= options.table_min_points &&
      std::max(m.residuals_.time_max, m.residuals_.power_max) > options.table_max_residual) {
    std::vector<double> neg_t, pw;
    for (const auto& p : pts) {
      neg_t.push_back(-p.time_s);
      pw.push_back(p.power_w());
    }
    m.table_time_ = isotonic_increasing(neg_t);
    for (double& v : m.table_time_) v = -v;
    m.table_power_ = isotonic_increasing(pw);
    m.kind_ = ClockModel::Kind::kTable;
    m.residuals_ = residuals_of(m, pts);
  }
  return m;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

CheckReport check_fit(const MeasurementSet& set, const std::vector<double>& fit_clocks,
                      const FitOptions& options) {
  std::vector<double> requested = fit_clocks;
  std::sort(requested.begin(), requested.end());
  requested.erase(std::unique(requested.begin(), requested.end()), requested.end());
  if (requested.size() < 2) throw std::invalid_argument("need at least 2 distinct fit clocks");
  CheckReport report;
  report.requested_clocks = fit_clocks;
  std::vector<double> all_t, all_e;
  for (const auto& op : set.ops) {
    std::vector<std::size_t> chosen;
    for (double want : requested) {
      std::size_t best = 0;
      for (std::size_t i = 1; i < op.points.size(); ++i) {
        const double d = std::abs(op.points[i].clock_mhz - want), db = std::abs(op.points[best].clock_mhz - want);
        if (d < db || (d == db && op.points[i].clock_mhz > op.points[best].clock_mhz)) best = i;
      }
      if (!op.points.empty()) chosen.push_back(best);
    }
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    if (chosen.size() < 2) {
      report.skipped.push_back(op.op);
      continue;
    }
    OpCheck c;
    c.op = op.op;
    std::vector<ClockPoint> fit_points;
    for (std::size_t i : chosen) {
      fit_points.push_back(op.points[i]);
      c.fit_clocks.push_back(op.points[i].clock_mhz);
    }
    c.model = fit_clock_model(fit_points, options);
    std::vector<double> te, ee;
    for (std::size_t i = 0; i < op.points.size(); ++i) {
      if (std::binary_search(chosen.begin(), chosen.end(), i)) continue;
      const auto& p = op.points[i];
      CheckPoint cp;
      cp.clock_mhz = p.clock_mhz;
      cp.time_s = p.time_s;
      cp.energy_j = p.energy_j;
      cp.time_pred_s = c.model.time_s(p.clock_mhz);
      cp.energy_pred_j = c.model.energy_j(p.clock_mhz);
      cp.time_err = std::abs(cp.time_pred_s - p.time_s) / p.time_s;
      cp.energy_err = std::abs(cp.energy_pred_j - p.energy_j) / p.energy_j;
      te.push_back(cp.time_err);
      ee.push_back(cp.energy_err);
      c.points.push_back(cp);
    }
    c.time_err_median = median(te);
    c.energy_err_median = median(ee);
    c.time_err_max = te.empty() ? 0 : *std::max_element(te.begin(), te.end());
    c.energy_err_max = ee.empty() ? 0 : *std::max_element(ee.begin(), ee.end());
    all_t.insert(all_t.end(), te.begin(), te.end());
    all_e.insert(all_e.end(), ee.begin(), ee.end());
    report.ops.push_back(std::move(c));
  }
  report.points = all_t.size();
  report.time_err_median = median(all_t);
  report.energy_err_median = median(all_e);
  report.time_err_max = all_t.empty() ? 0 : *std::max_element(all_t.begin(), all_t.end());
  report.energy_err_max = all_e.empty() ? 0 : *std::max_element(all_e.begin(), all_e.end());
  return report;
}

}  // namespace emo::model
