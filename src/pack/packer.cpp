#include "pack/packer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>


namespace emo::pack {
namespace {

using graph::kDroppedLag;

/// Root of a timepoint whose time is pinned (a release), not derived from another timepoint.
constexpr std::uint32_t kAbsoluteRoot = UINT32_MAX;

/// A maximal run of one device's GPU ops whose recorded intervals overlap.
struct Island {
  std::int32_t device;
  std::uint32_t begin;  ///< Into the device-sorted node list.
  std::uint32_t end;
  TimeNs start_ns;
  TimeNs end_ns;
  bool critical = false;
  bool collective = false;
  bool feeds_host = false;  ///< An op of it has an edge to a host timepoint (or another device).
  bool waits_on_rank = false;  ///< An op of it is bound by a linked collective that waited for another rank.
  bool has_work = false;    ///< It holds an op that is not a linked collective (a linked job's islands).
  TimeNs min_slack_ns = INT64_MAX;  ///< Least slack of its work (its ops that are not linked collectives).
  TimeNs busy_ns = 0;       ///< Σ its ops' recorded durations.
  double sensitivity = 0;   ///< Busy-time-weighted mean of its ops' clock sensitivity.
};

class Packer {
 public:
  Packer(const trace::Trace& t, const DepGraph& g, const timing::Schedule& s,
         std::span<const TimeNs> slack, TimeNs min_pack, std::span<const float> op_sensitivity)
      : t_(t), g_(g), s_(s), slack_(slack), min_pack_(min_pack), op_sensitivity_(op_sensitivity) {}

  Packing run() {
    out_.min_pack_ns = min_pack_;
    out_.pack_of.assign(g_.nodes(), kNoPack);
    mark_linked_collectives();
    build_islands();
    compute_roots();
    compute_tight_sources();
    std::size_t i = 0;
    while (i < islands_.size()) {
      std::size_t j = i;
      while (j < islands_.size() && islands_[j].device == islands_[i].device) ++j;
      pack_device(i, j);
      i = j;
    }
    count_mid_pack_exits();
    return std::move(out_);
  }

 private:
  // ---- islands -------------------------------------------------------------------------------

  void build_islands() {
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) {
      if (g_.gpu[n]) sorted_.push_back(n);
    }
    std::stable_sort(sorted_.begin(), sorted_.end(), [&](std::uint32_t a, std::uint32_t b) {
      const std::int32_t da = t_.ops.device[g_.op[a]], db = t_.ops.device[g_.op[b]];
      if (da != db) return da < db;
      return g_.rec_start[a] < g_.rec_start[b];
    });
    // Which GPU nodes feed a host timepoint (host sync) or another device's op.
    std::vector<std::uint8_t> feeds(g_.nodes(), 0);
    for (std::uint32_t to = 0; to < 2 * g_.nodes(); ++to) {
      const std::uint32_t tn = DepGraph::node_of(to);
      for (std::uint32_t k = g_.in_begin[to]; k < g_.in_begin[to + 1]; ++k) {
        if (g_.in_lag[k] == kDroppedLag) continue;
        const std::uint32_t fn = DepGraph::node_of(g_.in_from[k]);
        if (!g_.gpu[fn]) continue;
        if (!g_.gpu[tn] || device(tn) != device(fn)) feeds[fn] = 1;
      }
    }
    feeds_host_ = std::move(feeds);
    island_of_.assign(g_.nodes(), UINT32_MAX);
    for (std::uint32_t i = 0; i < sorted_.size(); ++i) {
      const std::uint32_t n = sorted_[i];
      // A linked collective (a linked job) joins the island it starts in but does not extend it: its
      // kernel spans its wait for the other ranks, and overlapping the work around it would make
      // one island of a whole pipeline stage. Its clock barely matters (a transfer); the work's
      // does. Starting after the island's work has ended, it starts an island, which the work after
      // it joins.
      const bool transparent = linked_[n] != 0;
      const bool fresh = islands_.empty() || islands_.back().device != device(n) ||
                         (islands_.back().has_work && g_.rec_start[n] >= islands_.back().end_ns);
      if (fresh) islands_.push_back({device(n), i, i, g_.rec_start[n], transparent ? g_.rec_start[n] : g_.rec_end[n]});
      Island& is = islands_.back();
      is.end = i + 1;
      island_of_[n] = static_cast<std::uint32_t>(islands_.size() - 1);
      is.collective = is.collective || t_.is_collective(g_.op[n]);
      is.feeds_host = is.feeds_host || feeds_host_[n] != 0;
      if (transparent) {
        if (!is.has_work) is.critical = is.critical || slack_[n] == 0;
        continue;
      }
      if (!is.has_work && is.begin != i) is.critical = false;  // the work's criticality, not the transfers'
      is.has_work = true;
      is.end_ns = std::max(is.end_ns, g_.rec_end[n]);
      is.critical = is.critical || slack_[n] == 0;
      is.min_slack_ns = std::min(is.min_slack_ns, slack_[n]);
      const TimeNs d = std::max<TimeNs>(0, g_.rec_end[n] - g_.rec_start[n]);
      const double sens = op_sensitivity_.empty() ? 0.0 : op_sensitivity_[g_.op[n]];
      is.sensitivity = is.busy_ns + d > 0 ? (is.sensitivity * static_cast<double>(is.busy_ns) + sens * static_cast<double>(d)) /
                                                static_cast<double>(is.busy_ns + d)
                                          : sens;
      is.busy_ns += d;
    }
    out_.stats.islands = static_cast<std::int64_t>(islands_.size());
  }

  std::int32_t device(std::uint32_t node) const { return t_.ops.device[g_.op[node]]; }

  /// linked_[n]: node n is a collective linked across ranks (trace::link_job); waited_[n]: its
  /// recorded end is later than its start + transfer, i.e. it waited for another rank.
  void mark_linked_collectives() {
    linked_.assign(g_.nodes(), 0);
    waited_.assign(g_.nodes(), 0);
    const trace::CollectiveTable& ct = t_.collectives;
    if (ct.match.empty()) return;
    std::vector<std::uint32_t> node_of(t_.ops.size(), UINT32_MAX);
    for (std::uint32_t n = 0; n < g_.nodes(); ++n) node_of[g_.op[n]] = n;
    for (std::size_t c = 0; c < ct.size(); ++c) {
      if (ct.match[c] == trace::kNone || ct.op[c] >= node_of.size()) continue;
      const std::uint32_t n = node_of[ct.op[c]];
      if (n == UINT32_MAX || !g_.gpu[n]) continue;
      linked_[n] = 1;
      linked_job_ = true;
      waited_[n] = s_.time[DepGraph::end_tp(n)] - s_.time[DepGraph::start_tp(n)] > g_.dur[n];
    }
  }

  // ---- roots: what a host timepoint's recorded time derives from ---------------------------

  /// root(tp): a GPU timepoint is its own root; a host timepoint takes the root of its binding
  /// constraint (its duration, else the first tight edge), down to a GPU timepoint or a pinned
  /// start (kAbsoluteRoot). Two host timepoints with the same root move together as long as
  /// their chains' constraints stay binding: a CPU chain without waits on the GPU in between.
  void compute_roots() {
    root_.assign(2 * g_.nodes(), kAbsoluteRoot);
    for (const std::uint32_t tp : g_.topo) {
      const std::uint32_t n = DepGraph::node_of(tp);
      if (g_.gpu[n]) {
        root_[tp] = tp;
        continue;
      }
      if (DepGraph::is_end(tp) && s_.time[tp - 1] + g_.dur[n] == s_.time[tp]) {
        root_[tp] = root_[tp - 1];
        continue;
      }
      const std::uint32_t k = tight_edge(tp);
      root_[tp] = k == UINT32_MAX ? kAbsoluteRoot : root_[g_.in_from[k]];
    }
  }

  /// First non-dropped incoming edge of `tp` that is tight in the recorded schedule.
  std::uint32_t tight_edge(std::uint32_t tp) const {
    for (std::uint32_t k = g_.in_begin[tp]; k < g_.in_begin[tp + 1]; ++k) {
      if (g_.in_lag[k] != kDroppedLag && s_.time[g_.in_from[k]] + g_.in_lag[k] == s_.time[tp]) {
        return k;
      }
    }
    return UINT32_MAX;
  }

  /// Per GPU op: the roots of the constraints that bind its start, and the latest island of a
  /// same-device GPU op among them (-1 if none). Stored in CSR form.
  void compute_tight_sources() {
    const std::size_t ops = sorted_.size();
    src_begin_.assign(ops + 1, 0);
    max_src_island_.assign(ops, -1);
    for (std::uint32_t i = 0; i < ops; ++i) {
      const std::uint32_t n = sorted_[i];
      const std::uint32_t tp = DepGraph::start_tp(n);
      const TimeNs at = s_.time[tp];
      for (std::uint32_t k = g_.in_begin[tp]; k < g_.in_begin[tp + 1]; ++k) {
        if (g_.in_lag[k] == kDroppedLag || s_.time[g_.in_from[k]] + g_.in_lag[k] != at) continue;
        const std::uint32_t from = g_.in_from[k];
        const std::uint32_t fn = DepGraph::node_of(from);
        std::int64_t island = -1;
        if (g_.gpu[fn] && device(fn) == device(n)) {
          island = island_of_[fn];
          max_src_island_[i] = std::max(max_src_island_[i], island);
        }
        // Work that starts when a linked collective that waited for another rank ends: the GPU
        // waited for another rank here.
        if (waited_[fn] && DepGraph::is_end(from) && !linked_[n]) islands_[island_of_[n]].waits_on_rank = true;
        src_root_.push_back(root_[from]);
      }
      if (g_.release[n] != INT64_MIN && g_.release[n] == at) {
        src_root_.push_back(kAbsoluteRoot);
      }
      if (src_root_.size() == src_begin_[i]) {  // nothing binds (cannot happen with an exact
        src_root_.push_back(kAbsoluteRoot);     // replay): treat as pinned
      }
      src_begin_[i + 1] = static_cast<std::uint32_t>(src_root_.size());
    }
  }

  /// True when op `i` (sorted index) in a pack starting at island `a` with anchor root `anchor`
  /// needs no boundary before it: a same-pack GPU op binds it, or everything that binds it has
  /// the pack's anchor as root.
  bool carried(std::uint32_t i, std::int64_t a, std::uint32_t anchor) const {
    if (max_src_island_[i] >= a) return true;
    for (std::uint32_t k = src_begin_[i]; k < src_begin_[i + 1]; ++k) {
      if (src_root_[k] != anchor) return false;
    }
    return true;
  }

  /// The anchor of a pack starting at island `a`: the root of what binds its earliest op.
  std::uint32_t anchor_of(std::size_t a) const { return src_root_[src_begin_[islands_[a].begin]]; }

  // ---- packing one device ------------------------------------------------------------------

  /// Why a pack could start at island k (k > the current pack's first island `cur`, whose
  /// anchor root is `anchor`), in order of preference; nullopt when nothing changes there.
  std::optional<Cut> boundary(std::size_t k, std::size_t cur, std::uint32_t anchor) const {
    if (const std::optional<Cut> hard = hard_boundary(k)) return hard;
    if (islands_[k - 1].feeds_host) return Cut::kHostSync;
    for (std::uint32_t i = islands_[k].begin; i < islands_[k].end; ++i) {
      if (!carried(i, static_cast<std::int64_t>(cur), anchor)) return Cut::kEntry;
    }
    if (!linked_job_ && islands_[k].collective != islands_[k - 1].collective) return Cut::kCollective;
    if (islands_[k].critical != islands_[k - 1].critical) return Cut::kCriticality;
    if (phase_start_[k]) return Cut::kPhase;
    return std::nullopt;
  }

  /// A linked job's boundaries that every packing keeps, whatever min_pack: where the GPU waited
  /// for another rank (a linked collective's end binds work here) and where the work's
  /// criticality changes (slack from the job's what-if at the max clock). The job's slack
  /// changes at both, so a pack across either would give critical work the clock of work with
  /// slack, or the reverse (issue 26). Runs of islands between them are packed to min_pack as
  /// usual, so short passes with slack merge with each other, never with critical ones.
  std::optional<Cut> hard_boundary(std::size_t k) const {
    if (!linked_job_ || !islands_[k].has_work) return std::nullopt;
    if (islands_[k].waits_on_rank) return Cut::kCollective;
    std::size_t prev = k - 1;  // the previous island holding work, on this device
    while (prev > 0 && !islands_[prev].has_work && islands_[prev - 1].device == islands_[k].device) --prev;
    if (islands_[prev].has_work && near_critical(islands_[prev]) != near_critical(islands_[k])) return Cut::kCriticality;
    return std::nullopt;
  }

  /// A linked job's island whose work has less slack than kNearCriticalFraction × min_pack: slack a
  /// clock that holds for min_pack cannot spend. Jitter between ranks leaves such slivers of slack
  /// on work that is in effect critical; a hard boundary at each would cut packs far shorter than
  /// the clock-switch latency.
  bool near_critical(const Island& is) const {
    return is.min_slack_ns <= static_cast<TimeNs>(kNearCriticalFraction * static_cast<double>(min_pack_));
  }

  /// Islands [b, e) are one device's. A pack ends at the first boundary where it is at least
  /// min_pack long and what is left of the device's timeline is too.
  void pack_device(std::size_t b, std::size_t e) {
    mark_phases(b, e);
    // Segments between hard boundaries (a linked job's), each packed to min_pack on its own.
    const std::vector<std::pair<std::size_t, Cut>> cuts = hard_cuts(b, e);
    for (std::size_t i = 0; i < cuts.size(); ++i) {
      const std::size_t end = i + 1 < cuts.size() ? cuts[i + 1].first : e;
      pack_segment(cuts[i].first, end, cuts[i].second, end < e ? islands_[end].start_ns : islands_[e - 1].end_ns);
    }
    // Spans: to the next pack's start on the device.
    std::size_t first_pack = out_.packs.size();
    while (first_pack > 0 && out_.packs[first_pack - 1].device == islands_[b].device) --first_pack;
    for (std::size_t p = first_pack; p < out_.packs.size(); ++p) {
      Pack& pk = out_.packs[p];
      pk.span_ns = p + 1 < out_.packs.size() ? out_.packs[p + 1].start_ns - pk.start_ns : pk.dur_ns();
      pk.forced_short = pk.span_ns < min_pack_;
      if (pk.forced_short) ++out_.stats.forced_short;
    }
  }

  /// The segments of islands [b, e) (one device): (first island, why it starts), the first (b,
  /// kFirst). Every hard boundary starts one, except where a segment would be shorter than
  /// min_pack / 2 (start to the next segment's start): such a segment merges with a neighbour —
  /// one of its own criticality if there is one, else the shorter — shortest first. A pass far
  /// shorter than a clock switch cannot hold a clock of its own.
  std::vector<std::pair<std::size_t, Cut>> hard_cuts(std::size_t b, std::size_t e) const {
    std::vector<std::pair<std::size_t, Cut>> cuts{{b, Cut::kFirst}};
    for (std::size_t k = b + 1; k < e; ++k) {
      if (const std::optional<Cut> hard = hard_boundary(k)) cuts.push_back({k, *hard});
    }
    auto start = [&](std::size_t i) { return i < cuts.size() ? islands_[cuts[i].first].start_ns : islands_[e - 1].end_ns; };
    auto critical = [&](std::size_t i) {
      std::size_t k = cuts[i].first;
      const std::size_t end = i + 1 < cuts.size() ? cuts[i + 1].first : e;
      while (k + 1 < end && !islands_[k].has_work) ++k;
      return near_critical(islands_[k]);
    };
    const auto half = min_pack_ / 2;
    while (cuts.size() > 1) {
      std::size_t i = 0;
      for (std::size_t j = 1; j < cuts.size(); ++j) {
        if (start(j + 1) - start(j) < start(i + 1) - start(i)) i = j;
      }
      if (start(i + 1) - start(i) >= half) break;
      const bool has_left = i > 0, has_right = i + 1 < cuts.size();
      bool left = has_left && (!has_right || start(i) - start(i - 1) <= start(i + 2) - start(i + 1));
      if (has_left && has_right && critical(i - 1) != critical(i + 1)) left = critical(i - 1) == critical(i);
      // Merging with the left removes segment i's own cut; with the right, the right one's.
      cuts.erase(cuts.begin() + static_cast<std::ptrdiff_t>(left ? i : i + 1));
    }
    return cuts;
  }

  /// Islands [b, e) of one device, the first pack starting for `why`, `end_ns` where the segment's
  /// clock ends (the next segment's start, or the device's last end): a pack ends at the first
  /// boundary where it is at least min_pack long and what is left of the segment is too.
  void pack_segment(std::size_t b, std::size_t e, Cut why, TimeNs end_ns) {
    std::size_t cur = b;
    std::uint32_t anchor = anchor_of(b);
    for (std::size_t k = b + 1; k < e; ++k) {
      const std::optional<Cut> cut = boundary(k, cur, anchor);
      if (!cut) continue;
      if (islands_[k].start_ns - islands_[cur].start_ns < min_pack_) continue;
      if (end_ns - islands_[k].start_ns < min_pack_) break;
      emit_pack(cur, k, why);
      cur = k;
      why = *cut;
      anchor = anchor_of(k);
    }
    emit_pack(cur, e, why);
  }

  /// phase_start_[k] for the islands [b, e) of one device (phase_starts()).
  void mark_phases(std::size_t b, std::size_t e) {
    phase_start_.resize(islands_.size(), 0);
    if (op_sensitivity_.empty()) return;
    std::vector<TimeNs> start, busy;
    std::vector<double> sens;
    for (std::size_t k = b; k < e; ++k) {
      start.push_back(islands_[k].start_ns);
      busy.push_back(islands_[k].busy_ns);
      sens.push_back(islands_[k].sensitivity);
    }
    for (const std::size_t k : phase_starts(start, busy, sens, islands_[e - 1].end_ns, min_pack_)) phase_start_[b + k] = 1;
  }

  void emit_pack(std::size_t ib, std::size_t ie, Cut why) {
    Pack p;
    p.device = islands_[ib].device;
    p.first = static_cast<std::uint32_t>(out_.nodes.size());
    p.islands = static_cast<std::uint32_t>(ie - ib);
    p.start_ns = islands_[ib].start_ns;
    p.end_ns = islands_[ib].end_ns;
    p.starts_at = why;
    const auto id = static_cast<std::uint32_t>(out_.packs.size());
    for (std::size_t k = ib; k < ie; ++k) {
      p.end_ns = std::max(p.end_ns, islands_[k].end_ns);
      p.critical = p.critical || islands_[k].critical;
      for (std::uint32_t i = islands_[k].begin; i < islands_[k].end; ++i) {
        out_.nodes.push_back(sorted_[i]);
        out_.pack_of[sorted_[i]] = id;
      }
    }
    p.count = static_cast<std::uint32_t>(out_.nodes.size()) - p.first;
    ++out_.stats.cuts[static_cast<int>(why)];
    out_.packs.push_back(p);
  }

  void count_mid_pack_exits() {
    for (const Pack& p : out_.packs) {
      for (std::uint32_t i = p.first; i < p.first + p.count; ++i) {
        const std::uint32_t n = out_.nodes[i];
        if (feeds_host_[n] && g_.rec_end[n] < p.end_ns) ++out_.stats.mid_pack_exits;
      }
    }
  }

  const trace::Trace& t_;
  const DepGraph& g_;
  const timing::Schedule& s_;
  std::span<const TimeNs> slack_;
  TimeNs min_pack_;
  std::span<const float> op_sensitivity_;  // per trace op row, or empty
  Packing out_;
  std::vector<std::uint8_t> phase_start_;  // per island
  std::vector<std::uint32_t> sorted_;      // GPU nodes by (device, start)
  std::vector<std::uint32_t> island_of_;   // per graph node
  std::vector<Island> islands_;
  std::vector<std::uint8_t> feeds_host_;   // per graph node
  std::vector<std::uint8_t> linked_;       // per graph node: a linked collective
  bool linked_job_ = false;                // the graph holds linked collectives
  std::vector<std::uint8_t> waited_;       // per graph node: a linked collective that waited
  std::vector<std::uint32_t> root_;        // per timepoint
  std::vector<std::uint32_t> src_begin_;   // per sorted index, CSR into src_root_
  std::vector<std::uint32_t> src_root_;
  std::vector<std::int64_t> max_src_island_;
};

}  // namespace

namespace {

/// Binary segmentation of blocks [i, j) (prefix sums of busy time W and of busy × sensitivity S,
/// block starts `at`, the stretch's end `end`): the split with the largest weighted contrast
/// W_L·W_R/(W_L+W_R)·(μ_L − μ_R)² whose sides both span ≥ min_pack and differ by ≥
/// kPhaseMinContrast; recursion on both sides. Appends the split blocks to `out`.
void split_phases(const std::vector<double>& W, const std::vector<double>& S, const std::vector<TimeNs>& at,
                  TimeNs end, std::size_t i, std::size_t j, TimeNs min_pack, std::vector<std::size_t>& out) {
  std::size_t best = 0;
  double best_score = 0;
  for (std::size_t m = i + 1; m < j; ++m) {
    const TimeNs right_end = j < at.size() ? at[j] : end;
    if (at[m] - at[i] < min_pack || right_end - at[m] < min_pack) continue;
    const double wl = W[m] - W[i], wr = W[j] - W[m];
    if (wl <= 0 || wr <= 0) continue;
    const double mu_l = (S[m] - S[i]) / wl, mu_r = (S[j] - S[m]) / wr;
    if (std::abs(mu_l - mu_r) < kPhaseMinContrast) continue;
    const double score = wl * wr / (wl + wr) * (mu_l - mu_r) * (mu_l - mu_r);
    if (score > best_score) best_score = score, best = m;
  }
  if (best == 0) return;
  split_phases(W, S, at, end, i, best, min_pack, out);
  out.push_back(best);
  split_phases(W, S, at, end, best, j, min_pack, out);
}

}  // namespace

std::vector<std::size_t> phase_starts(std::span<const TimeNs> start_ns, std::span<const TimeNs> busy_ns,
                                      std::span<const double> sensitivity, TimeNs end_ns, TimeNs min_pack_ns) {
  if (start_ns.size() != busy_ns.size() || start_ns.size() != sensitivity.size())
    throw std::invalid_argument("phase_starts: one start, busy time and sensitivity per island");
  // Blocks: runs of islands of at least kPhaseBlockFraction × min_pack from start to start.
  const auto block_ns = static_cast<TimeNs>(kPhaseBlockFraction * static_cast<double>(min_pack_ns));
  std::vector<std::size_t> first;  // island index of each block's start
  std::vector<double> W{0}, S{0};
  std::vector<TimeNs> at;
  for (std::size_t k = 0; k < start_ns.size(); ++k) {
    if (first.empty() || start_ns[k] - at.back() >= block_ns) {
      first.push_back(k), at.push_back(start_ns[k]);
      W.push_back(W.back()), S.push_back(S.back());
    }
    W.back() += static_cast<double>(busy_ns[k]);
    S.back() += static_cast<double>(busy_ns[k]) * sensitivity[k];
  }
  std::vector<std::size_t> blocks;
  split_phases(W, S, at, end_ns, 0, at.size(), min_pack_ns, blocks);
  std::vector<std::size_t> out;
  for (const std::size_t b : blocks) out.push_back(first[b]);
  return out;
}

std::string_view cut_name(Cut c) noexcept {
  switch (c) {
    case Cut::kFirst: return "first";
    case Cut::kHostSync: return "host_sync";
    case Cut::kEntry: return "entry";
    case Cut::kCollective: return "collective";
    case Cut::kCriticality: return "criticality";
    case Cut::kPhase: return "phase";
  }
  return "unknown";
}

Packing pack_timeline(const trace::Trace& trace, const DepGraph& g, const timing::Schedule& s,
                      std::span<const TimeNs> node_slack, const PackOptions& options) {
  if (options.min_pack_ns <= 0) throw std::invalid_argument("pack_timeline: min_pack_ns <= 0");
  if (node_slack.size() != g.nodes() || s.time.size() != 2 * g.nodes()) {
    throw std::invalid_argument("pack_timeline: schedule or slack does not match the graph");
  }
  if (!options.op_sensitivity.empty() && options.op_sensitivity.size() != trace.ops.size()) {
    throw std::invalid_argument("pack_timeline: op_sensitivity does not match the trace's ops");
  }
  return Packer(trace, g, s, node_slack, options.min_pack_ns, options.op_sensitivity).run();
}

}  // namespace emo::pack
