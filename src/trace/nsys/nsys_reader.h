// Reader for Nsight Systems SQLite exports (`nsys export --type sqlite`).
#pragma once

#include <string>

#include "trace/trace.h"

namespace emo::trace {

/// Reads an nsys SQLite export at `path` into a finished Trace: kernels, memcpy, memset, CUDA
/// runtime API calls (names from StringIds), synchronisation records classified by the runtime
/// call joined on correlationId (the `syncType` column is only a fallback: nsys 2024.5 writes 1
/// for every cudaDeviceSynchronize), CUDA events (the record correlation of each event wait),
/// GPUs from TARGET_INFO_GPU, and pid/tid decoded from globalTid (pid = gtid >> 24 & 0xffffff,
/// tid = gtid & 0xffffff). Columns are checked, not assumed, so several export versions load.
/// Throws emo::InputError when the file is not SQLite, is not an nsys export, or lacks a
/// needed column.
Trace read_nsys_sqlite(const std::string& path);

}  // namespace emo::trace
