// What every front end (the `emo` CLI, the Python module) calls to turn what a user typed into the
// driver's inputs, so that the two answer alike: which catalog GPU a name means, the latency
// target (--max-slowdown / max_slowdown) and the shortest pack (--min-pack-ms / min_pack_ms).
// Errors are emo::ArgumentError naming the library parameter ("gpu", "max_slowdown",
// "min_pack_ms"); the CLI prints it as its option (cli::option_of), Python raises ValueError.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/timestamp.h"
#include "model/gpu_catalog.h"
#include "trace/trace.h"

namespace emo::driver {

/// The catalog entry `name` means: GpuCatalog::resolve (catalog id, listed NVML name, else the
/// same GPU with another memory size, stated as an assumption in Match::why). Throws
/// ArgumentError("gpu", name, "unknown GPU; known: <ids>") when nothing fits.
model::GpuCatalog::Match resolve_gpu(std::string_view name);

/// The GPU to optimise `t` for: resolve_gpu(name) when a name is given, else the first of the
/// trace's own GPUs the catalog resolves. `give` is how the front end spells the option that
/// names a GPU ("--gpu NAME", "gpu=NAME"), for the hint. Throws ArgumentError for an unknown
/// name, InputError(t's path, ...) when the trace names no GPU, none in the catalog, or, with no
/// name given, GPUs that resolve to different catalog entries (a job whose ranks record different
/// GPU models: one would be taken for all, chosen by the order of the files).
model::GpuCatalog::Match resolve_trace_gpu(const trace::Trace& t, std::string_view name, std::string_view give);

/// The catalog entry every one of `gpus` resolves to (recorded names; those the catalog does not
/// know are left out), as the first of them resolves (its Match::why); nullopt when none is known.
/// Throws InputError(path, "its GPUs are not one model (GPU a: 'X', GPU b: 'Y'); give `give` ...")
/// when two resolve to different entries: one model is optimised for all, and taking the first
/// would make the answer depend on the order of the files. O(gpus).
std::optional<model::GpuCatalog::Match> one_gpu_model(const std::string& path, const std::vector<trace::GpuInfo>& gpus,
                                                      std::string_view give);

/// A latency target as typed: a fraction ("0.05") or a percentage ("5%"); returns the fraction.
/// A fraction above 1 without '%' is refused (3 meant as 3 %: the message says how to write
/// either), as is anything above 10 (1000 %), a negative or non-numeric value. Throws
/// ArgumentError("max_slowdown", text, reason).
double parse_max_slowdown(std::string_view text);

/// A shortest pack as typed, in ms ("" = none: nullopt) → ns (rounded to the nearest ns): a
/// finite number > 0 and at most 3,600,000 (one hour) that rounds to at least 1 ns. Throws
/// ArgumentError("min_pack_ms", text, reason).
std::optional<TimeNs> parse_min_pack_ms(std::string_view text);

/// The latency target of a baseline `ns` at `fraction` slower: floor(ns × (1 + fraction)), ns;
/// a time that must not be exceeded. Every driver path (single trace, joint and decomposed job,
/// the comparison with independent plans) uses it.
TimeNs target_of(TimeNs ns, double fraction);

}  // namespace emo::driver
