// `emo optimize --device nvml` (docs/optimize.md, "Profiling on a real GPU"): on a real GPU a
// pack cannot be replayed alone, so the workload itself runs, through the policy runtime
// (runtime/policy_runtime.h, as `emo run` runs it: the tracer in follow mode reports each pack
// start as `P DEVICE PACK ITERATION T_NS`):
//   * profiling: one run per profiling clock, the SM clock locked for the whole run (a static
//     policy: every pack at that clock); the parent reads the energy counter at each pack start;
//     each pack's time and energy come from the spans between consecutive pack starts;
//   * evaluation: one run at the max clock (baseline), one at the static clock the models predict
//     best within the target, one with EMO's policy (the runtime doing its switches).
// Clocks are reset after every run, whatever the workload did (run_policy's guarantee).
//
// A job (the linked traces of several ranks, docs/multi-rank.md) runs on every GPU of the node
// at once: each profiling run locks every GPU at its clock; each rank's section is routed to the
// GPU its process names in its hello line (runtime::GpuRouter, as `emo run` routes a job's
// policy), else to the NVML GPU of the section's index; each pack is measured on that GPU's
// energy counter, read at its section's pack starts; a run's iteration is the slowest section's
// and its energy the sum over the sections' GPUs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "driver/policy_builder.h"
#include "model/gpu_catalog.h"
#include "runtime/backend.h"
#include "runtime/device.h"
#include "runtime/policy_runtime.h"

namespace emo::driver {

/// One pack start seen in a workload run, with the GPU's energy counter read when it arrived.
struct ProgressSample {
  runtime::PackStarted start;  ///< As reported (t_ns: CLOCK_MONOTONIC, ns).
  double energy_j = 0;         ///< Energy counter (J) read by the parent on receipt.
  std::int64_t read_ns = 0;    ///< When the counter was read (CLOCK_MONOTONIC, ns); 0: not recorded
                               ///< (read_window_ns then takes the reported start).
};

/// The window over which the counter of `a` and `b` (b after a) was read, ns: b.read_ns −
/// a.read_ns, or the reported starts' difference when either read time is not recorded. The parent
/// reads the counter when it receives a line, late by a delay that varies with the scheduler
/// (milliseconds on a loaded machine): the counter's difference is the energy of this window, not
/// of the span between the reported starts.
std::int64_t read_window_ns(const ProgressSample& a, const ProgressSample& b);

/// What one run of the workload gave.
struct WorkloadRun {
  std::vector<ProgressSample> samples;    ///< Pack starts of the profiled GPU, in arrival order.
  std::int64_t start_ns = 0, end_ns = 0;  ///< steady_clock (CLOCK_MONOTONIC) around the run, ns.
  double start_energy_j = 0, end_energy_j = 0;  ///< Energy counter around the run, J.
  int exit_code = 0;                      ///< The workload's (128 + signal when killed).
  std::int64_t progress_lines = 0;        ///< Every progress line received (any GPU).
  std::int64_t switches = 0;              ///< Clock switches the runtime issued.
  /// A job (several GPUs; `samples` then empty): per policy section, its pack starts with the
  /// counter of the GPU the section was routed to; that GPU's NVML index; each GPU's counter (J)
  /// at the run's start and end.
  std::map<std::int32_t, std::vector<ProgressSample>> section_samples;
  std::map<std::int32_t, std::int32_t> section_gpu;
  std::map<std::int32_t, std::pair<double, double>> gpu_energy_j;
};

/// The run as one section of a job saw it: that section's pack starts, its GPU's counter at the
/// run's start and end (0 when the section never started a pack), the run's wall times.
WorkloadRun section_run(const WorkloadRun& run, std::int32_t section);

/// A pack's time and energy in one run.
struct PackMeasure {
  std::int64_t time_ns = 0;   ///< Median span, ns.
  double energy_j = 0;        ///< time × mean power over the pack's spans, J.
  int spans = 0;              ///< Spans measured; 0 = the pack was never seen starting.
  bool run_power = false;     ///< The counter did not advance over its spans: the run's mean power was used.
};

/// Per pack 0..packs-1 of one run. The pack starts are sorted by time; each start spans to the
/// next start (the iteration's next pack, or the next iteration's first), so a pack's span
/// holds its work and whatever the GPU waited for before the next pack. The run's last start
/// spans to the run's end only for a pack that has no other span. Time = the median span;
/// energy = that time × the pack's mean power over all its spans (Σ energy / Σ read window,
/// read_window_ns), which, unlike a median of per-span energies, survives an energy counter
/// that advances in steps longer than a pack, and a counter read late. When the counter did not
/// advance over a pack's spans at all, the run's mean power stands in (run_power). Pack indices
/// outside [0, packs) are ignored.
std::vector<PackMeasure> measure_packs(const WorkloadRun& run, std::size_t packs);

/// One iteration's time and energy in a run.
struct IterationMeasure {
  std::int64_t time_ns = 0;  ///< ns.
  double energy_j = 0;       ///< J.
  int periods = 0;           ///< Iteration periods seen (0: the whole run was used).
};

/// The median period between consecutive starts of pack 0 and the median of the iterations'
/// energies (lower medians for an even count; taken apart, so that an iteration whose time is
/// typical but whose switches were mistimed, such as the first ones before the runtime has seen a
/// period, does not set the energy); the whole run (wall time, counter) when pack 0 started fewer
/// than twice. An iteration's energy is the counter's mean power over its read window
/// (read_window_ns) times its period: a line received late moves energy between neighbouring
/// periods' counter differences (seen under ASan on a loaded CI machine: the median iteration 4.5 %
/// under the stand-in's exact energy), not between their powers.
IterationMeasure measure_iteration(const WorkloadRun& run);

/// A job's iteration: measure_iteration of each section of `run` (section_run); time = the
/// slowest section's, energy = the sum over the sections, periods = the fewest seen. A run with no
/// section: the whole run (wall time, every GPU's counter).
IterationMeasure measure_job_iteration(const WorkloadRun& run);

/// The GPUs of a job (WorkloadBackend's job constructor): NVML index -> device, and their
/// identities for routing the processes' hello lines (runtime::GpuRouter).
struct JobGpus {
  std::map<std::int32_t, runtime::Device*> devices;
  std::vector<runtime::GpuIdentity> ids;
};

/// How to run the workload.
struct WorkloadOptions {
  std::vector<std::string> command;  ///< argv (non-empty).
  std::string tracer_library;        ///< CUDA_INJECTION64_PATH; "" = the command reports progress itself.
  std::string cupti_library;         ///< NVTX_INJECTION64_PATH when tracing ("" = leave unset).
  /// The trace's GPU: the device index of the policy and of the P lines; -1 = the GPU of the
  /// packs (profile_packs() sets it, and requires the packs on one GPU).
  std::int32_t trace_device = -1;
  std::string log_prefix;            ///< Per-run JSON-lines runtime logs PREFIX.N.jsonl ("" = none).
  std::string label;                 ///< The GPU in outputs, e.g. "GPU 0 (NVIDIA H200)".
  /// The guardian each run starts before touching a clock (RunOptions::guardian_command, e.g.
  /// {"/usr/bin/emo", "__guardian"}): clocks reset even after kill -9 of `emo optimize`. Empty = none.
  std::vector<std::string> guardian_command;
};

/// A real GPU running the workload (see the file comment). `device` is the GPU whose clocks are
/// set and whose energy counter is read (runtime::NvmlDevice; any Device works). Every time and
/// energy it reports is measured (simulated() is the device's).
class WorkloadBackend final : public runtime::OptimizeBackend {
 public:
  /// Throws std::invalid_argument when options.command is empty.
  WorkloadBackend(runtime::Device& device, const model::GpuSpec& gpu, WorkloadOptions options);
  /// A job's workload on several GPUs (see the file comment); every GPU in `gpus` is locked in the
  /// profiling and static runs and reset after each run; device() is the first. Throws
  /// std::invalid_argument when options.command or gpus.devices is empty.
  WorkloadBackend(JobGpus gpus, const model::GpuSpec& gpu, WorkloadOptions options);

  runtime::Device& device() override { return device_; }
  bool static_oracle() const override { return false; }
  int max_validation_runs() const override { return 1; }
  std::int64_t workload_runs() const override { return workload_runs_; }
  std::string label() const override { return options_.label; }
  /// One run per profiling clock. Throws emo::InputError when the packs span several GPUs (not a
  /// job), when
  /// the workload exits non-zero, when no pack start (or not every pack's) was seen, and what the
  /// device throws.
  runtime::PackProfiles profile_packs(const trace::Trace& trace, const pack::PackRun& packs,
                                      const std::vector<double>& clocks_mhz) override;
  /// One run locked at each distinct clock asked for, measuring the packs that asked for it (as
  /// profile_packs measures). Throws as profile_packs.
  runtime::PackProfiles profile_pack_clocks(const trace::Trace& trace, const pack::PackRun& packs,
                                            const std::vector<std::vector<double>>& clocks_mhz) override;
  /// One run at `clock_mhz`. Throws emo::InputError when the workload exits non-zero.
  runtime::RunMeasurement run_static(const trace::Trace& trace, const pack::PackRun& packs, double clock_mhz) override;
  /// One run with `policy`. Throws emo::InputError when the workload exits non-zero.
  runtime::RunMeasurement run_policy(const trace::Trace& trace, const pack::PackRun& packs,
                                     const policy::Policy& policy, const std::vector<double>& pack_clock_mhz) override;

 private:
  /// Runs the workload under `policy`; with `static_clock_mhz` > 0 the clock is locked at it
  /// from the start. `what` names the run in errors.
  WorkloadRun run(const policy::Policy& policy, double static_clock_mhz, const std::string& what);
  /// Sets options_.trace_device to the packs' one GPU; throws emo::InputError when they span
  /// several or another GPU was set.
  void use_device_of(const trace::Trace& trace, const pack::PackRun& packs);
  /// One run under `sp` (locked at `lock_mhz` when > 0): appends to out.points[p] the point of each
  /// pack p with clock_mhz[p] > 0, measured at that clock. Throws emo::InputError when no pack start
  /// or not every measured pack's was seen, and what run() throws.
  void measure_run(const trace::Trace& trace, const StaticPolicy& sp, double lock_mhz,
                   const std::vector<double>& clock_mhz, const std::string& what, runtime::PackProfiles& out);
  /// measure_run's part for section `device` (policy pack ids `ids`) in `run` (as that section saw it).
  void measure_section(const trace::Trace& trace, const StaticPolicy& sp, std::int32_t device, const WorkloadRun& run,
                       const std::vector<double>& clock_mhz, const std::string& what, runtime::PackProfiles& out) const;
  /// Sets the job's runs up in `ro` (its GPUs, locked at `static_clock_mhz` when > 0) and
  /// records each section's pack starts and the counters in `out`; returns the devices to drive.
  std::map<std::int32_t, runtime::Device*> job_run_options(runtime::RunOptions& ro, double static_clock_mhz,
                                                           WorkloadRun& out);
  /// The iteration of `run`: measure_iteration, or measure_job_iteration for a job.
  IterationMeasure iteration(const WorkloadRun& run) const;

  runtime::Device& device_;
  const model::GpuSpec& gpu_;
  WorkloadOptions options_;
  std::int64_t workload_runs_ = 0;
  JobGpus job_;  ///< Empty devices: one trace on one GPU (device_).
};

}  // namespace emo::driver
