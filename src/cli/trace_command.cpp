// `emo trace [-o FILE] [--kineto FILE] -- CMD ARGS...`: runs a CUDA program with EMO's CUPTI
// tracer injected (CUDA_INJECTION64_PATH=libemo_tracer.so) and writes an emo.trace/1 file
// (docs/tracer.md), optionally also as Kineto JSON. The command's exit code is passed through.
// `emo export TRACE --kineto FILE`: any trace EMO reads, written as Kineto JSON.
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/child_process.h"
#include "cli/commands.h"
#include "core/error.h"
#include "trace/kineto/kineto_writer.h"
#include "trace/load.h"

namespace emo::cli {
namespace {

struct TraceOptions {
  std::string output = "emo-trace.jsonl";
  std::string kineto;
  std::vector<std::string> command;
};

int run_trace(const TraceOptions& o) {
  require_command(o.command, "trace");
  const std::string tracer = tracer_library_path();
  ::unlink(o.output.c_str());  // a stale file would pass for this run's trace
  std::vector<std::string> env = {"CUDA_INJECTION64_PATH=" + tracer, "EMO_TRACE_OUTPUT=" + o.output,
                                  "EMO_TRACER_MODE=trace"};
  if (const std::string cupti = cupti_library_path(); !cupti.empty() && std::getenv("NVTX_INJECTION64_PATH") == nullptr) {
    env.push_back("NVTX_INJECTION64_PATH=" + cupti);  // NVTX ranges reach CUPTI only through this
  }
  const ChildResult r = run_child(o.command, env);
  struct stat st {};
  if (::stat(o.output.c_str(), &st) != 0) {
    const std::string why = "no trace written: the command made no CUDA calls, or the CUDA driver did not load " + tracer;
    if (r.exit_code == 0) throw InputError(o.output, why);
    fmt::print(stderr, "emo trace: {}: {}\n", o.output, why);
    return r.exit_code;
  }
  const trace::Trace t = trace::load_trace(o.output);
  std::size_t gpu_ops = 0;
  for (std::size_t i = 0; i < t.ops.size(); ++i) gpu_ops += trace::is_gpu_op(t.ops.kind[i]) ? 1 : 0;
  fmt::print(stderr, "emo trace: {}: {} ops ({} on GPUs), {} sync records\n", o.output, t.ops.size(), gpu_ops,
             t.syncs.size());
  for (const auto& w : t.warnings) fmt::print(stderr, "emo trace: warning: {}\n", w);
  if (!o.kineto.empty()) write_output(o.kineto, trace::to_kineto_json(t));
  return r.exit_code;
}

}  // namespace

Action add_trace_command(CLI::App& app) {
  auto o = std::make_shared<TraceOptions>();
  CLI::App* cmd = app.add_subcommand("trace", "Trace a CUDA program with EMO's CUPTI tracer (emo.trace/1 output)");
  cmd->add_option("-o,--output", o->output, "Trace file to write (default emo-trace.jsonl)");
  cmd->add_option("--kineto", o->kineto, "Also write the trace as Kineto JSON to FILE");
  cmd->add_option("command", o->command, "The command to run, after --");
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    return run_trace(*o);
  };
}

Action add_export_command(CLI::App& app) {
  auto trace_path = std::make_shared<std::string>();
  auto kineto = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("export", "Write a trace (any format EMO reads) as Kineto JSON");
  cmd->add_option("trace", *trace_path, "Trace file")->required();
  cmd->add_option("--kineto", *kineto, "Kineto JSON file to write ('-' = stdout)")->required();
  return [cmd, trace_path, kineto]() -> int {
    if (!cmd->parsed()) return -1;
    write_output(*kineto, trace::to_kineto_json(trace::load_trace(*trace_path)));
    return 0;
  };
}

}  // namespace emo::cli
