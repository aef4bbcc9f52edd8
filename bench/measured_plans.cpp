// emo-bench-measured-plans: predicts the iteration time and energy of the 38 clock plans that
// Perseus ran on a real 4-stage GPT-3 XL pipeline (A100 PCIe, 128 microbatches, 1F1B) with EMO's
// DAG model, and compares with the measured iter_time / iter_energy. Leave-one-plan-out: every
// figure used to predict plan p comes from the other 37 plans.
//   emo-bench-measured-plans [DATA_DIR]
//
// Decoding (docs/optimizer.md): rank r's power_states hold two entries per forward/backward pass
// after a two-entry prologue; pass i of the rank's 1F1B order runs at power_states[2 + 2i]
// (MHz). Time model: per (rank, pass kind, clock) the median measured pass time over the other
// plans (iterations 1-3), falling back to a least-squares t = a + b/f fit for an unseen clock;
// loads (ranks 0 and 3) are fixed nodes before each forward. Energy model per rank, fitted by
// least squares on the other plans' measured iter_energy:
//   E_r = Σ_{passes} (α_r + β_r·(f/1410)^3)·t + P_idle·(T − busy_r), P_idle shared by the ranks.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opt/pipeline.h"
#include "opt/problem.h"

using namespace emo;
using nlohmann::json;

namespace {

constexpr int kStages = 4, kMicrobatches = 128, kPlans = 38;
const int kIters[] = {1, 2, 3};  // iteration 0 includes warm-up

struct RankRun {
  std::vector<double> clock;           // per pass in 1F1B order
  std::vector<double> time;            // measured per pass (mean over kIters)
  double load_s = 0;                   // measured load time per load
  int loads_per_mb = 0;
  double iter_time = 0, iter_energy = 0;  // median over kIters
};
using Plan = std::array<RankRun, kStages>;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) { std::fprintf(stderr, "emo-bench-measured-plans: cannot read %s\n", path.c_str()); std::exit(2); }
  return json::parse(in);
}

Plan load_plan(const std::string& dir, int plan) {
  const json sched = read_json(dir + "/" + std::to_string(plan) + ".sched.json");
  const json prof = read_json(dir + "/" + std::to_string(plan) + ".prof.json");
  Plan out;
  for (int r = 0; r < kStages; ++r) {
    const auto order = opt::one_f_one_b_order(kStages, kMicrobatches, r);
    const auto& ps = sched.at(r).at("power_states");
    const auto& tb = prof.at(r).at("time_breakdown");
    RankRun& rr = out[r];
    std::vector<double> loads;
    for (std::size_t i = 0; i < order.size(); ++i) {
      rr.clock.push_back(ps.at(2 + 2 * i).get<double>());
      const char* key = order[i].kind == opt::PassKind::kForward ? "forward" : "backward";
      double t = 0;
      for (int it : kIters) t += tb.at(key).at(it).at(order[i].microbatch).get<double>();
      rr.time.push_back(t / std::size(kIters));
    }
    for (int it : kIters) for (const auto& x : tb.at("load").at(it)) loads.push_back(x.get<double>());
    rr.loads_per_mb = static_cast<int>(tb.at("load").at(1).size()) / kMicrobatches;
    double lsum = 0;
    for (double x : loads) lsum += x;
    rr.load_s = lsum / std::size(kIters) / kMicrobatches;  // per microbatch, all its loads
    std::vector<double> it_t, it_e;
    for (int it : kIters) {
      it_t.push_back(prof.at(r).at("iter_time").at(it).get<double>());
      it_e.push_back(prof.at(r).at("iter_energy").at(it).get<double>());
    }
    rr.iter_time = median(it_t);
    rr.iter_energy = median(it_e);
  }
  return out;
}

// Solves the normal equations A x = b (n×n, Gaussian elimination with partial pivoting).
std::vector<double> solve_linear(std::vector<std::vector<double>> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r) if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (std::size_t c = n; c-- > 0;) {
    double s = b[c];
    for (std::size_t k = c + 1; k < n; ++k) s -= a[c][k] * x[k];
    x[c] = s / a[c][c];
  }
  return x;
}

// Energy features of one rank: [Σt, Σt·x³, T − busy], x = f/1410 (forward and backward share
// one power curve: separate curves are not identifiable from iteration totals of 38 plans).
std::vector<double> features(const RankRun& rr, int rank, const std::vector<double>& time, double iter_time) {
  const auto order = opt::one_f_one_b_order(kStages, kMicrobatches, rank);
  std::vector<double> f(3, 0.0);
  double busy = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const double x3 = std::pow(rr.clock[i] / 1410.0, 3);
    f[0] += time[i];
    f[1] += time[i] * x3;
    busy += time[i];
  }
  f[2] = iter_time - busy;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = std::getenv("EMO_DATA_DIR") ? std::getenv("EMO_DATA_DIR") : EMO_DEFAULT_DATA_DIR;
  if (argc > 1) data = argv[1];
  const std::string dir = data + "/perseus/runs_a100_pp4_gpt3-xl";
  std::vector<Plan> plans;
  for (int p = 0; p < kPlans; ++p) plans.push_back(load_plan(dir, p));

  std::printf("| plan | measured T s | predicted T s | T err %% | measured E kJ | predicted E kJ | E err %% |\n|---|---|---|---|---|---|---|\n");
  std::vector<double> terr, eerr;
  for (int held = 0; held < kPlans; ++held) {
    // Time table (rank, kind, clock) -> median time over the other plans.
    std::map<std::tuple<int, int, double>, std::vector<double>> table;
    for (int p = 0; p < kPlans; ++p) {
      if (p == held) continue;
      for (int r = 0; r < kStages; ++r) {
        const auto order = opt::one_f_one_b_order(kStages, kMicrobatches, r);
        for (std::size_t i = 0; i < order.size(); ++i) {
          table[{r, static_cast<int>(order[i].kind), plans[p][r].clock[i]}].push_back(plans[p][r].time[i]);
        }
      }
    }
    // Fallback fit t = a + b/f per (rank, kind) over the table's medians.
    std::map<std::pair<int, int>, std::pair<double, double>> fit;
    {
      std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> pts;
      for (auto& [key, v] : table) pts[{std::get<0>(key), std::get<1>(key)}].push_back({1 / std::get<2>(key), median(v)});
      for (auto& [key, v] : pts) {
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (auto [x, y] : v) sx += x, sy += y, sxx += x * x, sxy += x * y;
        const double n = static_cast<double>(v.size());
        const double b = v.size() > 1 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0;
        fit[key] = {(sy - b * sx) / n, b};
      }
    }
    auto pass_time = [&](int r, int kind, double clock) {
      auto it = table.find({r, kind, clock});
      if (it != table.end()) return median(it->second);
      const auto [a, b] = fit.at({r, kind});
      return a + b / clock;
    };
    // Energy model from the other plans: per rank α_r, β_r, and one idle power shared by all
    // ranks (rank 2, the bottleneck, idles ~2 s in every plan, so its own would be unidentifiable).
    auto row = [&](const RankRun& rr, int r, const std::vector<double>& time, double iter_time) {
      const auto f = features(rr, r, time, iter_time);
      std::vector<double> x(2 * kStages + 1, 0.0);
      x[2 * r] = f[0];
      x[2 * r + 1] = f[1];
      x[2 * kStages] = f[2];
      return x;
    };
    const std::size_t nx = 2 * kStages + 1;
    std::vector<std::vector<double>> ata(nx, std::vector<double>(nx, 0.0));
    std::vector<double> atb(nx, 0.0);
    for (int p = 0; p < kPlans; ++p) {
      if (p == held) continue;
      for (int r = 0; r < kStages; ++r) {
        const auto x = row(plans[p][r], r, plans[p][r].time, plans[p][r].iter_time);
        for (std::size_t i = 0; i < nx; ++i) {
          for (std::size_t j = 0; j < nx; ++j) ata[i][j] += x[i] * x[j];
          atb[i] += x[i] * plans[p][r].iter_energy;
        }
      }
    }
    const std::vector<double> coef = solve_linear(ata, atb);
    // The held-out plan's DAG: 1F1B with predicted pass times, loads before forwards.
    opt::Problem prob;
    std::vector<std::vector<int>> fwd(kStages, std::vector<int>(kMicrobatches)), bwd = fwd;
    std::array<std::vector<double>, kStages> predicted_time;
    for (int r = 0; r < kStages; ++r) {
      const int g = prob.add_gpu("rank " + std::to_string(r), 0);
      const auto order = opt::one_f_one_b_order(kStages, kMicrobatches, r);
      const double load = [&] {
        std::vector<double> v;
        for (int p = 0; p < kPlans; ++p) if (p != held) v.push_back(plans[p][r].load_s);
        return median(v);
      }();
      int prev = -1;
      for (std::size_t i = 0; i < order.size(); ++i) {
        const int kind = static_cast<int>(order[i].kind);
        const double t = pass_time(r, kind, plans[held][r].clock[i]);
        predicted_time[r].push_back(t);
        if (order[i].kind == opt::PassKind::kForward && plans[held][r].loads_per_mb > 0) {
          const int l = prob.add_fixed("load", g, load, 0);
          if (prev >= 0) prob.add_edge(prev, l);
          prev = l;
        }
        const int id = prob.add_fixed("pass", g, t, 0);
        if (prev >= 0) prob.add_edge(prev, id);
        prev = id;
        (order[i].kind == opt::PassKind::kForward ? fwd : bwd)[r][order[i].microbatch] = id;
      }
    }
    for (int r = 0; r < kStages; ++r) {
      for (int m = 0; m < kMicrobatches; ++m) {
        if (r > 0) prob.add_edge(fwd[r - 1][m], fwd[r][m]);
        if (r + 1 < kStages) prob.add_edge(bwd[r + 1][m], bwd[r][m]);
      }
    }
    for (int m = 0; m < kMicrobatches; ++m) prob.add_edge(fwd[kStages - 1][m], bwd[kStages - 1][m]);
    const opt::Schedule sched = opt::evaluate(prob, opt::Assignment(prob.node_count(), 0));
    const double t_pred = sched.makespan_s;
    double t_meas = 0, e_meas = 0, e_pred = 0;
    for (int r = 0; r < kStages; ++r) {
      t_meas = std::max(t_meas, plans[held][r].iter_time);
      e_meas += plans[held][r].iter_energy;
      const auto x = row(plans[held][r], r, predicted_time[r], t_pred);
      for (std::size_t i = 0; i < nx; ++i) e_pred += coef[i] * x[i];
    }
    const double te = 100 * (t_pred / t_meas - 1), ee = 100 * (e_pred / e_meas - 1);
    terr.push_back(std::abs(te));
    eerr.push_back(std::abs(ee));
    std::printf("| %d | %.2f | %.2f | %+.2f | %.2f | %.2f | %+.2f |\n", held, t_meas, t_pred, te, e_meas / 1e3, e_pred / 1e3, ee);
  }
  std::printf("\n38 plans, leave-one-plan-out: |time error| median %.2f %% max %.2f %%; |energy error| median %.2f %% max %.2f %%\n",
              median(terr), *std::max_element(terr.begin(), terr.end()), median(eerr), *std::max_element(eerr.begin(), eerr.end()));
  return 0;
}
