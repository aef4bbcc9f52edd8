#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "trace/load.h"
#include "trace/summary.h"

namespace emo::cli {
namespace {

struct InspectOptions {
  std::vector<std::string> traces;
  std::string json_out;
};

int run_inspect(const InspectOptions& o) {
  std::vector<trace::TraceSummary> summaries;
  for (const std::string& path : o.traces) summaries.push_back(trace::summarize(trace::load_trace(path)));

  const bool json_to_stdout = o.json_out == "-";
  if (!json_to_stdout) {
    for (const auto& s : summaries) fmt::print("{}", trace::to_text(s));
  }
  if (!o.json_out.empty()) {
    nlohmann::json doc;
    if (summaries.size() == 1) {
      doc = trace::to_json(summaries.front());
    } else {
      doc = nlohmann::json::array();
      for (const auto& s : summaries) doc.push_back(trace::to_json(s));
    }
    write_output(o.json_out, doc.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

void write_output(const std::string& dest, const std::string& text) {
  if (dest == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::ofstream out(dest, std::ios::binary);
  if (!out) throw InputError(dest, fmt::format("cannot open for writing: {}", std::strerror(errno)));
  out << text;
  if (!out) throw InputError(dest, "write failed");
}

namespace {

/// Throws InputError(dest, reason) when `dest` ("-" and "" are fine) cannot be written: its
/// directory is missing or not writable, or it is a directory.
void check_output_path(const std::string& dest) {
  if (dest.empty() || dest == "-") return;
  const std::filesystem::path p(dest);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw InputError(dest, fmt::format("cannot write: directory '{}' does not exist", dir.string()));
  }
  if (std::filesystem::is_directory(p, ec)) throw InputError(dest, "cannot write: it is a directory");
  if (::access(dir.c_str(), W_OK) != 0) {
    throw InputError(dest, fmt::format("cannot write: directory '{}' is not writable", dir.string()));
  }
}

}  // namespace

void check_outputs(const std::vector<std::pair<const char*, const std::string*>>& outputs, const char* stdout_option) {
  for (const auto& [option, dest] : outputs) check_output_path(*dest);
  std::vector<std::pair<const char*, std::string>> seen;  // option, canonical destination
  for (const auto& [option, dest] : outputs) {
    if (dest->empty()) continue;
    if (*dest == "-" && std::string_view(option) != stdout_option) {
      throw InputError(option, fmt::format("'-' (stdout) is for {} only; give a file", stdout_option));
    }
    std::error_code ec;
    std::string where =
        *dest == "-" ? "-" : std::filesystem::weakly_canonical(std::filesystem::absolute(*dest, ec), ec).string();
    if (ec) where = *dest;
    for (const auto& [other, at] : seen) {
      if (at == where) throw InputError(option, fmt::format("writes to '{}' as {} does: give each its own file", *dest, other));
    }
    seen.emplace_back(option, std::move(where));
  }
}

Action add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Summarise traces: format, GPU, streams, op counts, syncs, collectives, quirks");
  cmd->add_option("traces", opts->traces,
                  "Trace files: Kineto/PyTorch-profiler JSON (plain or .gz) or nsys SQLite export")
      ->required();
  cmd->add_option("--json", opts->json_out,
                  "Also write a JSON summary to FILE ('-' = stdout only, no text); one object per "
                  "trace, an array for several");
  return [cmd, opts]() -> int {
    if (!cmd->parsed()) return -1;
    return run_inspect(*opts);
  };
}

}  // namespace emo::cli
