#include "timing/timing.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"

namespace emo::timing {
namespace {

using graph::EdgeType;
using graph::kDroppedLag;
using trace::OpKind;


}  // namespace

Schedule replay(const DepGraph& g, std::span<const TimeNs> dur) {
  return replay_with(g, [dur](std::uint32_t n) { return dur[n]; }, [&g](std::uint32_t k) { return g.in_lag[k]; });
}

double replay_error(const DepGraph& g, const Schedule& s) {
  if (s.makespan_ns <= 0) return 0.0;
  TimeNs worst = 0;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (g.gpu[n]) worst = std::max(worst, std::abs(s.end(n) - g.rec_end[n]));
  }
  return static_cast<double>(worst) / static_cast<double>(s.makespan_ns);
}

std::vector<TimeNs> latest_times(const DepGraph& g, const Schedule& s, std::span<const TimeNs> dur) {
  std::vector<TimeNs> latest(2 * g.nodes(), s.end_ns);
  for (auto it = g.topo.rbegin(); it != g.topo.rend(); ++it) {
    const std::uint32_t tp = *it;
    const TimeNs l = latest[tp];
    if (DepGraph::is_end(tp)) {
      TimeNs& ls = latest[tp - 1];
      ls = std::min(ls, l - dur[DepGraph::node_of(tp)]);
    }
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_lag[k] == kDroppedLag) continue;
      TimeNs& lf = latest[g.in_from[k]];
      lf = std::min(lf, l - g.in_lag[k]);
    }
  }
  return latest;
}

std::vector<TimeNs> slack(const DepGraph& g, const Schedule& s, std::span<const TimeNs> dur) {
  const std::vector<TimeNs> latest = latest_times(g, s, dur);
  std::vector<TimeNs> out(g.nodes());
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    out[n] = std::max<TimeNs>(0, latest[DepGraph::end_tp(n)] - s.end(n));
  }
  return out;
}

const char* BoundBy::name(int c) {
  static const char* const kNames[kCount] = {"cpu",       "gpu_compute", "communication",
                                             "launch_overhead", "sync_wait", "idle",
                                             "before_window"};
  return c >= 0 && c < kCount ? kNames[c] : "unknown";
}

namespace {

BoundBy::Category node_category(const trace::Trace& t, const DepGraph& g, std::uint32_t n) {
  const std::uint32_t row = g.op[n];
  switch (t.ops.kind[row]) {
    case OpKind::kKernel:
      return t.is_collective(row) ? BoundBy::kCommunication : BoundBy::kGpuCompute;
    case OpKind::kMemcpy: return BoundBy::kCommunication;
    case OpKind::kMemset: return BoundBy::kGpuCompute;
    default: return BoundBy::kCpu;
  }
}

BoundBy::Category edge_category(EdgeType e) {
  switch (e) {
    case EdgeType::kProgramOrder:
    case EdgeType::kNesting: return BoundBy::kCpu;
    case EdgeType::kLaunch: return BoundBy::kLaunchOverhead;
    case EdgeType::kHostSync:
    case EdgeType::kEventWait: return BoundBy::kSyncWait;
    case EdgeType::kStreamOrder: return BoundBy::kIdle;
    case EdgeType::kCollective: return BoundBy::kCommunication;
  }
  return BoundBy::kIdle;
}

}  // namespace

CriticalPath critical_path(const trace::Trace& trace, const DepGraph& g, const Schedule& s,
                           std::span<const TimeNs> dur) {
  CriticalPath p;
  if (g.nodes() == 0) return p;
  std::vector<PathStep> rev;
  std::uint32_t tp = DepGraph::end_tp(s.last_node);
  rev.push_back({s.last_node});
  for (;;) {
    const std::uint32_t n = DepGraph::node_of(tp);
    if (DepGraph::is_end(tp) && s.time[tp - 1] + dur[n] == s.time[tp]) {
      p.bound_by.ns[node_category(trace, g, n)] += dur[n];
      tp = tp - 1;
      continue;
    }
    // A tight incoming edge (the first one in storage order if several).
    std::uint32_t best = UINT32_MAX;
    for (std::uint32_t k = g.in_begin[tp]; k < g.in_begin[tp + 1]; ++k) {
      if (g.in_lag[k] == kDroppedLag) continue;
      if (s.time[g.in_from[k]] + g.in_lag[k] == s.time[tp]) {
        best = k;
        break;
      }
    }
    if (best == UINT32_MAX) {
      // A pinned start: the path begins here. Before a host call, the thread was running
      // untraced CPU work (Python, framework ops) since the window began: CPU time. Before a GPU
      // op of a step window, its stream was busy with work launched before the window (the CPU
      // ran ahead): before_window. A GPU op first in the whole trace: idle.
      const bool step_window = g.window.begin_ns != INT64_MIN;
      p.lead = !g.gpu[n] ? BoundBy::kCpu : step_window ? BoundBy::kBeforeWindow : BoundBy::kIdle;
      p.lead_ns = std::max<TimeNs>(0, s.time[tp] - g.window_start_ns);
      p.bound_by.ns[p.lead] += p.lead_ns;
      break;
    }
    if (g.in_lag[best] < 0) {
      p.skew_ns -= g.in_lag[best];  // a clock-skewed edge: time runs back; not a category
    } else {
      p.bound_by.ns[edge_category(g.in_type[best])] += g.in_lag[best];
    }
    const std::uint32_t from = g.in_from[best];
    // The step we are on was reached by this edge; continue from its source node.
    rev.back().via_edge = true;
    rev.back().edge = g.in_type[best];
    rev.push_back({DepGraph::node_of(from)});
    tp = from;
  }
  rev.back().via_edge = false;  // the first step has no incoming edge
  p.steps.assign(rev.rbegin(), rev.rend());
  p.length_ns = s.end(p.steps.back().node) - s.start(p.steps.front().node);
  return p;
}

double CriticalPath::share_of_makespan(int c) const noexcept {
  TimeNs total = 0;
  for (TimeNs v : bound_by.ns) total += v;
  return total > 0 && c >= 0 && c < BoundBy::kCount
             ? static_cast<double>(bound_by.ns[c]) / static_cast<double>(total)
             : 0.0;
}

double CriticalPath::share_of_path(int c) const noexcept {
  if (c < 0 || c >= BoundBy::kCount) return 0.0;
  TimeNs total = 0;
  for (TimeNs v : bound_by.ns) total += v;
  total -= lead_ns;
  const TimeNs part = bound_by.ns[c] - (c == lead ? lead_ns : 0);
  return total > 0 ? static_cast<double>(part) / static_cast<double>(total) : 0.0;
}

namespace {

/// Merges intervals (sorted by start) into disjoint ones.
std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end_ns <= i.start_ns) continue;
    if (!out.empty() && i.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

TimeNs total(const std::vector<Interval>& v) {
  TimeNs t = 0;
  for (const Interval& i : v) t += i.end_ns - i.start_ns;
  return t;
}

/// a \ b for disjoint sorted interval lists.
std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (Interval cur : a) {
    while (j < b.size() && b[j].end_ns <= cur.start_ns) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].start_ns < cur.end_ns) {
      if (b[k].start_ns > cur.start_ns) out.push_back({cur.start_ns, b[k].start_ns});
      cur.start_ns = std::max(cur.start_ns, b[k].end_ns);
      ++k;
    }
    if (cur.start_ns < cur.end_ns) out.push_back(cur);
  }
  return out;
}

}  // namespace

std::vector<GpuSlack> gpu_slack(const trace::Trace& trace, const DepGraph& g, const Schedule& s,
                                std::span<const TimeNs> node_slack) {
  std::vector<std::int32_t> devices;
  for (std::uint32_t n = 0; n < g.nodes(); ++n) {
    if (g.gpu[n]) devices.push_back(trace.ops.device[g.op[n]]);
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  std::vector<GpuSlack> out;
  for (std::int32_t d : devices) {
    std::vector<Interval> busy, critical;
    for (std::uint32_t n = 0; n < g.nodes(); ++n) {
      if (!g.gpu[n] || trace.ops.device[g.op[n]] != d) continue;
      busy.push_back({s.start(n), s.end(n)});
      if (node_slack[n] == 0) critical.push_back({s.start(n), s.end(n)});
    }
    GpuSlack gs;
    gs.device = d;
    const auto b = merge(std::move(busy));
    const auto c = merge(std::move(critical));
    gs.busy_ns = total(b);
    gs.critical_busy_ns = total(c);
    gs.windows = subtract(b, c);
    gs.slack_ns = total(gs.windows);
    out.push_back(std::move(gs));
  }
  return out;
}

// ---- what-if -------------------------------------------------------------------------------

struct WhatIf::Rule {
  enum class Sel { kAll, kGpu, kId, kCorrelation, kNameExact, kNameRegex, kKind, kStream, kDevice } sel;
  std::int64_t number = 0;
  /// "@K": only the K-th match (0-based; negative counts from the last) in recorded start order.
  std::optional<std::int64_t> instance;
  std::string text;
  std::optional<std::regex> regex;
  enum class Op { kScale, kAdd, kSet } op;
  double factor = 1.0;
  TimeNs amount = 0;
};

WhatIf::WhatIf() = default;
std::size_t WhatIf::rule_count() const noexcept { return rules.size(); }
WhatIf::~WhatIf() = default;
WhatIf::WhatIf(const WhatIf&) = default;
WhatIf& WhatIf::operator=(const WhatIf&) = default;
WhatIf::WhatIf(WhatIf&&) noexcept = default;
WhatIf& WhatIf::operator=(WhatIf&&) noexcept = default;

namespace {

[[noreturn]] void bad_spec(const std::string& spec, const std::string& why) {
  throw ArgumentError("what_if", spec, why);
}

std::int64_t parse_integer(const std::string& spec, const std::string& s) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') bad_spec(spec, fmt::format("'{}' is not an integer", s));
  return v;
}

TimeNs parse_duration(const std::string& spec, const std::string& s) {
  std::size_t unit = s.find_first_not_of("0123456789.eE+-");
  // "1e3ms": the exponent letter is part of the number only when followed by a digit/sign.
  if (unit == std::string::npos) bad_spec(spec, fmt::format("'{}' needs a unit (ns, us, ms, s)", s));
  const std::string num = s.substr(0, unit);
  const std::string u = s.substr(unit);
  double scale;
  if (u == "ns") scale = 1;
  else if (u == "us") scale = kNsPerUs;
  else if (u == "ms") scale = kNsPerMs;
  else if (u == "s") scale = kNsPerS;
  else bad_spec(spec, fmt::format("unknown unit '{}' (ns, us, ms, s)", u));
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (num.empty() || *end != '\0' || !std::isfinite(v) || v < 0 || v * scale > 1e18) {
    bad_spec(spec, fmt::format("'{}' is not a duration", s));
  }
  return static_cast<TimeNs>(std::llround(v * scale));
}

/// "@K" at the end of a selector (K an integer, optionally negative), or nullopt. `sel` loses it.
/// "name=foo@3" -> 3 and "name=foo"; "name~a@b" and "name=x@" keep their '@'.
std::optional<std::int64_t> take_instance(std::string& sel) {
  const std::size_t at = sel.rfind('@');
  if (at == std::string::npos) return std::nullopt;
  const std::string k = sel.substr(at + 1);
  const std::size_t digits = k.starts_with('-') ? 1 : 0;
  if (k.size() <= digits || k.find_first_not_of("0123456789", digits) != std::string::npos ||
      k.size() > 18) {
    return std::nullopt;
  }
  sel.resize(at);
  return std::strtoll(k.c_str(), nullptr, 10);
}

WhatIf::Rule parse_rule(const std::string& spec, const std::string& rule) {
  const std::size_t colon = rule.rfind(':');
  if (colon == std::string::npos) bad_spec(spec, fmt::format("rule '{}' has no ':CHANGE'", rule));
  std::string sel = rule.substr(0, colon);
  const std::string change = rule.substr(colon + 1);
  WhatIf::Rule r{};
  r.instance = take_instance(sel);
  using Sel = WhatIf::Rule::Sel;
  if (sel == "all") {
    r.sel = Sel::kAll;
  } else if (sel == "gpu") {
    r.sel = Sel::kGpu;
  } else if (sel.starts_with("id=")) {
    r.sel = Sel::kId;
    r.number = parse_integer(spec, sel.substr(3));
  } else if (sel.starts_with("corr=")) {
    r.sel = Sel::kCorrelation;
    r.number = parse_integer(spec, sel.substr(5));
  } else if (sel.starts_with("name~")) {
    r.sel = Sel::kNameRegex;
    r.text = sel.substr(5);
    try {
      r.regex.emplace(r.text, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      bad_spec(spec, fmt::format("bad regex '{}': {}", r.text, e.what()));
    }
  } else if (sel.starts_with("name=")) {
    r.sel = Sel::kNameExact;
    r.text = sel.substr(5);
  } else if (sel.starts_with("kind=")) {
    r.sel = Sel::kKind;
    r.text = sel.substr(5);
    static const char* const kKinds[] = {"kernel", "collective", "memcpy", "memset", "runtime", "driver"};
    if (std::find(std::begin(kKinds), std::end(kKinds), r.text) == std::end(kKinds)) {
      bad_spec(spec, fmt::format("unknown kind '{}' (kernel, collective, memcpy, memset, runtime, "
                                 "driver)", r.text));
    }
  } else if (sel.starts_with("stream=")) {
    r.sel = Sel::kStream;
    r.number = parse_integer(spec, sel.substr(7));
  } else if (sel.starts_with("device=")) {
    r.sel = Sel::kDevice;
    r.number = parse_integer(spec, sel.substr(7));
  } else {
    bad_spec(spec, fmt::format("unknown selector '{}' (all, gpu, id=, corr=, name=, name~, "
                               "kind=, stream=, device=; optional @K)", sel));
  }
  using Op = WhatIf::Rule::Op;
  if (change.size() >= 2 && (change[0] == 'x' || change[0] == '*')) {
    r.op = Op::kScale;
    char* end = nullptr;
    r.factor = std::strtod(change.c_str() + 1, &end);
    if (*end != '\0' || !std::isfinite(r.factor) || r.factor < 0 || r.factor > 1e6) {
      bad_spec(spec, fmt::format("'{}' is not a scale factor", change));
    }
  } else if (!change.empty() && (change[0] == '+' || change[0] == '-')) {
    r.op = Op::kAdd;
    r.amount = parse_duration(spec, change.substr(1)) * (change[0] == '-' ? -1 : 1);
  } else if (!change.empty() && change[0] == '=') {
    r.op = Op::kSet;
    r.amount = parse_duration(spec, change.substr(1));
  } else {
    bad_spec(spec, fmt::format("change '{}' must be xF, +DUR, -DUR or =DUR", change));
  }
  return r;
}

bool matches(const WhatIf::Rule& r, const trace::Trace& t, const DepGraph& g, std::uint32_t n,
             std::vector<std::int8_t>& regex_cache) {
  using Sel = WhatIf::Rule::Sel;
  const std::uint32_t row = g.op[n];
  switch (r.sel) {
    case Sel::kAll: return true;
    case Sel::kGpu: return g.gpu[n] != 0;
    case Sel::kId: return row == r.number;
    case Sel::kCorrelation: return g.gpu[n] && t.ops.correlation[row] == r.number;
    case Sel::kNameExact: return t.strings.view(t.ops.name[row]) == r.text;
    case Sel::kNameRegex: {
      std::int8_t& c = regex_cache[t.ops.name[row]];
      if (c < 0) {
        const std::string_view name = t.strings.view(t.ops.name[row]);
        c = std::regex_search(name.begin(), name.end(), *r.regex) ? 1 : 0;
      }
      return c == 1;
    }
    case Sel::kKind: {
      const OpKind k = t.ops.kind[row];
      if (r.text == "kernel") return k == OpKind::kKernel && !t.is_collective(row);
      if (r.text == "collective") return k == OpKind::kKernel && t.is_collective(row);
      return trace::op_kind_name(k) == r.text;
    }
    case Sel::kStream: return g.gpu[n] && t.ops.stream[row] == r.number;
    case Sel::kDevice: return g.gpu[n] && t.ops.device[row] == r.number;
  }
  return false;
}

}  // namespace

WhatIf parse_what_if(const std::string& spec) {
  WhatIf w;
  w.spec = spec;
  std::size_t begin = 0;
  while (begin <= spec.size()) {
    const std::size_t end = std::min(spec.find(';', begin), spec.size());
    const std::string rule = spec.substr(begin, end - begin);
    if (!rule.empty()) w.rules.push_back(parse_rule(spec, rule));
    begin = end + 1;
  }
  if (w.rules.empty()) bad_spec(spec, "empty spec");
  return w;
}

std::vector<TimeNs> apply_what_if(const trace::Trace& trace, const DepGraph& g, const WhatIf& w,
                                  std::size_t* matched) {
  std::vector<TimeNs> dur = g.dur;
  std::vector<std::uint8_t> hit(matched != nullptr ? g.nodes() : 0, 0);
  std::vector<std::uint32_t> selected;
  for (const WhatIf::Rule& r : w.rules) {
    std::vector<std::int8_t> cache(r.sel == WhatIf::Rule::Sel::kNameRegex ? trace.strings.size() : 0, -1);
    selected.clear();
    for (std::uint32_t n = 0; n < g.nodes(); ++n) {
      if (matches(r, trace, g, n, cache)) selected.push_back(n);
    }
    if (r.instance) {
      // Recorded start order (ties: trace row order), then keep the one instance asked for.
      std::sort(selected.begin(), selected.end(), [&](std::uint32_t a, std::uint32_t b) {
        const std::uint32_t ra = g.op[a], rb = g.op[b];
        return trace.ops.start_ns[ra] != trace.ops.start_ns[rb]
                   ? trace.ops.start_ns[ra] < trace.ops.start_ns[rb]
                   : ra < rb;
      });
      const auto count = static_cast<std::int64_t>(selected.size());
      const std::int64_t k = *r.instance < 0 ? count + *r.instance : *r.instance;
      if (k >= 0 && k < count) {
        selected = {selected[static_cast<std::size_t>(k)]};
      } else {
        selected.clear();
      }
    }
    for (const std::uint32_t n : selected) {
      if (matched != nullptr) hit[n] = 1;
      switch (r.op) {
        case WhatIf::Rule::Op::kScale:
          dur[n] = static_cast<TimeNs>(std::llround(static_cast<double>(dur[n]) * r.factor));
          break;
        case WhatIf::Rule::Op::kAdd: dur[n] = std::max<TimeNs>(0, dur[n] + r.amount); break;
        case WhatIf::Rule::Op::kSet: dur[n] = r.amount; break;
      }
    }
  }
  if (matched != nullptr) *matched = static_cast<std::size_t>(std::count(hit.begin(), hit.end(), 1));
  return dur;
}

}  // namespace emo::timing
