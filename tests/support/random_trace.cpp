// Random realistic traces (random_trace.h): a plan of actions per CPU thread, then a
// discrete-event simulation of the threads and GPU streams that writes the trace rows.
#include "support/random_trace.h"

#include "graph/hand_trace.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace emo::testing {
namespace {

using trace::kNone;
using trace::OpKind;
using trace::SyncKind;

constexpr std::array<std::int64_t, 3> kStreamIds{7, 20, 24};

/// Deterministic draws (the same on every standard library: no std distributions).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  /// splitmix64.
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double u01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Integer in [lo, hi].
  int between(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1)); }
  /// Log-uniform duration in [lo_us, hi_us] µs, in ns (≥ 1).
  TimeNs log_us(double lo_us, double hi_us) {
    const double v = std::exp(std::log(lo_us) + u01() * (std::log(hi_us) - std::log(lo_us)));
    return std::max<TimeNs>(1, static_cast<TimeNs>(std::llround(v * 1000.0)));
  }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[next() % v.size()]; }

 private:
  std::uint64_t state_;
};

enum class Act { kLaunch, kCopyDtoH, kStreamSync, kDeviceSync, kEventRecord, kWaitEvent, kEventSync, kStep };

/// One thing a CPU thread does, `gap` after its previous action ended.
struct Action {
  Act act = Act::kLaunch;
  TimeNs gap = 0;
  int stream = 0;          ///< Index into kStreamIds (launch, copy, syncs, record, wait: the waiting stream).
  OpKind kind = OpKind::kKernel;
  std::string name;        ///< GPU op name (launch, copy).
  TimeNs dur = 0;          ///< GPU op duration.
  int event = -1;          ///< Wait/event sync: index of the kEventRecord action in the thread's plan.
  bool collective = false;
};

/// An action that launches nothing (sync, event record or wait, step mark).
Action control(Act act, TimeNs gap, int stream = 0, int event = -1) {
  Action a;
  a.act = act;
  a.gap = gap;
  a.stream = stream;
  a.event = event;
  return a;
}

/// Kernel names per op class (model::classify_op), and their duration ranges (µs).
struct OpFamily {
  std::vector<std::string> names;
  double lo_us, hi_us;
};
const OpFamily kCompute{{"ampere_sgemm_128x64_tn", "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32",
                         "cutlass_80_tensorop_s1688gemm_256x128_32x3_nn", "implicit_convolve_sgemm",
                         "cudnn::engines_precompiled::conv2d_fprop_kernel", "fmha_cutlassF_f16_aligned_64x64_rf_sm80"},
                        30, 3000};
const OpFamily kMemory{{"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
                        "void at::native::reduce_kernel<512, 1>", "void at::native::softmax_warp_forward",
                        "void at::native::batch_norm_collect_statistics_kernel",
                        "void at::native::unrolled_elementwise_kernel", "multi_tensor_apply_kernel_adam"},
                       4, 400};
const OpFamily kComm{{"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllGather_RING_LL",
                      "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"},
                     50, 5000};
const OpFamily kMixed{{"triton_poi_fused_0", "void topk_kernel", "void radix_sort_pass", "custom_kernel_42"}, 5, 800};

/// Plans the actions of the CPU threads (no times yet beyond the CPU gaps).
class Planner {
 public:
  Planner(const RandomTraceParams& p, Rng& rng) : p_(p), rng_(rng) {}

  /// The training loop: per iteration a step mark, stretches until ops_per_iteration GPU ops are
  /// launched, then cudaDeviceSynchronize; CPU-only work (optimizer step, logging) between iterations.
  std::vector<Action> main_thread() {
    std::vector<Action> plan;
    for (int it = 0; it < p_.iterations; ++it) {
      plan.push_back(control(Act::kStep, it == 0 ? draw_us(20, 200) : draw_us(50, 3000)));
      int ops = 0;
      while (ops < p_.ops_per_iteration) ops += stretch(plan);
      plan.push_back(control(Act::kDeviceSync, draw_us(5, 50)));
    }
    return plan;
  }

  /// The side thread: per iteration, a data-loading gap, a host-to-device copy and a few small
  /// kernels on the last stream, then a sync on that stream.
  std::vector<Action> side_thread() {
    std::vector<Action> plan;
    const int s = p_.streams - 1;
    for (int it = 0; it < p_.iterations; ++it) {
      plan.push_back(launch(draw_us(500, 8000), s, OpKind::kMemcpy, "Memcpy HtoD (Pinned -> Device)", draw_us(20, 2000)));
      for (int k = rng_.between(1, 4); k > 0; --k) plan.push_back(launch_of(draw_us(2, 40), s, kMemory));
      plan.push_back(control(Act::kStreamSync, draw_us(5, 50), s));
    }
    return plan;
  }

 private:
  /// A CPU gap or GPU op duration: log-uniform in [lo_us, hi_us] µs, times the trace's time scale (ns, ≥ 1).
  TimeNs draw_us(double lo_us, double hi_us) {
    return std::max<TimeNs>(1, static_cast<TimeNs>(static_cast<double>(rng_.log_us(lo_us, hi_us)) * p_.time_scale));
  }
  int any_stream() { return rng_.u01() < 0.5 ? 0 : rng_.between(0, p_.streams - 1); }

  static Action launch(TimeNs gap, int stream, OpKind kind, std::string name, TimeNs dur) {
    Action a = control(Act::kLaunch, gap, stream);
    a.kind = kind;
    a.name = std::move(name);
    a.dur = dur;
    return a;
  }
  Action launch_of(TimeNs gap, int stream, const OpFamily& f) {
    Action a = launch(gap, stream, OpKind::kKernel, rng_.pick(f.names), draw_us(f.lo_us, f.hi_us));
    a.collective = &f == &kComm;
    return a;
  }

  /// One stretch of thread 0's work appended to `plan`; returns the GPU ops it launches.
  int stretch(std::vector<Action>& plan) {
    const double r = rng_.u01();
    if (r < p_.cpu_bound) return cpu_bound(plan);
    const double rest = (r - p_.cpu_bound) / std::max(1e-9, 1 - p_.cpu_bound);
    if (rest < 0.15 && p_.streams >= 2) return communication(plan);
    if (rest < 0.27) return host_sync(plan);
    return gpu_bound(plan);
  }

  /// Launches a few µs apart, mostly compute kernels: the GPU queue grows.
  int gpu_bound(std::vector<Action>& plan) {
    const int n = rng_.between(3, 12);
    for (int k = 0; k < n; ++k) {
      const double c = rng_.u01();
      const OpFamily& f = c < 0.5 ? kCompute : c < 0.85 ? kMemory : kMixed;
      plan.push_back(launch_of(draw_us(1, 20), any_stream(), f));
    }
    return n;
  }

  /// Short kernels separated by CPU work longer than they are: the GPU idles between them.
  int cpu_bound(std::vector<Action>& plan) {
    const int n = rng_.between(2, 6);
    for (int k = 0; k < n; ++k) {
      const double c = rng_.u01();
      const OpFamily& f = c < 0.5 ? kMemory : c < 0.8 ? kMixed : kCompute;
      Action a = launch_of(draw_us(100, 3000), any_stream(), f);
      if (c < 0.1) a = launch(a.gap, a.stream, OpKind::kMemset, "Memset (Device)", draw_us(2, 50));
      plan.push_back(std::move(a));
    }
    return n;
  }

  /// Compute stream -> NCCL on stream 1 -> back: two cross-stream event waits.
  int communication(std::vector<Action>& plan) {
    plan.push_back(control(Act::kEventRecord, draw_us(2, 10), 0));
    plan.push_back(control(Act::kWaitEvent, draw_us(2, 10), 1, static_cast<int>(plan.size()) - 1));
    plan.push_back(launch_of(draw_us(2, 20), 1, kComm));
    const int extra = rng_.between(0, 3);  // compute overlapping the collective
    for (int k = 0; k < extra; ++k) plan.push_back(launch_of(draw_us(2, 20), 0, kCompute));
    plan.push_back(control(Act::kEventRecord, draw_us(2, 10), 1));
    plan.push_back(control(Act::kWaitEvent, draw_us(2, 10), 0, static_cast<int>(plan.size()) - 1));
    return 1 + extra;
  }

  /// A kernel, then a host sync of one of four kinds on it.
  int host_sync(std::vector<Action>& plan) {
    const int s = any_stream();
    plan.push_back(launch_of(draw_us(2, 20), s, rng_.u01() < 0.5 ? kCompute : kMemory));
    switch (rng_.between(0, 3)) {
      case 0:
        plan.push_back(control(Act::kStreamSync, draw_us(2, 30), s));
        return 1;
      case 1: {
        plan.push_back(control(Act::kEventRecord, draw_us(2, 10), s));
        plan.push_back(control(Act::kEventSync, draw_us(2, 30), s, static_cast<int>(plan.size()) - 1));
        return 1;
      }
      case 2: {
        Action copy = launch(draw_us(2, 30), s, OpKind::kMemcpy, "Memcpy DtoH (Device -> Pageable)", draw_us(5, 300));
        copy.act = Act::kCopyDtoH;
        plan.push_back(copy);
        return 2;
      }
      default:
        plan.push_back(control(Act::kDeviceSync, draw_us(2, 30)));
        return 1;
    }
  }

  const RandomTraceParams& p_;
  Rng& rng_;
};

/// An event recorded by cudaEventRecord: its call's correlation, its stream, and when the work
/// it follows ends (the end of the last op launched on that stream before the record; 0: none).
struct Event {
  std::int64_t record_corr = kNone;
  int stream = 0;
  TimeNs done = 0;
};

/// Runs the threads' plans against FIFO GPU streams and writes the trace rows: the thread whose
/// next action starts first acts next, so every launch before a sync's start is already on its
/// stream when the sync is written.
class Simulator {
 public:
  Simulator(const RandomTraceParams& p, Rng& rng) : p_(p), rng_(rng) {}

  trace::Trace run(std::vector<std::vector<Action>> plans) {
    for (std::size_t k = 0; k < plans.size(); ++k) {
      Thread th;
      th.events.assign(plans[k].size(), Event{});
      th.plan = std::move(plans[k]);
      th.tid = 1001 + static_cast<std::int64_t>(k);
      th.clock = 1'000'000 + static_cast<TimeNs>(k) * 137;  // 1 ms in; the threads' times never tie
      threads_.push_back(std::move(th));
    }
    for (;;) {
      Thread* next = nullptr;
      TimeNs best = INT64_MAX;
      for (Thread& th : threads_) {
        if (th.next < th.plan.size() && th.clock + th.plan[th.next].gap < best) {
          best = th.clock + th.plan[th.next].gap;
          next = &th;
        }
      }
      if (next == nullptr) break;
      execute(*next, best);
    }
    steps();
    return finish();
  }

 private:
  struct Thread {
    std::vector<Action> plan;
    std::vector<Event> events;  ///< Per plan index, for kEventRecord actions.
    std::size_t next = 0;
    std::int64_t tid = 0;
    TimeNs clock = 0;           ///< When the previous action ended.
    std::vector<TimeNs> step_starts;
  };
  struct Stream {
    TimeNs end = 0;         ///< End of the last op launched on it.
    TimeNs wait_until = 0;  ///< Event waits the next op launched on it must honour.
  };

  TimeNs us(double lo, double hi) { return rng_.log_us(lo, hi); }

  /// Appends an API call on `th` and returns its correlation id; th.clock = its end.
  std::int64_t call(Thread& th, std::string_view name, TimeNs start, TimeNs dur) {
    const std::int64_t corr = next_corr_++;
    h_.call(name, start, dur, corr, th.tid);
    th.clock = start + dur;
    return corr;
  }

  /// A call that blocks until `waits_for` (plus a return latency), at least a few µs long.
  std::int64_t blocking(Thread& th, std::string_view name, TimeNs start, TimeNs waits_for) {
    const TimeNs dur = std::max(us(2, 5), waits_for + us(2, 8) - start);
    return call(th, name, start, dur);
  }

  /// The GPU op of `a` launched by a call at `start` lasting `call_dur`; returns its end.
  TimeNs gpu_op(const Action& a, TimeNs start, TimeNs call_dur, std::int64_t corr) {
    Stream& s = streams_[static_cast<std::size_t>(a.stream)];
    const TimeNs begin = std::max({start + call_dur + us(1, 8), s.end, s.wait_until});
    s.end = begin + a.dur;
    h_.gpu(a.kind, a.name, begin, a.dur, kStreamIds[static_cast<std::size_t>(a.stream)], corr);
    if (a.collective) collective(static_cast<std::uint32_t>(t_.ops.size() - 1), a.name);
    return s.end;
  }

  void collective(std::uint32_t row, std::string_view name) {
    trace::CollectiveTable& c = t_.collectives;
    const char* what = name.find("AllReduce") != std::string_view::npos   ? "allreduce"
                       : name.find("AllGather") != std::string_view::npos ? "allgather"
                                                                          : "reduce_scatter";
    c.op.push_back(row);
    c.name.push_back(t_.strings.intern(what));
    c.group.push_back(t_.strings.intern("0"));
    c.group_ranks.push_back(t_.strings.intern("[0, 1]"));
    c.group_size.push_back(2);
    c.in_nelems.push_back(1 << 20);
    c.out_nelems.push_back(1 << 20);
    c.dtype.push_back(t_.strings.intern("Float"));
    c.sequence.push_back(static_cast<std::int64_t>(c.op.size()) - 1);
    c.src_rank.push_back(static_cast<std::int32_t>(kNone));
    c.dst_rank.push_back(static_cast<std::int32_t>(kNone));
  }

  TimeNs all_streams_end() const {
    TimeNs end = 0;
    for (int s = 0; s < p_.streams; ++s) end = std::max(end, streams_[static_cast<std::size_t>(s)].end);
    return end;
  }

  void execute(Thread& th, TimeNs c);
  void steps();
  trace::Trace finish();

  const RandomTraceParams& p_;
  Rng& rng_;
  HandTrace h_;            ///< The rows (pid kPid = 100).
  trace::Trace& t_ = h_.t;
  std::vector<Thread> threads_;
  std::array<Stream, 3> streams_{};
  std::int64_t next_corr_ = 1;
};

/// Performs the next action of `th`, starting at `c`.
void Simulator::execute(Thread& th, TimeNs c) {
  const std::size_t idx = th.next++;
  const Action& a = th.plan[idx];
  const std::int64_t stream_id = kStreamIds[static_cast<std::size_t>(a.stream)];
  switch (a.act) {
    case Act::kLaunch: {
      const TimeNs dur = us(4, 9);
      const char* api = a.kind == OpKind::kKernel   ? "cudaLaunchKernel"
                        : a.kind == OpKind::kMemcpy ? "cudaMemcpyAsync"
                                                    : "cudaMemsetAsync";
      gpu_op(a, c, dur, call(th, api, c, dur));
      break;
    }
    case Act::kCopyDtoH: {  // the call returns once the copy has ended
      const std::int64_t corr = next_corr_++;
      const TimeNs end = gpu_op(a, c, us(2, 6), corr);
      const TimeNs dur = end + us(2, 8) - c;
      h_.call("cudaMemcpy", c, dur, corr, th.tid);
      th.clock = c + dur;
      break;
    }
    case Act::kStreamSync: {
      const std::int64_t corr = blocking(th, "cudaStreamSynchronize", c, streams_[static_cast<std::size_t>(a.stream)].end);
      h_.sync(SyncKind::kStreamSync, c, th.clock - c, corr, 0, stream_id);
      break;
    }
    case Act::kDeviceSync: {
      const std::int64_t corr = blocking(th, "cudaDeviceSynchronize", c, all_streams_end());
      h_.sync(SyncKind::kContextSync, c, th.clock - c, corr, 0);
      break;
    }
    case Act::kEventRecord:
      th.events[idx] = {call(th, "cudaEventRecord", c, us(2, 4)), a.stream, streams_[static_cast<std::size_t>(a.stream)].end};
      break;
    case Act::kWaitEvent: {
      const Event& ev = th.events[static_cast<std::size_t>(a.event)];
      const std::int64_t corr = call(th, "cudaStreamWaitEvent", c, us(2, 4));
      h_.sync(SyncKind::kStreamWaitEvent, c, th.clock - c, corr, 0, stream_id, kStreamIds[static_cast<std::size_t>(ev.stream)],
              ev.record_corr);
      Stream& s = streams_[static_cast<std::size_t>(a.stream)];
      s.wait_until = std::max(s.wait_until, ev.done);
      break;
    }
    case Act::kEventSync: {
      const Event& ev = th.events[static_cast<std::size_t>(a.event)];
      const std::int64_t corr = blocking(th, "cudaEventSynchronize", c, ev.done);
      h_.sync(SyncKind::kEventSync, c, th.clock - c, corr, 0, kNone, kStreamIds[static_cast<std::size_t>(ev.stream)],
              ev.record_corr);
      break;
    }
    case Act::kStep:
      th.step_starts.push_back(c);
      th.clock = c;
      break;
  }
}

/// ProfilerStep#N annotations on thread 0, each from its iteration's start to the next's.
void Simulator::steps() {
  const Thread& th = threads_.front();
  for (std::size_t i = 0; i < th.step_starts.size(); ++i) {
    const TimeNs end = i + 1 < th.step_starts.size() ? th.step_starts[i + 1] : th.clock;
    h_.annotation("ProfilerStep#" + std::to_string(i), th.step_starts[i], end - th.step_starts[i], th.tid);
  }
}

trace::Trace Simulator::finish() {
  trace::Trace t = h_.finish();  // sorts the rows; the meta is written after
  trace::TraceMeta& m = t.meta;
  m.format = trace::TraceFormat::kKinetoJson;
  m.path = "synthetic:" + describe(p_);
  m.rank = 0;
  m.world_size = t.collectives.size() > 0 ? 2 : 1;
  if (t.collectives.size() > 0) m.backend = "nccl";
  m.gpus.push_back({0, "NVIDIA A100-SXM4-80GB", std::int64_t{80} << 30, 8, 0, 108, 1'410'000});
  return t;
}

}  // namespace

RandomTraceParams random_trace_params(std::uint64_t seed) {
  Rng rng(seed ^ 0x5EEDull);
  RandomTraceParams p;
  p.seed = seed;
  p.threads = rng.between(1, 2);
  p.streams = rng.between(1, 3);
  p.iterations = rng.between(3, 8);
  p.ops_per_iteration = rng.between(20, 60);
  p.cpu_bound = 0.05 + 0.65 * rng.u01();
  p.time_scale = std::round(std::exp(rng.u01() * std::log(4.0)) * 100) / 100;  // 1–4, log-uniform
  return p;
}

std::string describe(const RandomTraceParams& p) {
  std::ostringstream s;
  s << "seed=" << p.seed << " threads=" << p.threads << " streams=" << p.streams << " iterations=" << p.iterations
    << " ops=" << p.ops_per_iteration << " cpu_bound=" << p.cpu_bound << " scale=" << p.time_scale;
  return s.str();
}

trace::Trace random_trace(const RandomTraceParams& p) {
  if (p.threads < 1 || p.threads > 2) throw std::invalid_argument("random_trace: threads must be 1 or 2");
  if (p.streams < 1 || p.streams > 3) throw std::invalid_argument("random_trace: streams must be 1 to 3");
  if (p.iterations < 1 || p.ops_per_iteration < 1) {
    throw std::invalid_argument("random_trace: iterations and ops_per_iteration must be >= 1");
  }
  if (!(p.cpu_bound >= 0 && p.cpu_bound <= 1)) throw std::invalid_argument("random_trace: cpu_bound must be in [0, 1]");
  if (!(p.time_scale > 0 && std::isfinite(p.time_scale))) {
    throw std::invalid_argument("random_trace: time_scale must be > 0");
  }
  Rng rng(p.seed);
  Planner planner(p, rng);
  std::vector<std::vector<Action>> plans{planner.main_thread()};
  if (p.threads == 2) plans.push_back(planner.side_thread());
  return Simulator(p, rng).run(std::move(plans));
}

}  // namespace emo::testing
