// `emo reset` and the stale-lock note that `emo run` prints at its start (docs/runtime.md,
// "The guardian: clocks reset after kill -9").
#pragma once

#include <string>

#include "runtime/nvml.h"

namespace emo::cli {

/// For each lock record left by an `emo run` that is no longer alive (runtime/guardian.h), prints
/// one line on stderr, "WHO: a previous emo run (pid 4242) left clocks locked on GPU 0, 1; ...",
/// and, when `reset`, resets the SM and memory locked clocks of those GPUs (ones NVML no longer
/// lists are skipped) and removes the record. Returns the number of records found. Throws
/// runtime::NvmlError when a reset fails (no permission, ...).
int handle_stale_locks(runtime::Nvml& nvml, const std::string& who, bool reset);

}  // namespace emo::cli
