// The policy runtime (docs/design.md §6, docs/runtime.md): `emo run --policy FILE -- CMD ARGS...` runs a
// command and sets each GPU's SM clock at the policy's pack boundaries.
//
// Who does what:
//   * The parent (`emo run`) owns NVML and every clock change, so that a crashing child cannot
//     leave clocks locked: it resets them on every exit path (normal exit, non-zero exit, child
//     killed by a signal, SIGINT/SIGTERM/SIGHUP to `emo run`, an exception).
//   * The child runs with the CUPTI tracer injected (CUDA_INJECTION64_PATH). The tracer
//     recognises pack starts from kernel launches (tracer/pack_matcher.h), records a CUDA event
//     just before each, and when the GPU reaches it, writes a progress line to the pipe whose
//     descriptor is in $EMO_PROGRESS_FD (runtime/progress_protocol.h):
//         P DEVICE PACK ITERATION [T_NS]
//     T_NS is CLOCK_MONOTONIC (absent: the parent stamps the line on receipt). Any program can
//     write these lines itself instead (`emo run --no-tracer`).
//   * The parent's GpuRouter (pure, runtime/gpu_router.h) says which GPU each policy section's
//     switches go to; its SwitchPlanner per section (pure, runtime/switch_planner.h) anchors the
//     policy's predicted pack offsets at the observed start and issues each next switch
//     `switch_latency` before the predicted start of its pack; a pack observed to start at a clock
//     other than its own gets its switch at once ("late"); a switch to the clock already requested
//     is skipped.
//   * This file keeps the rest: the run's log, the clock guard that resets on every exit path,
//     and the event loop around the command (started by runtime/spawn.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "runtime/device.h"
#include "runtime/gpu_router.h"         // GpuIdentity, GpuRouter (re-exported: callers of run_policy use them)
#include "runtime/progress_protocol.h"  // PackStarted, the P and H lines, watch_list_of
#include "runtime/switch_planner.h"     // SwitchPlanner, Switch

namespace emo::runtime {

/// What `emo run` is asked to do.
struct RunOptions {
  policy::Policy policy;
  std::string policy_path;          ///< For messages and the log.
  std::vector<std::string> command; ///< argv of the workload (non-empty).
  bool dry_run = false;             ///< Log intended switches; never call an NVML setter.
  std::string log_path;             ///< JSON-lines log ("" = none; "-" = stderr).
  /// Tracer library to inject (CUDA_INJECTION64_PATH); "" = none (the command reports progress
  /// itself on $EMO_PROGRESS_FD).
  std::string tracer_library;
  std::string cupti_library;        ///< For NVTX_INJECTION64_PATH when tracing ("" = leave unset).
  double grace_s = 10;              ///< After forwarding a signal, how long to wait before SIGKILL.
  /// Clocks locked after the start-up reset and before the command starts (policy device ->
  /// MHz; not in a dry run). The planners start from them, so a policy whose packs and default
  /// clock all equal them switches nothing: a static run, as `emo optimize --device nvml`
  /// profiles with. A failing lock resets the clocks and throws before the command starts.
  std::map<std::int32_t, double> start_clock_mhz;
  /// Called for each pack start received (any device), before switches are planned; used to
  /// read the energy counter at each pack start. Exceptions from it propagate (clocks are reset).
  std::function<void(const PackStarted&)> on_pack_start;
  /// Called for each pack start the runtime acts on (its section is in the policy and
  /// GpuRouter::accepts it), after on_pack_start, with the NVML index its section's switches go to
  /// (GpuRouter::gpu_of: the GPU its process claimed by hello, else the section's own index);
  /// `emo optimize --device nvml` on a job reads that GPU's energy counter. Exceptions propagate
  /// (clocks are reset).
  std::function<void(const PackStarted&, std::int32_t nvml_gpu)> on_routed_pack_start;
  /// The guardian to start before any clock is touched (runtime/guardian.h), e.g.
  /// {"/usr/bin/emo", "__guardian"}; empty = none. Not started in a dry run.
  std::vector<std::string> guardian_command;
  /// Stop the command after this many seconds (0 = never): SIGTERM to its process group, SIGKILL
  /// after `grace_s`, clocks reset, exit code 124.
  double timeout_s = 0;
  /// The GPUs `devices` holds, with their identities, for routing processes' hello lines
  /// (GpuRouter). Empty: every section goes to the GPU of its own index.
  std::vector<GpuIdentity> gpus;
};

/// What happened.
struct RunReport {
  int exit_code = 0;                ///< Child's code; 128 + signal when it or `emo run` was signalled; 124 on timeout.
  int child_signal = 0;             ///< Signal that killed the child, 0 if it exited.
  int received_signal = 0;          ///< SIGINT/SIGTERM/SIGHUP received by `emo run`, 0 if none.
  std::int64_t progress_lines = 0;  ///< Pack starts received.
  std::int64_t bad_lines = 0;       ///< Unparseable progress lines.
  std::int64_t switches = 0;        ///< Switches issued (applied, or logged in a dry run).
  std::int64_t late_switches = 0;
  std::int64_t skipped_switches = 0;
  std::int64_t deferred_switches = 0; ///< Issued late by the minimum switch interval.
  std::int64_t dropped_switches = 0;  ///< Held by the interval, then replaced or redundant.
  std::int64_t hellos = 0;            ///< Hello lines accepted (processes × GPUs claimed).
  /// Per policy section (device): pack starts seen in each iteration 0..last (runtime/start_tally.h),
  /// and the packs per iteration expected.
  std::map<std::int32_t, std::vector<std::int64_t>> starts_seen;
  std::map<std::int32_t, std::int64_t> starts_expected;
  std::int64_t resets = 0;          ///< Clock resets done at the end.
  bool timed_out = false;           ///< Stopped after RunOptions::timeout_s (exit_code 124).
  double duration_s = 0;
};

/// Runs `options.command` in its own process group (which gets the terminal when `emo run` had
/// it) and applies the policy. `devices` maps an NVML index to the Device whose clock is set
/// (unused in a dry run: pass an empty map); a section's switches go to
/// GpuRouter::gpu_of(section) (without hellos: the section's own index). In a job policy
/// (sections with ranks) a section needs no device of its own index (its process claims one). Returns when the
/// command has exited; clocks of every device in `devices` are reset before returning or
/// throwing (not in a dry run). At the end it records, per section, the pack starts seen per
/// iteration against those expected (RunReport::starts_seen, and the log's "pack_starts"
/// event). Throws emo::InputError when the command cannot be started, a
/// policy GPU has no device, or a pack start cannot be observed (observed_by "none": one line
/// saying how many and why, before anything runs).
RunReport run_policy(const RunOptions& options, const std::map<std::int32_t, Device*>& devices);

}  // namespace emo::runtime
