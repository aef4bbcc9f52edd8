#include "driver/workload_backend.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <functional>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"
#include "driver/policy_builder.h"

namespace emo::driver {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<ProgressSample> by_time(std::vector<ProgressSample> s) {
  std::stable_sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.start.t_ns < b.start.t_ns; });
  return s;
}

double run_power_w(const WorkloadRun& run) {
  const double t = ns_to_s(run.end_ns - run.start_ns);
  return t > 0 ? (run.end_energy_j - run.start_energy_j) / t : 0.0;
}

/// The one GPU of the packs; throws InputError when they span several.
std::int32_t single_device(const trace::Trace& trace, const pack::PackRun& packs) {
  std::map<std::int32_t, int> devices;
  for (const auto& p : packs.packing.packs) devices[p.device]++;
  if (devices.size() != 1) {
    throw InputError(trace.meta.path, fmt::format("the window has packs on {} GPUs; --device nvml profiles one GPU "
                                                  "(optimise one rank's trace, or use --device sim)",
                                                  devices.size()));
  }
  return devices.begin()->first;
}

/// The first GPU of a job; throws std::invalid_argument when there is none.
runtime::Device& first_device(const JobGpus& gpus) {
  if (gpus.devices.empty() || gpus.devices.begin()->second == nullptr)
    throw std::invalid_argument("WorkloadBackend: a job without GPUs");
  return *gpus.devices.begin()->second;
}

}  // namespace

WorkloadRun section_run(const WorkloadRun& run, std::int32_t section) {
  WorkloadRun out;
  out.start_ns = run.start_ns;
  out.end_ns = run.end_ns;
  out.exit_code = run.exit_code;
  out.progress_lines = run.progress_lines;
  out.switches = run.switches;
  if (const auto s = run.section_samples.find(section); s != run.section_samples.end()) out.samples = s->second;
  if (const auto g = run.section_gpu.find(section); g != run.section_gpu.end()) {
    if (const auto e = run.gpu_energy_j.find(g->second); e != run.gpu_energy_j.end()) {
      out.start_energy_j = e->second.first;
      out.end_energy_j = e->second.second;
    }
  }
  return out;
}

std::int64_t read_window_ns(const ProgressSample& a, const ProgressSample& b) {
  return a.read_ns > 0 && b.read_ns > 0 ? b.read_ns - a.read_ns : b.start.t_ns - a.start.t_ns;
}

std::vector<PackMeasure> measure_packs(const WorkloadRun& run, std::size_t packs) {
  const std::vector<ProgressSample> s = by_time(run.samples);
  std::vector<std::vector<std::int64_t>> spans(packs);
  std::vector<double> sum_e(packs, 0.0), sum_t(packs, 0.0);
  std::vector<PackMeasure> out(packs);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto k = static_cast<std::size_t>(s[i].start.pack);
    if (s[i].start.pack < 0 || k >= packs) continue;
    const bool last = i + 1 == s.size();
    if (last && !spans[k].empty()) continue;  // the run's tail only stands in for a pack seen once
    // The run's end: its counter was read at end_ns (WorkloadBackend::run), its stamp the same.
    const ProgressSample end = last ? ProgressSample{{0, 0, 0, run.end_ns}, run.end_energy_j, run.end_ns} : s[i + 1];
    const std::int64_t dt = end.start.t_ns - s[i].start.t_ns;
    if (dt <= 0) continue;
    spans[k].push_back(dt);
    const std::int64_t window = read_window_ns(s[i], end);
    if (window <= 0) continue;  // both lines read at once: their counter difference is no span's
    sum_t[k] += ns_to_s(window);
    sum_e[k] += end.energy_j - s[i].energy_j;
  }
  for (std::size_t k = 0; k < packs; ++k) {
    auto& v = spans[k];
    out[k].spans = static_cast<int>(v.size());
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    out[k].time_ns = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    const double t = ns_to_s(out[k].time_ns);
    if (sum_e[k] > 0 && sum_t[k] > 0) {
      out[k].energy_j = t * sum_e[k] / sum_t[k];
    } else {
      out[k].energy_j = t * run_power_w(run);
      out[k].run_power = true;
    }
  }
  return out;
}

IterationMeasure measure_iteration(const WorkloadRun& run) {
  std::vector<ProgressSample> firsts;
  for (const auto& s : by_time(run.samples)) {
    if (s.start.pack == 0) firsts.push_back(s);
  }
  if (firsts.size() < 2) return {run.end_ns - run.start_ns, run.end_energy_j - run.start_energy_j, 0};
  std::vector<std::int64_t> times;
  std::vector<double> energies;
  for (std::size_t i = 0; i + 1 < firsts.size(); ++i) {
    const std::int64_t period = firsts[i + 1].start.t_ns - firsts[i].start.t_ns;
    const std::int64_t window = read_window_ns(firsts[i], firsts[i + 1]);
    const double e = firsts[i + 1].energy_j - firsts[i].energy_j;
    times.push_back(period);
    // The counter's mean power over its read window, times the period (the header's comment).
    energies.push_back(window > 0 ? e * static_cast<double>(period) / static_cast<double>(window) : e);
  }
  std::sort(times.begin(), times.end());
  std::sort(energies.begin(), energies.end());
  const std::size_t mid = (times.size() - 1) / 2;
  return {times[mid], energies[mid], static_cast<int>(times.size())};
}

IterationMeasure measure_job_iteration(const WorkloadRun& run) {
  if (run.section_samples.empty()) {
    IterationMeasure whole{run.end_ns - run.start_ns, 0.0, 0};
    for (const auto& [index, e] : run.gpu_energy_j) whole.energy_j += e.second - e.first;
    return whole;
  }
  IterationMeasure out{0, 0.0, INT_MAX};
  for (const auto& [section, samples] : run.section_samples) {
    const IterationMeasure m = measure_iteration(section_run(run, section));
    out.time_ns = std::max(out.time_ns, m.time_ns);
    out.energy_j += m.energy_j;
    out.periods = std::min(out.periods, m.periods);
  }
  return out;
}

WorkloadBackend::WorkloadBackend(runtime::Device& device, const model::GpuSpec& gpu, WorkloadOptions options)
    : device_(device), gpu_(gpu), options_(std::move(options)) {
  if (options_.command.empty()) throw std::invalid_argument("WorkloadBackend: no command");
}

WorkloadBackend::WorkloadBackend(JobGpus gpus, const model::GpuSpec& gpu, WorkloadOptions options)
    : WorkloadBackend(first_device(gpus), gpu, std::move(options)) {
  job_ = std::move(gpus);
}

std::map<std::int32_t, runtime::Device*> WorkloadBackend::job_run_options(runtime::RunOptions& ro,
                                                                         double static_clock_mhz, WorkloadRun& out) {
  ro.gpus = job_.ids;
  for (const auto& [index, dev] : job_.devices) {
    if (static_clock_mhz > 0) ro.start_clock_mhz[index] = static_clock_mhz;
    out.gpu_energy_j[index] = {dev->energy_counter_j(), 0.0};
  }
  ro.on_routed_pack_start = [this, &out](const runtime::PackStarted& p, std::int32_t gpu) {
    const auto dev = job_.devices.find(gpu);
    if (dev == job_.devices.end()) return;
    out.section_samples[p.device].push_back({p, dev->second->energy_counter_j(), now_ns()});
    out.section_gpu[p.device] = gpu;
  };
  return job_.devices;
}

IterationMeasure WorkloadBackend::iteration(const WorkloadRun& run) const {
  return job_.devices.empty() ? measure_iteration(run) : measure_job_iteration(run);
}

WorkloadRun WorkloadBackend::run(const policy::Policy& policy, double static_clock_mhz, const std::string& what) {
  runtime::RunOptions ro;
  ro.policy = policy;
  ro.policy_path = fmt::format("emo optimize ({})", what);
  ro.command = options_.command;
  ro.tracer_library = options_.tracer_library;
  ro.cupti_library = options_.cupti_library;
  ro.guardian_command = options_.guardian_command;
  if (!options_.log_prefix.empty()) ro.log_path = fmt::format("{}.{}.jsonl", options_.log_prefix, workload_runs_);
  WorkloadRun out;
  std::map<std::int32_t, runtime::Device*> devices;
  if (job_.devices.empty()) {
    if (static_clock_mhz > 0) ro.start_clock_mhz[options_.trace_device] = static_clock_mhz;
    ro.on_pack_start = [&](const runtime::PackStarted& p) {
      if (p.device == options_.trace_device) out.samples.push_back({p, device_.energy_counter_j(), now_ns()});
    };
    devices = {{options_.trace_device, &device_}};
  } else {
    devices = job_run_options(ro, static_clock_mhz, out);
  }
  out.start_energy_j = device_.energy_counter_j();
  out.start_ns = now_ns();
  const runtime::RunReport rep = runtime::run_policy(ro, devices);
  out.end_ns = now_ns();
  out.end_energy_j = device_.energy_counter_j();
  for (auto& [index, e] : out.gpu_energy_j) e.second = job_.devices.at(index)->energy_counter_j();
  out.exit_code = rep.exit_code;
  out.progress_lines = rep.progress_lines;
  out.switches = rep.switches;
  ++workload_runs_;
  if (rep.exit_code != 0) {
    const std::string how = rep.received_signal != 0 ? fmt::format("was stopped (emo got signal {})", rep.received_signal)
                            : rep.child_signal != 0  ? fmt::format("was killed by signal {}", rep.child_signal)
                                                     : fmt::format("exited with code {}", rep.exit_code);
    throw InputError(options_.command.front(), fmt::format("the workload {} during {}; the clocks were reset", how, what));
  }
  unit_done();
  return out;
}

void WorkloadBackend::use_device_of(const trace::Trace& trace, const pack::PackRun& packs) {
  if (!job_.devices.empty()) return;  // a job: a section per GPU of the trace
  const std::int32_t packs_device = single_device(trace, packs);
  if (options_.trace_device < 0) options_.trace_device = packs_device;
  if (options_.trace_device != packs_device) {
    throw InputError(trace.meta.path, fmt::format("the packs are on GPU {} of the trace, not GPU {}", packs_device,
                                                  options_.trace_device));
  }
}

void WorkloadBackend::measure_run(const trace::Trace& trace, const StaticPolicy& sp, double lock_mhz,
                                  const std::vector<double>& clock_mhz, const std::string& what,
                                  runtime::PackProfiles& out) {
  const WorkloadRun run = this->run(sp.policy, lock_mhz, what);
  out.runs += 1;
  out.device_s += ns_to_s(run.end_ns - run.start_ns);
  if (job_.devices.empty()) return measure_section(trace, sp, options_.trace_device, run, clock_mhz, what, out);
  for (const auto& [device, ids] : sp.pack_ids) {
    measure_section(trace, sp, device, section_run(run, device), clock_mhz, what, out);
  }
}

void WorkloadBackend::measure_section(const trace::Trace& trace, const StaticPolicy& sp, std::int32_t device,
                                      const WorkloadRun& run, const std::vector<double>& clock_mhz,
                                      const std::string& what, runtime::PackProfiles& out) const {
  const std::vector<std::uint32_t>& ids = sp.pack_ids.at(device);
  const auto section = std::find_if(sp.policy.gpus.begin(), sp.policy.gpus.end(),
                                    [&](const policy::GpuPolicy& g) { return g.device == device; });
  if (section == sp.policy.gpus.end()) throw std::logic_error(fmt::format("no policy section for GPU {}", device));
  if (run.samples.empty()) {
    throw InputError(trace.meta.path,
                     fmt::format("the packs of the trace were not seen in the workload: no pack start of GPU {} "
                                 "during {} ({} progress lines); check that the command runs the traced program "
                                 "and that the tracer follows it (emo run --dry-run --log -)",
                                 device, what, run.progress_lines));
  }
  const std::vector<PackMeasure> m = measure_packs(run, ids.size());
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (m[i].spans == 0 && clock_mhz[ids[i]] > 0)
      missing.push_back(fmt::format("{} ('{}')", i, section->packs[i].start.op_name));
  }
  if (!missing.empty()) {
    throw InputError(trace.meta.path,
                     fmt::format("the packs of the trace were not seen in the workload: {} of {} packs of GPU {} "
                                 "never started during {}: {}",
                                 missing.size(), ids.size(), device, what,
                                 one_line(fmt::format("{}", fmt::join(missing, ", ")), 200)));
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (clock_mhz[ids[i]] <= 0) continue;
    out.points[ids[i]].push_back({clock_mhz[ids[i]], ns_to_s(m[i].time_ns), m[i].energy_j});
    if (m[i].run_power) ++out.packs_at_run_power;
  }
}

runtime::PackProfiles WorkloadBackend::profile_packs(const trace::Trace& trace, const pack::PackRun& packs,
                                                     const std::vector<double>& clocks_mhz) {
  use_device_of(trace, packs);
  runtime::PackProfiles out;
  out.points.assign(packs.packing.packs.size(), {});
  expect_units(static_cast<std::int64_t>(clocks_mhz.size()));
  for (const double f : clocks_mhz) {
    const std::vector<double> every(packs.packing.packs.size(), f);
    measure_run(trace, static_policy(trace, packs, gpu_, f), f, every, fmt::format("profiling at {:.0f} MHz", f), out);
  }
  return out;
}

runtime::PackProfiles WorkloadBackend::profile_pack_clocks(const trace::Trace& trace, const pack::PackRun& packs,
                                                           const std::vector<std::vector<double>>& clocks_mhz) {
  const std::size_t P = packs.packing.packs.size();
  if (clocks_mhz.size() != P)
    throw std::invalid_argument(fmt::format("profile_pack_clocks: {} clock lists for {} packs", clocks_mhz.size(), P));
  use_device_of(trace, packs);
  runtime::PackProfiles out;
  out.points.assign(P, {});
  // One run per distinct clock, locked at it like the profiling runs (the same measurement: no
  // switch inside a run), measuring the packs that asked for that clock.
  std::map<double, std::vector<double>, std::greater<>> by_clock;
  for (std::size_t p = 0; p < P; ++p) {
    for (const double f : clocks_mhz[p]) {
      auto& measured = by_clock.try_emplace(f, std::vector<double>(P, 0.0)).first->second;
      measured[p] = f;
    }
  }
  expect_units(static_cast<std::int64_t>(by_clock.size()));
  for (const auto& [f, measured] : by_clock)
    measure_run(trace, static_policy(trace, packs, gpu_, f), f, measured,
                fmt::format("refinement profiling at {:.0f} MHz", f), out);
  return out;
}

runtime::RunMeasurement WorkloadBackend::run_static(const trace::Trace& trace, const pack::PackRun& packs,
                                                    double clock_mhz) {
  const StaticPolicy sp = static_policy(trace, packs, gpu_, clock_mhz);
  const WorkloadRun run = this->run(sp.policy, clock_mhz, fmt::format("the static run at {:.0f} MHz", clock_mhz));
  const IterationMeasure m = iteration(run);
  runtime::RunMeasurement out;
  out.time_ns = m.time_ns;
  out.energy_j = m.energy_j;
  out.clock_mhz = clock_mhz;
  return out;
}

runtime::RunMeasurement WorkloadBackend::run_policy(const trace::Trace&, const pack::PackRun&,
                                                    const policy::Policy& policy, const std::vector<double>&) {
  const WorkloadRun run = this->run(policy, 0, "the EMO policy run");
  const IterationMeasure m = iteration(run);
  runtime::RunMeasurement out;
  out.time_ns = m.time_ns;
  out.energy_j = m.energy_j;
  // Switches per iteration as planned (the simulated backend's count); which ops ran before
  // their pack's clock took effect is not observable on a real GPU.
  out.clock_switches = runtime::switches_per_iteration(policy);
  return out;
}

}  // namespace emo::driver
