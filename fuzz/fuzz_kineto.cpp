// libFuzzer target for the Kineto JSON reader (emo::trace::read_kineto_json).
//
// Each input is read twice: with 4 KiB chunks (KinetoOptions::chunk_bytes; the reader's minimum),
// so that inputs of a few KiB already take the chunking paths (heuristic cut, rollback, exact
// cut), and with one chunk for the whole array. emo::InputError is the expected answer to bad
// input and is swallowed (its message must be one line naming the file); anything else (a crash,
// a sanitizer report, another exception) is a bug. An accepted trace is also summarised as
// `emo inspect` would (emo::trace::summarize, to_text).
//
// The chunking is documented as a pure speed-up ("never a source of wrong rows"), so the two
// reads are compared: when both succeed they must produce the same trace; when only one succeeds
// and the input is valid JSON (simdjson DOM), that is a bug too. On invalid JSON one read may
// fail and the other not: simdjson On-Demand does not validate what it skips, and which bytes are
// skipped depends on the chunking. EMO_FUZZ_STRICT=1 aborts on those as well.
//
// Build and run: scripts/fuzz.sh [SECONDS] (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "core/error.h"
#include "core/file_io.h"
#include "trace/kineto/kineto_reader.h"
#include "trace/summary.h"
#include "trace/trace.h"

namespace {

using emo::PaddedBuffer;
using emo::trace::Trace;

const std::string kPath = "fuzz-input.json";

bool read(const std::uint8_t* data, std::size_t size, std::size_t chunk, Trace& out) {
  PaddedBuffer buf(size);
  if (size != 0) std::memcpy(buf.data(), data, size);
  emo::trace::KinetoOptions options;
  options.chunk_bytes = chunk;
  try {
    out = emo::trace::read_kineto_json(buf, kPath, options);
    return true;
  } catch (const emo::InputError& e) {
    // Expected. The message must be one line that names the file.
    const std::string_view what = e.what();
    if (what.find('\n') != std::string_view::npos || !what.starts_with(kPath)) {
      std::fprintf(stderr, "bad InputError message: %s\n", e.what());
      std::abort();
    }
    return false;
  }
}

/// Same pid/tid in both traces. Non-numeric ids are stored as host_id_of_string(string id), and
/// the string tables of the two reads may be numbered differently (a rolled-back chunk keeps its
/// interned strings), so such ids are compared by text.
bool same_host(const Trace& a, std::int64_t x, const Trace& b, std::int64_t y) {
  if (x == y) return true;
  const std::int64_t sx = emo::trace::host_id_string(x);
  const std::int64_t sy = emo::trace::host_id_string(y);
  if (sx < 0 || sy < 0) return false;
  if (static_cast<std::uint64_t>(sx) >= a.strings.size() ||
      static_cast<std::uint64_t>(sy) >= b.strings.size()) {
    return false;
  }
  return a.strings.view(static_cast<emo::StringId>(sx)) ==
         b.strings.view(static_cast<emo::StringId>(sy));
}

[[noreturn]] void differ(const char* what, std::size_t row) {
  std::fprintf(stderr, "chunked and unchunked reads differ: %s (row %zu)\n", what, row);
  std::abort();
}

void compare(const Trace& a, const Trace& b) {
  const auto& x = a.ops;
  const auto& y = b.ops;
  if (x.size() != y.size()) differ("op count", 0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x.kind[i] != y.kind[i]) differ("kind", i);
    if (x.start_ns[i] != y.start_ns[i]) differ("start_ns", i);
    if (x.dur_ns[i] != y.dur_ns[i]) differ("dur_ns", i);
    if (a.strings.view(x.name[i]) != b.strings.view(y.name[i])) differ("name", i);
    if (x.device[i] != y.device[i]) differ("device", i);
    if (x.stream[i] != y.stream[i]) differ("stream", i);
    if (!same_host(a, x.process[i], b, y.process[i])) differ("process", i);
    if (!same_host(a, x.thread[i], b, y.thread[i])) differ("thread", i);
    if (x.correlation[i] != y.correlation[i]) differ("correlation", i);
    if (x.external_id[i] != y.external_id[i]) differ("external_id", i);
  }
  if (a.syncs.size() != b.syncs.size()) differ("sync count", 0);
  for (std::size_t i = 0; i < a.syncs.size(); ++i) {
    if (a.syncs.op[i] != b.syncs.op[i] || a.syncs.kind[i] != b.syncs.kind[i] ||
        a.syncs.stream[i] != b.syncs.stream[i] ||
        a.syncs.event_stream[i] != b.syncs.event_stream[i] ||
        a.syncs.event_record_correlation[i] != b.syncs.event_record_correlation[i] ||
        a.syncs.event_id[i] != b.syncs.event_id[i]) {
      differ("sync row", i);
    }
  }
  if (a.collectives.size() != b.collectives.size()) differ("collective count", 0);
  for (std::size_t i = 0; i < a.collectives.size(); ++i) {
    if (a.collectives.op[i] != b.collectives.op[i] ||
        a.strings.view(a.collectives.name[i]) != b.strings.view(b.collectives.name[i]) ||
        a.collectives.in_nelems[i] != b.collectives.in_nelems[i]) {
      differ("collective row", i);
    }
  }
  const auto& q = a.quirks;
  const auto& r = b.quirks;
  if (q.out_of_order != r.out_of_order || q.zero_duration != r.zero_duration ||
      q.negative_duration != r.negative_duration || q.unknown_category != r.unknown_category ||
      q.string_ids != r.string_ids || q.ignored_events != r.ignored_events) {
    differ("quirk counts", 0);
  }
  if (a.meta.base_time_ns != b.meta.base_time_ns || a.meta.rank != b.meta.rank ||
      a.meta.gpus.size() != b.meta.gpus.size()) {
    differ("metadata", 0);
  }
}

bool valid_json(const std::uint8_t* data, std::size_t size) {
  simdjson::dom::parser parser;
  simdjson::padded_string json(reinterpret_cast<const char*>(data), size);
  return parser.parse(json).error() == simdjson::SUCCESS;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Trace chunked, whole;
  const bool ok_chunked = read(data, size, 4096, chunked);
  const bool ok_whole = read(data, size, std::size_t{1} << 30, whole);
  if (ok_chunked && ok_whole) compare(chunked, whole);
  if (ok_chunked) {
    // What `emo inspect` does next with a trace the reader accepted.
    const emo::trace::TraceSummary summary = emo::trace::summarize(chunked);
    const std::string text = emo::trace::to_text(summary);
    if (text.empty()) std::abort();
  }
  if (ok_chunked != ok_whole &&
      (std::getenv("EMO_FUZZ_STRICT") != nullptr || valid_json(data, size))) {
    std::fprintf(stderr, "chunked read %s, unchunked read %s\n", ok_chunked ? "succeeded" : "failed",
                 ok_whole ? "succeeded" : "failed");
    std::abort();
  }
  return 0;
}
