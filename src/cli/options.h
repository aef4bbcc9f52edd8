// Options shared by several commands, registered and checked in one place.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "graph/dep_graph.h"
#include "trace/trace.h"

namespace emo::cli {

/// The window of a trace a command works on: `--window NAME` (the first annotation of that name,
/// e.g. ProfilerStep#3), or `--annotation NAME --instance K` (the K-th, 0-based), or the whole trace.
struct WindowOptions {
  std::string window;
  std::string annotation;
  int instance = 0;
  /// The window in `t` (timing::find_window). Throws emo::InputError when it is not found.
  graph::Window find(const trace::Trace& t) const;
};

/// Registers --window, --annotation and --instance on `cmd` (`verb` words the help: "Analyse",
/// "Pack", "Optimise"); --instance needs --annotation and is >= 0, --window excludes --annotation.
void add_window_options(CLI::App* cmd, WindowOptions& w, const std::string& verb);

/// How several traces are taken (docs/multi-rank.md): the ranks of one job are linked into one
/// trace (trace::link_job) unless `independent`; `ranks` is the `--ranks` text ("" = from the
/// traces).
struct JobOptions {
  std::string ranks;
  bool independent = false;
};

/// CLI11 check of an annotation-name option (--window, --annotation, --durations-window): refuses
/// an empty name, which would select no window and leave the whole trace, with a one-line error.
CLI::Validator annotation_name();

/// Registers --ranks (and, when `with_independent`, --independent) on `cmd`.
void add_job_options(CLI::App* cmd, JobOptions& j, bool with_independent);

/// The traces to work on: `traces` linked into one when they are the ranks of one job
/// (trace::not_one_job), else as given — with a note on stderr saying why they were not linked
/// when a job was plausible (several traces that record a rank of a world size > 1, or --ranks). `one_required` (analyze, pack): several traces that are not one job
/// are an error. Throws emo::InputError / ArgumentError (link_job, parse_ranks).
std::vector<trace::Trace> link_if_one_job(std::vector<trace::Trace> traces, const JobOptions& j, bool one_required);

/// What loading changed in each trace (trace::changed_on_load), by path: traces with no change may
/// be left out.
using ChangedOnLoad = std::vector<std::pair<std::string, std::vector<std::string>>>;

/// At most this many traces' changes are printed by warn_changed_on_load; the rest are counted.
inline constexpr std::size_t kChangedOnLoadTraces = 8;

/// Prints on stderr, for each trace of `changed` with a change (the first kChangedOnLoadTraces of
/// them, then one line counting the rest), one line per change: `emo COMMAND: warning: PATH:
/// 3 events had a negative duration; set to 0`. Prints nothing when nothing was changed.
void warn_changed_on_load(std::string_view command, const ChangedOnLoad& changed);

/// `emo analyze` and `emo pack` (`command`): loads every file of `paths` whole
/// (trace::load_trace), says what loading changed (warn_changed_on_load) and links several into
/// one job (link_if_one_job, one required). Throws emo::InputError / ArgumentError.
trace::Trace load_trace_or_job(std::string_view command, const std::vector<std::string>& paths, const JobOptions& j);

}  // namespace emo::cli
