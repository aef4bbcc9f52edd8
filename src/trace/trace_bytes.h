// Binary serialisation of a finished Trace, to move reduced rank traces between processes
// (job/load_job.h) without re-reading their files.
//
// Layout (all integers little-endian, fixed width):
//   "EMOTRACE" (8 bytes) | version u32 (= kTraceBytesVersion) | payload size u64 |
//   FNV-1a 64 of the payload u64 | payload
// The payload holds the meta (job info included), the string table, every op column, the sync and
// collective tables (CollectiveTable::match included), the quirk counts and the warnings; a vector
// is its u64 length then its elements, a string its u64 length then its bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trace/trace.h"

namespace emo::trace {

inline constexpr std::uint32_t kTraceBytesVersion = 2;  // 2: CollectiveTable::src_rank, dst_rank

/// Serialises `t` (a finished trace) into the layout above. Size: 65 bytes per op, 37 per sync
/// record, 64 per collective (56 unlinked), plus the strings. Throws nothing but std::bad_alloc.
std::string to_bytes(const Trace& t);

/// Reads bytes written by to_bytes() back into an equal Trace (every column, side table, string,
/// meta field, quirk count and warning). `origin` only names the input in errors.
/// Throws emo::InputError(origin, one-line problem) for a wrong magic or version, truncated
/// input, a checksum mismatch (any flipped byte) or inconsistent content (column lengths, string
/// ids, rows or enum values out of range, trailing bytes); never reads out of bounds.
Trace from_bytes(std::string_view bytes, const std::string& origin);

}  // namespace emo::trace
