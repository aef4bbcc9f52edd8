#include "output/job_view_output.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "output/optimize_output.h"
#include "output/overlay.h"

namespace emo::output {
namespace {

constexpr std::int64_t kPathPid = 1'000'000'000;  // "EMO critical path", as write_overlay's

const job::JobView& view_of(const job::DecomposedSolve& d) {
  if (!d.view) throw std::invalid_argument("decomposed report: the solve has no job view (DecomposedOptions::lanes)");
  return *d.view;
}

ReportRow row_of(const std::string& label, const driver::Evaluated& e, const driver::Evaluated& base) {
  return {label, ns_to_s(e.time_ns), e.energy_j, base.energy_j > 0 ? 1 - e.energy_j / base.energy_j : 0,
          base.time_ns > 0 ? static_cast<double>(e.time_ns) / static_cast<double>(base.time_ns) - 1 : 0};
}

/// The summary rows and markers of `d`: baseline, best static clock, EMO's composed plan, and the
/// static clock again as what is kept when it is.
void add_schedules(const job::DecomposedSolve& d, HtmlReport& h) {
  const driver::Evaluated& base = d.baseline.run;
  h.rows.push_back(row_of(fmt::format("baseline ({:.0f} MHz)", base.clock_mhz), base, base));
  h.markers.push_back({ns_to_s(base.time_ns), base.energy_j, "baseline"});
  if (d.static_choice.best.clock_mhz > 0) {
    h.rows.push_back(row_of(fmt::format("best static clock ({:.0f} MHz)", d.static_choice.best.clock_mhz), d.static_choice.best, base));
    h.markers.push_back({ns_to_s(d.static_choice.best.time_ns), d.static_choice.best.energy_j, "static best"});
  }
  h.rows.push_back(row_of(d.static_choice.kept ? "EMO, composed plan (not kept)" : "EMO policy (decomposed solve)",
                          d.composed.plan, base));
  h.markers.push_back({ns_to_s(d.composed.plan.time_ns), d.composed.plan.energy_j, "EMO"});
  if (d.static_choice.kept) {
    h.rows.push_back(row_of(fmt::format("EMO (static {:.0f} MHz kept)", d.static_choice.best.clock_mhz), d.plan, base));
  }
  h.target_s = ns_to_s(d.baseline.target_ns);
}

}  // namespace

HtmlReport to_report(const job::DecomposedSolve& d, const job::JobPorts& jp, const std::string& gpu) {
  const job::JobView& v = view_of(d);
  HtmlReport h;
  h.title = jp.path + " (decomposed solve)";
  h.gpu = gpu;
  h.simulated = d.simulated;
  h.timeline = false;
  h.makespan_ns = std::max<TimeNs>(1, v.makespan_ns);
  h.min_clock_mhz = h.max_clock_mhz = 0;
  double lo = 0, hi = 0;
  for (std::size_t r = 0; r < v.ranks.size(); ++r) {
    const job::JobViewRank& k = v.ranks[r];
    for (const job::RankLanePack& p : k.packs) {
      h.packs.push_back({static_cast<int>(r), p.start_ns - v.start_ns, p.end_ns - v.start_ns, p.clock_mhz, p.ops});
      lo = lo == 0 ? p.clock_mhz : std::min(lo, p.clock_mhz);
      hi = std::max(hi, p.clock_mhz);
    }
    const trace::JobRank* info = r < jp.link.info.ranks.size() ? &jp.link.info.ranks[r] : nullptr;
    // The mean clock as the solve reports it (text, --json), or the static clock kept.
    const double mean_mhz = v.static_mhz > 0 ? v.static_mhz : (r < d.ranks.size() ? d.ranks[r].mean_clock_mhz : 0);
    h.ranks.push_back({info ? info->rank : static_cast<std::int32_t>(r), static_cast<int>(r), info ? info->path : "",
                       static_cast<std::int64_t>(k.packs.size()), mean_mhz, k.baseline_j, k.kept_j});
  }
  h.min_clock_mhz = lo;
  h.max_clock_mhz = std::max(hi, d.baseline.run.clock_mhz);
  for (const timing::JobPathStretch& s : v.path)
    h.rank_path.push_back({static_cast<int>(s.rank), s.start_ns - v.start_ns, s.end_ns - v.start_ns});
  add_schedules(d, h);
  h.rank_caption =
      "One lane per rank: its GPU's packs in the kept plan's run (simulated; each rank's run timed with its collectives "
      "ending when the job's composed timing says), coloured by their clock; the kept plan's critical path across the "
      "ranks (thick: on a rank; dashed: from rank to rank), backtracked from the job's end through each collective's "
      "last arrival; at the right the rank's savings: its GPU's energy in the kept plan's run against the baseline run "
      "(its ops above idle plus idle power over the makespan: the ranks sum to the job's figures).";
  h.no_power = "not drawn by the decomposed solve (each rank's run stays with its process).";
  h.notes.push_back(fmt::format(
      "Decomposed solve of {} ranks (docs/multi-rank.md), every figure SIMULATED. Drawn per rank at pack granularity: "
      "no op timeline, per-pack table, predicted frontier or power curve (--solve joint draws them for a few ranks).",
      v.ranks.size()));
  if (d.static_choice.kept) {
    h.notes.push_back(fmt::format(
        "The best static clock, {:.0f} MHz, is kept ({:.3f} J against the composed plan's {:.3f} J{}): the policy "
        "locks every GPU at {:.0f} MHz, and the lanes show each rank's packs at that clock.",
        v.static_mhz, d.static_choice.best.energy_j, d.composed.plan.energy_j,
        d.composed.plan.time_ns > d.baseline.target_ns ? ", which missed the target" : "", v.static_mhz));
  }
  h.notes.push_back(fmt::format("Latency target {} (+{:.1f} % on the simulated baseline); {} round(s) of rank solves.",
                                format_duration(d.baseline.target_ns), 100 * d.max_slowdown, d.composed.rounds));
  return h;
}

void write_decomposed_overlay(const job::DecomposedSolve& d, const job::JobPorts& jp, const std::string& path) {
  const job::JobView& v = view_of(d);
  std::vector<OverlayTrack> tracks;
  tracks.push_back({"EMO critical path", kPathPid, {}, "", -1});
  for (std::size_t r = 0; r < v.ranks.size(); ++r) {
    const std::int32_t rank = r < jp.link.info.ranks.size() ? jp.link.info.ranks[r].rank : static_cast<std::int32_t>(r);
    const job::JobViewRank& k = v.ranks[r];
    OverlayTrack t{fmt::format("EMO packs, rank {} (GPU {})", rank, r), static_cast<std::int64_t>(r), {}, "",
                   rank_sort_index(static_cast<std::int32_t>(r), 2)};
    if (k.baseline_j > 0 && d.baseline.run.energy_j > 0) t.label = rank_savings_label(k.baseline_j, k.kept_j, d.baseline.run.energy_j, d.simulated);
    for (std::size_t i = 0; i < k.packs.size(); ++i) {
      const job::RankLanePack& p = k.packs[i];
      const nlohmann::json args = {{"rank", rank}, {"pack", i}, {"clock_mhz", p.clock_mhz}, {"ops", p.ops}};
      t.slices.push_back({fmt::format("pack {} ({:.0f} MHz)", i, p.clock_mhz), p.start_ns, p.end_ns - p.start_ns, args.dump()});
    }
    tracks.push_back(std::move(t));
  }
  std::vector<OverlayFlow> flows;
  for (std::size_t i = 0; i < v.path.size(); ++i) {
    const timing::JobPathStretch& s = v.path[i];
    const std::int32_t rank = s.rank < jp.link.info.ranks.size() ? jp.link.info.ranks[s.rank].rank : static_cast<std::int32_t>(s.rank);
    const nlohmann::json args = {{"rank", rank}, {"from_collective", s.from_instance}, {"to_collective", s.to_instance}};
    const std::string name = fmt::format("rank {}", rank);
    tracks.front().slices.push_back({name, s.start_ns, s.end_ns - s.start_ns, args.dump(), 0});
    if (s.rank + 1 < tracks.size()) tracks[s.rank + 1].slices.push_back({"critical path", s.start_ns, s.end_ns - s.start_ns, args.dump(), 1});
    if (i + 1 < v.path.size())
      flows.push_back({static_cast<std::int64_t>(s.rank), 1, s.end_ns, static_cast<std::int64_t>(v.path[i + 1].rank), 1, v.path[i + 1].start_ns});
  }
  write_track_overlay(path, jp.path, v.start_ns, tracks, flows);
}

}  // namespace emo::output
