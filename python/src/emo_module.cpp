// emo._emo: the library's stages as Python calls (pybind11). The pure-Python layer
// (python/emo/) wraps these in classes; this file only converts arguments, releases the GIL around
// the long calls and hands back the C++ writers' JSON text, so that every figure Python shows is
// the figure the CLI's --json writes.
//
// Errors: emo::InputError (a bad file) becomes emo.InputError; emo::ArgumentError and
// std::invalid_argument (a bad argument) become ValueError, with EMO's one-line messages.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/error.h"
#include "core/version.h"
#include "driver/front_end.h"
#include "driver/optimize.h"
#include "job/job_solve.h"
#include "job/load_job.h"
#include "model/gpu_catalog.h"
#include "model/pack_options.h"
#include "output/analysis_output.h"
#include "output/html_report.h"
#include "output/job_view_output.h"
#include "output/optimize_output.h"
#include "output/pack_output.h"
#include "pack/pack_run.h"
#include "policy/policy.h"
#include "timing/analysis.h"
#include "trace/job.h"
#include "trace/load.h"
#include "trace/summary.h"

namespace py = pybind11;

namespace emo::python {
namespace {

/// A loaded trace, shared by the results computed from it (they refer to its strings).
struct TraceHandle {
  std::shared_ptr<const trace::Trace> trace;
  /// `emo inspect --json` of the trace, made once on first use (threads may ask at once).
  struct Summary {
    std::once_flag once;
    std::string text;
  };
  std::shared_ptr<Summary> summary;
};

/// A writer's JSON object as text, and its top-level scalar members alone (a small object that
/// Python reads at once; the whole text is parsed only when a table is asked for).
using JsonTexts = std::pair<std::string, std::string>;

JsonTexts texts_of(const nlohmann::json& j) {
  nlohmann::json head = nlohmann::json::object();
  for (const auto& [key, value] : j.items()) {
    if (!value.is_structured()) head[key] = value;
  }
  return {j.dump(), head.dump()};
}

/// One optimize() run: its JSON, its policy and its HTML report (drawn on demand from what the
/// report function holds: the trace and result, or a decomposed solve and its job).
struct OptimizeHandle {
  JsonTexts json;           ///< `emo optimize --json` of the trace or job (texts_of).
  std::string policy_json;  ///< emo.policy/1 text (`emo optimize --policy`).
  std::function<std::string()> report;  ///< `emo optimize --report`'s HTML.
  /// What loading changed in each trace it loaded, by path (optimize_decomposed; empty otherwise).
  std::vector<std::pair<std::string, std::vector<std::string>>> changed_on_load;
};

/// The raw bytes of a column, for numpy.frombuffer / array.array on the Python side.
template <typename T>
py::bytes column_bytes(const std::vector<T>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

graph::Window window_of(const trace::Trace& t, const std::optional<std::string>& window,
                        const std::optional<std::string>& annotation, int instance) {
  if (instance < 0) throw ArgumentError("instance", std::to_string(instance), "must be >= 0");
  if (window && annotation) {
    throw ArgumentError("window", *window, "give window or annotation (with instance), not both");
  }
  return timing::find_window(t, window.value_or(""), annotation.value_or(""), instance);
}

/// min_pack_ms as `emo --min-pack-ms` reads it (driver::parse_min_pack_ms): the number as text
/// (fmt's shortest form, which reads back as the same double).
std::optional<TimeNs> min_pack_ns_of(std::optional<double> ms) {
  if (!ms) return std::nullopt;
  return driver::parse_min_pack_ms(fmt::format("{}", *ms));
}

/// The GPU to optimise for: `name` from the catalog, or the trace's own GPU, as `emo optimize`
/// (driver::resolve_trace_gpu, with the same-family fallback).
const model::GpuSpec& gpu_of(const trace::Trace& t, const std::optional<std::string>& name) {
  return *driver::resolve_trace_gpu(t, name.value_or(""), "gpu=NAME").spec;
}

/// resolve_gpu(name) for Python: {"id", "why", "assumed"} of the catalog entry `name` means.
py::dict resolve_gpu(const std::string& name) {
  const model::GpuCatalog::Match m = driver::resolve_gpu(name);
  py::dict d;
  d["id"] = m.spec->id;
  d["why"] = m.why;
  d["assumed"] = m.assumed;
  return d;
}

std::vector<timing::WhatIf> what_ifs_of(const std::vector<std::string>& specs) {
  std::vector<timing::WhatIf> out;
  for (const std::string& spec : specs) {
    try {
      out.push_back(timing::parse_what_if(spec));
    } catch (const InputError& e) {  // the parser names the CLI option; a bad argument here
      throw ArgumentError("what_if", spec, e.problem());
    }
  }
  return out;
}

TraceHandle load(const std::string& path) {
  py::gil_scoped_release release;
  return TraceHandle{std::make_shared<const trace::Trace>(trace::load_trace(path)), std::make_shared<TraceHandle::Summary>()};
}

const std::string& summary_json(const TraceHandle& h) {
  py::gil_scoped_release release;
  std::call_once(h.summary->once, [&h] { h.summary->text = trace::to_json(trace::summarize(*h.trace)).dump(); });
  return h.summary->text;
}

JsonTexts analyze(const TraceHandle& h, const std::optional<std::string>& window,
                    const std::optional<std::string>& annotation, int instance,
                    const std::vector<std::string>& what_if) {
  py::gil_scoped_release release;
  const std::vector<timing::WhatIf> specs = what_ifs_of(what_if);
  const graph::Window w = window_of(*h.trace, window, annotation, instance);
  const timing::Analysis a = timing::analyze(*h.trace, w, specs);
  return texts_of(output::to_json(*h.trace, a));
}

JsonTexts pack(const TraceHandle& h, std::optional<double> min_pack_ms, const std::optional<std::string>& window,
                 const std::optional<std::string>& annotation, int instance) {
  py::gil_scoped_release release;
  const std::optional<TimeNs> min_pack = min_pack_ns_of(min_pack_ms);
  const graph::Window w = window_of(*h.trace, window, annotation, instance);
  const pack::PackRun r = pack::run_pack(*h.trace, w, model::pack_options_for(*h.trace, min_pack, "min_pack_ms"));
  return texts_of(output::to_json(*h.trace, r));
}

OptimizeHandle optimize(const TraceHandle& h, double max_slowdown, const std::optional<std::string>& gpu,
                        std::uint64_t seed, int profile_clocks, std::optional<double> min_pack_ms,
                        int frontier_points, const std::optional<std::string>& window,
                        const std::optional<std::string>& annotation, int instance) {
  py::gil_scoped_release release;
  driver::OptimizeOptions opts;
  opts.max_slowdown = driver::parse_max_slowdown(fmt::format("{}", max_slowdown));  // as --max-slowdown
  opts.profile_clocks = profile_clocks;
  opts.seed = seed;
  opts.min_pack_ns = min_pack_ns_of(min_pack_ms);
  opts.frontier_points = frontier_points;
  const graph::Window w = window_of(*h.trace, window, annotation, instance);
  auto r = std::make_shared<const driver::OptimizeResult>(driver::optimize(*h.trace, w, gpu_of(*h.trace, gpu), opts));
  nlohmann::json doc = output::to_json(*r);
  if (!h.trace->meta.job.ranks.empty()) doc["job"] = output::job_json(*h.trace, r->packs.analysis);
  std::string policy_json = policy::to_json(r->policy());
  return OptimizeHandle{texts_of(doc), std::move(policy_json),
                        [t = h.trace, r] { return output::render_html_report(output::to_report(*t, *r)); }, {}};
}

/// The link options of `ranks` (empty: the traces' recorded ranks), one per trace of `traces`.
trace::LinkOptions link_options(const std::vector<std::int32_t>& ranks, std::size_t traces) {
  if (!ranks.empty() && ranks.size() != traces) {
    throw ArgumentError("ranks", fmt::format("{} ranks", ranks.size()), fmt::format("one rank per trace expected ({} traces)", traces));
  }
  trace::LinkOptions lo;
  lo.ranks = ranks;
  return lo;
}

/// What loading changed in each trace of `traces` (trace::changed_on_load), by path, for the
/// Python layer to warn about as load_trace() does.
using ChangedOnLoad = std::vector<std::pair<std::string, std::vector<std::string>>>;
ChangedOnLoad changed_on_load_of(const std::vector<trace::Trace>& traces) {
  ChangedOnLoad out;
  for (const trace::Trace& t : traces) out.emplace_back(t.meta.path, trace::changed_on_load(t));
  return out;
}

/// load_job(): the traces of `paths`, the ranks of one job in order (`ranks`: their ranks, empty:
/// as recorded), loaded whole on `threads` threads (job::load_traces, not reduced: analyze and
/// pack see every op) and linked into one (trace::link_job), with what loading changed in each.
/// Throws InputError for a bad file, when they are not one job (trace::not_one_job's reason) or
/// do not link; ArgumentError for fewer than 2 paths or a rank count that is not theirs.
std::pair<TraceHandle, ChangedOnLoad> load_job(const std::vector<std::string>& paths,
                                               const std::vector<std::int32_t>& ranks, int threads) {
  py::gil_scoped_release release;
  if (paths.size() < 2) throw ArgumentError("traces", fmt::format("{} trace(s)", paths.size()), "a job needs 2 or more");
  const trace::LinkOptions lo = link_options(ranks, paths.size());
  std::vector<trace::Trace> traces = job::load_traces(paths, job::LoadOptions{threads, false});
  ChangedOnLoad changed = changed_on_load_of(traces);
  if (const auto why = trace::not_one_job(traces, lo)) {
    throw trace::not_one_job_error(traces[0].meta.path, traces[1].meta.path, *why);
  }
  return {TraceHandle{std::make_shared<const trace::Trace>(trace::link_job(std::move(traces), lo)),
                      std::make_shared<TraceHandle::Summary>()},
          std::move(changed)};
}

/// The JSON of a linked job's JobInfo (`emo optimize --json`'s "job"), or None for one trace.
py::object job_info(const TraceHandle& h) {
  if (h.trace->meta.job.ranks.empty()) return py::none();
  return py::str(output::job_json(h.trace->meta.job).dump());
}

/// optimize(..., solve="decomposed"): the job of `handles` (ranks as link_job) solved by
/// decomposition (job::solve_decomposed, as `emo optimize --solve decomposed`) on `threads`
/// threads (0: every core), on the simulated device. Throws InputError as link_job does, and for
/// ranks of different GPU models without `gpu`.
OptimizeHandle optimize_decomposed(const std::vector<std::string>& paths, const std::vector<std::int32_t>& ranks,
                                   double max_slowdown, const std::optional<std::string>& gpu, std::uint64_t seed,
                                   int profile_clocks, std::optional<double> min_pack_ms, int threads) {
  py::gil_scoped_release release;
  if (paths.size() < 2) throw ArgumentError("traces", fmt::format("{} trace(s)", paths.size()), "a job needs 2 or more");
  if (threads < 0) throw ArgumentError("solve_threads", std::to_string(threads), "must be >= 0");
  const trace::LinkOptions lo = link_options(ranks, paths.size());
  std::vector<trace::Trace> traces = job::load_traces(paths, job::LoadOptions{threads, true});  // reduced, as the CLI
  std::vector<trace::RankDigest> digests;
  ChangedOnLoad changed;
  for (const trace::Trace& t : traces) {
    digests.push_back(trace::digest(t));  // carries what loading changed (RankDigest::changed_on_load)
    changed.emplace_back(digests.back().path, digests.back().changed_on_load);
  }
  if (const auto why = trace::not_one_job(digests, lo)) {
    throw trace::not_one_job_error(digests[0].path, digests[1].path, *why);
  }
  auto jp = std::make_shared<const job::JobPorts>(job::job_ports(digests, trace::link_ranks(digests, lo)));
  // One GPU model for the job, as `emo optimize --solve decomposed` asks.
  if (!gpu) (void)driver::one_gpu_model(jp->path, trace::job_gpus(digests), "gpu=NAME");
  const model::GpuSpec& spec = gpu_of(traces[0], gpu);  // the job's GPU: the first trace's, as the CLI
  driver::OptimizeOptions opts;
  opts.max_slowdown = driver::parse_max_slowdown(fmt::format("{}", max_slowdown));
  opts.profile_clocks = profile_clocks;
  opts.seed = seed;
  opts.min_pack_ns = min_pack_ns_of(min_pack_ms);
  job::DecomposedOptions how;
  how.threads = threads;
  how.lanes = true;  // the report's job view
  auto d = std::make_shared<const job::DecomposedSolve>(job::solve_decomposed(*jp, std::move(traces), spec, opts, how));
  nlohmann::json doc = output::to_json(*d);
  doc["trace"] = jp->path;
  doc["gpu"] = spec.id;
  doc["job"] = output::job_json(jp->link.info);
  std::string policy_json = policy::to_json(d->policy);
  return OptimizeHandle{texts_of(doc), std::move(policy_json),
                        [d, jp, id = spec.id] { return output::render_html_report(output::to_report(*d, *jp, id)); },
                        std::move(changed)};
}

std::string report_html(const OptimizeHandle& h) {
  py::gil_scoped_release release;
  return h.report();
}

/// The op table's columns: name -> (bytes, struct format character).
py::dict columns(const TraceHandle& h) {
  const trace::OpTable& o = h.trace->ops;
  static_assert(sizeof(trace::OpKind) == 1 && sizeof(StringId) == 4 && sizeof(TimeNs) == 8);
  py::dict d;
  d["kind"] = py::make_tuple(column_bytes(o.kind), "B");
  d["start_ns"] = py::make_tuple(column_bytes(o.start_ns), "q");
  d["dur_ns"] = py::make_tuple(column_bytes(o.dur_ns), "q");
  d["name_id"] = py::make_tuple(column_bytes(o.name), "I");
  d["device"] = py::make_tuple(column_bytes(o.device), "i");
  d["stream"] = py::make_tuple(column_bytes(o.stream), "q");
  d["process"] = py::make_tuple(column_bytes(o.process), "q");
  d["thread"] = py::make_tuple(column_bytes(o.thread), "q");
  d["correlation"] = py::make_tuple(column_bytes(o.correlation), "q");
  d["external_id"] = py::make_tuple(column_bytes(o.external_id), "q");
  return d;
}

/// Every string of the trace's string table, by id (StringId indexes this list).
py::list strings(const TraceHandle& h) {
  py::list out;
  const StringTable& s = h.trace->strings;
  for (StringId id = 0; id < s.size(); ++id) out.append(py::str(std::string(s.view(id))));
  return out;
}

py::list kind_names() {
  py::list out;
  for (int k = 0; k < trace::kOpKindCount; ++k) {
    out.append(py::str(std::string(trace::op_kind_name(static_cast<trace::OpKind>(k)))));
  }
  return out;
}

}  // namespace
}  // namespace emo::python

PYBIND11_MODULE(_emo, m) {
  using namespace emo::python;
  m.doc() = "EMO's C++ library (trace -> graph -> slack -> packs -> optimiser); use the emo package, not this module.";
  static py::exception<emo::InputError> input_error(m, "InputError", PyExc_Exception);
  input_error.doc() = "Bad input: a missing, unreadable, truncated, malformed or unknown-format file.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const emo::InputError& e) {
      input_error(e.what());
    } catch (const emo::ArgumentError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  py::class_<TraceHandle>(m, "TraceHandle", "A loaded trace (C++ side).")
      .def_property_readonly("summary_json", &summary_json, "`emo inspect --json` of the trace, as text.")
      .def_property_readonly("path", [](const TraceHandle& h) { return h.trace->meta.path; })
      .def_property_readonly("op_count", [](const TraceHandle& h) { return h.trace->ops.size(); })
      .def_property_readonly(
          "changed_on_load", [](const TraceHandle& h) { return emo::trace::changed_on_load(*h.trace); },
          "What loading changed in the trace (trace::changed_on_load): negative durations, clamped host ops.")
      .def_property_readonly("job_json", &job_info, "The linked job's JobInfo as JSON text, None for one trace.")
      .def("columns", &columns, "The op table's columns: name -> (bytes, struct format).")
      .def("strings", &strings, "The trace's string table (index = name_id).");

  py::class_<OptimizeHandle>(m, "OptimizeHandle", "One optimize() run (C++ side).")
      .def_readonly("json", &OptimizeHandle::json, "`emo optimize --json` of the run and its scalars, as texts.")
      .def_readonly("policy_json", &OptimizeHandle::policy_json, "The clock policy (emo.policy/1), as text.")
      .def_readonly("changed_on_load", &OptimizeHandle::changed_on_load, "What loading changed, by path.")
      .def("report_html", &report_html, "The self-contained HTML report (`emo optimize --report`).");

  m.def("load_trace", &load, py::arg("path"), "Reads a trace file (Kineto JSON, plain or gzip; nsys SQLite; emo.trace/1).");
  m.def("analyze", &analyze, py::arg("trace"), py::arg("window"), py::arg("annotation"), py::arg("instance"),
        py::arg("what_if"), "`emo analyze --json` of a trace and its top-level scalars, as texts.");
  m.def("pack", &pack, py::arg("trace"), py::arg("min_pack_ms"), py::arg("window"), py::arg("annotation"),
        py::arg("instance"), "`emo pack --json` of a trace and its top-level scalars, as texts.");
  m.def("optimize", &optimize, py::arg("trace"), py::arg("max_slowdown"), py::arg("gpu"), py::arg("seed"),
        py::arg("profile_clocks"), py::arg("min_pack_ms"), py::arg("frontier_points"), py::arg("window"),
        py::arg("annotation"), py::arg("instance"), "Runs `emo optimize` on the simulated device.");
  m.def("load_job", &load_job, py::arg("paths"), py::arg("ranks"), py::arg("threads"),
        "Loads the traces of one job's ranks and links them into one trace (`emo analyze A B ...`).");
  m.def("optimize_decomposed", &optimize_decomposed, py::arg("paths"), py::arg("ranks"), py::arg("max_slowdown"),
        py::arg("gpu"), py::arg("seed"), py::arg("profile_clocks"), py::arg("min_pack_ms"), py::arg("threads"),
        "Runs `emo optimize --solve decomposed` on a job's ranks, on the simulated device.");
  m.attr("JOINT_SOLVE_MAX_RANKS") = emo::job::kJointSolveMaxRanks;
  m.def(
      "load_policy",
      [](const std::string& path) {
        py::gil_scoped_release release;
        return emo::policy::to_json(emo::policy::load_policy(path));
      },
      py::arg("path"), "Reads and checks a policy file (emo.policy/1); returns its text as EMO writes it.");
  m.def("resolve_gpu", &resolve_gpu, py::arg("name"),
        "The catalog entry a GPU name means, as `emo gpus --resolve NAME`: {id, why, assumed}.");
  m.def("kind_names", &kind_names, "Op kind names by code (the `kind` column's values).");
  m.def("version", [] { return std::string(emo::version()); }, "EMO's version.");
}
