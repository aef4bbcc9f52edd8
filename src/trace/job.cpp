#include "trace/job.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <iterator>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/timestamp.h"

namespace emo::trace {
namespace {

constexpr TimeNs kSameJobWindowNs = TimeNs{3600} * 1'000'000'000;  // recorded within an hour
constexpr TimeNs kApartNs = 100'000;                                // 100 us: a collective's ends
constexpr std::int64_t kIdStride = std::int64_t{1} << 40;            // per-rank id spaces

/// Rank of trace i: --ranks, else the trace's own.
std::int32_t rank_of(const std::vector<RankDigest>& traces, const LinkOptions& o, std::size_t i) {
  return o.ranks.empty() ? traces[i].rank : o.ranks[i];
}

/// First and last recorded time of a trace (ns), or {0, 0} when empty.
std::pair<TimeNs, TimeNs> span_of(const Trace& t) {
  if (t.ops.size() == 0) return {0, 0};
  TimeNs hi = INT64_MIN;
  for (std::size_t i = 0; i < t.ops.size(); ++i) hi = std::max(hi, t.ops.end_ns(i));
  return {t.ops.start_ns.front(), hi};
}

/// Sets d.device to the one GPU device of `t` (kNone when it has no GPU op), or d.device_error
/// when there are several.
void find_gpu_device(const Trace& t, RankDigest& d) {
  std::int32_t dev = static_cast<std::int32_t>(kNone);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (!is_gpu_op(t.ops.kind[i])) continue;
    if (dev != kNone && t.ops.device[i] != dev) {
      d.device_error = fmt::format("GPU ops on devices {} and {}: a rank's trace of a linked job must hold one GPU "
                                   "(pass the traces one GPU per file)",
                                   dev, t.ops.device[i]);
      return;
    }
    dev = t.ops.device[i];
  }
  d.device = dev;
}

/// A `Process Group Ranks` list as PyTorch writes it, "[0, 1, 5]" -> {0, 1, 5} (blanks allowed
/// around the brackets, numbers and commas); nullopt on anything else: no brackets, an empty list,
/// a negative or non-numeric entry, a value beyond 32 bits.
std::optional<std::set<std::int32_t>> parse_group_ranks(std::string_view s) {
  auto skip_blanks = [&](std::size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    return i;
  };
  std::size_t i = skip_blanks(0);
  if (i >= s.size() || s[i] != '[') return std::nullopt;
  std::set<std::int32_t> out;
  for (i = skip_blanks(i + 1);; i = skip_blanks(i + 1)) {
    std::int32_t v = 0;
    const auto [p, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
    if (ec != std::errc() || v < 0) return std::nullopt;
    out.insert(v);
    i = skip_blanks(static_cast<std::size_t>(p - s.data()));
    if (i < s.size() && s[i] == ']') break;
    if (i >= s.size() || s[i] != ',') return std::nullopt;
  }
  if (skip_blanks(i + 1) != s.size()) return std::nullopt;
  return out;
}

/// `text` for a one-line message: quoted, control characters escaped (\n, \x1b, ...), at most
/// 60 characters of it (then "...").
std::string quoted_excerpt(std::string_view text) {
  std::string out = "'";
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == 60) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') out += "\\n";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out + "'";
}

/// What is wrong with the instance `key` (process group, sequence) of a collective left unlinked:
/// `repeated` (a rank recorded it twice), else participants `have` against the ranks expected
/// among those given, `want`: ranks its group's list does not name, or the ranks it misses.
std::string partial_example(const std::pair<std::string, std::int64_t>& key, bool repeated,
                            const std::set<std::int32_t>& have, const std::set<std::int32_t>& want) {
  const std::string what = fmt::format("group {} seq {}", key.first, key.second);
  if (repeated) return what + " recorded twice on one rank";
  std::vector<std::int32_t> diff;
  std::set_difference(have.begin(), have.end(), want.begin(), want.end(), std::back_inserter(diff));
  if (!diff.empty()) return fmt::format("{} recorded on {} {}, which its group's rank list does not name", what,
                                         diff.size() == 1 ? "rank" : "ranks", fmt::join(diff, ", "));
  std::set_difference(want.begin(), want.end(), have.begin(), have.end(), std::back_inserter(diff));
  return fmt::format("{} on {} of its {} ranks given, missing on {} {}", what, have.size(), want.size(),
                     diff.size() == 1 ? "rank" : "ranks", fmt::join(diff, ", "));
}

/// One collective kernel of one rank.
struct Coll {
  std::size_t trace = 0;   ///< Position in the job.
  std::size_t row = 0;     ///< Row in its CollectiveTable.
  TimeNs start = 0;        ///< Recorded (own clock).
  TimeNs end = 0;
};

/// An instance: its participants, one per rank, in job order.
using Instance = std::vector<Coll>;

class Linker {
 public:
  Linker(const std::vector<RankDigest>& traces, const LinkOptions& o) : t_(traces), o_(o) {}

  JobInfo link(std::vector<std::vector<std::int64_t>>& match) {
    validate();
    match_by_peer();
    match_by_group();
    match_by_order();
    align();
    match.assign(t_.size(), {});
    for (std::size_t i = 0; i < t_.size(); ++i) match[i].assign(t_[i].collectives.size(), kNone);
    for (std::size_t k = 0; k < inst_.size(); ++k) {
      for (const Coll& c : inst_[k]) match[c.trace][c.row] = static_cast<std::int64_t>(k);
    }
    info_.collectives_linked = static_cast<std::int64_t>(inst_.size());
    if (peer_linked_) {
      info_.match_method = info_.match_method.empty() ? "peer and order" : "peer and order, " + info_.match_method;
    }
    return std::move(info_);
  }

 private:
  void validate() {
    if (!o_.ranks.empty() && o_.ranks.size() != t_.size()) {
      throw ArgumentError("ranks", fmt::format("{} ranks", o_.ranks.size()),
                          fmt::format("one rank per trace expected ({} traces)", t_.size()));
    }
    std::map<std::int32_t, std::size_t> seen;
    std::set<std::string_view> paths;  // one file twice is refused whatever ranks --ranks gives it
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const std::int32_t r = rank_of(t_, o_, i);
      const RankDigest& t = t_[i];
      if (!t.path.empty() && !paths.insert(t.path).second) throw InputError(t.path, "given twice");
      if (r < 0) throw InputError(t.path, "no rank recorded (give --ranks)");
      if (!o_.ranks.empty() && t.rank >= 0 && t.rank != r) {  // an override (mislabelled traces), said
        info_.warnings.push_back(fmt::format("{} records rank {}; --ranks makes it rank {}", t.path, t.rank, r));
      }
      if (t.device == kNone && t.device_error.empty()) {
        throw InputError(t.path, fmt::format("rank {} has no GPU op: nothing of it to link (an empty or cut trace?)", r));
      }
      if (t.world_size > 0 && r >= t.world_size) {
        throw InputError(t.path, fmt::format("rank {} outside world size {}", r, t.world_size));
      }
      const auto [it, added] = seen.emplace(r, i);
      if (!added) {
        throw InputError(t.path, fmt::format("rank {} is also the rank of {}: duplicated rank (two traces of one "
                                             "rank, or traces of different jobs)",
                                             r, t_[it->second].path));
      }
      if (!t.device_error.empty()) throw InputError(t.path, t.device_error);
      JobRank jr;
      jr.rank = r;
      jr.path = t.path;
      jr.device = t.device == kNone ? 0 : t.device;
      jr.collectives = static_cast<std::int64_t>(t.collectives.size());
      info_.ranks.push_back(std::move(jr));
      info_.world_size = std::max(info_.world_size, t.world_size);
    }
    // No trace records the world size: at least the ranks given, and one above the highest of them.
    if (info_.world_size < 0) {
      const std::int64_t above = static_cast<std::int64_t>(seen.rbegin()->first) + 1;  // rank 2^31 - 1 fits; + 1 not
      if (above > INT32_MAX) throw InputError(t_[seen.rbegin()->second].path, fmt::format("rank {} leaves no room for a world size", seen.rbegin()->first));
      info_.world_size = std::max(static_cast<std::int32_t>(t_.size()), static_cast<std::int32_t>(above));
    }
    if (static_cast<std::int32_t>(t_.size()) < info_.world_size) {
      info_.warnings.push_back(fmt::format("{} of {} ranks given ({}): collectives are linked among the ranks given; "
                                           "the others' arrivals are not seen",
                                           t_.size(), info_.world_size, missing_ranks(seen, info_.world_size)));
    }
    used_.resize(t_.size());
    for (std::size_t i = 0; i < t_.size(); ++i) used_[i].assign(t_[i].collectives.size(), 0);
  }

  Coll coll(std::size_t i, std::size_t c) const {
    const RankDigest::Collective& k = t_[i].collectives[c];
    return {i, c, k.start_ns, k.end_ns};
  }

  /// Point-to-point kernels, those that record a peer (PyTorch `Src Rank` on a recv, `Dst Rank` on
  /// a send; the end not recorded is the kernel's own rank): the k-th (s → d) kernel of rank s
  /// with the k-th (s → d) kernel of rank d, whatever their stream. All of them are taken from the
  /// other matchers, linked or not.
  void match_by_peer() {
    std::set<std::int32_t> given;
    for (const JobRank& r : info_.ranks) given.insert(r.rank);
    // (s, d) -> the (s → d) kernels of rank s and of rank d, each in time order.
    std::map<std::pair<std::int32_t, std::int32_t>, std::pair<std::vector<Coll>, std::vector<Coll>>> pairs;
    std::int64_t lone = 0, odd = 0;
    std::string lone_example, odd_example;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const std::int32_t r = info_.ranks[i].rank;
      const auto& ct = t_[i].collectives;
      for (std::size_t c = 0; c < ct.size(); ++c) {
        if (ct[c].src_rank == kNone && ct[c].dst_rank == kNone) continue;
        used_[i][c] = 1;
        check_peer(i, ct[c]);
        const std::int32_t s = ct[c].src_rank == kNone ? r : ct[c].src_rank;
        const std::int32_t d = ct[c].dst_rank == kNone ? r : ct[c].dst_rank;
        if (s == d || (r != s && r != d)) {
          if (odd++ == 0) odd_example = fmt::format("on rank {}: from {} to {}", r, s, d);
        } else if (!given.contains(r == s ? d : s)) {
          if (lone++ == 0) lone_example = fmt::format("from rank {} to rank {}", s, d);
        } else {
          auto& [on_s, on_d] = pairs[{s, d}];
          (r == s ? on_s : on_d).push_back(coll(i, c));  // CollectiveTable is sorted by start
        }
      }
    }
    link_pairs(pairs);
    if (lone > 0) {
      info_.warnings.push_back(fmt::format("{} point-to-point kernels have their peer outside the ranks given "
                                           "(e.g. {}): not linked, each keeps its recorded duration",
                                           lone, lone_example));
    }
    if (odd > 0) {
      info_.warnings.push_back(fmt::format("{} point-to-point kernels name a sender and a receiver that are not their "
                                           "own rank and one other (e.g. {}; a peer recorded as -1 or not at all is "
                                           "taken as the kernel's own rank): not linked",
                                           odd, odd_example));
    }
  }

  /// Throws InputError(the trace's path) when a point-to-point kernel of trace i names a peer that
  /// cannot be a rank of the job: negative, or not below the world size the trace records.
  void check_peer(std::size_t i, const RankDigest::Collective& k) const {
    const RankDigest& t = t_[i];
    for (const auto& [peer, role] : {std::pair{k.src_rank, "sender"}, std::pair{k.dst_rank, "receiver"}}) {
      if (peer == kNone) continue;
      if (peer < 0 || (t.world_size > 0 && peer >= t.world_size)) {
        throw InputError(t.path, fmt::format("point-to-point kernel '{}' at {} ns names rank {} as its {}: outside the "
                                             "job (world size {})",
                                             k.name, k.start_ns, peer, role, t.world_size));
      }
    }
  }

  /// The path of the trace given for rank r (all ranks in a pair are given).
  const std::string& path_of_rank(std::int32_t r) const {
    for (const JobRank& jr : info_.ranks) {
      if (jr.rank == r) return jr.path;
    }
    throw std::logic_error("path_of_rank: a rank not given");
  }

  /// "missing: rank 1" / "missing: ranks 1, 2, 5" (the first 8, then "…, N in all") of 0 .. world − 1.
  static std::string missing_ranks(const std::map<std::int32_t, std::size_t>& given, std::int32_t world) {
    std::vector<std::int32_t> missing;
    for (std::int32_t r = 0; r < world; ++r) {
      if (!given.contains(r)) missing.push_back(r);
    }
    const std::size_t shown = std::min<std::size_t>(missing.size(), 8);
    std::string out = missing.size() > 1 ? "missing: ranks " : "missing: rank ";
    for (std::size_t k = 0; k < shown; ++k) out += fmt::format("{}{}", k ? ", " : "", missing[k]);
    if (shown < missing.size()) out += fmt::format(", …, {} in all", missing.size());
    return out;
  }

  /// Per (s, d): the k-th kernel of rank s with the k-th of rank d, when both have as many.
  void link_pairs(const std::map<std::pair<std::int32_t, std::int32_t>,
                                 std::pair<std::vector<Coll>, std::vector<Coll>>>& pairs) {
    for (const auto& [key, kernels] : pairs) {
      const auto& [on_s, on_d] = kernels;
      if (on_s.size() != on_d.size()) {
        info_.warnings.push_back(fmt::format("point-to-point kernels from rank {} to rank {} differ in number between "
                                             "the two (rank {}: {} in {}, rank {}: {} in {}): none of them linked, each "
                                             "keeps its recorded duration",
                                             key.first, key.second, key.first, on_s.size(), path_of_rank(key.first),
                                             key.second, on_d.size(), path_of_rank(key.second)));
        continue;
      }
      for (std::size_t k = 0; k < on_s.size(); ++k) {
        Instance inst{on_s[k], on_d[k]};
        if (inst[1].trace < inst[0].trace) std::swap(inst[0], inst[1]);  // participants in job order
        inst_.push_back(std::move(inst));
        peer_linked_ = true;
      }
    }
  }

  /// The ranks of `text`, the `Process Group Ranks` of a collective of `group` on trace `i`, when
  /// it is a rank list (parse_group_ranks) within the job's world; else empty — the group's ranks
  /// taken as not recorded (every rank given is expected) — and a warning saying so.
  std::set<std::int32_t> usable_group_ranks(const std::string& text, const std::string& group, std::size_t i) {
    const std::optional<std::set<std::int32_t>> ranks = parse_group_ranks(text);
    std::string why;
    if (!ranks) {
      why = "is not a list of ranks";
    } else if (info_.world_size > 0 && *ranks->rbegin() >= info_.world_size) {
      why = fmt::format("names rank {}, outside the job's {} ranks", *ranks->rbegin(), info_.world_size);
    } else {
      return *ranks;
    }
    info_.warnings.push_back(fmt::format("{}: 'Process Group Ranks' {} of group {} {}: the group's ranks are taken "
                                         "as not recorded (every rank given is expected)",
                                         t_[i].path, quoted_excerpt(text), quoted_excerpt(group), why));
    return {};
  }

  /// (process group, sequence) where both are recorded.
  void match_by_group() {
    std::map<std::pair<std::string, std::int64_t>, Instance> by_key;
    // Per key, the rank lists its participants recorded (normally one), each parsed once per
    // distinct text: a list is as long as its group, and every collective of the group has it.
    std::map<std::string, std::set<std::int32_t>, std::less<>> parsed;  // empty: not a usable list
    std::map<std::pair<std::string, std::int64_t>, std::set<const std::set<std::int32_t>*>> expected;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const auto& ct = t_[i].collectives;
      std::vector<const std::set<std::int32_t>*> list_of(t_[i].rank_lists.size(), nullptr);
      for (std::size_t c = 0; c < ct.size(); ++c) {
        const std::string& group = ct[c].group;
        if (used_[i][c] || group.empty() || ct[c].sequence == kNone) continue;
        const auto key = std::make_pair(group, ct[c].sequence);
        by_key[key].push_back(coll(i, c));
        const std::int32_t l = ct[c].group_ranks;
        if (l < 0 || static_cast<std::size_t>(l) >= list_of.size()) continue;
        if (list_of[l] == nullptr) {
          const std::string& text = t_[i].rank_lists[static_cast<std::size_t>(l)];
          auto it = parsed.find(text);
          if (it == parsed.end()) it = parsed.emplace(text, usable_group_ranks(text, group, i)).first;
          list_of[l] = &it->second;
        }
        if (!list_of[l]->empty()) expected[key].insert(list_of[l]);
      }
    }
    std::set<std::int32_t> present;
    for (const JobRank& r : info_.ranks) present.insert(r.rank);
    std::int64_t partial = 0;
    std::int64_t lone = 0;
    std::string example;
    for (auto& [key, inst] : by_key) {
      for (const Coll& c : inst) used_[c.trace][c.row] = 1;
      // Participants expected among the ranks given: the group's ranks, else every rank given.
      std::set<std::int32_t> want;
      const auto e = expected.find(key);
      if (e == expected.end()) {
        want = present;
      } else {
        for (const std::set<std::int32_t>* listed : e->second) {
          std::set_intersection(listed->begin(), listed->end(), present.begin(), present.end(),
                                std::inserter(want, want.end()));
        }
      }
      std::set<std::int32_t> have;
      for (const Coll& c : inst) have.insert(info_.ranks[c.trace].rank);
      if (have.size() != inst.size() || have != want) {
        if (example.empty()) example = partial_example(key, have.size() != inst.size(), have, want);
        ++partial;
        continue;
      }
      if (inst.size() < 2) {
        ++lone;
        continue;
      }
      inst_.push_back(std::move(inst));
    }
    if (!by_key.empty()) info_.match_method = "process group + sequence";
    if (partial > 0) {
      info_.warnings.push_back(fmt::format("{} collectives are missing on some of their group's ranks (e.g. {}), or "
                                           "repeated: left unlinked, each keeps its recorded duration",
                                           partial, example));
    }
    if (lone > 0) {
      info_.warnings.push_back(fmt::format("{} collectives have one participant among the ranks given: not linked", lone));
    }
  }

  /// The rest: by order among kernels of the same collective kind on the same stream.
  void match_by_order() {
    // (name, stream) -> per trace, its collectives of that kind in time order.
    std::map<std::pair<std::string, std::int64_t>, std::vector<std::vector<Coll>>> kinds;
    bool any = false;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const auto& ct = t_[i].collectives;
      for (std::size_t c = 0; c < ct.size(); ++c) {
        if (used_[i][c]) continue;
        any = true;
        const auto key = std::make_pair(ct[c].name, ct[c].stream);
        auto& per = kinds[key];
        per.resize(t_.size());
        per[i].push_back(coll(i, c));  // CollectiveTable is sorted by op row, i.e. by start
      }
    }
    if (!any) return;
    std::int64_t linked = 0;
    for (auto& [key, per] : kinds) {
      std::size_t n = SIZE_MAX;
      bool differ = false;
      for (const auto& v : per) {
        if (n != SIZE_MAX && v.size() != n) differ = true;
        n = std::min(n, v.size());
      }
      if (differ) {
        std::string counts;
        for (std::size_t i = 0; i < per.size(); ++i) {
          counts += fmt::format("{}rank {}: {}", i ? ", " : "", info_.ranks[i].rank, per[i].size());
        }
        info_.warnings.push_back(fmt::format("{} kernels on stream {} differ in number between ranks ({}): none of "
                                             "them linked, each keeps its recorded duration",
                                             key.first, key.second, counts));
        continue;
      }
      if (per.size() < 2) continue;
      for (std::size_t k = 0; k < n; ++k) {
        Instance inst;
        for (const auto& v : per) inst.push_back(v[k]);
        inst_.push_back(std::move(inst));
        ++linked;
      }
    }
    if (linked > 0) {
      info_.match_method += info_.match_method.empty() ? "order per stream" : " and order per stream";
    }
  }

  /// One warning per linked group of ranks but the first (align(): groups as aligned, each
  /// starting with its root): a rank alone shares no linked collective; a group of several is
  /// aligned within itself only.
  void warn_unaligned(const std::vector<std::vector<std::size_t>>& groups) {
    for (std::size_t k = 1; k < groups.size(); ++k) {
      const std::int32_t root = info_.ranks[groups[k].front()].rank;
      if (groups[k].size() == 1) {
        info_.warnings.push_back(fmt::format("rank {} shares no linked collective with the others: its clock is not "
                                             "aligned (offset 0)",
                                             root));
        continue;
      }
      std::vector<std::int32_t> ranks;
      for (const std::size_t r : groups[k]) ranks.push_back(info_.ranks[r].rank);
      std::sort(ranks.begin(), ranks.end());
      info_.warnings.push_back(fmt::format(
          "ranks {} share linked collectives among themselves but none with rank {}'s group (a rank between them "
          "missing?): their clocks are aligned to rank {}'s, which is kept as recorded (offset 0)",
          fmt::join(ranks, ", "), info_.ranks[groups[0].front()].rank, root));
    }
  }

  /// Offsets breadth-first within each linked group of ranks (the ranks that share linked
  /// collectives, directly or through others), from its lowest rank, which keeps its recorded clock
  /// (offset 0): a job with one stage's trace missing falls into groups that share no collective,
  /// whose clocks are aligned within each group, not between groups (nothing relates them). The
  /// reference is the lowest rank, not the first file, so the offsets do not depend on the order
  /// of the files. Then waits and residual after alignment.
  void align() {
    const std::size_t n = t_.size();
    std::vector<std::size_t> by_rank(n);
    for (std::size_t i = 0; i < n; ++i) by_rank[i] = i;
    std::stable_sort(by_rank.begin(), by_rank.end(),
                     [&](std::size_t a, std::size_t b) { return info_.ranks[a].rank < info_.ranks[b].rank; });
    std::vector<char> aligned(n, 0);
    std::vector<std::vector<std::size_t>> groups;
    for (const std::size_t root : by_rank) {
      if (aligned[root]) continue;
      aligned[root] = 1;
      info_.ranks[root].offset_ns = 0;
      std::vector<std::size_t>& group = groups.emplace_back(1, root);
      for (bool progress = true; progress;) {
        progress = false;
        for (const std::size_t r : by_rank) {
          if (aligned[r]) continue;
          std::vector<TimeNs> diff;
          for (const Instance& inst : inst_) {
            const Coll* mine = nullptr;
            const Coll* ref = nullptr;
            for (const Coll& c : inst) {
              if (c.trace == r) mine = &c;
              else if (aligned[c.trace] && ref == nullptr) ref = &c;
            }
            if (mine && ref) diff.push_back(ref->end + info_.ranks[ref->trace].offset_ns - mine->end);
          }
          if (diff.empty()) continue;
          std::nth_element(diff.begin(), diff.begin() + static_cast<std::ptrdiff_t>(diff.size() / 2), diff.end());
          info_.ranks[r].offset_ns = diff[diff.size() / 2];
          aligned[r] = 1;
          group.push_back(r);
          progress = true;
        }
      }
    }
    warn_unaligned(groups);
    // Residual: per instance, the spread of its aligned ends (max − min).
    std::vector<TimeNs> residual;
    std::int64_t apart = 0;
    for (const Instance& inst : inst_) {
      TimeNs last_arrival = INT64_MIN, lo = INT64_MAX, hi = INT64_MIN, shortest = INT64_MAX;
      for (const Coll& c : inst) {
        const TimeNs off = info_.ranks[c.trace].offset_ns;
        last_arrival = std::max(last_arrival, c.start + off);
        lo = std::min(lo, c.end + off);
        hi = std::max(hi, c.end + off);
        shortest = std::min(shortest, c.end - c.start);
      }
      for (const Coll& c : inst) {
        JobRank& jr = info_.ranks[c.trace];
        ++jr.matched;
        jr.wait_ns += std::max<TimeNs>(0, last_arrival - (c.start + jr.offset_ns));
      }
      residual.push_back(hi - lo);
      if (hi - lo > std::max<TimeNs>(kApartNs, shortest / 10)) ++apart;
    }
    if (!residual.empty()) {
      std::sort(residual.begin(), residual.end());
      info_.residual_max_ns = residual.back();
      info_.residual_median_ns = residual[residual.size() / 2];
    }
    if (apart > 0) {
      info_.warnings.push_back(fmt::format(
          "{} of {} linked collectives end more than {} (or a tenth of their shortest kernel) apart after alignment, "
          "up to {}: where the traces carry no sequence numbers the order-based match may pair different "
          "collectives; their graph takes the shortest participant's duration as the transfer",
          apart, inst_.size(), format_duration(kApartNs), format_duration(info_.residual_max_ns)));
    }
  }

  const std::vector<RankDigest>& t_;
  const LinkOptions& o_;
  JobInfo info_;
  std::vector<Instance> inst_;
  std::vector<std::vector<char>> used_;
  bool peer_linked_ = false;
};

/// Merges the ranks into one trace (see link_job).
class Merger {
 public:
  Merger(std::vector<Trace>& traces, const JobInfo& info, const std::vector<std::vector<std::int64_t>>& match)
      : t_(traces), info_(info), match_(match) {}

  Trace merge() {
    out_.meta = t_[0].meta;
    out_.meta.rank = -1;
    out_.meta.world_size = info_.world_size;
    out_.meta.path = fmt::format("job of {} ranks ({} ...)", t_.size(), t_[0].meta.path);
    out_.meta.gpus.clear();
    merge_ops();
    for (std::size_t i = 0; i < t_.size(); ++i) {
      Trace& t = t_[i];
      for (GpuInfo g : t.meta.gpus) {
        if (g.device != info_.ranks[i].device) continue;
        g.device = static_cast<std::int32_t>(i);
        out_.meta.gpus.push_back(std::move(g));
      }
      add_quirks(t.quirks);
      for (const std::string& w : t.warnings) out_.warnings.push_back(fmt::format("rank {}: {}", info_.ranks[i].rank, w));
    }
    out_.meta.job = info_;
    out_.meta.job.source_row = std::move(source_row_);
    return std::move(out_);
  }

 private:
  void merge_ops() {
    std::size_t total = 0;
    for (const Trace& t : t_) total += t.ops.size();
    // (aligned start, trace, row): stable k-way order.
    std::vector<std::tuple<TimeNs, std::uint32_t, std::uint32_t>> order;
    order.reserve(total);
    for (std::size_t i = 0; i < t_.size(); ++i) {
      for (std::uint32_t r = 0; r < t_[i].ops.size(); ++r) {
        order.emplace_back(t_[i].ops.start_ns[r] + info_.ranks[i].offset_ns, static_cast<std::uint32_t>(i), r);
      }
    }
    std::sort(order.begin(), order.end());
    // Side-table lookups: row -> sync / collective index, per trace.
    std::vector<std::vector<std::int32_t>> sync_of(t_.size()), coll_of(t_.size());
    for (std::size_t i = 0; i < t_.size(); ++i) {
      sync_of[i].assign(t_[i].ops.size(), -1);
      coll_of[i].assign(t_[i].ops.size(), -1);
      for (std::size_t s = 0; s < t_[i].syncs.size(); ++s) sync_of[i][t_[i].syncs.op[s]] = static_cast<std::int32_t>(s);
      for (std::size_t c = 0; c < t_[i].collectives.size(); ++c) coll_of[i][t_[i].collectives.op[c]] = static_cast<std::int32_t>(c);
    }
    out_.ops.reserve(total);
    for (const auto& [start, i, r] : order) {
      const Trace& t = t_[i];
      const OpTable& o = t.ops;
      const std::int64_t id_base = static_cast<std::int64_t>(i + 1) * kIdStride;
      const std::uint32_t row =
          out_.ops.push(o.kind[r], start, o.dur_ns[r], out_.strings.intern(t.strings.view(o.name[r])),
                        o.device[r] == kNone ? static_cast<std::int32_t>(kNone) : static_cast<std::int32_t>(i),
                        o.stream[r], host_id(i, o.process[r], true), host_id(i, o.thread[r], false),
                        shifted(o.correlation[r], id_base), shifted(o.external_id[r], id_base));
      source_row_.push_back(r);
      if (sync_of[i][r] >= 0) add_sync(i, static_cast<std::size_t>(sync_of[i][r]), row, id_base);
      if (coll_of[i][r] >= 0) add_collective(i, static_cast<std::size_t>(coll_of[i][r]), row);
    }
  }

  static std::int64_t shifted(std::int64_t id, std::int64_t base) { return id == kNone ? kNone : id + base; }

  /// Host ids made distinct per rank: numeric process ids moved into the rank's id space;
  /// string ids re-interned with a "rank R:" prefix (threads keep numeric ids: a thread is
  /// identified with its process).
  std::int64_t host_id(std::size_t i, std::int64_t id, bool process) {
    const std::int64_t s = host_id_string(id);
    if (s >= 0) {
      const std::string_view text = t_[i].strings.view(static_cast<StringId>(s));
      return host_id_of_string(out_.strings.intern(fmt::format("rank {}:{}", info_.ranks[i].rank, text)));
    }
    if (!process || id == kNone) return id;
    return id + static_cast<std::int64_t>(i + 1) * kIdStride;
  }

  void add_sync(std::size_t i, std::size_t s, std::uint32_t row, std::int64_t id_base) {
    const SyncTable& a = t_[i].syncs;
    SyncTable& b = out_.syncs;
    b.op.push_back(row);
    b.kind.push_back(a.kind[s]);
    b.stream.push_back(a.stream[s]);
    b.event_stream.push_back(a.event_stream[s]);
    b.event_record_correlation.push_back(shifted(a.event_record_correlation[s], id_base));
    b.event_id.push_back(shifted(a.event_id[s], id_base));
  }

  void add_collective(std::size_t i, std::size_t c, std::uint32_t row) {
    const Trace& t = t_[i];
    const CollectiveTable& a = t.collectives;
    CollectiveTable& b = out_.collectives;
    b.op.push_back(row);
    b.name.push_back(out_.strings.intern(t.strings.view(a.name[c])));
    b.group.push_back(out_.strings.intern(t.strings.view(a.group[c])));
    b.group_ranks.push_back(out_.strings.intern(t.strings.view(a.group_ranks[c])));
    b.group_size.push_back(a.group_size[c]);
    b.in_nelems.push_back(a.in_nelems[c]);
    b.out_nelems.push_back(a.out_nelems[c]);
    b.dtype.push_back(out_.strings.intern(t.strings.view(a.dtype[c])));
    b.sequence.push_back(a.sequence[c]);
    b.src_rank.push_back(a.src_rank[c]);
    b.dst_rank.push_back(a.dst_rank[c]);
    b.match.push_back(match_[i][c]);
  }

  void add_quirks(const QuirkCounts& q) {
    QuirkCounts& o = out_.quirks;
    o.out_of_order += q.out_of_order;
    o.zero_duration += q.zero_duration;
    o.negative_duration += q.negative_duration;
    o.clamped_children += q.clamped_children;
    o.max_clamp_ns = std::max(o.max_clamp_ns, q.max_clamp_ns);
    o.unknown_category += q.unknown_category;
    o.string_ids += q.string_ids;
    o.duplicate_gpu_correlation += q.duplicate_gpu_correlation;
    o.gpu_ops_without_launch += q.gpu_ops_without_launch;
    o.ignored_events += q.ignored_events;
    o.sync_api_calls += q.sync_api_calls;
  }

  std::vector<Trace>& t_;
  const JobInfo& info_;
  const std::vector<std::vector<std::int64_t>>& match_;
  Trace out_;
  std::vector<std::uint32_t> source_row_;
};

}  // namespace

InputError not_one_job_error(const std::string& first, const std::string& second, const std::string& why) {
  return InputError(second, fmt::format("not a rank of the same job as {}: {}", first, why));
}

std::vector<GpuInfo> job_gpus(const std::vector<RankDigest>& digests) {
  std::vector<GpuInfo> gpus;
  gpus.reserve(digests.size());
  for (std::size_t i = 0; i < digests.size(); ++i) gpus.push_back(GpuInfo{static_cast<std::int32_t>(i), digests[i].gpu_name});
  return gpus;
}

std::optional<std::string> not_one_job(const std::vector<RankDigest>& traces, const LinkOptions& options) {
  if (traces.size() < 2) return "one trace";
  if (!options.ranks.empty() && options.ranks.size() != traces.size()) {
    return fmt::format("--ranks gives {} ranks for {} traces", options.ranks.size(), traces.size());
  }
  const std::int32_t world = traces[0].world_size;
  TimeNs lo = traces[0].first_ns, hi = traces[0].last_ns;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const RankDigest& t = traces[i];
    if (rank_of(traces, options, i) < 0) return fmt::format("{} records no rank", t.path);
    if (options.ranks.empty() && t.world_size != world) {
      return fmt::format("world sizes differ: {} in {}, {} in {}", world, traces[0].path, t.world_size,
                         t.path);
    }
    const TimeNs a = t.first_ns, b = t.last_ns;
    if (a > hi + kSameJobWindowNs || b + kSameJobWindowNs < lo) {
      return fmt::format("{} and {} were recorded more than an hour apart", traces[0].path, t.path);
    }
    lo = std::min(lo, a);
    hi = std::max(hi, b);
  }
  return std::nullopt;
}

std::optional<std::string> not_one_job(const std::vector<Trace>& traces, const LinkOptions& options) {
  std::vector<RankDigest> d;
  d.reserve(traces.size());
  for (const Trace& t : traces) d.push_back(digest(t));
  return not_one_job(d, options);
}

RankDigest digest(const Trace& t) {
  RankDigest d;
  d.path = t.meta.path;
  d.rank = t.meta.rank;
  d.world_size = t.meta.world_size;
  std::tie(d.first_ns, d.last_ns) = span_of(t);
  find_gpu_device(t, d);
  if (d.device != static_cast<std::int32_t>(kNone)) d.gpu_name = std::string(t.gpu_name(d.device));
  d.changed_on_load = changed_on_load(t);
  const CollectiveTable& ct = t.collectives;
  d.collectives.reserve(ct.size());
  std::map<StringId, std::int32_t> list_of;  // group_ranks string -> index in d.rank_lists
  for (std::size_t c = 0; c < ct.size(); ++c) {
    const std::uint32_t row = ct.op[c];
    std::int32_t list = -1;
    if (!t.strings.view(ct.group_ranks[c]).empty()) {
      const auto [it, added] = list_of.emplace(ct.group_ranks[c], static_cast<std::int32_t>(d.rank_lists.size()));
      if (added) d.rank_lists.emplace_back(t.strings.view(ct.group_ranks[c]));
      list = it->second;
    }
    d.collectives.push_back({std::string(t.strings.view(ct.name[c])), std::string(t.strings.view(ct.group[c])), list,
                             t.ops.stream[row], ct.sequence[c], ct.src_rank[c], ct.dst_rank[c], t.ops.start_ns[row],
                             t.ops.end_ns(row), row});
  }
  return d;
}

JobLink link_ranks(const std::vector<RankDigest>& ranks, const LinkOptions& options) {
  if (ranks.empty()) throw std::invalid_argument("link_ranks: no trace");
  JobLink out;
  out.info = Linker(ranks, options).link(out.match);
  return out;
}

Trace link_job(std::vector<Trace> traces, const LinkOptions& given) {
  if (traces.empty()) throw std::invalid_argument("link_job: no trace");
  // Rank order, whatever the order of the files: the merged trace (its devices, graph, packs
  // and every figure computed from them) is then the same for any order of the same files.
  LinkOptions options = given;
  if (options.ranks.empty() || options.ranks.size() == traces.size()) {
    std::vector<std::int32_t> rank(traces.size());
    for (std::size_t i = 0; i < traces.size(); ++i) rank[i] = options.ranks.empty() ? traces[i].meta.rank : options.ranks[i];
    std::vector<std::size_t> order(traces.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (std::none_of(rank.begin(), rank.end(), [](std::int32_t r) { return r < 0; })) {
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rank[a] < rank[b]; });
    }
    std::vector<Trace> sorted;
    sorted.reserve(traces.size());
    for (const std::size_t i : order) sorted.push_back(std::move(traces[i]));
    traces = std::move(sorted);
    if (!options.ranks.empty()) {
      for (std::size_t i = 0; i < order.size(); ++i) options.ranks[i] = rank[order[i]];
    }
  }
  std::vector<RankDigest> d;
  d.reserve(traces.size());
  for (const Trace& t : traces) d.push_back(digest(t));
  const JobLink link = link_ranks(d, options);
  d.clear();
  return Merger(traces, link.info, link.match).merge();
}

std::int32_t job_rank_index(const Trace& t, std::uint32_t row) noexcept {
  const auto n = static_cast<std::int64_t>(t.meta.job.ranks.size());
  if (n == 0 || row >= t.ops.size()) return -1;
  if (t.ops.device[row] != kNone) return t.ops.device[row] < n ? t.ops.device[row] : -1;
  const std::int64_t p = t.ops.process[row];
  if (p >= kIdStride) {
    const std::int64_t i = p / kIdStride - 1;
    return i < n ? static_cast<std::int32_t>(i) : -1;
  }
  const std::int64_t s = host_id_string(p);
  if (s < 0) return -1;
  // "rank R:<text>" (Merger::host_id).
  const std::string_view text = t.strings.view(static_cast<StringId>(s));
  std::int32_t r = -1;
  if (!text.starts_with("rank ")) return -1;
  std::from_chars(text.data() + 5, text.data() + text.size(), r);
  for (std::int64_t i = 0; i < n; ++i) {
    if (t.meta.job.ranks[static_cast<std::size_t>(i)].rank == r) return static_cast<std::int32_t>(i);
  }
  return -1;
}

std::vector<std::int32_t> parse_ranks(const std::string& text, std::size_t traces) {
  std::vector<std::int32_t> out;
  if (text.empty()) throw ArgumentError("ranks", text, "empty; give one rank per trace (0,1,2 or 0-7)");
  auto number = [&](std::string_view s) {
    std::int32_t v = -1;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0) {
      throw ArgumentError("ranks", text, fmt::format("'{}' is not a non-negative integer", s));
    }
    return v;
  };
  const std::string_view all(text);
  if (const auto dash = all.find('-'); dash != std::string_view::npos && all.find(',') == std::string_view::npos) {
    const std::int32_t a = number(all.substr(0, dash));
    const std::int32_t b = number(all.substr(dash + 1));
    if (b < a) throw ArgumentError("ranks", text, "the range ends before it starts");
    if (static_cast<std::size_t>(b - a) + 1 != traces) {  // checked before the range is built
      throw ArgumentError("ranks", text, fmt::format("{} ranks, one per trace expected ({} traces)",
                                                     static_cast<std::int64_t>(b) - a + 1, traces));
    }
    for (std::int32_t r = a; r <= b; ++r) out.push_back(r);
    return out;
  }
  std::size_t i = 0;
  while (i <= all.size()) {
    const std::size_t comma = std::min(all.find(',', i), all.size());
    out.push_back(number(all.substr(i, comma - i)));
    i = comma + 1;
  }
  return out;
}

}  // namespace emo::trace
