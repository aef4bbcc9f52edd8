// Writing a Trace as Kineto / Chrome-trace JSON, so that traces from EMO's own tracer (or any
// reader) open in Perfetto or chrome://tracing, Holistic Trace Analysis, and EMO's Kineto reader.
#pragma once

#include <string>

#include "trace/trace.h"

namespace emo::trace {

/// Kineto JSON of `t`: `deviceProperties` from the GPUs, `distributedInfo` when the rank is
/// known, and one complete event ("ph": "X") per op with the current Kineto categories (kernel,
/// gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver, cpu_op, user_annotation,
/// gpu_user_annotation, cuda_sync) and the args EMO's Kineto reader uses (device, stream,
/// correlation, External id, sync kind and the waited-on event, collective metadata).
/// Timestamps are written in µs with three decimals, so that read_kineto_json() gets the
/// same integer ns back. Example op: kernel "k" at 1500 ns for 250 ns on device 0, stream 7 →
/// {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.500,"dur":0.250,
///  "args":{"device":0,"stream":7,"correlation":12}}
std::string to_kineto_json(const Trace& t);

}  // namespace emo::trace
