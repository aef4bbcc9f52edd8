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
//     descriptor is in $EMO_PROGRESS_FD:
//         P DEVICE PACK ITERATION [T_NS]
//     T_NS is CLOCK_MONOTONIC (absent: the parent stamps the line on receipt). Any program can
//     write these lines itself instead (`emo run --no-tracer`).
//   * The parent's SwitchPlanner (pure, below) anchors the policy's predicted pack offsets at
//     the observed start and issues each next switch `switch_latency` before the predicted start
//     of its pack; a pack observed to start at a clock other than its own gets its switch at once
//     ("late"); a switch to the clock already requested is skipped.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "runtime/device.h"
#include "tracer/pack_matcher.h"

namespace emo::runtime {

/// The watch list the tracer matches launches against: every pack of every GPU of `p`.
tracer::WatchList watch_list_of(const policy::Policy& p);

/// One progress report: pack `pack` of iteration `iteration` started on GPU `device` at `t_ns`.
struct PackStarted {
  std::int32_t device = 0;
  std::int32_t pack = 0;
  std::int64_t iteration = 0;
  std::int64_t t_ns = 0;  ///< CLOCK_MONOTONIC (steady_clock) ns.
  std::int64_t pid = 0;   ///< Reporting process (its hello line), 0 = not given.
};

/// Parses a progress line "P DEVICE PACK ITERATION [T_NS [PID]]"; `now_ns` stamps a line without
/// T_NS. Returns nullopt for anything else (ignored, counted by the runner).
std::optional<PackStarted> parse_progress_line(std::string_view line, std::int64_t now_ns);

/// A process's hello (docs/runtime.md, "Many GPUs, many processes"): "H PID RANK DEVICE GPU_ID":
/// process PID, of distributed rank RANK (-1: none in its environment), follows the policy
/// section `device` on the GPU whose identity is GPU_ID (NVML-style UUID "GPU-…", or PCI bus id
/// "0000:3b:00.0"; "-" = unknown). One per (process, CUDA device), before its first P line.
struct ProcessHello {
  std::int64_t pid = 0;
  std::int32_t rank = -1;
  std::int32_t device = 0;  ///< Policy section (GpuPolicy::device) the process follows.
  std::string gpu_id;       ///< "" when the line said "-".
};

/// Parses a hello line; nullopt for anything else. parse_hello_line("H 42 3 3 GPU-ab") ==
/// ProcessHello{42, 3, 3, "GPU-ab"}.
std::optional<ProcessHello> parse_hello_line(std::string_view line);

/// One GPU `emo run` may set clocks on: its NVML index and identities.
struct GpuIdentity {
  std::int32_t nvml_index = 0;
  std::string uuid;        ///< nvmlDeviceGetUUID, e.g. "GPU-5a1c…".
  std::string pci_bus_id;  ///< e.g. "00000000:3B:00.0" ("" when not known).
};

/// True when `a` and `b` name the same GPU: UUIDs equal ignoring case, or PCI bus ids equal
/// ignoring case and the domain's leading zeros ("00000000:3B:00.0" == "0000:3b:00.0").
bool same_gpu_id(std::string_view a, std::string_view b);

/// Which GPU each policy section's clock switches go to. Pure: fed hello lines, it answers.
///
/// A section nobody claimed goes to the NVML GPU of the section's own index (the one-process
/// behaviour: CUDA and NVML order agree, docs/runtime.md). A hello claims section DEVICE for its
/// process on the GPU it names. Rules (each refusal is one warning line; the hello is ignored
/// and that process's pack starts with it):
///   * the section must exist; in a job policy (sections with ranks) a hello that names a rank
///     must name the section's rank;
///   * its GPU must be one of `gpus` (when `gpus` is empty, as in a dry run without NVML, the
///     claim is kept without a GPU);
///   * first come, first served: a second process claiming a claimed section, or a claimed GPU
///     for another section, is refused (two processes cannot both own one GPU's clock).
class GpuRouter {
 public:
  GpuRouter(const policy::Policy& p, std::vector<GpuIdentity> gpus);

  /// Records a hello. Returns "" when accepted, else the warning (without a prefix).
  std::string claim(const ProcessHello& h);
  /// Whether to plan on a pack start: its section is claimed by its process, or unclaimed and
  /// its index is one of the GPUs (the one-process case). Unknown sections: false.
  bool accepts(const PackStarted& p) const;
  /// NVML index of the GPU section `device`'s switches go to: the claimed GPU, else `device`.
  std::int32_t gpu_of(std::int32_t device) const;
  /// Sections (by device) no process has claimed, in policy order.
  std::vector<std::int32_t> unclaimed() const;
  std::size_t claims() const noexcept { return owner_.size(); }

 private:
  struct Owner {
    std::int64_t pid = 0;
    std::int32_t gpu = -1;  ///< NVML index, -1 = unknown (no identities).
  };
  std::map<std::int32_t, std::int32_t> section_rank_;  ///< device -> rank (-1 none)
  std::vector<std::int32_t> order_;                     ///< sections in policy order
  bool job_ = false;                                    ///< some section has a rank
  std::vector<GpuIdentity> gpus_;
  std::map<std::int32_t, Owner> owner_;                 ///< section -> owner
};

/// Why a switch is issued.
enum class SwitchReason : std::uint8_t {
  kEarly,    ///< switch_latency before the predicted start of its pack
  kLate,     ///< its pack was seen starting at another clock
  kDefault,  ///< the default clock after the last pack of the iteration
};
std::string_view switch_reason_name(SwitchReason r) noexcept;  ///< "early", "late", "default"

/// A clock change to issue at `t_ns`.
struct Switch {
  std::int64_t t_ns = 0;
  std::int32_t device = 0;
  std::int32_t pack = -1;      ///< Pack it is for; -1 for the default clock after the last pack.
  std::int64_t iteration = 0;
  double clock_mhz = 0;
  SwitchReason reason = SwitchReason::kEarly;
  bool deferred = false;       ///< Held back by the minimum switch interval (t_ns is when it was released).
};

/// Decides when to switch one GPU's clock, from observed pack starts. Pure: no clocks, no I/O.
///
/// On observing pack k of iteration i at t: the iteration's anchor is a = t − anchor_k, where
/// anchor_k is the predicted offset of the op the start is observed by (PackClock::
/// anchor_offset_ns(): offset_k itself, or a graph launch's or moved start's earlier or later
/// offset); pack j>k (j≥k when anchor_k < offset_k: the pack has not begun, its own switch is
/// planned) is predicted at a + offset_j and gets a switch at a + offset_j − lead; the default clock
/// follows at a + offset_last + duration_last − lead; once two iterations have been seen, pack 0
/// of the next one is predicted one observed iteration period later. Each observation replaces
/// the plan. Example (lead 2 ms; packs at 0/10/20 ms with clocks 1410/1200/1410; default 1410):
/// observe(pack 0 at 100 ms) plans {108 ms → 1200 (pack 1), 118 ms → 1410 (pack 2)}; the
/// default-clock switch equals pack 2's clock and is skipped when due. With pack 1 inside a CUDA
/// graph whose launch starts at 4 ms (anchor_offset_ns 4 ms): observing pack 1 (its graph launch)
/// at 105 ms anchors the iteration at 101 ms and plans {109 ms → 1200 (pack 1), 119 ms → 1410}.
///
/// Minimum interval (`min_interval_ns` > 0, the policy's min_switch_interval_ms): a switch that
/// would come sooner than the interval after the previous one issued on this GPU is *deferred*
/// to previous + interval; a switch that falls due while one is held replaces it (the held one
/// is dropped and counted in dropped(): only the newest clock matters), and a held switch to the
/// clock already requested is dropped as redundant. Example (lead 2 ms, interval 15 ms, packs at
/// 0/10/20/30 ms at 1200/990/1410/1100 MHz): pack 0 seen at 100 ms → 1200 at 100 (late); 990
/// due at 108 is held and issued at 115; 1410 due at 118 is held, replaced by 1100 due at 128,
/// which is issued at 130; the default 1410 due at 138 is issued at 145.
class SwitchPlanner {
 public:
  /// `gpu` from the policy; `lead_ns` = switch latency; `current_clock_mhz` = the clock in force
  /// (0 = unknown: the first switch is never skipped); `min_interval_ns` as above (0 = none).
  SwitchPlanner(policy::GpuPolicy gpu, std::int64_t lead_ns, double current_clock_mhz = 0,
                std::int64_t min_interval_ns = 0);

  /// Records an observed pack start and replans. Returns a late switch for that pack when the
  /// clock requested last is not its clock (issue it now), else nothing (also when the minimum
  /// interval holds it back: due() releases it). Unknown pack indices are ignored.
  std::optional<Switch> observe(const PackStarted& p);
  /// Planned switches with t_ns ≤ now_ns, in time order, removed from the plan. Those to the
  /// clock requested last are dropped (counted in skipped()); the others become the new
  /// requested clock, unless the minimum interval holds them back (above).
  std::vector<Switch> due(std::int64_t now_ns);
  /// When the next planned or held switch is due, or nullopt when none is.
  std::optional<std::int64_t> next_due_ns() const;

  double requested_clock_mhz() const noexcept { return requested_mhz_; }
  std::int64_t skipped() const noexcept { return skipped_; }
  std::int64_t deferred() const noexcept { return deferred_; }  ///< Switches issued late by the interval.
  std::int64_t dropped() const noexcept { return dropped_; }    ///< Held switches replaced or made redundant.
  const policy::GpuPolicy& gpu() const noexcept { return gpu_; }

 private:
  /// How early a switch from `from_mhz` to `to_mhz` is planned before its pack (switch_timing.h).
  std::int64_t lead_for(double from_mhz, double to_mhz) const noexcept;
  /// Issues `s` at `now_ns` if the interval allows (returns it), else holds it.
  std::optional<Switch> issue_or_hold(Switch s, std::int64_t now_ns);

  policy::GpuPolicy gpu_;
  std::int64_t lead_ns_;
  double requested_mhz_;
  std::int64_t min_interval_ns_;
  std::vector<Switch> plan_;                 ///< Sorted by t_ns.
  std::map<std::int64_t, std::int64_t> iteration_anchor_ns_;  ///< iteration -> anchor
  std::optional<Switch> held_;               ///< Held back by the minimum interval.
  std::optional<std::int64_t> last_issued_ns_;
  std::int64_t skipped_ = 0, deferred_ = 0, dropped_ = 0;
};

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
