#include "support/job_generator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <numbers>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "support/draw.h"

namespace emo::testing {
namespace {

using graph::DepGraph;
using trace::OpKind;
using trace::Trace;

constexpr std::uint8_t kOther = 0, kCompute = 1, kCollective = 2;
constexpr std::uint64_t kJitterSalt = 0x6a697474ULL, kOffsetSalt = 0x6f666673ULL;

/// A standard normal value drawn from (seed, rank, op row).
double normal(std::uint64_t seed, std::uint64_t rank, std::uint64_t row) {
  return testing::normal(seed, rank, row, kJitterSalt);
}

void check_spec(const JobSpec& s) {
  auto bad = [&](const char* what) { throw std::invalid_argument(fmt::format("job spec: {} ({})", what, describe(s))); };
  if (s.ranks < 1) bad("ranks must be >= 1");
  if (s.straggler < -1 || s.straggler >= s.ranks) bad("straggler must be a rank of the job, or -1");
  if (!(s.straggler_slowdown >= 0)) bad("straggler slowdown must be >= 0");
  if (!(s.jitter >= 0)) bad("jitter must be >= 0");
  if (s.max_offset_ns < 0) bad("max offset must be >= 0");
  if (s.group_size < 0) bad("group size must be >= 0");
}

/// Recorded → replayed time on one track (a host thread or a GPU stream), from the node
/// timepoints on it: (recorded, replayed) pairs sorted by recorded time, replayed made monotone.
class TrackMap {
 public:
  void add(TimeNs recorded, TimeNs replayed) { points_.emplace_back(recorded, replayed); }
  bool empty() const noexcept { return points_.empty(); }
  void seal() {
    std::sort(points_.begin(), points_.end());
    for (std::size_t i = 1; i < points_.size(); ++i)
      points_[i].second = std::max(points_[i].second, points_[i - 1].second);
  }
  /// Keeps the distance to the latest point at or before t, capped at the next point's time;
  /// before the first point, t itself capped at the first point's time.
  TimeNs operator()(TimeNs t) const {
    auto next = std::upper_bound(points_.begin(), points_.end(), t,
                                 [](TimeNs v, const std::pair<TimeNs, TimeNs>& p) { return v < p.first; });
    if (next == points_.begin()) return std::min(t, next->second);
    const auto& prev = *(next - 1);
    const TimeNs v = prev.second + (t - prev.first);
    return next == points_.end() ? v : std::min(v, next->second);
  }

 private:
  std::vector<std::pair<TimeNs, TimeNs>> points_;
};

/// The track of op i: (0, process, thread) for host ops, (1, device, stream) for GPU ops and GPU
/// annotations and sync records (a sync record follows its call instead when the call is known).
std::tuple<int, std::int64_t, std::int64_t> track_key(const trace::OpTable& ops, std::size_t i) {
  const OpKind k = ops.kind[i];
  if (trace::is_gpu_op(k) || k == OpKind::kGpuAnnotation || k == OpKind::kSync) return {1, ops.device[i], ops.stream[i]};
  return {0, ops.process[i], ops.thread[i]};
}

/// A copy of `t` (Trace is move-only: its string table is). Strings are interned in id order, so
/// every id keeps its meaning.
Trace copy_trace(const Trace& t) {
  Trace c;
  for (StringId id = 0; id < t.strings.size(); ++id) {
    if (c.strings.intern(t.strings.view(id)) != id) throw std::logic_error("copy_trace: string ids differ");
  }
  c.meta = t.meta;
  c.ops = t.ops;
  c.syncs = t.syncs;
  c.collectives = t.collectives;
  c.quirks = t.quirks;
  c.warnings = t.warnings;
  return c;
}

}  // namespace

std::string describe(const JobSpec& s) {
  return fmt::format("ranks={} straggler={} slowdown={} jitter={} max_offset_ns={} group_size={} seed={}", s.ranks,
                     s.straggler, s.straggler_slowdown, s.jitter, s.max_offset_ns, s.group_size, s.seed);
}

JobGenerator::JobGenerator(const trace::Trace& source, const JobSpec& spec)
    : source_(source), spec_(spec) {
  check_spec(spec_);
  graph_ = graph::build_graph(source_);
  const trace::OpTable& ops = source_.ops;
  const trace::CollectiveTable& ct = source_.collectives;
  // T per collective: the smallest recorded duration among those of the same kernel and size.
  std::map<std::tuple<StringId, std::int64_t, std::int64_t>, TimeNs> smallest;
  for (std::size_t c = 0; c < ct.size(); ++c) {
    const auto key = std::make_tuple(ops.name[ct.op[c]], ct.in_nelems[c], ct.out_nelems[c]);
    const TimeNs d = ops.dur_ns[ct.op[c]];
    auto [it, fresh] = smallest.emplace(key, d);
    if (!fresh) it->second = std::min(it->second, d);
  }
  transfer_ns_.resize(ct.size());
  std::vector<std::int64_t> coll_of(ops.size(), -1);
  for (std::size_t c = 0; c < ct.size(); ++c) {
    transfer_ns_[c] = smallest.at(std::make_tuple(ops.name[ct.op[c]], ct.in_nelems[c], ct.out_nelems[c]));
    coll_of[ct.op[c]] = static_cast<std::int64_t>(c);
  }
  node_class_.assign(graph_.nodes(), kOther);
  node_transfer_.assign(graph_.nodes(), 0);
  bool any_gpu = false;
  for (std::uint32_t n = 0; n < graph_.nodes(); ++n) {
    const std::uint32_t op = graph_.op[n];
    any_gpu = any_gpu || graph_.gpu[n] != 0;
    if (ops.kind[op] != OpKind::kKernel) continue;
    if (coll_of[op] >= 0) {
      node_class_[n] = kCollective;
      node_transfer_[n] = transfer_ns_[static_cast<std::size_t>(coll_of[op])];
    } else {
      node_class_[n] = kCompute;
    }
  }
  if (!any_gpu) throw std::invalid_argument("job generator: the source trace has no GPU op");
  replay();
}

JobGenerator::Group JobGenerator::group_of(int rank) const {
  const int size = spec_.group_size > 0 ? spec_.group_size : spec_.ranks;
  const int k = rank / size;
  return {k, k * size, std::min(spec_.ranks, (k + 1) * size)};
}

TimeNs JobGenerator::offset_ns(int rank) const {
  if (spec_.max_offset_ns == 0) return 0;
  const double u = uniform(spec_.seed, static_cast<std::uint64_t>(rank), 0, kOffsetSalt);
  return std::llround((2.0 * u - 1.0) * static_cast<double>(spec_.max_offset_ns));
}

TimeNs JobGenerator::node_dur(std::uint32_t node, int rank) const {
  switch (node_class_[node]) {
    case kCollective: return node_transfer_[node];
    case kCompute: {
      double f = rank == spec_.straggler ? 1.0 + spec_.straggler_slowdown : 1.0;
      if (spec_.jitter > 0) {
        f *= std::max(0.0, 1.0 + spec_.jitter * normal(spec_.seed, static_cast<std::uint64_t>(rank), graph_.op[node]));
      }
      return f == 1.0 ? graph_.dur[node] : std::llround(static_cast<double>(graph_.dur[node]) * f);
    }
    default: return graph_.dur[node];
  }
}

// The longest-path replay of graph::longest_path over the N rank copies at once (time_ holds the
// N values of a timepoint side by side), plus the coupling of collective ends within each group.
void JobGenerator::replay() {
  const auto n_ranks = static_cast<std::size_t>(spec_.ranks);
  const DepGraph& g = graph_;
  time_.assign(2 * g.nodes() * n_ranks, 0);
  TimeNs first = INT64_MAX, last = INT64_MIN;
  for (const std::uint32_t tp : g.topo) {
    const std::uint32_t n = DepGraph::node_of(tp);
    const bool end = DepGraph::is_end(tp);
    TimeNs* out = &time_[tp * n_ranks];
    const TimeNs* start = &time_[DepGraph::start_tp(n) * n_ranks];
    for (std::size_t r = 0; r < n_ranks; ++r) {
      out[r] = end ? start[r] + node_dur(n, static_cast<int>(r)) : g.release[n];
    }
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_lag[k] == graph::kDroppedLag) continue;
      const TimeNs* from = &time_[g.in_from[k] * n_ranks];
      for (std::size_t r = 0; r < n_ranks; ++r) out[r] = std::max(out[r], from[r] + g.in_lag[k]);
    }
    if (end && node_class_[n] == kCollective) {
      for (int r0 = 0; r0 < spec_.ranks;) {  // each group: last arrival + T
        const Group grp = group_of(r0);
        const TimeNs arrival = *std::max_element(start + grp.first, start + grp.last);
        for (int r = grp.first; r < grp.last; ++r) out[r] = std::max(out[r], arrival + node_transfer_[n]);
        r0 = grp.last;
      }
    }
    for (std::size_t r = 0; r < n_ranks; ++r) {
      if (out[r] == INT64_MIN) out[r] = g.rec_start[n];  // every constraint dropped
      if (end) last = std::max(last, out[r]); else first = std::min(first, out[r]);
    }
  }
  span_ns_ = g.nodes() == 0 ? 0 : last - first;
}

void JobGenerator::write_times(Trace& t, int rank) const {
  const auto n_ranks = static_cast<std::size_t>(spec_.ranks);
  trace::OpTable& ops = t.ops;
  std::vector<TimeNs> start(ops.start_ns), end(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) end[i] = ops.end_ns(i);
  std::map<std::tuple<int, std::int64_t, std::int64_t>, TrackMap> tracks;
  std::unordered_map<std::int64_t, std::uint32_t> call_of_correlation;
  std::vector<std::uint8_t> is_node(ops.size(), 0);
  for (std::uint32_t n = 0; n < graph_.nodes(); ++n) {
    const std::uint32_t op = graph_.op[n];
    const TimeNs s = time_[DepGraph::start_tp(n) * n_ranks + static_cast<std::size_t>(rank)];
    const TimeNs e = time_[DepGraph::end_tp(n) * n_ranks + static_cast<std::size_t>(rank)];
    TrackMap& track = tracks[track_key(ops, op)];
    track.add(start[op], s);
    track.add(end[op], e);
    start[op] = s;
    end[op] = e;
    is_node[op] = 1;
    if (trace::is_api_call(ops.kind[op]) && ops.correlation[op] != trace::kNone)
      call_of_correlation.emplace(ops.correlation[op], op);
  }
  for (auto& [key, track] : tracks) track.seal();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (is_node[i]) continue;
    auto key = track_key(ops, i);
    if (ops.kind[i] == OpKind::kSync) {
      auto call = call_of_correlation.find(ops.correlation[i]);
      if (call != call_of_correlation.end()) key = track_key(ops, call->second);
    }
    auto it = tracks.find(key);
    if (it == tracks.end()) continue;  // a track with no node keeps its recorded times
    start[i] = it->second(start[i]);
    end[i] = std::max(start[i], it->second(end[i]));
  }
  const TimeNs offset = offset_ns(rank);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ops.start_ns[i] = start[i] + offset;
    ops.dur_ns[i] = end[i] - start[i];
  }
}

void JobGenerator::label_collectives(Trace& t, int rank) const {
  const Group grp = group_of(rank);
  std::string members = "[";
  for (int r = grp.first; r < grp.last; ++r) members += fmt::format("{}{}", r == grp.first ? "" : ", ", r);
  members += "]";
  const StringId name = t.strings.intern(fmt::format("g{}", grp.index));
  const StringId ranks = t.strings.intern(members);
  trace::CollectiveTable& ct = t.collectives;
  for (std::size_t c = 0; c < ct.size(); ++c) {
    ct.group[c] = name;
    ct.group_ranks[c] = ranks;
    ct.group_size[c] = grp.last - grp.first;
    ct.sequence[c] = static_cast<std::int64_t>(c);
  }
  ct.match.clear();
}

trace::Trace JobGenerator::rank_trace(int rank) const {
  if (rank < 0 || rank >= spec_.ranks)
    throw std::out_of_range(fmt::format("job generator: rank {} outside a job of {}", rank, spec_.ranks));
  Trace t = copy_trace(source_);
  write_times(t, rank);
  label_collectives(t, rank);
  t.meta.rank = rank;
  t.meta.world_size = spec_.ranks;
  t.meta.path = fmt::format("synthetic:{}#rank{}", source_.meta.path, rank);
  if (t.meta.backend.empty()) t.meta.backend = "nccl";
  t.meta.job = {};
  t.quirks = {};  // a new recording: finish() counts its quirks again
  t.warnings.clear();
  t.finish();
  return t;
}

std::vector<trace::Trace> generate_job(const trace::Trace& source, const JobSpec& spec) {
  const JobGenerator gen(source, spec);
  std::vector<trace::Trace> out;
  out.reserve(static_cast<std::size_t>(spec.ranks));
  for (int r = 0; r < spec.ranks; ++r) out.push_back(gen.rank_trace(r));
  return out;
}

}  // namespace emo::testing
