#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "timing/analysis.h"
#include "output/analysis_output.h"
#include "output/overlay.h"
#include "core/error.h"
#include "trace/load.h"

namespace emo::cli {
namespace {

struct AnalyzeOptions {
  std::vector<std::string> traces;
  JobOptions job;
  WindowOptions win;
  std::string json_out;
  std::string overlay_out;
  std::vector<std::string> what_ifs;
  std::string durations_from;
  std::string durations_window;
  int durations_instance = -1;
};

int run_analyze(const AnalyzeOptions& o) {
  std::vector<timing::WhatIf> what_ifs;
  for (const std::string& spec : o.what_ifs) what_ifs.push_back(timing::parse_what_if(spec));
  const trace::Trace t = load_trace_or_job("analyze", o.traces, o.job);
  const graph::Window window = o.win.find(t);
  timing::Analysis a = timing::analyze(t, window, what_ifs);
  if (!o.durations_from.empty()) {
    // The same file is read once.
    std::optional<trace::Trace> other;
    if (o.traces.size() > 1) throw InputError("--durations-from", "takes one trace, not a job of several");
    if (o.durations_from != o.traces[0]) other = trace::load_trace(o.durations_from);
    const trace::Trace& src = other ? *other : t;
    const graph::Window src_window =
        o.durations_instance >= 0 ? timing::find_window(src, "", o.win.annotation, o.durations_instance)
                                  : timing::find_window(src, o.durations_window, "", 0);
    a.durations = timing::durations_from(t, a.graph, src, src_window);
  }
  if (o.json_out != "-") fmt::print("{}", output::to_text(t, a));
  if (!o.json_out.empty()) write_output(o.json_out, output::to_json(t, a).dump(2) + "\n");
  if (!o.overlay_out.empty()) output::write_overlay(t, a, o.overlay_out);
  return 0;
}

}  // namespace

Action add_analyze_command(CLI::App& app) {
  auto opts = std::make_shared<AnalyzeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Dependency graph, replay, critical path and slack of a trace; what-if timing");
  cmd->add_option("trace", opts->traces,
                  "Trace file (Kineto JSON, plain or .gz, or nsys SQLite); several: the ranks of one job, linked "
                  "through their collectives (docs/multi-rank.md)")
      ->required();
  add_job_options(cmd, opts->job, false);
  add_window_options(cmd, opts->win, "Analyse");
  cmd->add_option("--json", opts->json_out,
                  "Write the JSON result to FILE ('-' = stdout only, no text)");
  cmd->add_option("--overlay", opts->overlay_out,
                  "Write a Chrome/Perfetto JSON trace with the critical path, slack per op and "
                  "slack windows");
  cmd->add_option("--what-if", opts->what_ifs,
                  "Duration change to evaluate, repeatable: SELECTOR:CHANGE[;...], e.g. "
                  "kind=kernel:x1.5, name~gemm:x1.2, id=123:+2ms (docs/graph.md)");
  auto* from = cmd->add_option("--durations-from", opts->durations_from,
                               "Replay the window's graph with the durations TRACE2 recorded for the same ops "
                               "(matched by stream/thread, name and order) and predict the makespan");
  cmd->add_option("--durations-window", opts->durations_window,
                  "With --durations-from: the source window, an annotation name such as ProfilerStep#4 "
                  "(default: the whole source trace)")
      ->check(annotation_name())
      ->needs(from);
  cmd->add_option("--durations-instance", opts->durations_instance,
                  "With --durations-from and --annotation NAME: the source window is instance K of NAME")
      ->needs(from)
      ->needs("--annotation");
  return [cmd, opts]() -> int {
    if (!cmd->parsed()) return -1;
    check_outputs({{"--json", &opts->json_out}, {"--overlay", &opts->overlay_out}});
    if (opts->durations_instance < -1 || (opts->durations_instance >= 0 && !opts->durations_window.empty())) {
      throw InputError("--durations-instance", "takes a number >= 0 and excludes --durations-window");
    }
    return run_analyze(*opts);
  };
}

}  // namespace emo::cli
