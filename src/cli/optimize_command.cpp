// `emo optimize TRACE...|--example --max-slowdown FRAC [--gpu NAME] [--device sim|nvml] [--profile-clocks K]
// [--min-pack-ms X] [--window ...] [--seed N] [--policy FILE] [--json FILE|-] [--overlay FILE]
// [--report FILE.html] [--true-optimum] [--gpu-index I] [--no-tracer] [--run-log PREFIX] [--quiet] [-- CMD ARGS...]`:
// the main job, a trace in, a clock policy and its savings out. With --device nvml, CMD (the traced
// workload) runs on the real GPU for profiling and evaluation (driver/workload_backend.h); given
// a job's linked rank traces, CMD is its launcher and every GPU of the node is driven. A
// progress bar goes to stderr when it is a terminal (cli/progress_bar.h), never with --quiet.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/child_process.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/progress_bar.h"
#include "cli/reset_command.h"
#include "core/error.h"
#include "driver/front_end.h"
#include "driver/optimize.h"
#include "driver/true_optimum.h"
#include "driver/workload_backend.h"
#include "model/gpu_catalog.h"
#include "output/html_report.h"
#include "output/job_view_output.h"
#include "output/optimize_output.h"
#include "output/pack_output.h"
#include "runtime/nvml.h"
#include "runtime/nvml_device.h"
#include "timing/analysis.h"
#include "job/job_compare.h"
#include "job/job_solve.h"
#include "output/analysis_output.h"
#include "job/load_job.h"
#include "job/mpi_worker.h"

namespace emo::cli {
namespace {

struct OptimizeCliOptions {
  std::vector<std::string> traces;
  JobOptions job;
  std::string gpu;
  std::string max_slowdown;
  std::string device = "sim";
  int profile_clocks = 3;
  std::string min_pack_ms;
  WindowOptions win;
  std::uint64_t seed = 1;
  std::string policy_out, json_out, overlay_out, report_out;
  int gpu_index = -1;            ///< --device nvml: NVML index (-1 = the trace's GPU index).
  bool no_tracer = false;
  std::string run_log;
  bool single_target = false;   ///< Plan at the target alone, not on the target ladder.
  bool true_optimum = false;     ///< Also the exact optimum with true costs (simulated device only).
  bool quiet = false;            ///< No progress bar.
  bool compare_independent = false;  ///< A linked job: also each rank optimised alone, run together.
  bool mpi = false;              ///< Load the traces across MPI processes (job/load_job.h).
  bool example = false;          ///< --example: the bundled example trace (apply_example).
  int load_threads = 0;          ///< Loading threads per process (0 = one per core).
  std::string solve = "auto";    ///< A job: joint, decomposed, or auto (job/job_solve.h).
  int solve_threads = 0;         ///< Ranks solved at once by the decomposed solve (0 = one per core).
  std::vector<std::string> command;  ///< After `--`.
};

/// The workload after `--` (main() records it and parses `emo optimize` only up to `--`).
void split_command(OptimizeCliOptions& o) {
  o.command = command_after_separator();
  if (!o.command.empty() && o.traces.empty() && !o.example)
    throw InputError("emo optimize", "no trace given before -- (see emo --help)");
}

/// The example trace of --example, relative to a data directory (data/traces/SOURCE.md).
constexpr const char* kExampleTrace = "traces/kineto_resnet50_2021.json.gz";
/// The GPU --example optimises for unless --gpu is given (as scripts/main-job.sh).
constexpr const char* kExampleGpu = "A100-SXM4-80GB";

/// Path of the bundled example trace: beside the executable's folder (the wheel's emo/bin/emo →
/// emo/data/traces/; build/emo → the repository's data/traces/), else in the source tree emo was
/// built from. Throws InputError naming both places when neither has it.
std::string example_trace_path() {
  const std::filesystem::path beside = (executable_dir() / ".." / "data" / kExampleTrace).lexically_normal();
  const std::filesystem::path source = std::filesystem::path(EMO_SOURCE_DATA_DIR) / kExampleTrace;
  std::error_code ec;
  for (const std::filesystem::path& p : {beside, source}) {
    if (std::filesystem::is_regular_file(p, ec)) return p.string();
  }
  throw InputError(beside.string(), fmt::format("the example trace of --example is missing (nor is it at {}); "
                                                "reinstall emo", source.string()));
}

/// --example: optimises the bundled example trace — a ResNet-50 training trace recorded on a V100
/// (data/traces/SOURCE.md) — for an A100 at most 5 % slower unless --gpu / --max-slowdown say
/// otherwise: the main job (scripts/main-job.sh) from an installed wheel alone. Without it, a
/// trace and --max-slowdown are required. Throws InputError for a missing one, or a trace given
/// with --example.
void apply_example(OptimizeCliOptions& o) {
  if (!o.example) {
    if (o.traces.empty()) {
      throw InputError("emo optimize", "no trace given: give TRACE..., or --example for the bundled example trace "
                                       "(see emo --help)");
    }
    if (o.max_slowdown.empty()) {
      throw InputError("emo optimize", "--max-slowdown is required: a fraction such as 0.05, or a percentage such as 5%");
    }
    return;
  }
  if (!o.traces.empty()) {
    throw InputError("--example", fmt::format("takes no trace ('{}' given): drop the trace or --example",
                                              o.traces.front()));
  }
  o.traces.push_back(example_trace_path());
  if (o.gpu.empty()) o.gpu = kExampleGpu;
  if (o.max_slowdown.empty()) o.max_slowdown = "0.05";
}

/// The trace's GPU: the device of its GPU ops. Throws InputError when they run on several.
std::int32_t trace_gpu(const trace::Trace& t) {
  std::vector<std::int32_t> devices;
  for (std::size_t i = 0; i < t.ops.device.size(); ++i) {
    if (!trace::is_gpu_op(t.ops.kind[i])) continue;
    if (std::find(devices.begin(), devices.end(), t.ops.device[i]) == devices.end()) devices.push_back(t.ops.device[i]);
  }
  if (devices.empty()) throw InputError(t.meta.path, "no GPU ops: nothing to optimise");
  if (devices.size() > 1) {
    throw InputError(t.meta.path, fmt::format("GPU ops on {} GPUs; --device nvml profiles one GPU (optimise one rank's "
                                              "trace, or use --device sim)",
                                              devices.size()));
  }
  return devices.front();
}

/// The catalog entry of the NVML GPU `dev`, checked against --gpu when given.
const model::GpuSpec& nvml_gpu_spec(const runtime::NvmlDevice& dev, const std::string& option) {
  const model::GpuSpec* want = option.empty() ? nullptr : &model::GpuCatalog::builtin().at(option);
  if (want != nullptr && dev.spec() != nullptr && dev.spec() != want) {
    throw InputError("--gpu " + option, fmt::format("GPU {} is {}, not {}", dev.index(), dev.name(), want->id));
  }
  if (want != nullptr) return *want;
  if (dev.spec() == nullptr) {
    throw InputError(fmt::format("GPU {}", dev.index()),
                     fmt::format("{} is not in the GPU catalog; give --gpu NAME", dev.name()));
  }
  return *dev.spec();
}

/// FILE for trace i of n: FILE itself for one trace, else FILE with ".i" before its extension.
std::string nth(const std::string& file, std::size_t i, std::size_t n) {
  if (file.empty() || file == "-" || n == 1) return file;
  const auto slash = file.find_last_of('/');
  const auto dot = file.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return fmt::format("{}.{}", file, i);
  return fmt::format("{}.{}{}", file.substr(0, dot), i, file.substr(dot));
}

/// The catalog entry used for trace `t` (--gpu, else the trace's own GPU) and a note for the
/// output: which entry and why, and what retargeting means when it is not the trace's GPU.
struct GpuChoice {
  const model::GpuSpec* spec = nullptr;
  std::string note;
};

GpuChoice gpu_for(const trace::Trace& t, const std::string& option) {
  const auto& catalog = model::GpuCatalog::builtin();
  const std::string recorded = t.meta.gpus.empty() ? "" : t.meta.gpus.front().name;
  const model::GpuCatalog::Match m = driver::resolve_trace_gpu(t, option, "--gpu NAME");
  GpuChoice c{m.spec, fmt::format("  GPU model: catalog entry {} ({}: {})\n", m.spec->id,
                                  option.empty() ? "the trace's own GPU" : "--gpu " + option, m.why)};
  const model::GpuSpec* own = recorded.empty() ? nullptr : catalog.resolve(recorded).spec;
  if (!recorded.empty() && own != m.spec) {
    c.note += fmt::format("  retargeting: the trace was recorded on {}; its op durations are taken as the {}'s "
                          "times at its max clock ({:.0f} MHz) — no speed difference between the two GPUs is "
                          "modelled\n",
                          recorded, m.spec->id, m.spec->max_sm_clock_mhz());
  }
  return c;
}

/// How `o` loads traces: its --load-threads; reduced (trace/reduce.h) unless an output draws
/// every op (--overlay, --report).
job::LoadOptions load_options(const OptimizeCliOptions& o) {
  // --solve decomposed draws packs, not ops: its traces are reduced whatever it writes.
  return {o.load_threads, o.solve == "decomposed" || (o.overlay_out.empty() && o.report_out.empty())};
}

/// Whether the decomposed solve draws the job view (`--report`, `--overlay`; job/job_view.h).
bool wants_view(const OptimizeCliOptions& o) { return !o.overlay_out.empty() || !o.report_out.empty(); }

/// What load_all gives: the traces (a plain run: all of them; with --mpi every process keeps its
/// own in the share instead) and, on process 0 or a plain run, every trace's digest, in order.
struct Loaded {
  std::vector<trace::Trace> traces;
  std::vector<trace::RankDigest> digests;
};

/// What loading changed in each trace of `digests`, by path (warn_changed_on_load).
ChangedOnLoad changed_on_load(const std::vector<trace::RankDigest>& digests) {
  ChangedOnLoad out;
  for (const trace::RankDigest& d : digests) out.emplace_back(d.path, d.changed_on_load);
  return out;
}

/// The traces of `o`, in order: job::load_traces, or load_own_traces_mpi with --mpi (nullopt
/// on a process other than 0 when some file failed: process 0 throws its error). Reduced as
/// load_options() says.
std::optional<Loaded> load_all(const OptimizeCliOptions& o, ProgressBar& bar, job::MpiShare& share) {
  bar.update("loading", 0, o.traces.size());
  const job::LoadOptions load = load_options(o);
  try {
    Loaded out;
    if (o.mpi) {
      out.digests = job::load_own_traces_mpi(o.traces, load, share);
    } else {
      out.traces = job::load_traces(o.traces, load);
      for (const trace::Trace& t : out.traces) out.digests.push_back(trace::digest(t));
    }
    if (!share.active() || share.process == 0) warn_changed_on_load("optimize", changed_on_load(out.digests));
    return out;
  } catch (const job::MpiPeerFailed&) {
    return std::nullopt;
  }
}

/// --mpi, a process other than 0: solves the ranks process 0 sends it until it is done
/// (job::serve_decomposed_mpi). Returns the exit status: 0, or 2 when another process failed
/// (process 0 prints the error).
int serve_ranks(const OptimizeCliOptions& o, driver::OptimizeOptions opts, job::MpiShare& share) {
  opts.progress = nullptr;  // process 0 draws the progress
  job::DecomposedOptions how;
  how.threads = o.solve_threads;
  how.lanes = wants_view(o);
  try {
    job::serve_decomposed_mpi(share, opts, how);
  } catch (const job::MpiPeerFailed&) {
    return 2;
  }
  return 0;
}

/// The option combinations run_optimize refuses (one-line errors).
void check_options(const OptimizeCliOptions& o, bool nvml) {
  if (nvml && o.true_optimum)
    throw ArgumentError("true_optimum", "--device nvml", "the true optimum needs the simulated device's ground truth");
  if (nvml && o.command.empty()) {
    throw InputError("--device nvml", "needs the workload to run: emo optimize TRACE ... --device nvml -- CMD ARGS...");
  }
  if (!nvml && !o.command.empty()) {
    throw InputError(fmt::format("-- {}", o.command.front()),
                     "a command is only run with --device nvml (the simulated device does not run the workload)");
  }
  if (!nvml && (o.gpu_index >= 0 || o.no_tracer || !o.run_log.empty())) {
    const char* opt = o.gpu_index >= 0 ? "--gpu-index" : (o.no_tracer ? "--no-tracer" : "--run-log");
    throw InputError(opt, "only applies with --device nvml (the simulated device runs no workload)");
  }
  check_outputs({{"--policy", &o.policy_out}, {"--json", &o.json_out}, {"--report", &o.report_out},
                 {"--overlay", &o.overlay_out}});
  if (o.compare_independent && (o.traces.size() < 2 || nvml)) {
    throw InputError("--compare-independent", "needs the traces of a job's ranks, on the simulated device");
  }
}

/// --device nvml: one trace, or the traces of one job's ranks linked into one (`traces` as linked).
void check_nvml_traces(const OptimizeCliOptions& o, const std::vector<trace::Trace>& traces) {
  if (traces.size() != 1) {
    throw InputError("--device nvml", fmt::format("takes one trace, the workload's, or the traces of one job's ranks "
                                                  "({} given, not linked into one job)", o.traces.size()));
  }
  if (!traces.front().meta.job.ranks.empty() && o.gpu_index >= 0) {
    throw InputError("--gpu-index", "a job's ranks are routed to their GPUs by their processes' hello lines, else "
                                    "rank i to NVML GPU i (docs/optimize.md); --gpu-index is for one trace");
  }
}

/// --device nvml on the linked job `t` (docs/optimize.md, "A job on several GPUs"): every GPU
/// NVML sees is driven, as `emo run` drives a job's policy; each rank's section goes to the GPU
/// its process names in its hello line, else section i to NVML GPU i. Throws InputError when
/// NVML sees fewer GPUs than the job has ranks, or GPUs of several models.
driver::OptimizeResult optimize_job_nvml(const trace::Trace& t, const graph::Window& window,
                                         const OptimizeCliOptions& o, const driver::OptimizeOptions& opts,
                                         const std::shared_ptr<runtime::Nvml>& nvml, driver::WorkloadOptions workload) {
  const unsigned n = nvml->device_count();
  const std::size_t ranks = t.meta.job.ranks.size();
  if (n < ranks) {
    throw InputError("--device nvml", fmt::format("the job has {} ranks but NVML sees {} GPU(s): a job is profiled "
                                                  "on one node, one GPU per rank", ranks, n));
  }
  std::vector<std::unique_ptr<runtime::NvmlDevice>> owned;
  driver::JobGpus gpus;
  for (unsigned i = 0; i < n; ++i) {
    owned.push_back(std::make_unique<runtime::NvmlDevice>(nvml, i));
    gpus.devices[static_cast<std::int32_t>(i)] = owned.back().get();
    gpus.ids.push_back({static_cast<std::int32_t>(i), nvml->uuid(i), ""});
  }
  const model::GpuSpec& gpu = nvml_gpu_spec(*owned.front(), o.gpu);
  for (const auto& dev : owned) {
    if (&nvml_gpu_spec(*dev, o.gpu) != &gpu) {
      throw InputError(fmt::format("GPU {}", dev->index()),
                       fmt::format("{}, but GPU 0 is {}: --device nvml profiles a job on GPUs of one model",
                                   dev->name(), owned.front()->name()));
    }
  }
  workload.label = fmt::format("{} GPUs (NVML 0-{}, {}) for the job's {} ranks", n, n - 1, owned.front()->name(), ranks);
  driver::WorkloadBackend backend(std::move(gpus), gpu, workload);
  return driver::optimize(t, window, gpu, opts, backend);
}

/// `--compare-independent`: each rank of the linked job `t` optimised alone, run together.
job::JobComparison compare_independent(const trace::Trace& t, const driver::OptimizeResult& r,
                                          const OptimizeCliOptions& o, const driver::OptimizeOptions& opts,
                                          ProgressBar& bar) {
  if (t.meta.job.ranks.empty()) throw InputError("--compare-independent", "the traces are not one job's ranks");
  bar.update("per-rank independent plans", 0, 1);
  // The ranks' own traces, loaded as the job's were (reduced alike: JobInfo::source_row refers to them).
  std::vector<std::string> paths;
  for (const trace::JobRank& jr : t.meta.job.ranks) paths.push_back(jr.path);
  const std::vector<trace::Trace> alone = job::load_traces(paths, load_options(o));
  job::JobComparison cmp = job::compare_with_independent(t, r, alone, *gpu_for(t, o.gpu).spec, opts);
  bar.update("per-rank independent plans", 1, 1);
  return cmp;
}

/// Whether a job of `ranks` ranks is solved decomposed (--solve; auto: above kJointSolveMaxRanks
/// ranks). Throws InputError for what the decomposed solve does not do.
bool wants_decomposed(const OptimizeCliOptions& o, std::size_t ranks) {
  if (ranks < 2) {
    if (o.solve == "decomposed") {
      throw InputError("--solve decomposed", "needs the traces of one job's ranks, linked (docs/multi-rank.md)");
    }
    return false;
  }
  const bool d = o.solve == "decomposed" || (o.solve == "auto" && ranks > job::kJointSolveMaxRanks);
  if (d && (o.true_optimum || o.compare_independent)) {
    throw InputError(fmt::format("--solve {} ({} ranks)", o.solve, ranks),
                     "the decomposed solve has no --true-optimum or --compare-independent; give --solve joint for them");
  }
  if (d && (!o.win.window.empty() || !o.win.annotation.empty())) {
    throw InputError(fmt::format("--solve {} ({} ranks)", o.solve, ranks),
                     "the decomposed solve optimises the whole traces; a step or window needs --solve joint");
  }
  return d;
}

/// The job the traces of `digests` make, when it is solved decomposed (linked from the digests
/// only: job::job_ports); nullopt otherwise (the traces are then linked as a whole, or each
/// optimised alone, by link_if_one_job). Throws what trace::link_ranks and wants_decomposed throw.
std::optional<job::JobPorts> decomposed_job(const OptimizeCliOptions& o, bool nvml,
                                               const std::vector<trace::RankDigest>& digests) {
  if (nvml || digests.size() < 2 || o.job.independent) return std::nullopt;
  trace::LinkOptions lo;
  if (!o.job.ranks.empty()) lo.ranks = trace::parse_ranks(o.job.ranks, digests.size());
  if ((!lo.ranks.empty() && lo.ranks.size() != digests.size()) || trace::not_one_job(digests, lo)) return std::nullopt;
  if (!wants_decomposed(o, digests.size())) return std::nullopt;
  job::JobPorts jp = job::job_ports(digests, trace::link_ranks(digests, lo));
  // One GPU model for the job, as resolve_trace_gpu asks of a linked trace.
  if (o.gpu.empty()) (void)driver::one_gpu_model(jp.path, trace::job_gpus(digests), "--gpu NAME");
  return jp;
}

/// The decomposed solve of the job `jp` (job/job_solve.h): prints its text, adds its JSON to
/// `docs`, writes its policy. `traces` are the ranks' (a plain run); with --mpi the ranks are
/// reduced and solved by the processes that loaded them (`share`, process 0's).
void run_decomposed(const job::JobPorts& jp, std::vector<trace::Trace> traces, const OptimizeCliOptions& o,
                    const driver::OptimizeOptions& opts, ProgressBar& bar, nlohmann::json& docs, job::MpiShare& share) {
  job::DecomposedOptions how;
  how.threads = o.solve_threads;
  how.progress = &bar;
  how.lanes = wants_view(o);
  // The job's GPU: rank 0's (the first trace's, which process 0 holds).
  const GpuChoice gpu = gpu_for(o.mpi ? share.traces.at(0) : traces.at(0), o.gpu);
  const job::DecomposedSolve d = o.mpi ? job::solve_decomposed_mpi(jp, share, *gpu.spec, opts, how)
                                          : job::solve_decomposed(jp, std::move(traces), *gpu.spec, opts, how);
  bar.finish();
  if (o.json_out != "-") {
    fmt::print("{}: whole trace, GPU {} — decomposed solve, simulated device\n{}{}{}", jp.path, gpu.spec->id,
               output::job_text(jp.link.info), gpu.note, output::to_text(d));
  }
  docs.push_back(output::to_json(d));
  docs.back()["trace"] = jp.path;
  docs.back()["gpu"] = gpu.spec->id;
  docs.back()["job"] = output::job_json(jp.link.info);
  if (!o.policy_out.empty()) write_output(o.policy_out, policy::to_json(d.policy));
  if (!o.report_out.empty()) write_output(o.report_out, output::render_html_report(output::to_report(d, jp, gpu.spec->id)));
  if (!o.overlay_out.empty()) output::write_decomposed_overlay(d, jp, o.overlay_out);
}

/// Writes --json: one document, or {"traces": [...]} for several.
void write_json(const OptimizeCliOptions& o, const nlohmann::json& docs) {
  if (o.json_out.empty()) return;
  const nlohmann::json out = docs.size() == 1 ? docs[0] : nlohmann::json{{"traces", docs}, {"simulated", true}};
  write_output(o.json_out, out.dump(2) + "\n");
}

/// --device nvml: opens NVML into `lib` (resetting what a dead emo run left locked, as emo run
/// does) and returns how the workload runs: the command, the tracer unless --no-tracer, the run
/// logs, and the guardian. Throws runtime::NvmlError (no driver, no permission) and InputError
/// (no tracer library).
driver::WorkloadOptions nvml_workload(const OptimizeCliOptions& o, std::shared_ptr<runtime::Nvml>& lib) {
  lib = runtime::Nvml::open();
  handle_stale_locks(*lib, "emo optimize", true);
  driver::WorkloadOptions workload;
  workload.command = o.command;
  // As emo run: a guardian resets the clocks even after kill -9 of emo optimize mid-run.
  workload.guardian_command = {std::filesystem::read_symlink("/proc/self/exe").string(), "__guardian"};
  if (!o.no_tracer) {
    workload.tracer_library = tracer_library_path();
    workload.cupti_library = cupti_library_path();
  }
  workload.log_prefix = o.run_log;
  return workload;
}

int run_optimize(OptimizeCliOptions o) {
  split_command(o);
  apply_example(o);
  const bool nvml = o.device == "nvml";
  check_options(o, nvml);
  driver::OptimizeOptions opts;
  opts.max_slowdown = driver::parse_max_slowdown(o.max_slowdown);
  opts.profile_clocks = o.profile_clocks;
  opts.seed = o.seed;
  opts.target_ladder = !o.single_target;
  opts.min_pack_ns = driver::parse_min_pack_ms(o.min_pack_ms);
  std::shared_ptr<runtime::Nvml> nvml_lib;
  driver::WorkloadOptions workload;
  if (nvml) workload = nvml_workload(o, nvml_lib);
  nlohmann::json docs = nlohmann::json::array();
  ProgressBar bar(STDERR_FILENO, o.quiet);
  opts.progress = &bar;
  bar.set_prefix("optimize");
  job::MpiShare share;  // --mpi: this process's traces, for the decomposed solve
  std::optional<Loaded> loaded = load_all(o, bar, share);
  if (!loaded) return 2;                    // --mpi: another process failed; process 0 says why
  if (share.active() && share.process != 0) return serve_ranks(o, opts, share);  // process 0 writes
  if (const std::optional<job::JobPorts> jp = decomposed_job(o, nvml, loaded->digests)) {
    run_decomposed(*jp, std::move(loaded->traces), o, opts, bar, docs, share);
    write_json(o, docs);
    return 0;
  }
  loaded->digests.clear();
  std::vector<trace::Trace> all = share.active() ? job::gather_traces_mpi(share) : std::move(loaded->traces);
  share.release(true);  // --mpi: the others are done (no-op otherwise)
  const std::vector<trace::Trace> traces = link_if_one_job(std::move(all), o.job, false);
  const std::size_t n = traces.size();
  if (nvml) check_nvml_traces(o, traces);
  for (std::size_t i = 0; i < n; ++i) {
    bar.set_prefix(n == 1 ? "optimize" : fmt::format("optimize [{}/{}]", i + 1, n));
    const trace::Trace& t = traces[i];
    if (!nvml) (void)wants_decomposed(o, t.meta.job.ranks.size());  // --solve decomposed on traces not linked: says so
    const graph::Window window = o.win.find(t);
    driver::OptimizeResult r;
    std::string note;  // which catalog entry, and retargeting
    std::optional<driver::TrueOptimum> true_opt;  // --true-optimum
    if (nvml && !t.meta.job.ranks.empty()) {
      r = optimize_job_nvml(t, window, o, opts, nvml_lib, workload);
    } else if (nvml) {
      const std::int32_t device = trace_gpu(t);
      runtime::NvmlDevice dev(nvml_lib, static_cast<unsigned>(o.gpu_index >= 0 ? o.gpu_index : device));
      const model::GpuSpec& gpu = nvml_gpu_spec(dev, o.gpu);
      workload.trace_device = device;
      workload.label = fmt::format("GPU {} ({})", dev.index(), dev.name());
      driver::WorkloadBackend backend(dev, gpu, workload);
      r = driver::optimize(t, window, gpu, opts, backend);
    } else {
      const GpuChoice gpu = gpu_for(t, o.gpu);
      r = driver::optimize(t, window, *gpu.spec, opts);
      if (o.true_optimum) {
        bar.update("true optimum (CBC)", 0, 1);
        true_opt = driver::true_optimum(t, r, *gpu.spec, opts);
        bar.update("true optimum (CBC)", 1, 1);
      }
      note = gpu.note;
    }
    std::optional<job::JobComparison> cmp;
    if (o.compare_independent) cmp = compare_independent(t, r, o, opts, bar);
    bar.finish();  // before the text on the same terminal
    if (o.json_out != "-") {
      fmt::print("{}{}{}{}{}", output::to_text(r),
                 true_opt ? output::to_text(*true_opt, r.evaluation.statics.baseline) : "",
                 output::job_text(t, r.packs.analysis), note, cmp ? output::to_text(*cmp) : "");
    }
    docs.push_back(output::to_json(r));
    if (true_opt) docs.back()["true_optimum"] = output::to_json(*true_opt, r.evaluation.statics.baseline);
    if (!t.meta.job.ranks.empty()) docs.back()["job"] = output::job_json(t, r.packs.analysis);
    if (cmp) docs.back()["independent"] = output::to_json(*cmp);
    if (!o.policy_out.empty()) write_output(nth(o.policy_out, i, n), policy::to_json(r.policy()));
    if (!o.report_out.empty()) write_output(nth(o.report_out, i, n), output::render_html_report(output::to_report(t, r)));
    if (!o.overlay_out.empty()) output::write_optimize_overlay(t, r, nth(o.overlay_out, i, n));
  }
  write_json(o, docs);
  return 0;
}

/// CLI11 check of an unsigned 64-bit option (--seed): decimal digits that fit 64 bits. CLI11
/// saturates a value past 2^64 - 1 (also written "+N", " N", "0xN"), so two such seeds would be
/// one; refused with a one-line error instead.
CLI::Validator within_64_bits() {
  return CLI::Validator(
      [](const std::string& s) {
        // Digits only: CLI11 also reads "+N", " N" and "0xN", and saturates those past 2^64 - 1 too.
        std::uint64_t v = 0;
        const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc::result_out_of_range) return fmt::format("{} is beyond 2^64 - 1", s);
        if (ec != std::errc() || p != s.data() + s.size()) return fmt::format("{} is not a number; give digits only", s);
        return std::string();
      },
      "UINT64");
}

}  // namespace

Action add_optimize_command(CLI::App& app) {
  auto o = std::make_shared<OptimizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "optimize", "Trace in, clock policy out: packs, profiles them at a few clocks, fits their models, minimises "
                  "energy within the latency target and evaluates the policy (on the simulated device by default)");
  cmd->add_option("trace", o->traces,
                  "Trace file(s): Kineto JSON (plain or .gz) or nsys SQLite. The ranks of one job are linked through "
                  "their collectives and optimised jointly (docs/multi-rank.md); other traces each alone. "
                  "Required unless --example");
  add_job_options(cmd, o->job, true);
  add_via_service_flag(cmd);
  cmd->add_option("--max-slowdown", o->max_slowdown,
                  "Latency target over every GPU at its max clock: a fraction (0.05) or a percentage (5%). "
                  "Required unless --example (then 0.05)");
  cmd->add_flag("--example", o->example,
                "Optimise the example trace bundled with emo (data/traces/kineto_resnet50_2021.json.gz: ResNet-50 "
                "training, recorded on a V100) for an A100-SXM4-80GB (unless --gpu), at most 5 % slower (unless "
                "--max-slowdown): the main job with nothing but emo installed");
  cmd->add_option("--gpu", o->gpu, "GPU model (catalog id or NVML name; default: the trace's own GPU)")
      ->check(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("an empty name; give a catalog id such as A100-SXM4-80GB") : std::string(); },
          "NAME"));
  cmd->add_option("--device", o->device, "Where packs are profiled and the policy evaluated: sim (default) or nvml")
      ->check(CLI::IsMember({"sim", "nvml"}));
  cmd->add_option("--profile-clocks", o->profile_clocks, "Clocks profiled per pack (default 3)")
      ->check(CLI::Range(2, 10));
  cmd->add_option("--min-pack-ms", o->min_pack_ms, "Shortest pack in ms (default: the GPU's clock-switch latency)");
  add_window_options(cmd, o->win, "Optimise");
  cmd->add_option("--seed", o->seed, "Seed of the simulated device (per-op variation and noise)")
      ->check(CLI::NonNegativeNumber)
      ->check(within_64_bits());
  cmd->add_option("--policy", o->policy_out, "Write the clock policy (emo.policy/1, docs/policy.md)");
  cmd->add_option("--json", o->json_out, "Write the JSON result to FILE ('-' = stdout only, no text)");
  cmd->add_option("--overlay", o->overlay_out,
                  "Write a Perfetto JSON trace with the critical path and the packs (--solve decomposed: the packs and "
                  "the critical path by rank, no ops)");
  cmd->add_option("--report", o->report_out,
                  "Write a self-contained HTML report (timeline, frontier; a job: one lane per rank; --solve "
                  "decomposed: the lanes, the critical path across ranks and per-rank savings, no op timeline)");
  cmd->add_option("--gpu-index", o->gpu_index, "--device nvml: NVML index of the GPU (default: the trace's GPU index)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-tracer", o->no_tracer,
                "--device nvml: do not inject the CUPTI tracer; the command reports pack starts itself on "
                "$EMO_PROGRESS_FD (as emo run --no-tracer)");
  cmd->add_option("--run-log", o->run_log, "--device nvml: write each workload run's runtime log to PREFIX.N.jsonl");
  cmd->add_flag("--single-target", o->single_target,
                "Plan at the target alone, not at every target-ladder point below it (faster; a looser target may "
                "then save less: docs/optimize.md \"A looser target never saves less\")");
  cmd->add_flag("--true-optimum", o->true_optimum,
                "Simulated device: also solve the same packs exactly with the device's true costs (CBC, up to 200 "
                "packs), run that plan and report EMO's gap to it (slower; docs/optimize.md)");
  cmd->add_flag("--mpi", o->mpi,
                "Load the traces across the processes of an MPI job (mpirun -np K emo optimize --mpi ...): "
                "process 0 gathers them, optimises and writes; with --solve decomposed each process also "
                "solves the ranks it loaded; docs/multi-rank.md");
  cmd->add_option("--load-threads", o->load_threads,
                  "Threads loading the traces, per process (default 0: one per core, at most one per trace)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--compare-independent", o->compare_independent,
                "A job of several ranks: also optimise each rank alone and run those plans together on the joint "
                "graph, next to the joint plan (simulated device; docs/multi-rank.md)");
  cmd->add_option("--solve", o->solve,
                  "A job of several ranks: joint (one problem over every rank's packs), decomposed (each rank "
                  "against its collectives' pinned times; scales to many ranks) or auto (default: joint up to 8 "
                  "ranks); docs/multi-rank.md")
      ->check(CLI::IsMember({"auto", "joint", "decomposed"}));
  cmd->add_option("--solve-threads", o->solve_threads,
                  "--solve decomposed: ranks solved at once (default 0: one per core)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet,-q", o->quiet, "No progress bar (drawn on stderr only when stderr is a terminal)");
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    return run_optimize(*o);
  };
}

}  // namespace emo::cli
