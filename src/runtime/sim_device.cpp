#include "runtime/sim_device.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <stdexcept>

#include <fmt/format.h>

#include "core/units.h"

namespace emo::runtime {
namespace {

/// Blocked / idle power measured by Perseus on A100 (83.64 W blocked, catalog idle 60 W): used
/// where a GPU's blocked power was not measured.
constexpr double kBlockedOverIdle = 83.64 / 60.0;

/// Above this many repetitions a run's repetitions are drawn as one sum.
constexpr int kAggregateAbove = 64;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// FNV-1a: stable across platforms and runs (std::hash is not).
std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

/// Uniform in (0, 1) from a 64-bit state.
double unit(std::uint64_t x) { return (static_cast<double>(x >> 11) + 0.5) / 9007199254740992.0; }

/// Standard normal number number `i` of the stream keyed by `key` (Box–Muller).
double normal(std::uint64_t key, int i) {
  const double u1 = unit(splitmix64(key + 2 * static_cast<std::uint64_t>(i)));
  const double u2 = unit(splitmix64(key + 2 * static_cast<std::uint64_t>(i) + 1));
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

}  // namespace

SimDevice::SimDevice(const model::GpuSpec& gpu, SimDeviceOptions options)
    : gpu_(gpu), options_(std::move(options)), rng_(options_.seed) {
  if (gpu_.sm_clocks_mhz.empty()) throw std::invalid_argument(gpu_.id + ": the GPU catalog lists no SM clocks");
  if (!(options_.energy_counter_period_ms > 0) || !(options_.energy_counter_resolution_j > 0))
    throw std::invalid_argument("simulated device: energy counter period and resolution must be positive");
  blocked_power_ = gpu_.blocked_power_w.value_or(gpu_.idle_power_w * kBlockedOverIdle);
  clock_mhz_ = gpu_.max_sm_clock_mhz();
  next_update_ns_ = static_cast<std::int64_t>(options_.energy_counter_period_ms * kNsPerMs);
}

void SimDevice::check_clock(double mhz) const {
  const double nearest = gpu_.nearest_sm_clock(mhz);
  if (!(std::abs(nearest - mhz) <= 0.5)) {
    throw std::invalid_argument(fmt::format("{}: {} MHz is not a supported SM clock ({}-{} MHz)", name(), mhz,
                                            gpu_.sm_clocks_mhz.back(), gpu_.sm_clocks_mhz.front()));
  }
}

void SimDevice::lock_sm_clock(double mhz) {
  check_clock(mhz);
  const double target = gpu_.nearest_sm_clock(mhz);
  if (target == clock_mhz_) return;
  // The switch takes effect after the latency; the GPU idles at the old clock meanwhile.
  advance(ms_to_ns(gpu_.switch_latency_ms), gpu_.idle_power_w);
  clock_mhz_ = target;
}

void SimDevice::reset_sm_clock() { lock_sm_clock(gpu_.max_sm_clock_mhz()); }

void SimDevice::idle(std::int64_t ns, bool blocked) {
  if (ns < 0) throw std::invalid_argument("simulated device: negative idle time");
  advance(ns, blocked ? blocked_power_ : gpu_.idle_power_w);
}

void SimDevice::advance(std::int64_t ns, double power_w) {
  // The counter takes the true energy (quantised to its resolution) at each update instant.
  const std::int64_t end = now_ns_ + ns;
  const double res = options_.energy_counter_resolution_j;
  const auto period = static_cast<std::int64_t>(options_.energy_counter_period_ms * kNsPerMs);
  while (next_update_ns_ <= end) {
    const double at_update = energy_j_ + power_w * static_cast<double>(next_update_ns_ - now_ns_) * kSPerNs;
    counter_j_ = std::floor(at_update / res) * res;
    next_update_ns_ += std::max<std::int64_t>(period, 1);
  }
  energy_j_ += power_w * static_cast<double>(ns) * kSPerNs;
  now_ns_ = end;
}

OpTruth SimDevice::truth(const WorkOp& op) const {
  const bool kernel = op.kind == trace::OpKind::kKernel;
  if (kernel) {
    if (const auto it = kernel_truth_.find(std::string_view(op.name)); it != kernel_truth_.end()) return it->second;
  }
  OpTruth t;
  t.cls = model::classify_op(op.kind, op.name);
  const auto& curve = options_.ground_truth.curve(t.cls);
  const std::uint64_t key = splitmix64(options_.seed ^ fnv1a(op.name));
  t.beta = curve.beta;
  double level = curve.power_level;
  if (options_.per_op_variation) {
    t.beta = std::clamp(curve.beta + curve.beta_sd * normal(key, 0), 0.0, 1.0);
    level = std::clamp(level + curve.power_level_sd * normal(key, 1), 0.15, 1.0);
  }
  t.power_at_max_w = t.cls == model::OpClass::kCommunication ? blocked_power_ : level * gpu_.power_limit_default_w;
  t.power_at_max_w = std::max(t.power_at_max_w, gpu_.idle_power_w);
  if (kernel) kernel_truth_.emplace(op.name, t);
  return t;
}

double SimDevice::true_time_ns(const WorkOp& op, double clock_mhz) const {
  return true_time_ns(truth(op), op.duration_ns, clock_mhz);
}

double SimDevice::true_time_ns(const OpTruth& t, std::int64_t duration_ns, double clock_mhz) const {
  const double x = clock_mhz / gpu_.max_sm_clock_mhz();
  return static_cast<double>(duration_ns) * options_.ground_truth.curve(t.cls).time_ratio(x, t.beta);
}

double SimDevice::true_power_w(const WorkOp& op, double clock_mhz) const { return true_power_w(truth(op), clock_mhz); }

double SimDevice::true_power_w(const OpTruth& t, double clock_mhz) const {
  const double x = clock_mhz / gpu_.max_sm_clock_mhz();
  return std::max(gpu_.idle_power_w, t.power_at_max_w * options_.ground_truth.curve(t.cls).power_ratio(x));
}

TrueRun SimDevice::true_run(const Work& work, double clock_mhz) const {
  if (work.ops.empty()) throw std::invalid_argument(fmt::format("{}: work '{}' has no ops", name(), work.label));
  // Stream by stream, in traced start order, keeping each traced gap to the stream predecessor.
  std::vector<std::size_t> order(work.ops.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair{work.ops[a].stream, work.ops[a].start_ns} < std::pair{work.ops[b].stream, work.ops[b].start_ns};
  });
  const std::int64_t origin = std::min_element(work.ops.begin(), work.ops.end(), [](const auto& a, const auto& b) {
                                return a.start_ns < b.start_ns;
                              })->start_ns;
  double span = 0, dynamic_j = 0;
  std::map<std::int32_t, std::pair<double, std::int64_t>> stream_end;  // stream -> (new end, traced end)
  for (std::size_t i : order) {
    const WorkOp& op = work.ops[i];
    if (op.duration_ns <= 0)
      throw std::invalid_argument(fmt::format("{}: op '{}' of '{}' has a non-positive duration", name(), op.name, work.label));
    double start = static_cast<double>(op.start_ns - origin);
    if (auto it = stream_end.find(op.stream); it != stream_end.end())
      start = it->second.first + static_cast<double>(std::max<std::int64_t>(0, op.start_ns - it->second.second));
    const double t = true_time_ns(op, clock_mhz);
    const double end = start + t;
    stream_end[op.stream] = {end, op.start_ns + op.duration_ns};
    span = std::max(span, end);
    dynamic_j += (true_power_w(op, clock_mhz) - gpu_.idle_power_w) * t * kSPerNs;
  }
  return {static_cast<std::int64_t>(std::llround(span)), gpu_.idle_power_w * span * kSPerNs + dynamic_j};
}

Measurement SimDevice::run(const Work& work, double clock_mhz) {
  if (work.repetitions < 1)
    throw std::invalid_argument(fmt::format("{}: work '{}' needs at least 1 repetition", name(), work.label));
  check_clock(clock_mhz);
  lock_sm_clock(clock_mhz);
  const TrueRun truth = true_run(work, clock_mhz_);
  const double counter_before = counter_j_;
  const std::int64_t start = now_ns_;
  std::normal_distribution<double> z(0.0, 1.0);
  const auto& noise = options_.ground_truth.noise;
  if (work.repetitions <= kAggregateAbove) {
    for (int r = 0; r < work.repetitions; ++r) {
      double t = static_cast<double>(truth.time_ns), e = truth.energy_j;
      if (options_.noise) {
        t *= std::exp(noise.time_sd * z(rng_));
        e *= std::exp(noise.energy_sd * z(rng_));
      }
      const auto t_ns = std::max<std::int64_t>(1, std::llround(t));
      advance(t_ns, e / ns_to_s(t_ns));
    }
  } else {
    // Many short runs: their sum drawn at once (central limit theorem on the log-normal factors:
    // mean e^{σ²/2}, variance (e^{σ²} − 1)·e^{σ²} each), so that profiling a µs pack a million
    // times costs O(1). The counter still advances over the whole span.
    const double n = work.repetitions;
    auto sum_factor = [&](double sd) {
      if (!options_.noise) return n;
      const double m = std::exp(sd * sd / 2), v = (std::exp(sd * sd) - 1) * std::exp(sd * sd);
      return n * m + std::sqrt(n * v) * z(rng_);
    };
    const double t = static_cast<double>(truth.time_ns) * sum_factor(noise.time_sd);
    const double e = truth.energy_j * sum_factor(noise.energy_sd);
    const auto t_ns = std::max<std::int64_t>(1, std::llround(t));
    advance(t_ns, e / ns_to_s(t_ns));
  }
  Measurement m;
  m.clock_mhz = clock_mhz_;
  m.repetitions = work.repetitions;
  m.simulated = true;
  m.time_ns = (now_ns_ - start) / work.repetitions;
  m.energy_j = (counter_j_ - counter_before) / work.repetitions;
  return m;
}

}  // namespace emo::runtime
