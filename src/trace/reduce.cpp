#include "trace/reduce.h"

#include <utility>
#include <vector>

namespace emo::trace {
namespace {

bool needed_by_optimize(const Trace& t, std::size_t row) {
  const OpKind k = t.ops.kind[row];
  if (k == OpKind::kGpuAnnotation) return false;
  if (k != OpKind::kFrameworkOp) return true;
  return t.strings.view(t.ops.name[row]).starts_with("ProfilerStep#");  // timing::is_window_marker
}

template <class T>
void keep_rows(std::vector<T>& column, const std::vector<std::uint32_t>& kept) {
  std::vector<T> out;
  out.reserve(kept.size());
  for (const std::uint32_t row : kept) out.push_back(column[row]);
  column = std::move(out);
}

/// Keeps only the strings still referenced, in their old order; rewrites every reference.
void compact_strings(Trace& t) {
  std::vector<StringId> new_id(t.strings.size(), StringTable::kNotFound);
  new_id[0] = 0;
  const auto mark = [&](StringId s) { new_id[s] = 0; };
  for (const StringId s : t.ops.name) mark(s);
  for (const auto* v : {&t.collectives.name, &t.collectives.group, &t.collectives.group_ranks, &t.collectives.dtype})
    for (const StringId s : *v) mark(s);
  for (const auto* v : {&t.ops.process, &t.ops.thread})
    for (const std::int64_t id : *v)
      if (host_id_string(id) >= 0 && static_cast<std::uint64_t>(host_id_string(id)) < new_id.size())
        mark(static_cast<StringId>(host_id_string(id)));
  StringTable strings;
  for (StringId s = 1; s < new_id.size(); ++s)
    if (new_id[s] != StringTable::kNotFound) new_id[s] = strings.intern(t.strings.view(s));
  for (StringId& s : t.ops.name) s = new_id[s];
  for (auto* v : {&t.collectives.name, &t.collectives.group, &t.collectives.group_ranks, &t.collectives.dtype})
    for (StringId& s : *v) s = new_id[s];
  for (auto* v : {&t.ops.process, &t.ops.thread})
    for (std::int64_t& id : *v)
      if (host_id_string(id) >= 0 && static_cast<std::uint64_t>(host_id_string(id)) < new_id.size())
        id = host_id_of_string(new_id[static_cast<StringId>(host_id_string(id))]);
  t.strings = std::move(strings);
}

}  // namespace

Trace reduce_for_optimize(Trace t) {
  std::vector<std::uint32_t> kept;
  std::vector<std::uint32_t> new_row(t.ops.size(), 0);
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    if (!needed_by_optimize(t, i)) continue;
    new_row[i] = static_cast<std::uint32_t>(kept.size());
    kept.push_back(i);
  }
  if (kept.size() != t.ops.size()) {
    OpTable& o = t.ops;
    keep_rows(o.kind, kept);
    for (auto* c : {&o.start_ns, &o.dur_ns, &o.stream, &o.process, &o.thread, &o.correlation, &o.external_id})
      keep_rows(*c, kept);
    keep_rows(o.name, kept);
    keep_rows(o.device, kept);
    for (std::uint32_t& row : t.syncs.op) row = new_row[row];        // sync records are kept
    for (std::uint32_t& row : t.collectives.op) row = new_row[row];  // kernels are kept
  }
  compact_strings(t);
  return t;
}

}  // namespace emo::trace
