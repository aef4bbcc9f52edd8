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
#include "model/gpu_catalog.h"
#include "model/pack_options.h"
#include "output/analysis_output.h"
#include "output/html_report.h"
#include "output/optimize_output.h"
#include "output/pack_output.h"
#include "pack/pack_run.h"
#include "policy/policy.h"
#include "timing/analysis.h"
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

/// One optimize() run: its JSON, its policy and what the HTML report needs.
struct OptimizeHandle {
  std::shared_ptr<const trace::Trace> trace;
  std::shared_ptr<const driver::OptimizeResult> result;
  JsonTexts json;           ///< `emo optimize --json` of the trace (texts_of).
  std::string policy_json;  ///< emo.policy/1 text (`emo optimize --policy`).
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
  JsonTexts json = texts_of(output::to_json(*r));
  std::string policy_json = policy::to_json(r->policy());
  return OptimizeHandle{h.trace, std::move(r), std::move(json), std::move(policy_json)};
}

std::string report_html(const OptimizeHandle& h) {
  py::gil_scoped_release release;
  return output::render_html_report(output::to_report(*h.trace, *h.result));
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
      .def("columns", &columns, "The op table's columns: name -> (bytes, struct format).")
      .def("strings", &strings, "The trace's string table (index = name_id).");

  py::class_<OptimizeHandle>(m, "OptimizeHandle", "One optimize() run (C++ side).")
      .def_readonly("json", &OptimizeHandle::json, "`emo optimize --json` of the run and its scalars, as texts.")
      .def_readonly("policy_json", &OptimizeHandle::policy_json, "The clock policy (emo.policy/1), as text.")
      .def("report_html", &report_html, "The self-contained HTML report (`emo optimize --report`).");

  m.def("load_trace", &load, py::arg("path"), "Reads a trace file (Kineto JSON, plain or gzip; nsys SQLite; emo.trace/1).");
  m.def("analyze", &analyze, py::arg("trace"), py::arg("window"), py::arg("annotation"), py::arg("instance"),
        py::arg("what_if"), "`emo analyze --json` of a trace and its top-level scalars, as texts.");
  m.def("pack", &pack, py::arg("trace"), py::arg("min_pack_ms"), py::arg("window"), py::arg("annotation"),
        py::arg("instance"), "`emo pack --json` of a trace and its top-level scalars, as texts.");
  m.def("optimize", &optimize, py::arg("trace"), py::arg("max_slowdown"), py::arg("gpu"), py::arg("seed"),
        py::arg("profile_clocks"), py::arg("min_pack_ms"), py::arg("frontier_points"), py::arg("window"),
        py::arg("annotation"), py::arg("instance"), "Runs `emo optimize` on the simulated device.");
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
