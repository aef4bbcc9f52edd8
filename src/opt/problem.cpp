#include "opt/problem.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "graph/algorithms.h"
#include "opt/pareto.h"

namespace emo::opt {

int Problem::add_gpu(std::string name, double idle_power_w) {
  if (!(idle_power_w >= 0) || !std::isfinite(idle_power_w)) {
    throw std::invalid_argument("GPU " + name + ": idle power must be finite and >= 0 W");
  }
  gpus_.push_back(Gpu{std::move(name), idle_power_w});
  return static_cast<int>(gpus_.size()) - 1;
}

int Problem::add_node(std::string name, int gpu, std::vector<Option> options) {
  if (options.empty()) throw std::invalid_argument("node " + name + ": no options");
  if (gpu < -1 || gpu >= static_cast<int>(gpus_.size())) {
    throw std::invalid_argument("node " + name + ": GPU index " + std::to_string(gpu) + " out of range");
  }
  for (const Option& o : options) {
    if (!(o.time_s >= 0) || !std::isfinite(o.time_s) || !(o.energy_j >= 0) || !std::isfinite(o.energy_j)) {
      throw std::invalid_argument("node " + name + ": option times and energies must be finite and >= 0");
    }
  }
  nodes_.push_back(Node{std::move(name), gpu, std::move(options)});
  indexed_ = false;
  return static_cast<int>(nodes_.size()) - 1;
}

int Problem::add_fixed(std::string name, int gpu, double time_s, double energy_j) {
  return add_node(std::move(name), gpu, {Option{0, time_s, energy_j}});
}

void Problem::add_edge(int from, int to) {
  const int n = static_cast<int>(nodes_.size());
  if (from < 0 || from >= n || to < 0 || to >= n) throw std::invalid_argument("edge: node index out of range");
  if (from == to) throw std::invalid_argument("edge: self-loop on node " + nodes_[from].name);
  edge_from_.push_back(from);
  edge_to_.push_back(to);
  indexed_ = false;
}

double Problem::total_idle_power_w() const {
  double sum = 0;
  for (const Gpu& g : gpus_) sum += g.idle_power_w;
  return sum;
}

double Problem::node_idle_power_w(int i) const {
  const int g = nodes_[i].gpu;
  return g < 0 ? 0.0 : gpus_[g].idle_power_w;
}

double Problem::effective_cost_j(int i, int option) const {
  const Option& o = nodes_[i].options[option];
  return o.energy_j - node_idle_power_w(i) * o.time_s;
}

void Problem::index() const {
  if (indexed_) return;
  const std::size_t n = nodes_.size();
  auto csr = [&](const std::vector<int>& key, const std::vector<int>& val, std::vector<int>& begin,
                 std::vector<int>& list) {
    begin.assign(n + 1, 0);
    for (int k : key) ++begin[k + 1];
    for (std::size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
    list.assign(key.size(), 0);
    std::vector<int> pos(begin.begin(), begin.end() - 1);
    for (std::size_t e = 0; e < key.size(); ++e) list[pos[key[e]]++] = val[e];
  };
  csr(edge_to_, edge_from_, pred_begin_, pred_list_);
  csr(edge_from_, edge_to_, succ_begin_, succ_list_);
  // graph/algorithms.h; first-in first-out. A cycle throws graph::CycleError (an
  // std::invalid_argument): the caller built a graph that is not a DAG.
  std::vector<int> indeg(n, 0);
  for (int t : edge_to_) ++indeg[t];
  topo_ = graph::topological_order<int>(
      std::move(indeg), graph::ReadyOrder::kFirstInFirstOut,
      [&](int u, auto&& visit) {
        for (int e = succ_begin_[u]; e < succ_begin_[u + 1]; ++e) visit(succ_list_[e]);
      },
      graph::ThrowOnCycle{});
  indexed_ = true;
}

const std::vector<int>& Problem::topo_order() const { index(); return topo_; }
const std::vector<int>& Problem::pred_begin() const { index(); return pred_begin_; }
const std::vector<int>& Problem::pred_list() const { index(); return pred_list_; }
const std::vector<int>& Problem::succ_begin() const { index(); return succ_begin_; }
const std::vector<int>& Problem::succ_list() const { index(); return succ_list_; }

std::vector<double> durations(const Problem& p, const Assignment& choice) {
  if (choice.size() != p.node_count()) throw std::invalid_argument("assignment size differs from node count");
  std::vector<double> d(choice.size());
  for (std::size_t i = 0; i < choice.size(); ++i) {
    const auto& opts = p.nodes()[i].options;
    if (choice[i] < 0 || choice[i] >= static_cast<int>(opts.size())) {
      throw std::invalid_argument("assignment: option index out of range for node " + p.nodes()[i].name);
    }
    d[i] = opts[choice[i]].time_s;
  }
  return d;
}

double earliest_starts(const Problem& p, const std::vector<double>& duration_s, std::vector<double>& start_s) {
  const auto& order = p.topo_order();
  const auto& pb = p.pred_begin();
  const auto& pl = p.pred_list();
  start_s.assign(p.node_count(), 0.0);
  double makespan = 0;
  for (int u : order) {
    double s = 0;
    for (int e = pb[u]; e < pb[u + 1]; ++e) s = std::max(s, start_s[pl[e]] + duration_s[pl[e]]);
    start_s[u] = s;
    makespan = std::max(makespan, s + duration_s[u]);
  }
  return makespan;
}

void latest_finishes(const Problem& p, const std::vector<double>& duration_s, double deadline_s,
                     std::vector<double>& finish_s) {
  const auto& order = p.topo_order();
  const auto& sb = p.succ_begin();
  const auto& sl = p.succ_list();
  finish_s.assign(p.node_count(), deadline_s);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int u = *it;
    double f = deadline_s;
    for (int e = sb[u]; e < sb[u + 1]; ++e) f = std::min(f, finish_s[sl[e]] - duration_s[sl[e]]);
    finish_s[u] = f;
  }
}

double energy_j(const Problem& p, const Assignment& choice, double makespan_s) {
  double e = p.total_idle_power_w() * makespan_s;
  for (std::size_t i = 0; i < choice.size(); ++i) e += p.effective_cost_j(static_cast<int>(i), choice[i]);
  return e;
}

Schedule evaluate(const Problem& p, const Assignment& choice) {
  Schedule s;
  const std::vector<double> d = durations(p, choice);
  s.makespan_s = earliest_starts(p, d, s.start_s);
  s.energy_j = energy_j(p, choice, s.makespan_s);
  return s;
}

Assignment fastest_assignment(const Problem& p) {
  Assignment a(p.node_count(), 0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& opts = p.nodes()[i].options;
    for (std::size_t k = 1; k < opts.size(); ++k) {
      const double tk = opts[k].time_s, tb = opts[a[i]].time_s;
      if (tk < tb || (tk == tb && p.effective_cost_j(static_cast<int>(i), static_cast<int>(k)) <
                                      p.effective_cost_j(static_cast<int>(i), a[i]))) {
        a[i] = static_cast<int>(k);
      }
    }
  }
  return a;
}

std::vector<std::vector<int>> pareto_options(const Problem& p) {
  std::vector<std::vector<int>> out(p.node_count());
  for (std::size_t i = 0; i < p.node_count(); ++i) {
    const auto& opts = p.nodes()[i].options;
    const int ii = static_cast<int>(i);
    out[i].resize(opts.size());
    std::iota(out[i].begin(), out[i].end(), 0);
    // Strictly falling cost (eps 0); among identical (time, cost) options the lowest index stays.
    pareto_filter(
        out[i], [&](int k) { return opts[k].time_s; }, [&](int k) { return p.effective_cost_j(ii, k); }, 0.0);
  }
  return out;
}

}  // namespace emo::opt
