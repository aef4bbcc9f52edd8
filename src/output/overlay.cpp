#include "output/overlay.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "trace/job.h"

#include "core/error.h"
#include "core/json_text.h"

namespace emo::output {

using timing::GpuSlack;
using timing::Interval;
using timing::PathStep;
namespace {


/// ns -> the µs text Chrome traces use, exactly ("1712195495519689.047").
std::string us(TimeNs ns) {
  const bool neg = ns < 0;
  const unsigned long long a = neg ? 0ull - static_cast<unsigned long long>(ns)
                                   : static_cast<unsigned long long>(ns);
  return fmt::format("{}{}.{:03d}", neg ? "-" : "", a / 1000, a % 1000);
}

constexpr std::int64_t kPathPid = 1'000'000'000;     // the critical-path track
constexpr std::int64_t kSlackPidBase = 1'000'000'100;  // + device: slack windows

/// A linked job (trace/job.h): one process per rank's GPU (pid = its device in the linked
/// trace) and per rank's host process, each named after its rank.
template <class W>
void name_rank_processes(const trace::Trace& t, W& w) {
  const auto& ranks = t.meta.job.ranks;
  if (ranks.empty()) return;
  for (std::size_t d = 0; d < ranks.size(); ++d) {
    w.event(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "tid": 0, "args": {{"name": {}}}}})", d,
                        json_quote(fmt::format("rank {} GPU ({})", ranks[d].rank, ranks[d].path))));
    w.event(fmt::format(R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "tid": 0, "args": {{"sort_index": {}}}}})",
                        d, rank_sort_index(static_cast<std::int32_t>(d), 0)));
  }
  std::set<std::int64_t> named;
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops.device[i] != trace::kNone || t.ops.process[i] == trace::kNone || !named.insert(t.ops.process[i]).second) continue;
    const std::int32_t r = trace::job_rank_index(t, i);
    if (r < 0) continue;
    w.event(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "tid": 0, "args": {{"name": "rank {} host"}}}})",
                        t.ops.process[i], ranks[static_cast<std::size_t>(r)].rank));
    w.event(fmt::format(R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "tid": 0, "args": {{"sort_index": {}}}}})",
                        t.ops.process[i], rank_sort_index(r, 1)));
  }
}

/// The track of `device`'s slack windows: "EMO slack windows, GPU d", or in a linked job
/// "EMO slack windows, rank R (GPU d)", sorted after the rank's other tracks.
OverlayTrack slack_track(const trace::Trace& t, std::int32_t device) {
  const auto& ranks = t.meta.job.ranks;
  if (device < 0 || static_cast<std::size_t>(device) >= ranks.size())
    return {fmt::format("EMO slack windows, GPU {}", device), 0, {}, "", -1};
  return {fmt::format("EMO slack windows, rank {} (GPU {})", ranks[static_cast<std::size_t>(device)].rank, device), 0,
          {}, "", rank_sort_index(device, 3)};
}

class Writer {
 public:
  Writer(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) throw InputError(path, fmt::format("cannot open for writing: {}", std::strerror(errno)));
  }
  ~Writer() {
    if (f_) std::fclose(f_);
  }
  void event(const std::string& body) {
    put(first_ ? "\n" : ",\n");
    first_ = false;
    put(body);
  }
  void put(std::string_view s) {
    if (std::fwrite(s.data(), 1, s.size(), f_) != s.size()) throw InputError(path_, "write failed");
  }
  void close() {
    if (std::fclose(f_) != 0) {
      f_ = nullptr;
      throw InputError(path_, "write failed");
    }
    f_ = nullptr;
  }

 private:
  std::string path_;
  std::FILE* f_;
  bool first_ = true;
};

/// Names process `pid` after `track` (process_name, and process_labels / process_sort_index when
/// it has them).
void name_process(Writer& w, std::int64_t pid, const OverlayTrack& track) {
  w.event(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "tid": 0, "args": {{"name": {}}}}})", pid,
                      json_quote(track.name)));
  if (!track.label.empty()) {
    w.event(fmt::format(R"({{"name": "process_labels", "ph": "M", "pid": {}, "tid": 0, "args": {{"labels": {}}}}})", pid,
                        json_quote(track.label)));
  }
  if (track.sort_index >= 0) {
    w.event(fmt::format(R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "tid": 0, "args": {{"sort_index": {}}}}})",
                        pid, track.sort_index));
  }
}

/// Every op of `t` but syncs as an "X" event in its own track (GPU: device/stream, host:
/// process/thread), with its slack and criticality when it is a node of a.graph. Times relative
/// to `origin` (ns).
void write_ops(const trace::Trace& t, const timing::Analysis& a, TimeNs origin, Writer& w) {
  const graph::DepGraph& g = a.graph;
  const auto& ops = t.ops;
  std::vector<std::uint32_t> node_of(ops.size(), UINT32_MAX);
  for (std::uint32_t n = 0; n < g.nodes(); ++n) node_of[g.op[n]] = n;
  std::vector<std::uint8_t> on_path(g.nodes(), 0);
  for (const PathStep& st : a.path.steps) on_path[st.node] = 1;
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    const trace::OpKind k = ops.kind[i];
    if (k == trace::OpKind::kSync) continue;
    const bool gpu = trace::is_gpu_op(k) || k == trace::OpKind::kGpuAnnotation;
    const std::int64_t pid = gpu ? ops.device[i] : ops.process[i];
    const std::int64_t tid = gpu ? ops.stream[i] : ops.thread[i];
    std::string args = fmt::format(R"("id": {}, "correlation": {})", i, ops.correlation[i]);
    const std::uint32_t n = node_of[i];
    if (n != UINT32_MAX) {
      args += fmt::format(R"(, "slack_ns": {}, "critical": {}, "on_critical_path": {})",
                          a.node_slack[n], a.node_slack[n] == 0 ? "true" : "false",
                          on_path[n] ? "true" : "false");
    }
    w.event(fmt::format(R"({{"ph": "X", "cat": "{}", "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
                        trace::op_kind_name(k), json_quote(t.strings.view(ops.name[i])), pid, tid,
                        us(ops.start_ns[i] - origin), us(ops.dur_ns[i]), args));
  }
}

/// The critical path: its own track (kPathPid), and flows linking its steps in the ops' tracks.
void write_critical_path(const trace::Trace& t, const timing::Analysis& a, TimeNs origin, Writer& w) {
  const graph::DepGraph& g = a.graph;
  const auto& ops = t.ops;
  auto rel = [origin](TimeNs t) { return us(t - origin); };
  std::uint64_t flow = 1;
  for (std::size_t s = 0; s < a.path.steps.size(); ++s) {
    const PathStep& st = a.path.steps[s];
    const std::uint32_t row = g.op[st.node];
    // GPU steps on thread 1, host steps on thread 2: a GPU op and the sync call that waits for
    // it overlap in time without nesting.
    w.event(fmt::format(R"({{"ph": "X", "cat": "critical_path", "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"id": {}, "via": "{}"}}}})",
                        json_quote(t.strings.view(ops.name[row])), kPathPid, g.gpu[st.node] ? 1 : 2,
                        rel(a.schedule.start(st.node)),
                        us(a.schedule.end(st.node) - a.schedule.start(st.node)), row,
                        st.via_edge ? graph::edge_type_name(st.edge) : "start"));
    if (s + 1 < a.path.steps.size()) {
      const std::uint32_t next = a.path.steps[s + 1].node;
      const std::uint32_t nrow = g.op[next];
      const bool gpu_a = g.gpu[st.node] != 0;
      const bool gpu_b = g.gpu[next] != 0;
      w.event(fmt::format(R"({{"ph": "s", "id": {}, "cat": "critical_path", "name": "critical_path", "pid": {}, "tid": {}, "ts": {}}})",
                          flow, gpu_a ? ops.device[row] : ops.process[row],
                          gpu_a ? ops.stream[row] : ops.thread[row], rel(ops.start_ns[row])));
      w.event(fmt::format(R"({{"ph": "f", "bp": "e", "id": {}, "cat": "critical_path", "name": "critical_path", "pid": {}, "tid": {}, "ts": {}}})",
                          flow, gpu_b ? ops.device[nrow] : ops.process[nrow],
                          gpu_b ? ops.stream[nrow] : ops.thread[nrow], rel(ops.start_ns[nrow])));
      ++flow;
    }
  }
}

/// Each of `tracks`: its process named (name_process), its slices as complete events, times
/// relative to `origin` (ns).
void write_tracks(Writer& w, const std::vector<OverlayTrack>& tracks, TimeNs origin) {
  for (const OverlayTrack& track : tracks) {
    name_process(w, track.pid, track);
    for (const OverlayTrack::Slice& sl : track.slices) {
      w.event(fmt::format(R"({{"ph": "X", "cat": "emo", "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {}}})",
                          json_quote(sl.name), track.pid, sl.tid, us(sl.start_ns - origin), us(sl.dur_ns), sl.args_json));
    }
  }
}

}  // namespace

void write_overlay(const trace::Trace& t, const timing::Analysis& a, const std::string& path) {
  write_overlay(t, a, path, {});
}

void write_overlay(const trace::Trace& t, const timing::Analysis& a, const std::string& path,
                   const std::vector<OverlayTrack>& extra) {
  const auto& ops = t.ops;
  // Timestamps are written relative to the trace's first op: Perfetto reads them as doubles,
  // which at epoch scale resolve only 0.25 µs. The origin is kept in otherData.
  const TimeNs origin = ops.size() > 0 ? ops.start_ns[0] : 0;
  auto rel = [origin](TimeNs t) { return us(t - origin); };

  Writer w(path);
  w.put(fmt::format("{{\"displayTimeUnit\": \"ns\", \"otherData\": {{\"emo_origin_ns\": {}, "
                    "\"emo_trace\": {}}}, \"traceEvents\": [",
                    origin, json_quote(t.meta.path)));
  w.event(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "tid": 0, "args": {{"name": "EMO critical path"}}}})", kPathPid));
  for (const GpuSlack& gs : a.gpus) name_process(w, kSlackPidBase + gs.device, slack_track(t, gs.device));
  name_rank_processes(t, w);
  write_ops(t, a, origin, w);
  write_critical_path(t, a, origin, w);
  for (const GpuSlack& gs : a.gpus) {
    for (const Interval& win : gs.windows) {
      w.event(fmt::format(R"({{"ph": "X", "cat": "slack_window", "name": "slack window", "pid": {}, "tid": 0, "ts": {}, "dur": {}, "args": {{"device": {}}}}})",
                          kSlackPidBase + gs.device, rel(win.start_ns), us(win.end_ns - win.start_ns), gs.device));
    }
  }
  write_tracks(w, extra, origin);
  w.put("\n]}\n");
  w.close();
}

void write_track_overlay(const std::string& path, const std::string& title, TimeNs origin_ns,
                         const std::vector<OverlayTrack>& tracks, const std::vector<OverlayFlow>& flows) {
  Writer w(path);
  w.put(fmt::format("{{\"displayTimeUnit\": \"ns\", \"otherData\": {{\"emo_origin_ns\": {}, \"emo_trace\": {}}}, \"traceEvents\": [",
                    origin_ns, json_quote(title)));
  write_tracks(w, tracks, origin_ns);
  std::uint64_t id = 1;
  for (const OverlayFlow& f : flows) {
    w.event(fmt::format(R"({{"ph": "s", "id": {}, "cat": "critical_path", "name": "critical_path", "pid": {}, "tid": {}, "ts": {}}})",
                        id, f.from_pid, f.from_tid, us(f.from_ns - origin_ns)));
    w.event(fmt::format(R"({{"ph": "f", "bp": "e", "id": {}, "cat": "critical_path", "name": "critical_path", "pid": {}, "tid": {}, "ts": {}}})",
                        id, f.to_pid, f.to_tid, us(f.to_ns - origin_ns)));
    ++id;
  }
  w.put("\n]}\n");
  w.close();
}

}  // namespace emo::output
