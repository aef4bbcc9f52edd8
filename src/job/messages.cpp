#include "job/messages.h"

#include <cstdint>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace emo::job::messages {
namespace {

using nlohmann::json;

constexpr char kAnswer = 'P', kFailed = 'E';

json cut_json(const trace::JobCut& c) {
  json pins = json::array();
  for (const trace::CollectivePin& p : c.pins) pins.push_back({p.op, p.start_ns, p.transfer_ns});
  return {{"pins", std::move(pins)}, {"end_ns", c.end_ns}};
}

trace::JobCut cut_of(const json& j) {
  trace::JobCut c;
  c.end_ns = j.at("end_ns").get<TimeNs>();
  for (const json& p : j.at("pins")) c.pins.push_back({p.at(0).get<std::uint32_t>(), p.at(1).get<TimeNs>(), p.at(2).get<TimeNs>()});
  return c;
}

json ports_json(const timing::PortGraph& g) {
  std::vector<std::int64_t> lags;
  lags.reserve(4 * g.lags.size());
  for (const timing::PortLag& l : g.lags) lags.insert(lags.end(), {l.from, l.to, l.lag_ns, l.into_end ? 1 : 0});
  return {{"release", g.release_ns}, {"end_release", g.end_release_ns}, {"dur", g.dur_ns},
          {"rank_end", g.end_release_ns_rank}, {"window_start", g.window_start_ns}, {"lags", std::move(lags)}};
}

timing::PortGraph ports_of(const json& j) {
  timing::PortGraph g;
  g.release_ns = j.at("release").get<std::vector<TimeNs>>();
  g.end_release_ns = j.at("end_release").get<std::vector<TimeNs>>();
  g.dur_ns = j.at("dur").get<std::vector<TimeNs>>();
  g.end_release_ns_rank = j.at("rank_end").get<TimeNs>();
  g.window_start_ns = j.at("window_start").get<TimeNs>();
  const auto lags = j.at("lags").get<std::vector<std::int64_t>>();
  if (lags.size() % 4 != 0) throw std::invalid_argument("solve_decomposed_mpi: a malformed port reduction");
  for (std::size_t i = 0; i < lags.size(); i += 4) {
    g.lags.push_back({static_cast<std::uint32_t>(lags[i]), static_cast<std::uint32_t>(lags[i + 1]), lags[i + 2], lags[i + 3] != 0});
  }
  return g;
}

json run_json(const RankRun& r) { return {{"ports", ports_json(r.ports)}, {"above_idle_j", r.above_idle_j}}; }

RankRun run_of(const json& j) { return {ports_of(j.at("ports")), j.at("above_idle_j").get<double>()}; }

/// A rank's plan: its policy (header and section) as policy::to_json writes it, the rest as numbers.
json plan_json(const RankPlan& p) {
  policy::Policy whole = p.policy;
  whole.gpus = {p.section};
  const RankSolve& s = p.solve;
  json statics = json::array();
  for (const auto& [f, run] : p.statics) statics.push_back({f, run_json(run)});
  return {{"option_clocks_mhz", p.option_clocks_mhz}, {"policy", policy::to_json(whole)}, {"packs", s.packs},
          {"pinned", s.pinned}, {"mean_clock_mhz", s.mean_clock_mhz}, {"own_savings", s.own_savings},
          {"own_met", s.own_met}, {"plan", run_json(p.plan)}, {"statics", std::move(statics)}};
}

RankPlan plan_of(const json& j) {
  RankPlan p;
  p.option_clocks_mhz = j.at("option_clocks_mhz").get<std::vector<double>>();
  p.policy = policy::parse_policy(j.at("policy").get<std::string>(), "a rank's plan from another MPI process");
  if (p.policy.gpus.size() != 1) throw std::invalid_argument("solve_decomposed_mpi: a rank's plan without one GPU section");
  p.section = p.policy.gpus[0];
  p.policy.gpus.clear();
  p.solve.packs = j.at("packs").get<std::int64_t>();
  p.solve.pinned = j.at("pinned").get<std::int64_t>();
  p.solve.mean_clock_mhz = j.at("mean_clock_mhz").get<double>();
  p.solve.own_savings = j.at("own_savings").get<double>();
  p.solve.own_met = j.at("own_met").get<bool>();
  p.plan = run_of(j.at("plan"));
  for (const json& s : j.at("statics")) p.statics.emplace_back(s.at(0).get<double>(), run_of(s.at(1)));
  return p;
}

/// kAnswer + the CBOR of `j`.
std::string answer(const json& j) {
  const std::vector<std::uint8_t> b = json::to_cbor(j);
  return kAnswer + std::string(b.begin(), b.end());
}

/// The per-rank array of an answer; a failure throws the error it carries.
json answered(const std::string& bytes) {
  if (bytes.empty()) throw_decoded("X|empty reply");
  if (bytes[0] != kAnswer) throw_decoded(bytes.substr(1));
  json j = json::from_cbor(bytes.begin() + 1, bytes.end());
  if (!j.is_array()) throw std::invalid_argument("solve_decomposed_mpi: a malformed reply");
  return j;
}

json digest_json(const trace::RankDigest& d) {
  json cs = json::array();
  for (const auto& c : d.collectives) {
    cs.push_back({c.name, c.group, c.group_ranks, c.stream, c.sequence, c.src_rank, c.dst_rank, c.start_ns, c.end_ns,
                  c.op});
  }
  return {{"path", d.path}, {"rank", d.rank}, {"world_size", d.world_size}, {"device", d.device},
          {"device_error", d.device_error}, {"gpu_name", d.gpu_name}, {"changed_on_load", d.changed_on_load}, {"first_ns", d.first_ns}, {"last_ns", d.last_ns}, {"collectives", std::move(cs)},
          {"rank_lists", d.rank_lists}};
}

trace::RankDigest digest_of(const json& j) {
  trace::RankDigest d;
  d.path = j.at("path").get<std::string>();
  d.rank = j.at("rank").get<std::int32_t>();
  d.world_size = j.at("world_size").get<std::int32_t>();
  d.device = j.at("device").get<std::int32_t>();
  d.device_error = j.at("device_error").get<std::string>();
  d.gpu_name = j.value("gpu_name", std::string());
  d.changed_on_load = j.value("changed_on_load", std::vector<std::string>());
  d.first_ns = j.at("first_ns").get<TimeNs>();
  d.last_ns = j.at("last_ns").get<TimeNs>();
  for (const auto& c : j.at("collectives")) {
    d.collectives.push_back({c.at(0).get<std::string>(), c.at(1).get<std::string>(), c.at(2).get<std::int32_t>(),
                             c.at(3).get<std::int64_t>(), c.at(4).get<std::int64_t>(), c.at(5).get<std::int32_t>(),
                             c.at(6).get<std::int32_t>(), c.at(7).get<TimeNs>(), c.at(8).get<TimeNs>(),
                             c.at(9).get<std::uint32_t>()});
  }
  d.rank_lists = j.at("rank_lists").get<std::vector<std::string>>();
  return d;
}

}  // namespace

std::string encode(const Command& c) {
  json cuts = json::array();
  for (const trace::JobCut& cut : c.cuts) cuts.push_back(cut_json(cut));
  const json j{{"gpu", c.gpu}, {"cuts", std::move(cuts)}, {"round", c.round}, {"share", c.rank_slowdown}, {"clocks", c.clocks_mhz}, {"ends", c.port_end_ns}};
  const std::vector<std::uint8_t> b = json::to_cbor(j);
  return static_cast<char>(c.kind) + std::string(b.begin(), b.end());
}

bool is_command(const std::string& bytes) {
  if (bytes.empty()) return false;
  const auto k = static_cast<CommandKind>(bytes[0]);
  return k == CommandKind::kPorts || k == CommandKind::kRound || k == CommandKind::kReleased || k == CommandKind::kStatics ||
         k == CommandKind::kStaticEnergies || k == CommandKind::kLanes;
}

Command decode_command(const std::string& bytes) {
  if (!is_command(bytes)) throw std::invalid_argument("solve_decomposed_mpi: not a command");
  const json j = json::from_cbor(bytes.begin() + 1, bytes.end());
  Command c;
  c.kind = static_cast<CommandKind>(bytes[0]);
  c.gpu = j.at("gpu").get<std::string>();
  for (const json& cut : j.at("cuts")) c.cuts.push_back(cut_of(cut));
  c.round = j.at("round").get<int>();
  c.rank_slowdown = j.at("share").get<double>();
  c.clocks_mhz = j.at("clocks").get<std::vector<double>>();
  c.port_end_ns = j.at("ends").get<std::vector<std::vector<TimeNs>>>();
  return c;
}

std::string encode_reply(const std::vector<timing::PortGraph>& ports) {
  json out = json::array();
  for (const timing::PortGraph& g : ports) out.push_back(ports_json(g));
  return answer(out);
}

std::string encode_reply(const std::vector<RankPlan>& plans) {
  json out = json::array();
  for (const RankPlan& p : plans) out.push_back(plan_json(p));
  return answer(out);
}

std::string encode_reply(const std::vector<std::vector<RankRun>>& runs) {
  json out = json::array();
  for (const std::vector<RankRun>& rank : runs) {
    json one = json::array();
    for (const RankRun& r : rank) one.push_back(run_json(r));
    out.push_back(std::move(one));
  }
  return answer(out);
}

std::string encode_reply(const std::vector<RankLane>& lanes) {
  json out = json::array();
  for (const RankLane& lane : lanes) {
    std::vector<std::int64_t> ints;  // per pack: start, end, ops
    std::vector<double> clocks;
    for (const RankLanePack& p : lane) ints.insert(ints.end(), {p.start_ns, p.end_ns, p.ops}), clocks.push_back(p.clock_mhz);
    out.push_back({{"packs", std::move(ints)}, {"clocks", std::move(clocks)}});
  }
  return answer(out);
}

std::string encode_energies_reply(const std::vector<std::vector<double>>& energies) {
  json out = json::array();
  for (const std::vector<double>& rank : energies) out.push_back(rank);
  return answer(out);
}

std::string encode_failure(const std::exception_ptr& e) { return kFailed + encode_error(e); }

std::vector<timing::PortGraph> decode_ports_reply(const std::string& bytes) {
  std::vector<timing::PortGraph> out;
  for (const json& g : answered(bytes)) out.push_back(ports_of(g));
  return out;
}

std::vector<RankPlan> decode_plans_reply(const std::string& bytes) {
  std::vector<RankPlan> out;
  for (const json& p : answered(bytes)) out.push_back(plan_of(p));
  return out;
}

std::vector<std::vector<RankRun>> decode_statics_reply(const std::string& bytes) {
  std::vector<std::vector<RankRun>> out;
  for (const json& rank : answered(bytes)) {
    std::vector<RankRun>& runs = out.emplace_back();
    for (const json& r : rank) runs.push_back(run_of(r));
  }
  return out;
}

std::vector<std::vector<double>> decode_energies_reply(const std::string& bytes) {
  std::vector<std::vector<double>> out;
  for (const json& rank : answered(bytes)) out.push_back(rank.get<std::vector<double>>());
  return out;
}

std::vector<RankLane> decode_lanes_reply(const std::string& bytes) {
  std::vector<RankLane> out;
  for (const json& lane : answered(bytes)) {
    const auto ints = lane.at("packs").get<std::vector<std::int64_t>>();
    const auto clocks = lane.at("clocks").get<std::vector<double>>();
    if (ints.size() != 3 * clocks.size()) throw std::invalid_argument("solve_decomposed_mpi: a malformed lane");
    RankLane& l = out.emplace_back();
    for (std::size_t i = 0; i < clocks.size(); ++i) l.push_back({ints[3 * i], ints[3 * i + 1], clocks[i], ints[3 * i + 2]});
  }
  return out;
}

std::string encode_error(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const InputError& x) {
    return "I|" + x.path() + "\n" + x.problem();
  } catch (const std::exception& x) {
    return std::string("X|") + x.what();
  } catch (...) {
    return "X|unknown error";
  }
}

void throw_decoded(const std::string& s) {
  const std::string body = s.substr(2);
  if (s.starts_with("I|")) {
    const auto nl = body.find('\n');
    throw InputError(body.substr(0, nl), nl == std::string::npos ? "" : body.substr(nl + 1));
  }
  throw std::runtime_error(body);
}

std::string encode_digests(const std::vector<trace::RankDigest>& digests) {
  json all = json::array();
  for (const trace::RankDigest& d : digests) all.push_back(digest_json(d));
  const std::vector<std::uint8_t> b = json::to_cbor(all);
  return {b.begin(), b.end()};
}

std::vector<trace::RankDigest> decode_digests(const std::string& bytes) {
  std::vector<trace::RankDigest> out;
  for (const json& d : json::from_cbor(bytes.begin(), bytes.end())) out.push_back(digest_of(d));
  return out;
}

}  // namespace emo::job::messages
