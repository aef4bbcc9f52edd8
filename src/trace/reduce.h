// Reducing a rank's trace to what `emo optimize` reads, before it is sent to the root of a
// multi-rank load (job/load_job.h).
#pragma once

#include "trace/trace.h"

namespace emo::trace {

/// The trace with only what `emo optimize` reads:
/// - kept: GPU ops (graph nodes, packs, model classes by kernel name), runtime and driver API
///   calls (graph nodes, launches, sync calls by name), sync records and the sync table (sync
///   edges), every CPU annotation (windows: --window, --annotation NAME --instance K, and their
///   "available" lists in errors), framework ops named ProfilerStep#N (2021-era step markers),
///   the collective table, meta (job included), quirk counts and warnings;
/// - dropped: other framework ops (cpu_op: aten::..., module calls) and GPU annotations
///   (gpu_user_annotation), which only `emo inspect` and the Perfetto overlay (--overlay) show;
///   and the strings only they used.
/// Row order is kept (the rows stay sorted by start), side tables point to the new rows, and the
/// string table keeps the order of the strings it keeps (ids are remapped monotonically, host ids
/// made by host_id_of_string() too), so every stage of `emo optimize` sees the same graph.
/// `emo inspect` counts of the reduced trace differ from the file's. Throws nothing but
/// std::bad_alloc.
Trace reduce_for_optimize(Trace t);

}  // namespace emo::trace
