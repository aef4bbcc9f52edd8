// The exact search on the pack graph (opt/pack_search.h): best_static_choice against a full scan
// of every clock on a fresh PackChoices (its remembered makespans must not carry one limit's
// answer into another's), and which starts solve_within runs under FastSolverOptions.
#include "opt/pack_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "graph/hand_trace.h"
#include "opt/pack_problem.h"
#include "opt/solver.h"
#include "opt/packed.h"
#include "pack/pack_graph.h"
#include "pack/packer.h"
#include "pack/random_trace.h"
#include "timing/analysis.h"

namespace emo::testing {
namespace {

std::vector<std::int32_t> device_of_packs(const pack::Packing& p) {
  std::vector<std::int32_t> d;
  for (const auto& k : p.packs) d.push_back(k.device);
  return d;
}

/// Random options per pack, every pack the same clocks: factors rising from 1 — or, with
/// `dips`, now and then falling (a non-monotone model) —, dynamic energies mostly falling (some
/// options dominated); some packs with fewer options than others.
std::vector<std::vector<opt::PackOption>> random_options(Rng& r, std::size_t packs, int k, bool dips = false) {
  std::vector<std::vector<opt::PackOption>> out(packs);
  for (auto& o : out) {
    const int n = r.chance(20) ? std::max(1, k - 2) : k;
    double f = 1, e = 1.0 + static_cast<double>(r.in(0, 1000)) / 100;
    for (int i = 0; i < n; ++i) {
      o.push_back({1410.0 - 100 * i, f, e});
      f = std::max(1.0, f + static_cast<double>(dips && r.chance(25) ? r.in(-80, -1) : r.in(1, 60)) / 100);
      e = std::max(0.0, e + static_cast<double>(r.in(-300, 40)) / 100);
    }
  }
  return out;
}

/// The full scan, by definition: every k, every pack at option min(k, last), evaluated on a fresh
/// PackChoices; the cheapest within `limit` (lowest k on a tie). nullopt when none fits.
std::optional<std::vector<int>> scan(const pack::PackGraph& pg, const std::vector<std::vector<opt::PackOption>>& options,
                                     double idle_w, double gpus, TimeNs limit) {
  const opt::PackChoices fresh(pg, options, idle_w, gpus);
  std::size_t K = 0;
  for (const auto& o : options) K = std::max(K, o.size());
  std::optional<std::vector<int>> best;
  double best_e = 0;
  for (std::size_t k = 0; k < K; ++k) {
    std::vector<int> c(options.size());
    for (std::size_t p = 0; p < c.size(); ++p) c[p] = static_cast<int>(std::min(k, options[p].size() - 1));
    const TimeNs m = fresh.schedule(c).makespan_ns;
    if (m > limit) continue;
    const double e = fresh.predicted_energy(c, m);
    if (!best || e < best_e) best = c, best_e = e;
  }
  return best;
}

/// The packed random trace of `seed`: 1–2 host threads, 1–2 devices (1 + (seed / 2) % 2), 1–3
/// streams, 50 generator steps (launches, syncs, waits), min pack 200 ns.
Packed random_packed(std::uint64_t seed) {
  const int threads = 1 + static_cast<int>(seed % 2), devices = 1 + static_cast<int>((seed / 2) % 2);
  return pack_of(random_trace(seed, threads, devices, 1 + static_cast<int>((seed / 4) % 3), 50), 200);
}

// One PackChoices asked at many limits, loosest and tightest mixed, answers each as a full scan
// on a fresh one does (the cached makespans are the limit-free part; the bisection past the last
// clock within the limit where factors rise with k, the full scan where they dip).
TEST(BestStaticChoice, IsTheFullScanAtEveryLimitAskedOfOneChoices) {
  int compared = 0, none = 0;
  for (std::uint64_t seed = 1; seed <= 120; ++seed) {
    const Packed p = random_packed(seed);
    if (p.pg.packs == 0) continue;
    Rng r{seed * 13};
    const auto options = random_options(r, p.pg.packs, 6, seed % 3 == 0);  // a third with dips
    const double idle_w = seed % 2 ? 1e5 : 1e7;
    const opt::PackChoices pc(p.pg, options, idle_w, devices_of(p.packing));
    const TimeNs base = pc.schedule(std::vector<int>(p.pg.packs, 0)).makespan_ns;
    for (const double slack : {0.3, -0.01, 0.0, 1.5, 0.05, 0.3, 0.6}) {
      const auto limit = static_cast<TimeNs>(std::floor(static_cast<double>(base) * (1 + slack)));
      const auto want = scan(p.pg, options, idle_w, devices_of(p.packing), limit);
      const auto got = opt::best_static_choice(pc, limit);
      ASSERT_EQ(want.has_value(), got.has_value()) << "seed " << seed << " slack " << slack;
      if (!want) {
        ++none;
        continue;
      }
      EXPECT_EQ(*got, *want) << "seed " << seed << " slack " << slack;
      ++compared;
    }
  }
  EXPECT_GT(compared, 300);
  EXPECT_GT(none, 20);  // the −1 % limits: nothing fits
}

/// Calls f(seed, packed, choices, problem) for the solve_within cases: seeds 1–80's packed random
/// traces (random_packed; those without a pack skipped), random options of 6 clocks (seed × 17),
/// idle power 1 MW (so the makespan weighs).
template <typename F>
void for_each_solve_within_case(F&& f) {
  for (std::uint64_t seed = 1; seed <= 80; ++seed) {
    const Packed p = random_packed(seed);
    if (p.pg.packs == 0) continue;
    Rng r{seed * 17};
    const opt::PackChoices pc(p.pg, random_options(r, p.pg.packs, 6), 1e6, devices_of(p.packing));
    const opt::PackProblem pp = opt::build_pack_problem(p.pg, pc.options(), device_of_packs(p.packing), 1e6);
    f(seed, p, pc, pp);
  }
}

// polish_from_max_at_baseline_only: at the baseline target (every pack at option 0's makespan,
// within kRoundingNs) solve_within is the default search (the start from every pack at option 0 runs); above it, the
// search without that start. The random cases include ones where that start changes the answer
// above the baseline, so the option is seen to drop it there.
TEST(SolveWithin, TheStartFromTheBaselineOnlyAtTheBaselineWhenAsked) {
  int at_base = 0, above = 0, start_mattered = 0;
  for_each_solve_within_case([&](std::uint64_t seed, const Packed& p, const opt::PackChoices& pc,
                                 const opt::PackProblem& pp) {
    auto solve = [&](TimeNs target, bool from_max, bool at_base_only) {
      opt::FastSolverOptions so;
      so.polish_from_static = false;
      so.polish_from_max = from_max;
      so.polish_from_max_at_baseline_only = at_base_only;
      opt::FastSolver solver(pp.problem, so);
      opt::SearchStats stats;
      return opt::solve_within(pc, pp, solver, target, stats);
    };
    const TimeNs base = pc.schedule(std::vector<int>(p.pg.packs, 0)).makespan_ns;
    EXPECT_EQ(solve(base, true, true), solve(base, true, false)) << "seed " << seed;
    ++at_base;
    for (const double slack : {0.05, 0.3}) {
      // Above the baseline's makespan by more than the search's rounding tolerance (the random
      // traces' makespans are tens of µs).
      const auto target = static_cast<TimeNs>(std::floor(static_cast<double>(base) * (1 + slack))) + 2 * opt::kRoundingNs;
      const std::vector<int> without = solve(target, false, false);
      EXPECT_EQ(solve(target, true, true), without) << "seed " << seed << " slack " << slack;
      if (solve(target, true, false) != without) ++start_mattered;
      ++above;
    }
  });
  EXPECT_GT(at_base, 60);
  EXPECT_GT(start_mattered, 0);
}

/// With exact_floor (a +0 % latency target), at the floor (the target is the makespan of every
/// pack at option 0) no plan is slower than the baseline on the exact pack graph — the rounding
/// tolerance applies above it only (opt::search_limit_ns) — and the plan still saves where a pack
/// has slack. The cases of for_each_solve_within_case; the limits by hand from the baseline's
/// makespan.
TEST(SolveWithin, AtTheFloorNoPlanIsSlowerThanTheBaseline) {
  int cases = 0, saved = 0, over_with_tolerance = 0;
  for_each_solve_within_case([&](std::uint64_t seed, const Packed& p, const opt::PackChoices& pc,
                                 const opt::PackProblem& pp) {
    const std::vector<int> all_max(p.pg.packs, 0);
    const TimeNs base = pc.schedule(all_max).makespan_ns;
    EXPECT_EQ(opt::search_limit_ns(pc, base, true), base);
    EXPECT_EQ(opt::search_limit_ns(pc, base - 7, true), base - 7);
    EXPECT_EQ(opt::search_limit_ns(pc, base + 1, true), base + 1 + opt::kRoundingNs);
    EXPECT_EQ(opt::search_limit_ns(pc, base, false), base + opt::kRoundingNs);
    auto solve = [&](bool exact_floor) {
      opt::FastSolverOptions so;
      so.exact_floor = exact_floor;
      opt::FastSolver solver(pp.problem, so);
      opt::SearchStats stats;
      return opt::solve_within(pc, pp, solver, base, stats);
    };
    const std::vector<int> plan = solve(true);
    EXPECT_LE(pc.schedule(plan).makespan_ns, base) << "seed " << seed;
    ++cases;
    if (plan != all_max) ++saved;
    if (pc.schedule(solve(false)).makespan_ns > base) ++over_with_tolerance;
  });
  EXPECT_GT(cases, 60);
  EXPECT_GT(saved, 0);
  EXPECT_GT(over_with_tolerance, 0) << "no case where the tolerance mattered: the test shows nothing";
}

}  // namespace
}  // namespace emo::testing

namespace emo::testing {
namespace {

/// True when timing `t` is no faster than `from` anywhere (duration and every port lag).
bool not_faster_anywhere(const pack::PackTime& t, const pack::PackTime& from) {
  if (t.dur_ns < from.dur_ns || t.port_lags_ns.size() != from.port_lags_ns.size()) return false;
  for (std::size_t i = 0; i < t.port_lags_ns.size(); ++i)
    if (t.port_lags_ns[i] < from.port_lags_ns[i]) return false;
  return true;
}

/// A move's worth by the local search's definition (its rate rule): a move that keeps the
/// makespan beats one that does not; then the larger saving (J) for those, the larger saving per
/// ns of makespan growth for the others.
struct RateByDefinition {
  bool free = false;
  double rate = 0;
  bool beats(const RateByDefinition& o) const { return free != o.free ? free : rate > o.rate; }
};

/// A move by definition: pack, option, its rate.
struct MoveByDefinition {
  int p = -1, k = -1;
  RateByDefinition rate;
};

/// The predicted energy a move of pack p to option k saves at the current makespan, by its parts:
/// p's dynamic energy (negative as 0) and the switch heads of p and of the packs after it
/// (`after`: pack → the packs whose pack before it is), read off the choice before and after.
/// Summed from these parts, as the product does, so that near-ties (the options' energies are on
/// a 0.01 J grid) are broken alike; that the parts sum to the difference of two predicted_energy
/// calls is PackChoices.MoveEnergyIsTheDifferenceOfThePredictions's.
double saving_by_parts(const opt::PackChoices& pc, std::vector<int>& choice, std::size_t p, int k,
                       const std::vector<std::vector<std::size_t>>& after) {
  const auto& o = pc.options()[p];
  const int k0 = choice[p];
  double d = std::max(0.0, o[static_cast<std::size_t>(k)].dynamic_energy_j) -
             std::max(0.0, o[static_cast<std::size_t>(k0)].dynamic_energy_j);
  if (pc.switch_head_ns() == 0) return -d;
  auto heads = [&] {
    double h = pc.switch_head_energy_j(choice, p);
    if (p < after.size())
      for (const std::size_t q : after[p]) h += pc.switch_head_energy_j(choice, q);
    return h;
  };
  const double before_j = heads();
  choice[p] = k;
  const double after_j = heads();
  choice[p] = k0;
  return -(d + (after_j - before_j));
}

/// Pack p's move by the definition of the exact local search, every try's makespan a full
/// evaluation of the pack graph: its steps 1, 2, 4, 8 options slower in order — a step faster
/// somewhere than the pack's timing now passed over, the first over `limit` ending them —; among
/// those saving more than 1e-9 J (saving_by_parts less idle power × GPUs × the makespan growth
/// from `m0`), the best rate that beats `beat` (the first on a tie). k = -1 when none.
MoveByDefinition best_step_by_definition(const opt::PackChoices& pc, std::vector<int>& choice, std::size_t p,
                                         TimeNs limit, TimeNs m0, RateByDefinition beat,
                                         const std::vector<std::vector<std::size_t>>& after) {
  MoveByDefinition best;
  best.rate = beat;
  const int k0 = choice[p];
  for (const int step : {1, 2, 4, 8}) {
    const int k = k0 + step;
    if (k >= static_cast<int>(pc.options()[p].size())) break;
    if (!not_faster_anywhere(pc.time(p, k), pc.time(p, k0))) continue;
    choice[p] = k;
    const TimeNs m = pc.schedule(choice).makespan_ns;
    choice[p] = k0;
    if (m > limit) break;
    const double saving =
        saving_by_parts(pc, choice, p, k, after) - pc.idle_w() * pc.gpus() * static_cast<double>(m - m0) * 1e-9;
    const RateByDefinition r = m == m0 ? RateByDefinition{true, saving}
                                       : RateByDefinition{false, saving / static_cast<double>(m - m0)};
    if (saving > 1e-9 && r.beats(best.rate)) best = {static_cast<int>(p), k, r};
  }
  return best;
}

/// opt::polish by its definition below kBatchPolishPacks packs (nothing remembered between
/// rounds): each round, every pack's move by definition, the best rate over all packs (the first
/// pack on a tie) made; none: done. At most `max_moves` moves.
std::vector<int> polish_by_definition(const opt::PackChoices& pc, std::vector<int> choice, TimeNs limit, int max_moves,
                                      int& moves, const std::vector<std::vector<std::size_t>>& after) {
  for (int round = 0; round < max_moves; ++round) {
    const TimeNs m0 = pc.schedule(choice).makespan_ns;
    MoveByDefinition best;
    for (std::size_t p = 0; p < pc.packs(); ++p) {
      const MoveByDefinition m = best_step_by_definition(pc, choice, p, limit, m0, best.rate, after);
      if (m.k >= 0) best = m;
    }
    if (best.k < 0) break;
    choice[static_cast<std::size_t>(best.p)] = best.k;
    ++moves;
  }
  return choice;
}

/// opt::polish by its definition above kBatchPolishPacks packs: each round (at most
/// kBatchPolishRounds, while moves < max_moves), every pack's move by definition, sorted by rate
/// (best first, then pack); the first n of them made together, n from all of them halving
/// (rounded up) down to 1, the first batch within `limit` predicting less than the plan less
/// 1e-9 J kept; none: done.
std::vector<int> polish_batched_by_definition(const opt::PackChoices& pc, std::vector<int> choice, TimeNs limit,
                                              int max_moves, int& moves,
                                              const std::vector<std::vector<std::size_t>>& after) {
  for (int round = 0; round < opt::kBatchPolishRounds && moves < max_moves; ++round) {
    const TimeNs m0 = pc.schedule(choice).makespan_ns;
    const double energy = pc.predicted_energy(choice, m0);
    std::vector<MoveByDefinition> best;
    for (std::size_t p = 0; p < pc.packs(); ++p) {
      const MoveByDefinition m = best_step_by_definition(pc, choice, p, limit, m0, {}, after);
      if (m.k >= 0) best.push_back(m);
    }
    std::stable_sort(best.begin(), best.end(),
                     [](const MoveByDefinition& a, const MoveByDefinition& b) { return a.rate.beats(b.rate); });
    bool kept = false;
    for (std::size_t n = best.size(); n > 0 && !kept; n = n == 1 ? 0 : (n + 1) / 2) {
      std::vector<int> trial = choice;
      for (std::size_t i = 0; i < n; ++i) trial[static_cast<std::size_t>(best[i].p)] = best[i].k;
      const TimeNs m = pc.schedule(trial).makespan_ns;
      if (m <= limit && pc.predicted_energy(trial, m) < energy - 1e-9) {
        choice = std::move(trial);
        moves += static_cast<int>(n);
        kept = true;
      }
    }
    if (!kept) break;
  }
  return choice;
}

/// opt::polish and `by_definition` from `start` within `limit`, at most P × 16 moves: the moves
/// opt::polish made, or -1 (with the failures reported) when the plans or move counts differ.
/// `after`: per pack, the packs whose switch head follows it (empty without heads).
template <typename Reference>
int polish_agrees(const opt::PackChoices& pc, const std::vector<int>& start, TimeNs limit, Reference&& by_definition,
                  const std::vector<std::vector<std::size_t>>& after) {
  const int max_moves = static_cast<int>(pc.packs()) * 16;
  int want_moves = 0, got_moves = 0;
  const std::vector<int> want = by_definition(pc, start, limit, max_moves, want_moves, after);
  const std::vector<int> got = opt::polish(pc, start, limit, max_moves, got_moves);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got_moves, want_moves);
  return got == want && got_moves == want_moves ? got_moves : -1;
}

// The exact local search skips tries whose outcome it knows (a pack at an option found over the
// limit stays over it as the plan only slows; where a pack's timings never get faster with the
// option, a step that cannot win even at the current makespan is passed over) and times the rest
// incrementally: it must make the moves of its definition, every try evaluated in full, from
// every pack at option 0 and from the models' best static plan, at limits from the baseline to
// 30 % above it — with non-monotone models (a third of the cases) and with switch heads priced
// (half), so that a move's energy depends on its neighbours.
TEST(Polish, MakesTheMovesOfItsDefinition) {
  int searches = 0, moves_made = 0, dipped_with_moves = 0;
  for (std::uint64_t seed = 1; seed <= 90; ++seed) {
    const Packed p = random_packed(seed);
    if (p.pg.packs == 0) continue;
    Rng r{seed * 29};
    const bool dips = seed % 3 == 0;
    opt::PackChoices pc(p.pg, random_options(r, p.pg.packs, 9, dips), seed % 2 ? 1e6 : 1e5, devices_of(p.packing));
    std::vector<std::vector<std::size_t>> after;  // the packs whose head follows each pack
    if (seed % 2 == 0) {
      opt::SwitchHeads h;
      h.head_ns = 150;
      for (std::uint32_t q = 0; q < p.pg.packs; ++q) {
        h.before.push_back(static_cast<std::int32_t>(q) - 1);
        h.ops.push_back({{0, 100}, {120, 300}});
        after.push_back(q + 1 < p.pg.packs ? std::vector<std::size_t>{q + 1} : std::vector<std::size_t>{});
      }
      pc.set_switch_heads(h);
    }
    const std::vector<int> all_max(p.pg.packs, 0);
    const TimeNs base = pc.schedule(all_max).makespan_ns;
    for (const double slack : {0.0, 0.02, 0.1, 0.3}) {
      const auto limit = static_cast<TimeNs>(std::floor(static_cast<double>(base) * (1 + slack)));
      const std::vector<int> uniform = opt::best_static_choice(pc, limit).value_or(all_max);
      for (const std::vector<int>& start : {all_max, uniform}) {
        const int got_moves = polish_agrees(pc, start, limit, polish_by_definition, after);
        ASSERT_GE(got_moves, 0) << "seed " << seed << " slack " << slack;
        ++searches;
        moves_made += got_moves;
        if (dips && got_moves > 0) ++dipped_with_moves;
      }
    }
  }
  EXPECT_GT(searches, 400);
  EXPECT_GT(moves_made, 1000);  // the searches do search
  EXPECT_GT(dipped_with_moves, 30);
}

// Above kBatchPolishPacks packs the search applies each round's moves as one batch, rebuilding
// its timing of the plan each round while what it knows (options over the limit) carries over:
// it must make the batches of its definition, every try a full evaluation, on random traces of
// more than kBatchPolishPacks packs, half of them with non-monotone models.
TEST(Polish, BatchedMakesTheBatchesOfItsDefinition) {
  int searches = 0, moves_made = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const Packed p = pack_of(random_trace(seed, 2, 2, 3, 2000), 200);
    ASSERT_GT(p.pg.packs, opt::kBatchPolishPacks) << "seed " << seed << ": the batched path needs more packs";
    Rng r{seed * 37};
    const opt::PackChoices pc(p.pg, random_options(r, p.pg.packs, 9, seed % 2 == 0), 1e6, devices_of(p.packing));
    const std::vector<int> all_max(p.pg.packs, 0);
    const TimeNs base = pc.schedule(all_max).makespan_ns;
    for (const double slack : {0.0, 0.05, 0.3}) {
      const auto limit = static_cast<TimeNs>(std::floor(static_cast<double>(base) * (1 + slack)));
      const int got_moves = polish_agrees(pc, all_max, limit, polish_batched_by_definition, {});
      ASSERT_GE(got_moves, 0) << "seed " << seed << " slack " << slack;
      ++searches;
      moves_made += got_moves;
    }
  }
  EXPECT_EQ(searches, 18);
  EXPECT_GT(moves_made, 250);
}

/// One thread runs k1, k2, k3 (1000 ns each) on GPU 0, one after another, each launched (5 ns)
/// after the device sync that waited for the one before. Worked out on paper: each launch takes
/// 5 ns, its kernel starts 5 ns after it, the sync returns 5 ns after the kernel: 15 ns per
/// kernel on top of its 1000 × f, so the makespan is 45 + 1000 (f1 + f2 + f3) and the packs
/// (one per kernel, by time) share one makespan budget.
trace::Trace three_in_series() {
  HandTrace h;
  TimeNs t = 0;
  for (int i = 0; i < 3; ++i) {
    const std::int64_t corr = 2 * i + 1;
    h.call("cudaLaunchKernel", t, 5, corr);
    h.kernel("k" + std::to_string(i + 1), t + 10, 1000, 7, corr, 0);
    h.call("cudaDeviceSynchronize", t + 5, 1010, corr + 1);
    h.sync(SyncKind::kContextSync, t + 5, 1010, corr + 1, 0);
    t += 1015;
  }
  return h.finish();
}

// The rate rule, worked by hand. k1's pack: one option slower (factor 1.1, +100 ns) saves 6 J;
// k2's and k3's: one option slower (1.05, +50 ns) saves 4 J each, two (1.1) 4.5 J. Idle power 0,
// a budget of 100 ns. The largest saving first takes k1's 6 J and spends the whole budget (24 J
// left of 30); the rate rule takes k2's and k3's first steps (0.08 J/ns each, against 0.06) and
// saves 8 J (22 J) — the optimum, by a full enumeration of the 27 plans. Ties (k2, k3) go to the
// first pack: the same plan either way here.
TEST(Polish, SpendsTheMakespanBudgetWhereItSavesMostPerNs) {
  const Packed p = pack_of(three_in_series(), 1);
  ASSERT_EQ(p.pg.packs, 3u);
  const std::vector<opt::PackOption> a{{1410, 1, 10}, {1300, 1.1, 4}, {1200, 1.2, 3.5}};
  const std::vector<opt::PackOption> b{{1410, 1, 10}, {1300, 1.05, 6}, {1200, 1.1, 5.5}};
  const opt::PackChoices pc(p.pg, {a, b, b}, 0.0, 1);
  const TimeNs base = pc.schedule({0, 0, 0}).makespan_ns;
  ASSERT_EQ(base, 3045);
  ASSERT_EQ(pc.schedule({1, 0, 0}).makespan_ns, 3145);
  ASSERT_EQ(pc.schedule({0, 1, 1}).makespan_ns, 3145);
  const TimeNs limit = base + 100;
  int moves = 0;
  const std::vector<int> got = opt::polish(pc, {0, 0, 0}, limit, 48, moves);
  EXPECT_EQ(got, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(moves, 2);
  EXPECT_DOUBLE_EQ(pc.predicted_energy(got, pc.schedule(got).makespan_ns), 22);
  double best = 1e300;
  for (int i = 0; i < 27; ++i) {
    const std::vector<int> c{i % 3, i / 3 % 3, i / 9};
    const TimeNs m = pc.schedule(c).makespan_ns;
    if (m <= limit) best = std::min(best, pc.predicted_energy(c, m));
  }
  EXPECT_DOUBLE_EQ(best, 22);
  EXPECT_DOUBLE_EQ(pc.predicted_energy({1, 0, 0}, 3145), 24) << "the largest saving first: k1's 6 J, the budget spent";
}

/// Thread 1 launches k1 (stream 7, [10, 1010)) and k2 (stream 8, [10, 2010)) on GPU 0, waits for
/// stream 7 (k1; returns at 1015), then launches k3 on GPU 1 ([1030, 5030)). With a min pack longer
/// than the trace, GPU 0 is one pack {k1, k2} whose end (k2's) has slack while k1's end, an exit
/// port, is on the critical path k1 → sync → k3.
trace::Trace exit_on_the_critical_path() {
  HandTrace h;
  h.call("cudaLaunchKernel", 0, 5, 1);
  h.kernel("k1", 10, 1000, 7, 1, 0);
  h.call("cudaLaunchKernel", 5, 3, 2);
  h.kernel("k2", 10, 2000, 8, 2, 0);
  h.call("cudaStreamSynchronize", 8, 1007, 3);
  h.sync(SyncKind::kStreamSync, 8, 1007, 3, 0, 7);
  h.call("cudaLaunchKernel", 1020, 5, 4);
  h.kernel("k3", 1030, 4000, 7, 4, 1);
  return h.finish();
}

// Stop 49, worked by hand: at factor 2 on GPU 0's pack, k1 ends at 2010, the sync at 2015, k3 runs
// [2030, 6030): 1000 ns over the all-max makespan (5030 − 0). The pack's end (k2's, [10, 4010)) has
// 2020 ns of slack; its exit (k1's end) none. raise_critical must raise that pack (by its end alone
// it saw nothing to raise: nullopt). pack_slack: 0 for GPU 0's pack (its exit), 0 for k3's.
TEST(RaiseCritical, RaisesAPackWhoseExitIsCriticalThoughItsEndHasSlack) {
  const Packed p = pack_of(exit_on_the_critical_path(), 1'000'000'000);
  ASSERT_EQ(p.pg.packs, 2u);
  ASSERT_EQ(p.packing.packs[0].device, 0);
  const std::vector<opt::PackOption> o{{1410, 1.0, 10}, {705, 2.0, 5}};
  const opt::PackChoices pc(p.pg, {o, o}, 0.0, 2);
  const TimeNs base = pc.schedule({0, 0}).makespan_ns;
  ASSERT_EQ(base, 5030);
  const timing::Schedule slow = pc.schedule({1, 0});
  ASSERT_EQ(slow.makespan_ns, 6030);
  const graph::DepGraph at = p.pg.graph_at(pc.times({1, 0}));
  EXPECT_EQ(timing::slack(at, slow, at.dur)[0], 2020) << "the pack's end: k2's, 4010 against 6030";
  EXPECT_EQ(pack::pack_slack(p.pg, at, slow), (std::vector<TimeNs>{0, 0}));
  EXPECT_EQ(opt::raise_critical(pc, {1, 0}, base), (std::optional<std::vector<int>>{{0, 0}}));
  EXPECT_EQ(opt::raise_critical(pc, {1, 0}, 6030), (std::optional<std::vector<int>>{{1, 0}})) << "fits as it is";
  timing::Schedule other;
  other.time.assign(4, 0);
  EXPECT_THROW(pack::pack_slack(p.pg, at, other), std::invalid_argument);
}

// move_energy_j is the change of predicted_energy, the makespan unchanged: by hand on the case of
// SwitchHeadsWorkedByHand, and against the difference of two predictions on random options,
// random choices and random switch-head chains (a pack before several others included).
TEST(PackChoices, MoveEnergyIsTheDifferenceOfThePredictions) {
  int checked = 0;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    Rng r{seed * 53};
    const std::size_t P = 2 + static_cast<std::size_t>(r.in(0, 12));
    pack::PackGraph pg;
    pg.packs = static_cast<std::uint32_t>(P);
    opt::PackChoices pc(pg, random_options(r, P, 7, seed % 2 == 0), 100, 2);
    if (seed % 3 != 0) {
      opt::SwitchHeads h;
      h.head_ns = 50 + r.in(0, 200);
      for (std::size_t q = 0; q < P; ++q) {
        std::int32_t before = r.chance(20) ? -1 : static_cast<std::int32_t>(r.in(0, static_cast<int>(P) - 1));
        if (before == static_cast<std::int32_t>(q)) before = -1;
        h.before.push_back(before);
        h.ops.push_back({{0, 40 + r.in(0, 100)}, {150, 30 + r.in(0, 200)}});
      }
      pc.set_switch_heads(h);
    }
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<int> choice(P);
      for (std::size_t q = 0; q < P; ++q) choice[q] = r.in(0, static_cast<int>(pc.options()[q].size()) - 1);
      const std::vector<int> kept = choice;
      const TimeNs m = 1000 + r.in(0, 5000);
      for (std::size_t q = 0; q < P; ++q) {
        for (int k = 0; k < static_cast<int>(pc.options()[q].size()); ++k) {
          std::vector<int> moved = choice;
          moved[q] = k;
          const double want = pc.predicted_energy(moved, m) - pc.predicted_energy(choice, m);
          EXPECT_NEAR(pc.move_energy_j(choice, q, k), want, 1e-9) << "seed " << seed << " pack " << q << " option " << k;
          ASSERT_EQ(choice, kept) << "the choice is restored";
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

// reuse_times takes another choices' timings exactly where an option's factor is the same (half
// the packs refitted here: their factors moved), and every timing afterwards — taken or computed —
// is pack_time's at the option's factor. Choices of another pack graph are refused.
TEST(PackChoices, ReusedTimingsAreThoseOfTheSameFactor) {
  int taken_total = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Packed p = random_packed(seed);
    if (p.pg.packs < 2) continue;
    Rng r{seed * 31};
    const auto before = random_options(r, p.pg.packs, 6);
    auto after = before;
    std::size_t same = 0;
    for (std::size_t q = 0; q < after.size(); ++q) {
      for (opt::PackOption& o : after[q]) {
        if (q % 2 == 1 && o.factor > 1) o.factor += 0.01;  // refitted (option 0, factor 1, stays)
        // Taken when any option of the old list had this factor (a list may repeat one).
        same += std::any_of(before[q].begin(), before[q].end(), [&](const opt::PackOption& b) { return b.factor == o.factor; });
      }
    }
    const opt::PackChoices old(p.pg, before, 1e6, devices_of(p.packing));
    old.compute_all_times();
    opt::PackChoices fresh(p.pg, after, 1e6, devices_of(p.packing));
    const std::size_t taken = fresh.reuse_times(old);
    EXPECT_EQ(taken, same) << "seed " << seed;
    taken_total += static_cast<int>(taken);
    // From choices that computed only some timings (pack 0 all, pack 1 its option 0 alone, the
    // rest none), into choices that hold some already (pack 0's option 0): only what the first
    // holds and the second lacks is taken.
    const opt::PackChoices lazy(p.pg, before, 1e6, devices_of(p.packing));
    for (std::size_t k = 0; k < before[0].size(); ++k) (void)lazy.time(0, static_cast<int>(k));
    (void)lazy.time(1, 0);
    opt::PackChoices partly(p.pg, after, 1e6, devices_of(p.packing));
    (void)partly.time(0, 0);
    std::size_t want_lazy = 0;
    for (std::size_t k = 1; k < after[0].size(); ++k)
      want_lazy += std::any_of(before[0].begin(), before[0].end(), [&](const opt::PackOption& b) { return b.factor == after[0][k].factor; });
    for (std::size_t k = 0; k < after[1].size(); ++k) want_lazy += after[1][k].factor == before[1][0].factor;
    EXPECT_EQ(partly.reuse_times(lazy), want_lazy) << "seed " << seed;
    for (std::size_t q = 0; q < 2; ++q) {
      for (std::size_t k = 0; k < after[q].size(); ++k) {
        const pack::PackTime want = p.pg.pack_time(static_cast<std::uint32_t>(q), after[q][k].factor);
        ASSERT_EQ(partly.time(q, static_cast<int>(k)).port_lags_ns, want.port_lags_ns) << "seed " << seed;
        ASSERT_EQ(partly.time(q, static_cast<int>(k)).dur_ns, want.dur_ns) << "seed " << seed;
      }
    }
    for (std::size_t q = 0; q < after.size(); ++q) {
      for (std::size_t k = 0; k < after[q].size(); ++k) {
        const pack::PackTime want = p.pg.pack_time(static_cast<std::uint32_t>(q), after[q][k].factor);
        const pack::PackTime& got = fresh.time(q, static_cast<int>(k));
        ASSERT_EQ(got.dur_ns, want.dur_ns) << "seed " << seed << " pack " << q << " option " << k;
        ASSERT_EQ(got.port_lags_ns, want.port_lags_ns) << "seed " << seed << " pack " << q << " option " << k;
      }
    }
    const pack::PackGraph copy = p.pg;  // the same shape, another graph: its timings are not taken
    const opt::PackChoices theirs(copy, before, 1e6, 1);
    EXPECT_THROW(fresh.reuse_times(theirs), std::invalid_argument) << "seed " << seed;
  }
  EXPECT_GT(taken_total, 100);
}

// The predicted energy must not fall as the makespan grows (the local search passes over moves
// on that bound): negative or NaN idle power or GPU counts are refused.
TEST(PackChoices, RefusesNegativeIdlePowerOrGpus) {
  pack::PackGraph pg;
  pg.packs = 1;
  const std::vector<std::vector<opt::PackOption>> options{{{1410, 1, 1}}};
  EXPECT_NO_THROW(opt::PackChoices(pg, options, 0, 1));
  EXPECT_THROW(opt::PackChoices(pg, options, -1, 1), std::invalid_argument);
  EXPECT_THROW(opt::PackChoices(pg, options, 60, -1), std::invalid_argument);
  EXPECT_THROW(opt::PackChoices(pg, options, std::nan(""), 1), std::invalid_argument);
}

/// Three packs on one GPU (the first's pack before is the last: an iteration starts at its last
/// pack's clock), options at 1410 / 1065 / 705 MHz with factors 1 / 1.2 / 1.5. Pack 1's ops, as
/// recorded: [0, 6) and [10, 20) ms, 16 ms busy. Worked by hand, 15 ms heads (a 20 ms latency):
/// - {1410, 705, 1065}: pack 1 entered by a switch down from 1410 (factor 1): its head covers
///   its recording's first 15 ms, 6 + 5 = 11 of 16 ms busy: 11/16 × (5 − 3) = 1.375 J; packs 0
///   and 2 are entered by switches up: nothing.
/// - {1065, 705, 705}: pack 1 from 1065 (factor 1.2): 15 / 1.2 = 12.5 ms of its recording, 6 +
///   2.5 = 8.5 of 16: 8.5/16 × (4 − 3) = 0.53125 J; pack 2 at its clock before: nothing.
TEST(PackChoices, SwitchHeadsWorkedByHand) {
  pack::PackGraph pg;
  pg.packs = 3;
  const std::vector<double> clocks{1410, 1065, 705}, factors{1, 1.2, 1.5};
  const std::vector<std::vector<double>> dynamic{{10, 8, 6}, {5, 4, 3}, {9, 7, 5}};
  std::vector<std::vector<opt::PackOption>> options(3);
  for (std::size_t p = 0; p < 3; ++p)
    for (std::size_t k = 0; k < 3; ++k) options[p].push_back({clocks[k], factors[k], dynamic[p][k]});
  opt::PackChoices pc(pg, options, 60, 1);
  const std::vector<int> first{0, 2, 1}, second{1, 2, 2};
  EXPECT_DOUBLE_EQ(pc.predicted_energy(first, 0), 10 + 3 + 7) << "no heads priced before set_switch_heads";
  constexpr TimeNs kMs = 1'000'000;
  opt::SwitchHeads h;
  h.head_ns = 15 * kMs;
  h.before = {2, 0, 1};
  h.ops = {{{0, 20 * kMs}}, {{0, 6 * kMs}, {10 * kMs, 10 * kMs}}, {{0, 30 * kMs}}};
  pc.set_switch_heads(h);
  EXPECT_DOUBLE_EQ(pc.switch_head_energy_j(first, 0), 0);
  EXPECT_DOUBLE_EQ(pc.switch_head_energy_j(first, 1), 1.375);
  EXPECT_DOUBLE_EQ(pc.switch_head_energy_j(first, 2), 0);
  EXPECT_DOUBLE_EQ(pc.predicted_energy(first, 0), 10 + 3 + 7 + 1.375);
  EXPECT_DOUBLE_EQ(pc.switch_head_energy_j(second, 1), 0.53125);
  EXPECT_DOUBLE_EQ(pc.predicted_energy(second, 0), 8 + 3 + 5 + 0.53125);
  EXPECT_DOUBLE_EQ(pc.predicted_energy(second, 1'000'000'000), 60 + 8 + 3 + 5 + 0.53125) << "idle power × 1 s × 1 GPU";
  EXPECT_DOUBLE_EQ(pc.predicted_energy({0, 0, 0}, 0), 10 + 5 + 9) << "a static plan has no switch";
  // Pack 0 of `first` to 1065 MHz: its dynamic energy 10 -> 8 J; pack 1 (before: pack 0) then
  // runs its head at 1065 instead of 1410 MHz: share 8.5 / 16 (its window 15 / 1.2 = 12.5 ms holds
  // 6 + 2.5 ms of its 16 ms of work) × (4 − 3 J) = 0.53125 J instead of 1.375 J; pack 0's own head
  // (pack 2 before it, at 1065 MHz) stays 0.
  std::vector<int> moving = first;
  EXPECT_DOUBLE_EQ(pc.move_energy_j(moving, 0, 1), -2 + (0.53125 - 1.375));
  EXPECT_EQ(moving, first);

  opt::SwitchHeads bad = h;
  bad.head_ns = -1;
  EXPECT_THROW(pc.set_switch_heads(bad), std::invalid_argument);
  bad = h;
  bad.before = {2, 1, 1};
  EXPECT_THROW(pc.set_switch_heads(bad), std::invalid_argument) << "a pack before itself";
  bad = h;
  bad.before = {2, 0};
  EXPECT_THROW(pc.set_switch_heads(bad), std::invalid_argument);
  bad = h;
  bad.ops.pop_back();
  EXPECT_THROW(pc.set_switch_heads(bad), std::invalid_argument);
}

}  // namespace
}  // namespace emo::testing
