#include "cli/options.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "cli/commands.h"

#include "core/error.h"
#include "timing/analysis.h"
#include "trace/job.h"
#include "trace/load.h"

namespace emo::cli {

graph::Window WindowOptions::find(const trace::Trace& t) const {
  return timing::find_window(t, window, annotation, instance);
}

void add_window_options(CLI::App* cmd, WindowOptions& w, const std::string& verb) {
  auto* win = cmd->add_option("--window", w.window, verb + " one annotation, e.g. ProfilerStep#3 (first of that name)");
  auto* ann = cmd->add_option("--annotation", w.annotation, verb + " an annotation by name (with --instance)");
  cmd->add_option("--instance", w.instance, "Which instance of --annotation (0-based)")
      ->check(CLI::NonNegativeNumber)
      ->needs(ann);
  win->excludes(ann);
  win->check(annotation_name());
  ann->check(annotation_name());
}

CLI::Validator annotation_name() {
  return CLI::Validator(
      [](const std::string& s) {
        return s.empty() ? std::string("an empty name selects nothing; give an annotation such as ProfilerStep#3")
                         : std::string();
      },
      "NAME");
}

void add_job_options(CLI::App* cmd, JobOptions& j, bool with_independent) {
  cmd->add_option("--ranks", j.ranks,
                  "Ranks of the traces given, in order: 0,1,2 or 0-7 (default: from the traces' distributedInfo)")
      ->check(CLI::Validator(
          [](const std::string& s) {
            return s.empty() ? std::string("empty; give one rank per trace (0,1,2 or 0-7)") : std::string();
          },
          "RANKS"));
  if (with_independent) {
    cmd->add_flag("--independent", j.independent,
                  "Optimise each trace alone even when they are the ranks of one job (docs/multi-rank.md)");
  }
}

std::vector<trace::Trace> link_if_one_job(std::vector<trace::Trace> traces, const JobOptions& j, bool one_required) {
  trace::LinkOptions lo;
  if (!j.ranks.empty()) lo.ranks = trace::parse_ranks(j.ranks, traces.size());
  if (!lo.ranks.empty() && lo.ranks.size() != traces.size()) {
    throw ArgumentError("ranks", j.ranks, fmt::format("one rank per trace expected ({} traces)", traces.size()));
  }
  if (traces.size() < 2 || j.independent) {
    if (!lo.ranks.empty() && traces.size() == 1) traces[0].meta.rank = lo.ranks.at(0);
    return traces;
  }
  if (const auto why = trace::not_one_job(traces, lo)) {
    if (one_required) throw trace::not_one_job_error(traces[0].meta.path, traces[1].meta.path, *why);
    // Said only where a job was plausible: several traces that record a rank, or --ranks.
    const auto ranked = std::count_if(traces.begin(), traces.end(),
                                      [](const trace::Trace& t) { return t.meta.rank >= 0 && t.meta.world_size > 1; });
    if (ranked >= 2 || !lo.ranks.empty()) {
      fmt::print(stderr, "emo: the traces are not the ranks of one job ({}): each is optimised alone\n", *why);
    }
    return traces;
  }
  std::vector<trace::Trace> out;
  out.push_back(trace::link_job(std::move(traces), lo));
  return out;
}

void warn_changed_on_load(std::string_view command, const ChangedOnLoad& changed) {
  std::size_t shown = 0, rest = 0;
  for (const auto& [path, what] : changed) {
    if (what.empty()) continue;
    if (shown == kChangedOnLoadTraces) {
      ++rest;
      continue;
    }
    ++shown;
    for (const std::string& w : what) fmt::print(stderr, "emo {}: warning: {}: {}\n", command, path, w);
  }
  if (rest > 0) {
    fmt::print(stderr, "emo {}: warning: and {} more {} changed on load (emo inspect lists each)\n", command, rest,
               rest == 1 ? "trace" : "traces");
  }
}

trace::Trace load_trace_or_job(std::string_view command, const std::vector<std::string>& paths, const JobOptions& j) {
  std::vector<trace::Trace> loaded;
  ChangedOnLoad changed;
  for (const std::string& path : paths) {
    loaded.push_back(trace::load_trace(path));
    changed.emplace_back(path, trace::changed_on_load(loaded.back()));
  }
  warn_changed_on_load(command, changed);
  return std::move(link_if_one_job(std::move(loaded), j, true).front());
}

std::string option_of(const std::string& field) {
  std::string opt = "--" + field;
  std::replace(opt.begin(), opt.end(), '_', '-');
  return opt;
}

}  // namespace emo::cli
