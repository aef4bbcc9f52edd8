#include "output/pack_output.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "output/overlay.h"

namespace emo::output {

using pack::Cut;
using pack::kCutCount;
using pack::Pack;
using pack::PackGraph;
using pack::PackRun;
using pack::Packing;
using pack::PortKind;
using pack::cut_name;
using pack::ContractionCase;

namespace {

constexpr std::int64_t kPackPidBase = 1'000'000'200;  // + device: the pack track

std::size_t streams_of(const trace::Trace& t, const graph::DepGraph& g, const Packing& p,
                       std::uint32_t pack) {
  std::set<std::int64_t> s;
  for (const std::uint32_t n : p.ops_of(pack)) s.insert(t.ops.stream[g.op[n]]);
  return s.size();
}

std::vector<std::int32_t> devices(const Packing& p) {
  std::vector<std::int32_t> d;
  for (const Pack& pk : p.packs) {
    if (d.empty() || d.back() != pk.device) d.push_back(pk.device);
  }
  return d;
}

std::int64_t ports_of_kind(const PackGraph& pg, PortKind k) {
  return std::count(pg.port_kind.begin(), pg.port_kind.end(), k);
}

}  // namespace

nlohmann::json to_json(const trace::Trace& t, const PackRun& r) {
  using nlohmann::json;
  const Packing& p = r.packing;
  const graph::DepGraph& g = r.analysis.graph;
  auto cases = [](const std::vector<ContractionCase>& v) {
    json a = json::array();
    for (const ContractionCase& c : v) {
      a.push_back({{"case", c.label},
                   {"op_makespan_ns", c.op_makespan_ns},
                   {"pack_makespan_ns", c.pack_makespan_ns},
                   {"error", c.error}});
    }
    return a;
  };
  json cuts = json::object();
  for (int c = 0; c < kCutCount; ++c) cuts[std::string(cut_name(static_cast<Cut>(c)))] = p.stats.cuts[c];
  json gpus = json::array();
  for (const std::int32_t d : devices(p)) {
    json packs = json::array();
    std::int64_t ops = 0, n = 0, short_n = 0;
    for (std::uint32_t i = 0; i < p.packs.size(); ++i) {
      const Pack& pk = p.packs[i];
      if (pk.device != d) continue;
      ops += pk.count;
      ++n;
      short_n += pk.forced_short ? 1 : 0;
      packs.push_back({{"id", i},
                       {"start_ns", pk.start_ns},
                       {"end_ns", pk.end_ns},
                       {"dur_ns", pk.dur_ns()},
                       {"span_ns", pk.span_ns},
                       {"ops", pk.count},
                       {"streams", streams_of(t, g, p, i)},
                       {"slack_ns", r.pack_slack[i]},
                       {"critical", pk.critical},
                       {"starts_at", cut_name(pk.starts_at)},
                       {"forced_short", pk.forced_short}});
    }
    TimeNs busy = 0;
    for (const timing::GpuSlack& gs : r.analysis.gpus) {
      if (gs.device == d) busy = gs.busy_ns;
    }
    gpus.push_back({{"device", d}, {"ops", ops}, {"pack_count", n}, {"forced_short", short_n},
                    {"busy_ns", busy}, {"packs", packs}});
  }
  const std::size_t ops = p.nodes.size();
  const graph::DepGraph& q = r.pack_graph.g;
  return {{"path", t.meta.path},
          {"window", {{"label", g.window.label},
                      {"begin_ns", g.nodes() ? json(g.window_start_ns) : json()},
                      {"end_ns", g.nodes() ? json(r.analysis.schedule.end_ns) : json()}}},
          {"min_pack_ns", p.min_pack_ns},
          {"min_pack_source", r.min_pack_source},
          {"ops", ops},
          {"packs", p.packs.size()},
          {"compression_ratio", p.packs.empty() ? 0.0 : static_cast<double>(ops) / static_cast<double>(p.packs.size())},
          {"forced_short", p.stats.forced_short},
          {"cuts", cuts},
          {"makespan_ns", r.analysis.schedule.makespan_ns},
          {"pack_graph_makespan_ns", r.pack_schedule.makespan_ns},
          {"contraction_error", r.contraction.contraction_error},
          {"contraction", {{"uniform", cases(r.contraction.uniform)},
                           {"per_pack", cases(r.contraction.per_pack)},
                           {"uniform_error", r.contraction.uniform_error},
                           {"per_pack_error", r.contraction.per_pack_error}}},
          {"pack_graph", {{"nodes", q.nodes()},
                          {"edges", q.edges()},
                          {"port_edges", r.pack_graph.port_edges()},
                          {"exit_ports", ports_of_kind(r.pack_graph, PortKind::kExit)},
                          {"release_ports", ports_of_kind(r.pack_graph, PortKind::kRelease)},
                          {"cycle_edges", r.pack_graph.cycle_edges}}},
          {"op_graph", {{"nodes", g.nodes()}, {"edges", g.edges()}}},
          {"stats", {{"islands", p.stats.islands},
                     {"mid_pack_exits", p.stats.mid_pack_exits}}},
          {"gpus", gpus}};
}

std::string to_text(const trace::Trace& t, const PackRun& r) {
  const Packing& p = r.packing;
  const graph::DepGraph& g = r.analysis.graph;
  std::string out;
  auto line = [&out](const std::string& s) { out += s + '\n'; };
  line(t.meta.path);
  line(fmt::format("  window        {}", g.window.label));
  line(fmt::format("  min pack      {} ({})", format_duration(p.min_pack_ns), r.min_pack_source));
  const std::size_t ops = p.nodes.size();
  line(fmt::format("  packs         {} GPU ops in {} pack{} (compression {:.1f}x), {} with a span (start to the "
                   "next pack's start) shorter than min pack{}",
                   ops, p.packs.size(), p.packs.size() == 1 ? "" : "s",
                   p.packs.empty() ? 0.0 : static_cast<double>(ops) / static_cast<double>(p.packs.size()),
                   p.stats.forced_short, p.stats.forced_short > 0 ? " (a GPU timeline shorter than min pack)" : ""));
  std::string cuts;
  for (int c = 0; c < kCutCount; ++c) {
    if (p.stats.cuts[c] == 0) continue;
    cuts += fmt::format("{}{} {}", cuts.empty() ? "" : ", ", cut_name(static_cast<Cut>(c)), p.stats.cuts[c]);
  }
  line("  starts        " + (cuts.empty() ? std::string("-") : cuts));
  line(fmt::format("  pack graph    {} nodes, {} edges (op graph {} nodes, {} edges)",
                   r.pack_graph.nodes(), r.pack_graph.g.edges(), g.nodes(), g.edges()));
  line(fmt::format("  makespan      {} (pack graph {})", format_duration(r.analysis.schedule.makespan_ns),
                   format_duration(r.pack_schedule.makespan_ns)));
  line(fmt::format("  contraction   error {:.4f} % (uniform factors {:.4f} %, per-pack factors {:.4f} %)",
                   100 * r.contraction.contraction_error, 100 * r.contraction.uniform_error,
                   100 * r.contraction.per_pack_error));
  for (const std::int32_t d : devices(p)) {
    std::size_t n = 0;
    for (const Pack& pk : p.packs) n += pk.device == d ? 1 : 0;
    line(fmt::format("  GPU {}: {} packs", d, n));
    std::size_t shown = 0;
    for (std::uint32_t i = 0; i < p.packs.size(); ++i) {
      const Pack& pk = p.packs[i];
      if (pk.device != d) continue;
      if (shown++ == 12) {
        line("    ... (--json for all)");
        break;
      }
      line(fmt::format("    #{:<5} {:>6} ops  dur {:>12}  span {:>12}  slack {:>12}  {}{}{}", i, pk.count,
                       format_duration(pk.dur_ns()), format_duration(pk.span_ns),
                       format_duration(r.pack_slack[i]), cut_name(pk.starts_at),
                       pk.critical ? ", critical" : "", pk.forced_short ? ", short" : ""));
    }
  }
  return out;
}

void write_pack_overlay(const trace::Trace& t, const PackRun& r, const std::string& path,
                        std::span<const double> pack_clock_mhz, const std::map<std::int32_t, std::string>& labels) {
  std::vector<OverlayTrack> tracks;
  const Packing& p = r.packing;
  if (!pack_clock_mhz.empty() && pack_clock_mhz.size() != p.packs.size())
    throw std::invalid_argument("write_pack_overlay: one clock per pack expected");
  const auto& ranks = t.meta.job.ranks;
  for (const std::int32_t d : devices(p)) {
    OverlayTrack track;
    track.name = fmt::format("EMO packs, GPU {}", d);
    if (d >= 0 && static_cast<std::size_t>(d) < ranks.size()) {  // a linked job: beside its rank's GPU
      track.name = fmt::format("EMO packs, rank {} (GPU {})", ranks[static_cast<std::size_t>(d)].rank, d);
      track.sort_index = rank_sort_index(d, 2);
    }
    if (const auto l = labels.find(d); l != labels.end()) track.label = l->second;
    track.pid = kPackPidBase + d;
    for (std::uint32_t i = 0; i < p.packs.size(); ++i) {
      const Pack& pk = p.packs[i];
      if (pk.device != d) continue;
      nlohmann::json args = {{"pack", i},
                             {"ops", pk.count},
                             {"slack_ns", r.pack_slack[i]},
                             {"span_ns", pk.span_ns},
                             {"critical", pk.critical},
                             {"starts_at", cut_name(pk.starts_at)},
                             {"forced_short", pk.forced_short}};
      if (!pack_clock_mhz.empty()) args["clock_mhz"] = pack_clock_mhz[i];
      if (track.sort_index >= 0) args["rank"] = ranks[static_cast<std::size_t>(d)].rank;
      track.slices.push_back({fmt::format("pack {}", i), pk.start_ns, pk.dur_ns(), args.dump()});
    }
    tracks.push_back(std::move(track));
  }
  write_overlay(t, r.analysis, path, tracks);
}

}  // namespace emo::output
