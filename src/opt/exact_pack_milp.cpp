#include "opt/exact_pack_milp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include <coin/Cbc_C_Interface.h>
#include <fmt/format.h>

#include "graph/algorithms.h"

namespace emo::opt {
namespace {

using graph::DepGraph;

constexpr TimeNs kNone = INT64_MIN;
/// The MILP's time unit, ns: the median pack's duration at its first option / 1000, at least
/// 0.001 ns. Scaled so, the coefficients span the same range on ns-scale test graphs as on
/// ms-scale traces (with a fixed ms unit, CBC returned a suboptimal plan as optimal on a test
/// graph whose lag coefficients were ~1e-4, near its 1e-7 tolerances).
double time_unit_ns(const PackChoices& pc) {
  std::vector<TimeNs> d;
  for (std::size_t p = 0; p < pc.packs(); ++p) d.push_back(pc.time(p, 0).dur_ns);
  if (d.empty()) return 1;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  const double unit = std::max(1e-3, static_cast<double>(d[d.size() / 2]) / 1000);
  return std::pow(10.0, std::round(std::log10(unit)));  // a power of 10: coefficients stay round decimals
}

/// The fixed relations of the pack graph a pass follows: every edge that is neither dropped nor
/// a port edge, and S → E (its duration) of every non-pack node.
graph::TimepointArcs fixed_arcs(const pack::PackGraph& pg) {
  const DepGraph& g = pg.g;
  return graph::timepoint_arcs(
      g, [&](std::uint32_t k) { return pg.edge_port[k] != UINT32_MAX ? graph::kDroppedLag : g.in_lag[k]; },
      [&](std::uint32_t n) { return n >= pg.packs ? g.dur[n] : INT64_MIN; });
}

/// Builds the reduction for one choice of kept timepoints (see the header).
class Reducer {
 public:
  Reducer(const pack::PackGraph& pg, std::vector<std::uint8_t> kept)
      : pg_(pg), g_(pg.g), kept_(kept), paths_(pg.g, fixed_arcs(pg), std::move(kept), graph::AtKept::kStop) {}

  ReducedPackGraph run() {
    for (const std::uint32_t tp : g_.topo) {
      if (kept_[tp]) index_[tp] = static_cast<std::int32_t>(r_.timepoint.size()), r_.timepoint.push_back(tp);
    }
    r_.release_ns.assign(r_.timepoint.size(), kNone);
    r_.tail_ns.assign(r_.timepoint.size(), kNone);
    // From the replay's own sources (window-relative): each kept timepoint's release.
    const TimeNs floor = paths_.pass(graph::KeptPaths::kSources, g_.window_start_ns, [&](std::uint32_t tp, TimeNs v) {
      TimeNs& r = r_.release_ns[index_.at(tp)];
      r = std::max(r, v);
    });
    r_.makespan_floor_ns = std::max<TimeNs>(0, floor);
    // From each kept timepoint: the fixed lags to the kept ones it reaches, and its tail (an end
    // is itself the end of a path of length 0).
    for (const std::uint32_t src : r_.timepoint) {
      const std::int32_t from = index_.at(src);
      TimeNs tail = paths_.pass(src, 0, [&](std::uint32_t tp, TimeNs v) { constrain(from, index_.at(tp), v); });
      if (DepGraph::is_end(src)) tail = std::max<TimeNs>(tail, 0);
      r_.tail_ns[from] = tail;
    }
    for (const auto& [key, lag] : fixed_) {
      r_.fixed.push_back({static_cast<std::int32_t>(key >> 32), static_cast<std::int32_t>(key & 0xffffffffu), lag});
    }
    std::sort(r_.fixed.begin(), r_.fixed.end(), [](const auto& a, const auto& b) { return std::pair{a.from, a.to} < std::pair{b.from, b.to}; });
    add_variable_edges();
    return std::move(r_);
  }

 private:
  void constrain(std::int32_t from, std::int32_t to, TimeNs lag) {
    const std::uint64_t key = (static_cast<std::uint64_t>(from) << 32) | static_cast<std::uint32_t>(to);
    auto [it, inserted] = fixed_.try_emplace(key, lag);
    if (!inserted) it->second = std::max(it->second, lag);
  }

  /// Every pack's duration edge and port edges (their endpoints are kept by construction).
  void add_variable_edges() {
    std::vector<std::uint32_t> target_of(g_.edges());
    for (std::uint32_t t = 0; t < 2 * g_.nodes(); ++t) {
      for (std::uint32_t k = g_.in_begin[t]; k < g_.in_begin[t + 1]; ++k) target_of[k] = t;
    }
    for (std::uint32_t p = 0; p < pg_.packs; ++p) {
      r_.variable.push_back({index_.at(DepGraph::start_tp(p)), index_.at(DepGraph::end_tp(p)), 0, p, -1});
      for (std::uint32_t k = pg_.pe_begin[p]; k < pg_.pe_begin[p + 1]; ++k) {
        const std::uint32_t e = pg_.pe_edge[k];
        if (g_.in_lag[e] == graph::kDroppedLag) continue;
        r_.variable.push_back({index_.at(g_.in_from[e]), index_.at(target_of[e]), 0, p,
                               static_cast<std::int32_t>(k - pg_.pe_begin[p])});
      }
    }
  }

  const pack::PackGraph& pg_;
  const DepGraph& g_;
  std::vector<std::uint8_t> kept_;
  graph::KeptPaths paths_;
  std::unordered_map<std::uint32_t, std::int32_t> index_;
  std::unordered_map<std::uint64_t, TimeNs> fixed_;
  ReducedPackGraph r_;
};

/// Pack starts and ends and the endpoints of every live port edge.
std::vector<std::uint8_t> kept_timepoints(const pack::PackGraph& pg) {
  const DepGraph& g = pg.g;
  std::vector<std::uint8_t> kept(2 * g.nodes(), 0);
  for (std::uint32_t p = 0; p < pg.packs; ++p) kept[DepGraph::start_tp(p)] = kept[DepGraph::end_tp(p)] = 1;
  for (std::uint32_t t = 0; t < 2 * g.nodes(); ++t) {
    for (std::uint32_t k = g.in_begin[t]; k < g.in_begin[t + 1]; ++k) {
      if (pg.edge_port[k] == UINT32_MAX || g.in_lag[k] == graph::kDroppedLag) continue;
      kept[t] = kept[g.in_from[k]] = 1;
    }
  }
  return kept;
}

/// Lag of variable edge `e` under `t` (pack e.pack's timing).
TimeNs variable_lag(const ReducedPackGraph::Edge& e, const pack::PackTime& t) {
  return e.port < 0 ? t.dur_ns : t.port_lags_ns[static_cast<std::size_t>(e.port)];
}

}  // namespace

const char* exact_status_name(ExactStatus s) noexcept {
  switch (s) {
    case ExactStatus::kOptimal: return "optimal";
    case ExactStatus::kTimeLimit: return "time_limit";
    case ExactStatus::kInfeasible: return "infeasible";
    case ExactStatus::kNoSolution: return "no_solution";
  }
  return "unknown";
}

ReducedPackGraph reduce_pack_graph(const pack::PackGraph& pg) {
  const std::size_t budget = 2 * (pg.g.nodes() + pg.g.edges()) + 64;
  {
    Reducer collapsed(pg, kept_timepoints(pg));
    ReducedPackGraph r = collapsed.run();
    if (r.fixed.size() <= budget) return r;
  }
  ReducedPackGraph r = Reducer(pg, std::vector<std::uint8_t>(2 * pg.g.nodes(), 1)).run();
  r.expanded = true;
  return r;
}

TimeNs reduced_makespan(const ReducedPackGraph& r, const std::vector<pack::PackTime>& times) {
  // Kept timepoints are in topological order and every edge goes forward: relax by source.
  std::vector<TimeNs> t = r.release_ns;
  std::vector<std::vector<std::pair<std::int32_t, TimeNs>>> out(t.size());
  for (const auto& e : r.fixed) out[e.from].emplace_back(e.to, e.lag_ns);
  for (const auto& e : r.variable) out[e.from].emplace_back(e.to, variable_lag(e, times.at(e.pack)));
  TimeNs m = r.makespan_floor_ns;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == kNone) continue;
    for (const auto& [to, lag] : out[i]) t[to] = std::max(t[to], t[i] + lag);
    if (r.tail_ns[i] != kNone) m = std::max(m, t[i] + r.tail_ns[i]);
  }
  return m;
}

namespace {

/// Effective energy of pack p's option k (negative dynamic energies count as 0, as in
/// PackChoices::predicted_energy).
double cost_of(const PackChoices& pc, std::size_t p, int k) { return std::max(0.0, pc.options()[p][k].dynamic_energy_j); }

/// Option j of pack p is no slower than k anywhere (duration and every port lag) and costs no more.
bool no_worse(const PackChoices& pc, std::size_t p, int j, int k) {
  const pack::PackTime &a = pc.time(p, j), &b = pc.time(p, k);
  if (cost_of(pc, p, j) > cost_of(pc, p, k) || a.dur_ns > b.dur_ns) return false;
  for (std::size_t i = 0; i < a.port_lags_ns.size(); ++i) {
    if (a.port_lags_ns[i] > b.port_lags_ns[i]) return false;
  }
  return true;
}

/// Per pack, the options no other option dominates, ascending (of options equal in everything,
/// the first, the faster clock, stays). O(K² × port edges) per pack.
std::vector<std::vector<int>> undominated_options(const PackChoices& pc) {
  std::vector<std::vector<int>> out(pc.packs());
  for (std::size_t p = 0; p < pc.packs(); ++p) {
    const int K = static_cast<int>(pc.options()[p].size());
    for (int k = 0; k < K; ++k) {
      bool dominated = false;
      for (int j = 0; j < K && !dominated; ++j) {
        if (j != k && no_worse(pc, p, j, k)) dominated = j < k || !no_worse(pc, p, k, j);
      }
      if (!dominated) out[p].push_back(k);
    }
  }
  return out;
}

/// One CBC solve's outcome.
struct CbcOutcome {
  ExactStatus status = ExactStatus::kNoSolution;
  std::vector<int> choice;  ///< Original option indices.
  double bound_j = 0;
};

/// A linear program collected column by column and row by row, loaded into CBC at once with
/// Cbc_loadProblem.
struct Lp {
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> col_lb, col_ub, obj, row_lb, row_ub;
  std::vector<std::vector<std::pair<int, double>>> col_entries;
  std::vector<int> integers;

  int col(double lb, double ub, double c, bool integer = false) {
    col_lb.push_back(lb), col_ub.push_back(ub), obj.push_back(c), col_entries.emplace_back();
    const int j = static_cast<int>(obj.size()) - 1;
    if (integer) integers.push_back(j);
    return j;
  }
  /// Σ coef · col ≥ lb (≤ ub).
  void row(const std::vector<std::pair<int, double>>& terms, double lb, double ub = kInf) {
    const int i = static_cast<int>(row_lb.size());
    row_lb.push_back(lb), row_ub.push_back(ub);
    for (const auto& [j, v] : terms) col_entries[j].emplace_back(i, v);
  }
  Cbc_Model* load() const {
    std::vector<int> start{0}, index;
    std::vector<double> value;
    for (const auto& entries : col_entries) {
      for (const auto& [i, v] : entries) index.push_back(i), value.push_back(v);
      start.push_back(static_cast<int>(index.size()));
    }
    Cbc_Model* m = Cbc_newModel();
    Cbc_loadProblem(m, static_cast<int>(obj.size()), static_cast<int>(row_lb.size()), start.data(), index.data(),
                    value.data(), col_lb.data(), col_ub.data(), obj.data(), row_lb.data(), row_ub.data());
    for (const int j : integers) Cbc_setInteger(m, j);
    return m;
  }
};

/// The MILP of the header over `r` with options `allowed`, as a CBC model; the binaries' columns
/// per pack (empty for a pack with one allowed option) go to `x_col`, the constant energy of
/// single-option packs to `constant_j`.
Cbc_Model* build_model(const PackChoices& pc, const ReducedPackGraph& r, const std::vector<std::vector<int>>& allowed,
                       TimeNs limit_ns, std::vector<std::vector<int>>& x_col, double& constant_j) {
  const double u = 1 / time_unit_ns(pc);  // units per ns
  Lp lp;
  const int n = static_cast<int>(r.timepoint.size());
  for (int i = 0; i < n; ++i) lp.col(r.release_ns[i] == kNone ? -Lp::kInf : static_cast<double>(r.release_ns[i]) * u, Lp::kInf, 0);
  const int M = lp.col(static_cast<double>(r.makespan_floor_ns) * u, static_cast<double>(limit_ns) * u,
                       pc.idle_w() * pc.gpus() * 1e-9 / u);
  x_col.assign(pc.packs(), {});
  constant_j = 0;
  for (std::size_t p = 0; p < pc.packs(); ++p) {
    if (allowed[p].size() == 1) {
      constant_j += cost_of(pc, p, allowed[p][0]);
      continue;
    }
    std::vector<std::pair<int, double>> one;
    for (const int k : allowed[p]) x_col[p].push_back(lp.col(0, 1, cost_of(pc, p, k), true)), one.emplace_back(x_col[p].back(), 1.0);
    lp.row(one, 1, 1);
  }
  for (const auto& e : r.fixed) lp.row({{e.to, 1}, {e.from, -1}}, static_cast<double>(e.lag_ns) * u);
  for (const auto& e : r.variable) {
    std::vector<std::pair<int, double>> terms{{e.to, 1}, {e.from, -1}};
    TimeNs lo = INT64_MAX;
    for (const int k : allowed[e.pack]) lo = std::min(lo, variable_lag(e, pc.time(e.pack, k)));
    for (std::size_t i = 0; i < x_col[e.pack].size(); ++i) {
      const TimeNs extra = variable_lag(e, pc.time(e.pack, allowed[e.pack][i])) - lo;
      if (extra != 0) terms.emplace_back(x_col[e.pack][i], -static_cast<double>(extra) * u);
    }
    lp.row(terms, static_cast<double>(lo) * u);
  }
  for (int i = 0; i < n; ++i) {
    if (r.tail_ns[i] != kNone) lp.row({{M, 1}, {i, -1}}, static_cast<double>(r.tail_ns[i]) * u);
  }
  return lp.load();
}

/// The MIP start of `start` (a choice fitting the limit): per pack, its option or an allowed one
/// that dominates it.
void set_start(Cbc_Model* m, const PackChoices& pc, const std::vector<std::vector<int>>& allowed,
               const std::vector<std::vector<int>>& x_col, const std::vector<int>& start) {
  std::vector<int> cols;
  std::vector<double> vals;
  for (std::size_t p = 0; p < pc.packs(); ++p) {
    if (x_col[p].empty()) continue;
    std::size_t pick = 0;
    for (std::size_t i = 0; i < allowed[p].size(); ++i) {
      if (allowed[p][i] == start[p] || no_worse(pc, p, allowed[p][i], start[p])) {
        pick = i;
        if (allowed[p][i] == start[p]) break;
      }
    }
    for (std::size_t i = 0; i < x_col[p].size(); ++i) cols.push_back(x_col[p][i]), vals.push_back(i == pick ? 1 : 0);
  }
  if (!cols.empty()) Cbc_setMIPStartI(m, static_cast<int>(cols.size()), cols.data(), vals.data());
}

CbcOutcome run_cbc(const PackChoices& pc, const ReducedPackGraph& r, const std::vector<std::vector<int>>& allowed,
                   TimeNs limit_ns, const ExactPackOptions& o) {
  CbcOutcome out;
  std::vector<std::vector<int>> x_col;
  double constant_j = 0;
  Cbc_Model* m = build_model(pc, r, allowed, limit_ns, x_col, constant_j);
  if (!o.start.empty() && pc.schedule(o.start).makespan_ns <= limit_ns) set_start(m, pc, allowed, x_col, o.start);
  Cbc_setLogLevel(m, 0);
  Cbc_setMaximumSeconds(m, o.time_limit_s);
  Cbc_setAllowableFractionGap(m, o.relative_gap);
  Cbc_setAllowableGap(m, 1e-9);
  Cbc_setParameter(m, "threads", "1");
  Cbc_setParameter(m, "integerTolerance", "1e-9");
  // CBC 2.10.8's integer preprocessing (CglPreProcess) aborted in OsiClpSolverInterface::crunch
  // on a 5-pack test graph (tests/opt/exact_pack_milp_test.cpp, seed 606 with 4 options); off.
  Cbc_setParameter(m, "preprocess", "off");
  Cbc_solve(m);
  const double* x = Cbc_getColSolution(m);
  if (Cbc_isProvenInfeasible(m)) {
    out.status = ExactStatus::kInfeasible;
  } else if (x != nullptr && (Cbc_numberSavedSolutions(m) > 0 || Cbc_isProvenOptimal(m))) {
    // (A model that presolve solves outright, with no binary left, saves no solution but is optimal.)
    out.status = Cbc_isProvenOptimal(m) ? ExactStatus::kOptimal : ExactStatus::kTimeLimit;
    out.bound_j = Cbc_getBestPossibleObjValue(m) + constant_j;
    for (std::size_t p = 0; p < pc.packs(); ++p) {
      std::size_t best = 0;
      for (std::size_t i = 1; i < x_col[p].size(); ++i) {
        if (x[x_col[p][i]] > x[x_col[p][best]]) best = i;
      }
      if (!x_col[p].empty() && x[x_col[p][best]] < 0.5) out.status = ExactStatus::kNoSolution;  // not integral
      out.choice.push_back(allowed[p][best]);
    }
    if (out.status == ExactStatus::kNoSolution) out.choice.clear();
  }
  Cbc_deleteModel(m);
  return out;
}

}  // namespace

ExactPackResult solve_exact_pack(const PackChoices& pc, TimeNs limit_ns, const ExactPackOptions& options) {
  if (pc.packs() > options.max_packs)
    throw std::invalid_argument(fmt::format("solve_exact_pack: {} packs, more than the limit of {}", pc.packs(), options.max_packs));
  if (!options.start.empty() && options.start.size() != pc.packs())
    throw std::invalid_argument(fmt::format("solve_exact_pack: a start of {} options for {} packs", options.start.size(), pc.packs()));
  const auto t0 = std::chrono::steady_clock::now();
  ExactPackResult res;
  const ReducedPackGraph r = reduce_pack_graph(pc.graph());
  const std::vector<std::vector<int>> allowed = undominated_options(pc);
  res.timepoints = r.timepoint.size();
  res.fixed_edges = r.fixed.size();
  res.variable_edges = r.variable.size();
  res.expanded = r.expanded;
  for (const auto& a : allowed) res.binaries += a.size() > 1 ? a.size() : 0;
  TimeNs limit = limit_ns;
  for (res.solves = 1; res.solves <= 3; ++res.solves) {
    CbcOutcome c = run_cbc(pc, r, allowed, limit, options);
    res.status = c.status;
    res.choice = std::move(c.choice);
    if (res.choice.empty()) break;
    res.makespan_ns = pc.schedule(res.choice).makespan_ns;
    res.energy_j = pc.predicted_energy(res.choice, res.makespan_ns);
    res.lower_bound_j = std::min(c.bound_j, res.energy_j);
    // A proven optimum's gap is 0 (within relative_gap): CBC's best bound is not always updated
    // when it closes the tree (hta_v100_ns_resolution: proven optimal with the root bound 1 % below).
    res.gap = res.status == ExactStatus::kOptimal || res.energy_j <= 0 ? 0 : (res.energy_j - res.lower_bound_j) / res.energy_j;
    if (res.makespan_ns <= limit_ns) break;
    limit -= res.makespan_ns - limit_ns;  // CBC's feasibility tolerance: tighten by the overshoot
  }
  res.solves = std::min(res.solves, 3);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace emo::opt
