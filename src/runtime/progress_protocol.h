// What `emo run` and the processes it runs say to each other (docs/runtime.md, "`emo run`:
// applying a policy"): the watch list handed down in the file named by $EMO_WATCH_FILE (which
// launches start which pack, tracer/pack_matcher.h), and the lines sent back on the pipe whose
// descriptor is in $EMO_PROGRESS_FD:
//     P DEVICE PACK ITERATION [T_NS [PID]]     pack PACK of ITERATION started on DEVICE
//     H PID RANK DEVICE GPU_ID                 process PID follows policy section DEVICE on GPU_ID
// Pure parsing: no I/O, no clocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "policy/policy.h"
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

}  // namespace emo::runtime
