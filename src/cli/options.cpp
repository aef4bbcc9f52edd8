#include "cli/options.h"

#include <algorithm>

#include "cli/commands.h"

#include "timing/analysis.h"

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
}

std::string option_of(const std::string& field) {
  std::string opt = "--" + field;
  std::replace(opt.begin(), opt.end(), '_', '-');
  return opt;
}

}  // namespace emo::cli
