// Options shared by several commands, registered and checked in one place.
#pragma once

#include <string>

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

}  // namespace emo::cli
