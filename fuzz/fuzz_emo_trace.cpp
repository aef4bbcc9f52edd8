// libFuzzer target for the emo.trace/1 reader (emo::trace::read_emo_trace).
//
// emo::InputError is the expected answer to bad input and is swallowed; its message must be one
// line that starts with the file name. Anything else (a crash, a sanitizer report, another
// exception) is a bug. An accepted trace is summarised as `emo inspect` would (summarize,
// to_text), so that what the reader lets through is exercised downstream too.
//
// Build and run: scripts/fuzz.sh --target emo [SECONDS] (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "trace/emo/emo_trace_reader.h"
#include "core/error.h"
#include "core/file_io.h"
#include "trace/summary.h"
#include "trace/trace.h"

namespace {
const std::string kPath = "fuzz-input.jsonl";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  emo::PaddedBuffer buf(size);
  if (size != 0) std::memcpy(buf.data(), data, size);
  // Content detection must never crash on any head.
  (void)emo::trace::is_emo_trace(std::string_view(reinterpret_cast<const char*>(data), size));
  emo::trace::Trace trace;
  try {
    trace = emo::trace::read_emo_trace(buf, kPath);
  } catch (const emo::InputError& e) {
    const std::string_view what = e.what();
    if (what.find('\n') != std::string_view::npos || !what.starts_with(kPath)) {
      std::fprintf(stderr, "bad InputError message: %s\n", e.what());
      std::abort();
    }
    return 0;
  }
  const emo::trace::TraceSummary summary = emo::trace::summarize(trace);
  if (emo::trace::to_text(summary).empty()) std::abort();
  return 0;
}
