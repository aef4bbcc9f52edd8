// The optimisation problem of docs/design.md §5: a DAG of work whose optimisable nodes each pick one
// option (SM clock, time, energy) from a discrete set, the others having one fixed option; every
// GPU draws idle/blocked power while it is not busy within the makespan. Minimise total energy
// subject to makespan <= deadline.
//
// Units: times are seconds (double), energies joules, powers watts, clocks MHz. Doubles hold
// seconds to ~1e-16 relative precision, far below any measured time; no quantisation is applied
// (Perseus/lowtime quantise to 1 ms, EMO does not).
//
// Energy of a schedule (docs/design.md §4; Perseus, SOSP'24 §4, with P_idle = P_blocked):
//   E = Σ_i E_i(o_i) + Σ_g P_idle,g · (C − busy_g),   busy_g = Σ_{i on g} t_i(o_i),
// where C is the makespan (every source starts at 0, C = max finish). Written per node:
//   E = Σ_i c_i(o_i) + P_tot · C,   c_i(o) = E_i(o) − P_idle,g(i) · t_i(o),   P_tot = Σ_g P_idle,g.
// c_i is the node's *effective cost* ("energy above blocked"); every solver works on it.
// Example: 2 GPUs at 80 W idle, one node per GPU, A: (1 s, 200 J), B: (2 s, 300 J), no edge:
// C = 2 s, E = 200 + 300 + 80·(2−1) + 80·(2−2) = 580 J.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace emo::opt {

/// One way to run a node: at `clock_mhz` (0 for work that has no clock, e.g. host work) it takes
/// `time_s` seconds and draws `energy_j` joules in total.
struct Option {
  double clock_mhz = 0;
  double time_s = 0;
  double energy_j = 0;
};

/// A GPU (or any resource with a power draw while not busy). `idle_power_w` is what it draws
/// while none of its nodes runs within the makespan (Perseus's P_blocked on a pipeline).
struct Gpu {
  std::string name;
  double idle_power_w = 0;
};

/// A piece of work. `gpu` is an index into Problem::gpus(), or -1 for work that occupies no GPU
/// (host work, a gap): it then only delays its successors and costs `energy_j` as given.
struct Node {
  std::string name;
  int gpu = -1;
  std::vector<Option> options;  ///< at least one; one option = a fixed node
  bool fixed() const { return options.size() == 1; }
};

/// The chosen option index per node (same order as Problem::nodes()).
using Assignment = std::vector<int>;

/// A DAG of nodes with options. Build with add_gpu / add_node / add_edge; every query
/// checks the graph is acyclic on first use (throws graph::CycleError, an
/// std::invalid_argument, otherwise).
/// Nodes are independent of resources: two nodes on the same GPU may overlap in time unless an
/// edge orders them (callers add the per-GPU program order as edges, as the pipeline builder does).
class Problem {
 public:
  /// Adds a GPU; returns its index. Throws std::invalid_argument if idle_power_w < 0.
  int add_gpu(std::string name, double idle_power_w);
  /// Adds a node with its options; returns its index. Throws std::invalid_argument when
  /// `options` is empty, a time or energy is negative or not finite, or `gpu` is out of range.
  int add_node(std::string name, int gpu, std::vector<Option> options);
  /// A node with one option (clock 0).
  int add_fixed(std::string name, int gpu, double time_s, double energy_j);
  /// `to` cannot start before `from` finishes. Throws std::invalid_argument on a bad index or a
  /// self-loop. Duplicate edges are harmless.
  void add_edge(int from, int to);

  const std::vector<Node>& nodes() const noexcept { return nodes_; }
  const std::vector<Gpu>& gpus() const noexcept { return gpus_; }
  std::size_t node_count() const noexcept { return nodes_.size(); }
  std::size_t edge_count() const noexcept { return edge_from_.size(); }
  /// Σ_g idle_power_w: the energy per second of makespan (J/s).
  double total_idle_power_w() const;
  /// Idle power of the GPU that node i runs on (0 for host nodes).
  double node_idle_power_w(int i) const;
  /// Effective cost c_i(o) = E_i(o) − P_idle,g(i)·t_i(o), joules.
  double effective_cost_j(int i, int option) const;

  /// Predecessors / successors in CSR form, and a topological order (sources first).
  const std::vector<int>& topo_order() const;
  /// Indices [pred_begin(i), pred_begin(i+1)) into pred_list().
  const std::vector<int>& pred_begin() const;
  const std::vector<int>& pred_list() const;
  const std::vector<int>& succ_begin() const;
  const std::vector<int>& succ_list() const;

 private:
  void index() const;  // builds the CSR arrays and topological order (lazily)
  std::vector<Gpu> gpus_;
  std::vector<Node> nodes_;
  std::vector<int> edge_from_, edge_to_;
  mutable bool indexed_ = false;
  mutable std::vector<int> topo_, pred_begin_, pred_list_, succ_begin_, succ_list_;
};

/// An evaluated schedule: every node starts as early as its predecessors allow.
struct Schedule {
  double makespan_s = 0;
  double energy_j = 0;
  std::vector<double> start_s;  ///< per node
};

/// Durations of `choice` (seconds per node). Throws std::invalid_argument on a bad choice.
std::vector<double> durations(const Problem& p, const Assignment& choice);
/// Earliest start times (as-soon-as-possible) for `duration_s`; returns the makespan. O(V+E).
double earliest_starts(const Problem& p, const std::vector<double>& duration_s,
                       std::vector<double>& start_s);
/// Latest finish times such that the makespan stays <= `deadline_s`. O(V+E).
void latest_finishes(const Problem& p, const std::vector<double>& duration_s, double deadline_s,
                     std::vector<double>& finish_s);
/// Makespan and energy (formula in the file comment) of `choice`.
Schedule evaluate(const Problem& p, const Assignment& choice);
/// Energy of `choice` when its makespan is `makespan_s` (formula in the file comment).
double energy_j(const Problem& p, const Assignment& choice, double makespan_s);
/// Every node at its fastest option (ties: the cheaper one).
Assignment fastest_assignment(const Problem& p);

/// Per node, the options that are Pareto-optimal in (time, effective cost): no other option of
/// the node is at most as slow and at most as costly. Sorted by ascending time (so descending
/// cost); indices into Node::options. Options slower than the cheapest one are never useful.
/// The one Pareto filter (opt/pareto.h) with eps 0; among identical options the lowest index.
std::vector<std::vector<int>> pareto_options(const Problem& p);

}  // namespace emo::opt
