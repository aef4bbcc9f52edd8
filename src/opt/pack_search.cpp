#include "opt/pack_search.h"

#include <algorithm>
#include <future>
#include <optional>
#include <tuple>
#include <stdexcept>
#include <utility>

#include "core/units.h"
#include "pack/plan_evaluator.h"

namespace emo::opt {

PackChoices::PackChoices(const pack::PackGraph& pg, std::vector<std::vector<PackOption>> options, double idle_w,
                         double gpus)
    : pg_(&pg), options_(std::move(options)), idle_w_(idle_w), gpus_(gpus) {
  if (options_.size() != pg.packs) throw std::invalid_argument("PackChoices: one option list per pack expected");
  for (const auto& o : options_)
    if (o.empty()) throw std::invalid_argument("PackChoices: a pack has no option");
  if (!(idle_w >= 0) || !(gpus >= 0)) throw std::invalid_argument("PackChoices: idle power and GPUs must be >= 0");
  cache_.resize(options_.size());
}

double PackChoices::predicted_energy(const std::vector<int>& choice, TimeNs makespan_ns) const {
  // Kept in this order of operations: the figures of earlier runs are reproduced to the bit.
  double e = idle_energy_j(makespan_ns);
  for (std::size_t p = 0; p < options_.size(); ++p) e += std::max(0.0, options_[p][choice[p]].dynamic_energy_j);
  if (head_ns_ > 0)
    for (std::size_t p = 0; p < options_.size(); ++p) e += switch_head_energy_j(choice, p);
  return e;
}

void PackChoices::set_switch_heads(const SwitchHeads& heads) {
  if (heads.head_ns < 0) throw std::invalid_argument("PackChoices: a negative switch head");
  if (heads.head_ns > 0 && (heads.before.size() != options_.size() || heads.ops.size() != options_.size()))
    throw std::invalid_argument("PackChoices: switch heads need one pack before and one op list per pack");
  for (std::size_t p = 0; p < heads.before.size(); ++p) {
    const std::int32_t b = heads.before[p];
    if (b < -1 || b >= static_cast<std::int32_t>(options_.size()) || b == static_cast<std::int32_t>(p))
      throw std::invalid_argument("PackChoices: a switch head's pack before is not another pack");
  }
  head_ns_ = heads.head_ns;
  before_ = heads.before;
  after_begin_.assign(options_.size() + 1, 0);
  for (const std::int32_t b : before_)
    if (b >= 0) ++after_begin_[static_cast<std::size_t>(b) + 1];
  for (std::size_t p = 0; p < options_.size(); ++p) after_begin_[p + 1] += after_begin_[p];
  after_.assign(after_begin_.back(), 0);
  {
    std::vector<std::uint32_t> fill(after_begin_.begin(), after_begin_.end() - 1);
    for (std::size_t q = 0; q < before_.size(); ++q)
      if (before_[q] >= 0) after_[fill[static_cast<std::size_t>(before_[q])]++] = static_cast<std::uint32_t>(q);
  }
  head_share_.assign(heads.ops.size(), {});
  for (std::size_t p = 0; p < heads.ops.size(); ++p) {
    double busy = 0;
    for (const auto& op : heads.ops[p]) busy += static_cast<double>(op.second);
    for (const PackOption& o : options_[p]) {
      // The head runs at this option's clock, where the pack's timeline is its recording × factor.
      const double window_ns = static_cast<double>(head_ns_) / o.factor;
      double in_head = 0;
      for (const auto& [start, dur] : heads.ops[p])
        in_head += std::clamp(window_ns - static_cast<double>(start), 0.0, static_cast<double>(dur));
      head_share_[p].push_back(busy > 0 ? in_head / busy : 0.0);
    }
  }
}

double PackChoices::switch_head_energy_j(const std::vector<int>& choice, std::size_t p) const {
  if (head_ns_ <= 0 || before_[p] < 0) return 0;
  const auto b = static_cast<std::size_t>(before_[p]);
  const std::vector<PackOption>& o = options_[p];
  const PackOption& mine = o[static_cast<std::size_t>(choice[p])];
  const double f_before = options_[b][static_cast<std::size_t>(choice[b])].clock_mhz;
  if (f_before <= mine.clock_mhz) return 0;
  std::size_t j = 0;  // p's option at the clock before (options descend in clock)
  while (j + 1 < o.size() && o[j].clock_mhz > f_before) ++j;
  return head_share_[p][j] * std::max(0.0, std::max(0.0, o[j].dynamic_energy_j) - std::max(0.0, mine.dynamic_energy_j));
}

double PackChoices::move_energy_j(std::vector<int>& choice, std::size_t p, int k) const {
  const std::vector<PackOption>& o = options_[p];
  double d = std::max(0.0, o[static_cast<std::size_t>(k)].dynamic_energy_j) -
             std::max(0.0, o[static_cast<std::size_t>(choice[p])].dynamic_energy_j);
  if (head_ns_ <= 0) return d;
  // The heads that p's clock decides, read off the choice: p's own and its followers'.
  auto heads_j = [&] {
    double h = switch_head_energy_j(choice, p);
    for (std::uint32_t i = after_begin_[p]; i < after_begin_[p + 1]; ++i) h += switch_head_energy_j(choice, after_[i]);
    return h;
  };
  const int k0 = choice[p];
  const double before_j = heads_j();
  choice[p] = k;
  const double after_j = heads_j();
  choice[p] = k0;
  return d + (after_j - before_j);
}

const pack::PackTime& PackChoices::time(std::size_t p, int k) const {
  if (cache_[p].empty()) cache_[p].resize(options_[p].size());
  auto& slot = cache_[p][static_cast<std::size_t>(k)];
  if (!slot) slot = pg_->pack_time(static_cast<std::uint32_t>(p), options_[p][static_cast<std::size_t>(k)].factor);
  return *slot;
}

std::size_t PackChoices::reuse_times(const PackChoices& other) {
  if (other.pg_ != pg_ || other.options_.size() != options_.size())
    throw std::invalid_argument("PackChoices::reuse_times: the timings of another pack graph");
  std::size_t taken = 0;
  for (std::size_t p = 0; p < options_.size(); ++p) {
    const auto& theirs = other.options_[p];
    for (std::size_t k = 0; k < options_[p].size(); ++k) {
      if (!cache_[p].empty() && cache_[p][k]) continue;
      for (std::size_t j = 0; j < theirs.size() && j < other.cache_[p].size(); ++j) {
        if (theirs[j].factor != options_[p][k].factor || !other.cache_[p][j]) continue;
        if (cache_[p].empty()) cache_[p].resize(options_[p].size());
        cache_[p][k] = other.cache_[p][j];
        ++taken;
        break;
      }
    }
  }
  return taken;
}

void PackChoices::compute_all_times() const {
  for (std::size_t p = 0; p < options_.size(); ++p)
    for (std::size_t k = 0; k < options_[p].size(); ++k) time(p, static_cast<int>(k));
}

std::vector<pack::PackTime> PackChoices::times(const std::vector<int>& choice) const {
  std::vector<pack::PackTime> t;
  t.reserve(options_.size());
  for (std::size_t p = 0; p < options_.size(); ++p) t.push_back(time(p, choice[p]));
  return t;
}

timing::Schedule PackChoices::schedule(const std::vector<int>& choice) const {
  std::vector<const pack::PackTime*> t(options_.size());
  for (std::size_t p = 0; p < options_.size(); ++p) t[p] = &time(p, choice[p]);
  return pg_->evaluate(std::span<const pack::PackTime* const>(t));
}

std::vector<double> PackChoices::clocks(const std::vector<int>& choice) const {
  std::vector<double> c(options_.size());
  for (std::size_t p = 0; p < options_.size(); ++p) c[p] = options_[p][choice[p]].clock_mhz;
  return c;
}

std::vector<int> PackChoices::uniform_choice(std::size_t k) const {
  std::vector<int> c(options_.size());
  for (std::size_t p = 0; p < c.size(); ++p) c[p] = static_cast<int>(std::min(k, options_[p].size() - 1));
  return c;
}

TimeNs PackChoices::uniform_makespan_ns(std::size_t k) const {
  if (k >= uniform_makespan_.size()) uniform_makespan_.resize(k + 1, -1);
  if (uniform_makespan_[k] < 0) uniform_makespan_[k] = schedule(uniform_choice(k)).makespan_ns;
  return uniform_makespan_[k];
}

TimeNs PackChoices::fastest_makespan_ns() const {
  if (fastest_makespan_ >= 0) return fastest_makespan_;
  std::vector<int> fastest(options_.size(), 0);
  for (std::size_t p = 0; p < fastest.size(); ++p) {
    const auto& o = options_[p];
    for (std::size_t k = 1; k < o.size(); ++k)
      if (o[k].factor < o[static_cast<std::size_t>(fastest[p])].factor) fastest[p] = static_cast<int>(k);
  }
  return fastest_makespan_ = schedule(fastest).makespan_ns;
}

std::optional<std::vector<int>> raise_critical(const PackChoices& pc, std::vector<int> choice, TimeNs limit_ns) {
  const pack::PackGraph& pg = pc.graph();
  for (std::size_t round = 0; round <= pc.packs(); ++round) {
    const timing::Schedule s = pc.schedule(choice);
    if (s.makespan_ns <= limit_ns) return choice;
    const graph::DepGraph at = pg.graph_at(pc.times(choice));
    const std::vector<TimeNs> slack = pack::pack_slack(pg, at, s);  // its end and its exits
    bool raised = false;
    for (std::uint32_t p = 0; p < pg.packs; ++p) {
      if (choice[p] != 0 && slack[p] <= 0) choice[p] = 0, raised = true;
    }
    if (!raised) return std::nullopt;
  }
  return std::nullopt;
}

namespace {

/// How much a move is worth to the exact local search: a move that keeps the makespan ("free")
/// beats one that lengthens it; among free moves, the larger saving of predicted energy (J) wins;
/// among the others, the larger saving per ns the makespan grows (J/ns). The rate rule of the
/// discrete time–cost trade-off: a makespan budget is spent where it buys the most energy, so the
/// critical work is slowed evenly instead of one pack as far as it goes (a +1 % target on the
/// 8 × 16 pipeline with true costs and no switch heads: 1,020 J predicted against 1,037 J by the
/// largest saving alone, the exact MILP 1,013 J; docs/optimize.md stage 4).
struct MoveRate {
  bool free = false;
  double rate = 0;  ///< J (free) or J/ns (not free); > 0 for a move worth making.
  /// True when this rate is strictly better than `o`.
  bool beats(const MoveRate& o) const noexcept { return free != o.free ? free : rate > o.rate; }
};

/// The rate of a move that saves `saving_j` (J) and lengthens the makespan by `growth_ns` (≥ 0).
MoveRate rate_of(double saving_j, TimeNs growth_ns) noexcept {
  if (growth_ns == 0) return {true, saving_j};
  return {false, saving_j / static_cast<double>(growth_ns)};
}

/// No move yet: any move saving more than 1e-9 J beats it.
inline constexpr MoveRate kNoMove{false, 0};

/// One move of the exact local search: pack p to option `option` (-1: none), and its rate.
struct Move {
  int option = -1;
  MoveRate rate = kNoMove;
};

/// What a local search on `pc` knows beyond its current plan, for skipping tries whose outcome
/// is known (both exact: the search picks the same moves with or without them).
/// - The (pack, option) pairs found over the limit. The search only slows packs down (each move
///   is_slower than the timing it replaces), and a longest path never shortens when a duration or
///   lag grows, so a pack at an option that was over the limit stays over it for the rest of the
///   search, whatever the other packs do: it need not be tried again.
/// - Per pack, whether its timings never get faster from one option to the next (every lag and
///   the duration non-decreasing in the option index): then a step skipped because it cannot win
///   hides nothing, as a step after it is over the limit whenever it is (best_move).
/// O(Σ options) bytes; built in O(Σ options × port edges).
class SearchMemo {
 public:
  explicit SearchMemo(const PackChoices& pc) : begin_(pc.packs() + 1, 0), monotone_(pc.packs(), 1) {
    for (std::size_t p = 0; p < pc.packs(); ++p) {
      begin_[p + 1] = begin_[p] + pc.options()[p].size();
      for (std::size_t k = 1; k < pc.options()[p].size() && monotone_[p]; ++k)
        monotone_[p] = pack::no_faster(pc.time(p, static_cast<int>(k)), pc.time(p, static_cast<int>(k - 1)));
    }
    over_.assign(begin_.back(), 0);
  }
  bool over(std::uint32_t p, int k) const { return over_[begin_[p] + static_cast<std::size_t>(k)] != 0; }
  void add_over(std::uint32_t p, int k) { over_[begin_[p] + static_cast<std::size_t>(k)] = 1; }
  bool monotone(std::uint32_t p) const { return monotone_[p] != 0; }

 private:
  std::vector<std::size_t> begin_;
  std::vector<std::uint8_t> over_;
  std::vector<std::uint8_t> monotone_;
};

/// Pack p's best move 1, 2, 4 or 8 options slower than `choice[p]` (MoveRate) that keeps the
/// makespan within `limit_ns`, saves more than 1e-9 J and beats `beat`, judged by `ev` (the plan
/// `choice`): the steps in that order, a step faster somewhere than p's timing now passed over,
/// up to the first one over the limit (slower steps only lengthen it further). Tries whose
/// outcome `memo` tells are skipped: a step known over the limit ends the steps as trying it
/// would (where p's timings are not monotone, only once it is seen no faster than p's timing now,
/// as the try checks first); and where they are monotone and the move to beat is free, a step that could not save more than it even at the current makespan
/// (PackChoices::predicted_energy never falls as the makespan grows: idle power ≥ 0) is passed
/// over untried — as a free move it would not beat it, and a move that is not free never beats a
/// free one. `choice` is restored before returning.
Move best_move(const PackChoices& pc, const pack::PlanEvaluator& ev, std::vector<int>& choice, std::uint32_t p,
               TimeNs limit_ns, MoveRate beat, SearchMemo& memo) {
  Move best;
  best.rate = beat;
  const int k0 = choice[p];
  const bool monotone = memo.monotone(p);
  const TimeNs m0 = ev.makespan_ns();
  for (const int step : {1, 2, 4, 8}) {
    const int k = k0 + step;
    if (k >= static_cast<int>(pc.options()[p].size())) break;
    if (memo.over(p, k)) {
      if (!monotone && !ev.is_slower(p, pc.time(p, k))) continue;
      break;
    }
    // The step's saving at the current makespan: an upper bound of it at any longer one.
    const double at_makespan_j = -pc.move_energy_j(choice, p, k);
    if (monotone && best.rate.free && at_makespan_j <= best.rate.rate) continue;
    const std::optional<TimeNs> m = ev.try_if_slower(p, pc.time(p, k), limit_ns);
    if (!m) continue;  // a non-monotone model
    if (*m > limit_ns) {
      memo.add_over(p, k);
      break;
    }
    const TimeNs growth = *m - m0;
    const double saving = at_makespan_j - pc.idle_energy_j(growth);
    const MoveRate r = rate_of(saving, growth);
    if (saving > 1e-9 && r.beats(best.rate)) best = {k, r};
  }
  return best;
}

/// polish() above kBatchPolishPacks packs (a job of many ranks): each round finds every pack's
/// best single move at the current plan (PlanEvaluator::try_slower, cheap), then applies them
/// together, best rate first (MoveRate): the whole batch is evaluated exactly on the pack graph
/// and kept when it fits the target and lowers the predicted energy, else its better half is
/// tried, down to one move (which fits: it was checked alone). O(log P) exact evaluations per
/// round instead of one incremental update per move; at most kBatchPolishRounds rounds.
std::vector<int> polish_batched(const PackChoices& pc, std::vector<int> choice, TimeNs limit_ns, int max_moves,
                                int& moves) {
  const std::size_t P = pc.packs();
  SearchMemo memo(pc);
  for (int round = 0; round < kBatchPolishRounds && moves < max_moves; ++round) {
    const pack::PlanEvaluator ev(pc.graph(), pc.times(choice));
    const double energy = pc.predicted_energy(choice, ev.makespan_ns());
    std::vector<std::tuple<MoveRate, std::uint32_t, int>> best;  // (rate, pack, option)
    for (std::uint32_t p = 0; p < P; ++p) {
      const Move m = best_move(pc, ev, choice, p, limit_ns, kNoMove, memo);
      if (m.option >= 0) best.emplace_back(m.rate, p, m.option);
    }
    // Best rate first (free moves by saving, then the rest by saving per ns); ties by pack.
    std::stable_sort(best.begin(), best.end(),
                     [](const auto& a, const auto& b) { return std::get<0>(a).beats(std::get<0>(b)); });
    bool kept = false;
    for (std::size_t n = best.size(); n > 0 && !kept; n = n == 1 ? 0 : (n + 1) / 2) {
      std::vector<int> trial = choice;
      for (std::size_t i = 0; i < n; ++i) trial[std::get<1>(best[i])] = std::get<2>(best[i]);
      const TimeNs m = pc.schedule(trial).makespan_ns;
      if (m <= limit_ns && pc.predicted_energy(trial, m) < energy - 1e-9) {
        choice = std::move(trial);
        moves += static_cast<int>(n);
        kept = true;
      }
    }
    if (!kept) break;
  }
  return choice;
}

}  // namespace

std::vector<int> polish(const PackChoices& pc, std::vector<int> choice, TimeNs limit_ns, int max_moves, int& moves) {
  const std::size_t P = pc.packs();
  if (P > kBatchPolishPacks) return polish_batched(pc, std::move(choice), limit_ns, max_moves, moves);
  pack::PlanEvaluator ev(pc.graph(), pc.times(choice));
  SearchMemo memo(pc);
  for (int round = 0; round < max_moves; ++round) {
    int best_p = -1;
    Move best;
    for (std::uint32_t p = 0; p < P; ++p) {
      const Move m = best_move(pc, ev, choice, p, limit_ns, best.rate, memo);
      if (m.option >= 0) best = m, best_p = static_cast<int>(p);
    }
    if (best_p < 0) break;
    choice[best_p] = best.option;
    ev.apply_slower(static_cast<std::uint32_t>(best_p), pc.time(static_cast<std::size_t>(best_p), best.option));
    ++moves;
  }
  return choice;
}

namespace {

/// True when every pack's option factors are non-decreasing in the option index.
bool monotone_factors(const PackChoices& pc) {
  for (const auto& o : pc.options()) {
    for (std::size_t k = 1; k < o.size(); ++k)
      if (o[k].factor < o[k - 1].factor) return false;
  }
  return true;
}

/// With monotone_factors: the largest k < K whose uniform choice is within `limit_ns` (bisection
/// on the remembered makespans), or SIZE_MAX when none is (k + 1 then wraps to 0 clocks).
std::size_t last_uniform_within(const PackChoices& pc, std::size_t K, TimeNs limit_ns) {
  if (K == 0 || pc.uniform_makespan_ns(0) > limit_ns) return SIZE_MAX;
  std::size_t lo = 0, hi = K;  // lo within; hi the first known past it (K: none known)
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (pc.uniform_makespan_ns(mid) <= limit_ns ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

std::optional<std::vector<int>> best_static_choice(const PackChoices& pc, TimeNs limit_ns) {
  std::size_t K = 0;
  for (const auto& o : pc.options()) K = std::max(K, o.size());
  // Energy = idle power × makespan + Σ dynamic energy. The makespan grows with every pack's factor,
  // so the plan with each pack at its smallest factor bounds every makespan from below, and idle ×
  // that + the dynamic sum bounds each clock's energy: clocks are scored in order of that bound,
  // the exact schedule evaluated only while the bound can still win (the result is the full scan's).
  // Each clock's makespan is evaluated once per PackChoices, whatever the limit (the same options
  // are asked at several targets: the plan, its re-plans, the tighter plans).
  // Where every pack's factor rises with k, so does the makespan (a pack's times grow with its
  // factor, and longest paths with them): the clocks past the last within the limit, found by
  // bisection, are left out unevaluated.
  const std::size_t within = monotone_factors(pc) ? last_uniform_within(pc, K, limit_ns) + 1 : K;
  const double floor_j = pc.idle_w() * pc.gpus() * ns_to_s(pc.fastest_makespan_ns());
  std::vector<std::pair<double, std::size_t>> order;  // (lower bound, k)
  for (std::size_t k = 0; k < within; ++k) order.push_back({pc.predicted_energy(pc.uniform_choice(k), 0) + floor_j, k});
  std::sort(order.begin(), order.end());
  std::optional<std::vector<int>> best;
  double best_e = 0;
  std::size_t best_k = 0;
  for (const auto& [bound, k] : order) {
    if (best && bound > best_e * (1 + 1e-12)) break;
    const TimeNs m = pc.uniform_makespan_ns(k);
    if (m > limit_ns) continue;
    std::vector<int> c = pc.uniform_choice(k);
    const double e = pc.predicted_energy(c, m);
    if (!best || e < best_e || (e == best_e && k < best_k)) best = std::move(c), best_e = e, best_k = k;
  }
  return best;
}

std::vector<int> best_per_device_static_choice(const PackChoices& pc, const std::vector<std::int32_t>& device_of_pack,
                                               std::vector<int> start, TimeNs limit_ns) {
  if (device_of_pack.size() != pc.packs() || start.size() != pc.packs())
    throw std::invalid_argument("best_per_device_static_choice: one device and one option per pack needed");
  std::vector<std::int32_t> devices(device_of_pack.begin(), device_of_pack.end());
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  std::vector<int> best = std::move(start);
  double best_e = pc.predicted_energy(best, pc.schedule(best).makespan_ns);
  for (;;) {
    std::optional<std::vector<int>> step;
    double step_e = best_e;
    for (const std::int32_t d : devices) {
      std::vector<int> c = best;
      bool moved = false;
      for (std::size_t p = 0; p < c.size(); ++p) {
        if (device_of_pack[p] != d || c[p] + 1 >= static_cast<int>(pc.options()[p].size())) continue;
        ++c[p];
        moved = true;
      }
      if (!moved) continue;
      const TimeNs m = pc.schedule(c).makespan_ns;
      if (m > limit_ns) continue;
      const double e = pc.predicted_energy(c, m);
      if (e < step_e) step = std::move(c), step_e = e;
    }
    if (!step) return best;
    best = std::move(*step);
    best_e = step_e;
  }
}

std::vector<int> choice_of(const PackProblem& pp, const Solution& s) {
  std::vector<int> choice(pp.work_node.size());
  for (std::size_t p = 0; p < choice.size(); ++p) choice[p] = s.choice[pp.work_node[p]];
  return choice;
}

namespace {

/// The fast solver's cheapest plan within `limit` (search_limit_ns of `target_ns`) on the exact
/// pack graph: the deadline is tightened by each overshoot (at most 8 tries), raise_critical
/// repairs a plan at the fastest deadline; every pack at option 0 when nothing fits.
std::vector<int> solver_plan(const PackChoices& pc, const PackProblem& pp, FastSolver& solver, TimeNs target_ns,
                             TimeNs limit, const std::vector<int>& start, SearchStats& stats) {
  std::vector<int> best = start;
  double best_energy = pc.predicted_energy(best, pc.schedule(best).makespan_ns);
  double deadline_s = ns_to_s(target_ns);
  for (int attempt = 0; attempt < 8; ++attempt) {
    const bool at_fastest = deadline_s <= solver.fastest_makespan_s();
    const auto sol = solver.solve(std::max(deadline_s, solver.fastest_makespan_s()));
    if (!sol) break;
    const std::vector<int> choice = choice_of(pp, *sol);
    const TimeNs m = pc.schedule(choice).makespan_ns;
    if (m <= limit) {
      const double e = pc.predicted_energy(choice, m);
      if (e < best_energy) best = choice, best_energy = e;
      break;
    }
    ++stats.deadline_repairs;
    if (at_fastest) {
      // No tighter deadline exists: raise the packs that are critical in the exact schedule to
      // option 0 until the plan fits (all packs at option 0 always does).
      if (auto fixed = raise_critical(pc, choice, limit)) {
        const double e = pc.predicted_energy(*fixed, pc.schedule(*fixed).makespan_ns);
        if (e < best_energy) best = *fixed, best_energy = e;
      }
      break;
    }
    deadline_s -= ns_to_s(m - target_ns);
  }
  return best;
}

}  // namespace

TimeNs search_limit_ns(const PackChoices& pc, TimeNs target_ns, bool exact_floor) {
  return exact_floor && pc.packs() > 0 && target_ns <= pc.uniform_makespan_ns(0) ? target_ns : target_ns + kRoundingNs;
}

std::vector<int> solve_within(const PackChoices& pc, const PackProblem& pp, FastSolver& solver, TimeNs target_ns,
                              SearchStats& stats) {
  const std::size_t P = pc.packs();
  const int max_moves = static_cast<int>(P) * 16;
  const TimeNs limit = search_limit_ns(pc, target_ns, solver.options().exact_floor);
  const std::vector<int> all_max(P, 0);
  const std::vector<int> uniform = best_static_choice(pc, limit).value_or(all_max);
  auto energy = [&](const std::vector<int>& c) { return pc.predicted_energy(c, pc.schedule(c).makespan_ns); };
  // The solver's plan, polished; and the exact local search alone (it sees port-edge growth the
  // problem does not) from every pack at option 0 and from the best static plan: the cheapest
  // prediction wins. The two searches from fixed starts run on their own threads while the solver
  // plans (every timing is computed first, so the three only read `pc`); the result does not
  // depend on the threads.
  pc.compute_all_times();
  int greedy_moves = 0, static_moves = 0;
  std::future<std::vector<int>> greedy;
  const bool from_max = solver.options().polish_from_max &&
                        (!solver.options().polish_from_max_at_baseline_only || target_ns <= pc.uniform_makespan_ns(0) + kRoundingNs);
  if (from_max) {
    greedy = std::async(std::launch::async, [&] { return polish(pc, all_max, limit, max_moves, greedy_moves); });
  }
  std::future<std::vector<int>> from_static;
  if (solver.options().polish_from_static && uniform != all_max)
    from_static = std::async(std::launch::async, [&] { return polish(pc, uniform, limit, max_moves, static_moves); });
  std::vector<int> best =
      polish(pc, solver_plan(pc, pp, solver, target_ns, limit, uniform, stats), limit, max_moves, stats.polish_moves);
  double best_e = energy(best);
  if (greedy.valid()) {
    std::vector<int> g = greedy.get();
    if (const double e = energy(g); e < best_e - 1e-9) best = std::move(g), best_e = e, ++stats.greedy_wins;
  }
  if (from_static.valid()) {
    std::vector<int> u = from_static.get();
    if (const double e = energy(u); e < best_e - 1e-9) best = std::move(u), ++stats.static_wins;
  }
  return best;
}

}  // namespace emo::opt
