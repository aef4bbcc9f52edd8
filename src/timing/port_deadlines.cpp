#include "timing/port_deadlines.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace emo::timing {
namespace {

/// The instances of a job's ports, their transfer times and the lags between them (job order).
struct InstanceGraph {
  struct Lag {
    std::size_t from, to;   ///< Instances; to = SIZE_MAX: the rank's end.
    TimeNs lag_ns;
    bool into_end;
  };
  std::vector<TimeNs> transfer_ns;       ///< Per instance: T(c), the longest participant's duration.
  std::vector<TimeNs> release_ns;        ///< Per instance: the latest participant release (job clock), INT64_MIN: none.
  std::vector<std::vector<Lag>> out;     ///< Per instance: lags leaving it.
  std::vector<std::vector<Lag>> in;      ///< Per instance: lags entering it (between instances).
};

InstanceGraph instance_graph(std::span<const RankPorts> ranks, std::size_t instances, const char* who) {
  InstanceGraph ig;
  ig.transfer_ns.assign(instances, 0);
  ig.release_ns.assign(instances, INT64_MIN);
  ig.out.resize(instances);
  ig.in.resize(instances);
  for (const RankPorts& r : ranks) {
    const PortGraph& pg = *r.graph;
    if (r.instance.size() != pg.dur_ns.size()) throw std::invalid_argument(std::string(who) + ": one instance per port needed");
    auto inst = [&](std::uint32_t p) {
      const std::int64_t c = r.instance[p];
      if (c < 0 || static_cast<std::size_t>(c) >= instances) throw std::invalid_argument(std::string(who) + ": instance out of range");
      return static_cast<std::size_t>(c);
    };
    for (std::uint32_t p = 0; p < pg.dur_ns.size(); ++p) {
      const std::size_t c = inst(p);
      ig.transfer_ns[c] = std::max(ig.transfer_ns[c], pg.dur_ns[p]);
      if (pg.release_ns[p] != INT64_MIN) ig.release_ns[c] = std::max(ig.release_ns[c], pg.release_ns[p] + r.offset_ns);
    }
    for (const PortLag& l : pg.lags) {
      const InstanceGraph::Lag lag{inst(l.from), l.to == kRankEnd ? SIZE_MAX : inst(l.to), l.lag_ns, l.into_end};
      ig.out[lag.from].push_back(lag);
      if (lag.to != SIZE_MAX) ig.in[lag.to].push_back(lag);
    }
  }
  return ig;
}

/// The instances in topological order (every lag from an earlier to a later one), or empty when
/// they form a cycle.
std::vector<std::size_t> topological(const InstanceGraph& ig) {
  const std::size_t n = ig.out.size();
  std::vector<std::size_t> pending(n, 0), order;
  for (std::size_t c = 0; c < n; ++c) pending[c] = ig.in[c].size();
  for (std::size_t c = 0; c < n; ++c) {
    if (pending[c] == 0) order.push_back(c);
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (const InstanceGraph::Lag& l : ig.out[order[i]]) {
      if (l.to != SIZE_MAX && --pending[l.to] == 0) order.push_back(l.to);
    }
  }
  if (order.size() != n) order.clear();
  return order;
}

TimeNs scaled(TimeNs lag_ns, double k) { return static_cast<TimeNs>(std::ceil(static_cast<double>(lag_ns) * k)); }

/// The backward pass (file comment of the header) over `order`.
std::vector<TimeNs> latest_starts(const InstanceGraph& ig, const std::vector<std::size_t>& order, TimeNs deadline_ns,
                                  double k) {
  const std::size_t n = ig.out.size();
  std::vector<TimeNs> le(n, deadline_ns), ls(n, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t c = *it;
    for (const InstanceGraph::Lag& l : ig.out[c]) {
      const TimeNs bound = l.to == SIZE_MAX ? deadline_ns : (l.into_end ? le[l.to] : ls[l.to]);
      le[c] = std::min(le[c], bound - scaled(l.lag_ns, k));
    }
    ls[c] = le[c] - ig.transfer_ns[c];
  }
  return ls;
}

}  // namespace

std::optional<std::vector<TimeNs>> latest_transfer_starts(std::span<const RankPorts> ranks, std::size_t instances,
                                                          TimeNs deadline_ns, double lag_scale) {
  const InstanceGraph ig = instance_graph(ranks, instances, "latest_transfer_starts");
  const std::vector<std::size_t> order = topological(ig);
  if (order.size() != instances) return std::nullopt;
  return latest_starts(ig, order, deadline_ns, lag_scale);
}

std::optional<std::vector<TimeNs>> float_pins(std::span<const RankPorts> ranks, std::size_t instances,
                                              const JobTiming& forward, TimeNs budget_ns) {
  if (forward.transfer_start_ns.size() != instances) throw std::invalid_argument("float_pins: the forward timing is of another job");
  const InstanceGraph ig = instance_graph(ranks, instances, "float_pins");
  const std::vector<std::size_t> order = topological(ig);
  if (order.size() != instances) return std::nullopt;
  const TimeNs w = forward.start_ns, m0 = forward.makespan_ns;
  const double k = m0 > 0 ? std::max(1.0, static_cast<double>(budget_ns) / static_cast<double>(m0)) : 1.0;
  const std::vector<TimeNs> ls0 = latest_starts(ig, order, w + m0, 1.0);
  const std::vector<TimeNs> ls = latest_starts(ig, order, w + budget_ns, k);
  std::vector<TimeNs> pin(instances, 0);
  for (const std::size_t c : order) {
    const double a = static_cast<double>(std::max<TimeNs>(0, forward.transfer_start_ns[c] - w));
    const double b = static_cast<double>(std::max<TimeNs>(0, w + m0 - ls0[c]));
    TimeNs p = a + b > 0 ? w + static_cast<TimeNs>(std::floor(a * static_cast<double>(budget_ns) / (a + b))) : w;
    // Consistent with what comes before: every participant can arrive by its pin at the max clock.
    if (ig.release_ns[c] != INT64_MIN) p = std::max(p, w + scaled(ig.release_ns[c] - w, k));
    for (const InstanceGraph::Lag& l : ig.in[c]) {
      const TimeNs from_end = pin[l.from] + ig.transfer_ns[l.from] + scaled(l.lag_ns, k);
      p = std::max(p, l.into_end ? from_end - ig.transfer_ns[c] : from_end);
    }
    pin[c] = std::min(p, ls[c]);
  }
  return pin;
}

}  // namespace emo::timing
