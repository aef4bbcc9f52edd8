"""The Python layer over emo._emo: traces, analysis, packs and optimisation results.

Each result keeps the JSON object the CLI writes for the same call (``to_dict()``) and exposes its
main figures as attributes; tables become pandas DataFrames when pandas is installed.
"""
import array as _array
import json as _json

from . import _emo

InputError = _emo.InputError
InputError.__module__ = "emo"
InputError.__doc__ = (
    "Bad input: a missing, unreadable, truncated, malformed or unknown-format file. "
    "The message is EMO's one line, 'FILE: problem'."
)


def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def _pandas(what):
    try:
        import pandas
    except ImportError:
        raise ImportError("emo: {} needs pandas (pip install pandas)".format(what)) from None
    return pandas


def _optional_str(name, value):
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("{} {!r}: must be a string or None".format(name, value))
    return value


def _handle(trace):
    if isinstance(trace, Trace):
        return trace._h
    if isinstance(trace, (str, bytes)) or hasattr(trace, "__fspath__"):
        import os
        return load_trace(os.fsdecode(trace))._h
    raise ValueError("trace {!r}: expected an emo.Trace or a path".format(trace))


def _window_args(window, annotation, instance):
    if isinstance(instance, bool) or not isinstance(instance, int):
        raise ValueError("instance {!r}: must be an integer >= 0".format(instance))
    for name, value in (("window", window), ("annotation", annotation)):
        if value == "":
            raise ValueError("{} '': an empty name selects nothing; give an annotation such as "
                             "ProfilerStep#3, or None for the whole trace".format(name))
    return _optional_str("window", window), _optional_str("annotation", annotation), instance


class _JsonResult:
    """A result backed by the CLI's JSON object of the same call. `texts` is (the object's JSON
    text, the JSON of its top-level scalars): the scalars are read at once, the whole object on
    first use of a table (``_doc``)."""

    def __init__(self, texts):
        self._text, head = texts
        self._head = _json.loads(head)
        self._parsed = None

    @property
    def _doc(self):
        if self._parsed is None:
            self._parsed = _json.loads(self._text)
        return self._parsed

    def _scalar(self, key):
        return self._head[key]

    def to_dict(self):
        """The JSON object the CLI writes for the same call (``--json``), as a new dict."""
        return _json.loads(self._text)

    def __getitem__(self, key):
        return self._doc[key]

    def keys(self):
        """The keys of the JSON object (see to_dict)."""
        return self._doc.keys()


class Trace:
    """A loaded trace (from :func:`load_trace`): metadata, counts, warnings and the op table."""

    def __init__(self, handle):
        self._h = handle
        self._summary_doc = None
        self._ops = None

    @property
    def _summary(self):
        if self._summary_doc is None:  # made on first use: load_trace itself only reads
            self._summary_doc = _json.loads(self._h.summary_json)
        return self._summary_doc

    path = property(lambda self: self._h.path, doc="The file the trace was read from.")
    format = property(lambda self: self._summary["format"], doc='"kineto-json", "nsys-sqlite" or "emo-trace".')
    gpu = property(lambda self: self._summary["gpu"], doc="GPU name(s) of the devices that ran GPU ops.")
    rank = property(lambda self: self._summary["rank"], doc="Distributed rank, None when unknown.")
    world_size = property(lambda self: self._summary["world_size"], doc="World size, None when unknown.")
    span_ns = property(lambda self: self._summary["span_ns"], doc="Last op end - first op start, ns.")
    counts = property(lambda self: dict(self._summary["counts"]), doc="Ops per kind (emo inspect's counts).")
    warnings = property(lambda self: list(self._summary["warnings"]), doc="The reader's warnings about quirks met.")

    def summary(self):
        """The ``emo inspect --json`` object of the trace (a new dict)."""
        return _json.loads(self._h.summary_json)

    def __len__(self):
        return self._h.op_count

    def __repr__(self):
        return "<emo.Trace {!r}: {}, {} ops, gpu {!r}, rank {}>".format(
            self.path, self.format, len(self), self.gpu, self.rank)

    @property
    def kind_names(self):
        """Op kind names by code: ``kind_names[ops["kind"][i]]`` is op i's kind."""
        return _emo.kind_names()

    @property
    def strings(self):
        """The trace's string table: ``strings[ops["name_id"][i]]`` is op i's name."""
        return self._h.strings()

    @property
    def ops(self):
        """The op table, one entry per column (kind, start_ns, dur_ns, name_id, device, stream,
        process, thread, correlation, external_id; -1 = absent): NumPy arrays when NumPy is
        installed, else lists. Times are integer ns; rows sorted by start."""
        if self._ops is None:
            np = _numpy()
            cols = {}
            for name, (data, fmt) in self._h.columns().items():
                if np is not None:
                    cols[name] = np.frombuffer(data, dtype=np.dtype(fmt))
                else:
                    cols[name] = _array.array(fmt, data).tolist()
            self._ops = cols
        return self._ops

    def to_pandas(self):
        """The op table as a pandas DataFrame, ``kind`` and ``name`` as categoricals."""
        pd = _pandas("Trace.to_pandas()")
        ops = self.ops
        df = pd.DataFrame({k: v for k, v in ops.items() if k not in ("kind", "name_id")})
        df.insert(0, "kind", pd.Categorical.from_codes(ops["kind"].astype("int64"), categories=self.kind_names))
        # The string table interns each string once, so its strings are distinct categories.
        df.insert(1, "name", pd.Categorical.from_codes(ops["name_id"].astype("int64"), categories=self.strings))
        return df


def load_trace(path):
    """Reads a trace: PyTorch profiler (Kineto) JSON, plain or gzip; an Nsight Systems SQLite
    export; or EMO's emo.trace/1. The format is detected from the content.

    Raises emo.InputError ("FILE: problem") for a missing, truncated, malformed or unknown file.
    """
    import os
    if not isinstance(path, (str, bytes)) and not hasattr(path, "__fspath__"):
        raise ValueError("path {!r}: expected a file path".format(path))
    return Trace(_emo.load_trace(os.fsdecode(path)))


class AnalysisResult(_JsonResult):
    """What :func:`analyze` found: the ``emo analyze --json`` object, with its main figures as
    attributes (ns unless said otherwise)."""

    makespan_ns = property(lambda self: self._scalar("makespan_ns"), doc="Replayed makespan of the window, ns.")
    critical_path_ns = property(lambda self: self._scalar("critical_path_ns"), doc="Length of the critical path, ns.")
    replay_error = property(lambda self: self._scalar("replay_error"), doc="Replay vs recorded makespan, fraction.")
    bound_by = property(lambda self: dict(self._doc["bound_by"]), doc="Share of the makespan per category.")
    critical_path = property(lambda self: self._doc["critical_path"], doc="The critical path's ops, in order.")
    gpus = property(lambda self: self._doc["gpus"], doc="Per GPU: busy, critical and slack time, slack windows.")
    what_if = property(lambda self: self._doc["what_if"], doc="Per what-if spec: predicted makespan, change.")

    @property
    def slack_windows(self):
        """Per GPU device: its slack windows, [start_ns, end_ns] pairs (trace time), as in the
        JSON's gpus[].slack_windows."""
        return {g["device"]: g.get("slack_windows", []) for g in self._doc["gpus"]}

    def gpus_frame(self):
        """Per-GPU busy / critical / slack time as a pandas DataFrame."""
        pd = _pandas("AnalysisResult.gpus_frame()")
        return pd.DataFrame([{k: v for k, v in g.items() if k != "slack_windows"} for g in self._doc["gpus"]])

    def slack_windows_frame(self):
        """Every GPU's slack windows as one pandas DataFrame: device, start_ns, end_ns, dur_ns."""
        pd = _pandas("AnalysisResult.slack_windows_frame()")
        rows = [(d, s, e, e - s) for d, ws in self.slack_windows.items() for s, e in ws]
        return pd.DataFrame(rows, columns=["device", "start_ns", "end_ns", "dur_ns"])

    def __repr__(self):
        return "<emo.AnalysisResult makespan {:.3f} ms, critical path {:.3f} ms>".format(
            self.makespan_ns / 1e6, self.critical_path_ns / 1e6)


def analyze(trace, window=None, annotation=None, instance=0, what_if=()):
    """Dependency graph, replay, critical path and slack of `trace` (an emo.Trace or a path), as
    ``emo analyze``: `window` "ProfilerStep#N" analyses that annotation, `annotation` + `instance`
    the instance-th one of that name; what_if specs ("kind=kernel:x1.5", "name~gemm:x1.2",
    "id=123:+2ms"; docs/graph.md) predict the makespan with changed durations.

    Raises ValueError for a bad argument, emo.InputError when the window is not in the trace.
    """
    if isinstance(what_if, str):
        what_if = [what_if]
    w, a, i = _window_args(window, annotation, instance)
    h = _handle(trace)
    return AnalysisResult(_emo.analyze(h, w, a, i, [str(s) for s in what_if]))


class PackResult(_JsonResult):
    """What :func:`pack` found: the ``emo pack --json`` object."""

    packs = property(lambda self: self._scalar("packs"), doc="Number of packs.")
    ops = property(lambda self: self._scalar("ops"), doc="Number of GPU ops packed.")
    min_pack_ns = property(lambda self: self._scalar("min_pack_ns"), doc="Shortest pack, ns.")
    contraction_error = property(lambda self: self._scalar("contraction_error"),
                                 doc="Pack graph vs op graph makespan when GPU work is slowed (0 = exact).")
    gpus = property(lambda self: self._doc["gpus"], doc="Per GPU: its packs.")

    def packs_frame(self):
        """Every pack as a row of a pandas DataFrame (column ``device`` added)."""
        pd = _pandas("PackResult.packs_frame()")
        return pd.DataFrame([dict(p, device=g["device"]) for g in self._doc["gpus"] for p in g["packs"]])

    def __repr__(self):
        return "<emo.PackResult {} ops in {} packs>".format(self.ops, self.packs)


def pack(trace, min_pack_ms=None, window=None, annotation=None, instance=0):
    """Cuts each GPU's timeline into packs (windows run at one clock), as ``emo pack``: each at
    least `min_pack_ms` long (default: the GPU's clock-switch latency from the catalog).

    Raises ValueError for a bad argument, emo.InputError when the window is not in the trace.
    """
    if min_pack_ms is not None:
        min_pack_ms = float(min_pack_ms)
    w, a, i = _window_args(window, annotation, instance)
    return PackResult(_emo.pack(_handle(trace), min_pack_ms, w, a, i))


class Policy(dict):
    """A clock policy (emo.policy/1, docs/policy.md) as a dict; ``save(path)`` writes it for
    ``emo run --policy``."""

    def save(self, path):
        """Writes the policy as JSON to `path` and checks it reads back (emo.InputError if not)."""
        with open(path, "w") as f:
            f.write(_json.dumps(self, indent=2) + "\n")
        _emo.load_policy(str(path))

    @classmethod
    def load(cls, path):
        """Reads and checks a policy file; raises emo.InputError for a bad or missing file."""
        return cls(_json.loads(_emo.load_policy(str(path))))


class OptimizeResult(_JsonResult):
    """What :func:`optimize` found: the ``emo optimize --json`` object, the policy and the HTML
    report (shown inline in Jupyter). Measured figures come from the simulated device."""

    def __init__(self, handle):
        super().__init__(handle.json)
        self._h = handle
        self.policy = Policy(_json.loads(handle.policy_json))
        """The clock policy (a dict with save(path))."""

    savings = property(lambda self: self._scalar("savings"), doc="1 - EMO's energy / the baseline's (measured).")
    slowdown = property(lambda self: self._scalar("slowdown"), doc="EMO's time / the baseline's - 1 (measured).")
    simulated = property(lambda self: self._scalar("simulated"), doc="True when measured on the simulated device.")
    frontier = property(lambda self: self._doc["frontier"], doc="Predicted [{time_s, energy_j}], ascending time.")
    baseline = property(lambda self: self._doc["baseline"], doc="Every pack at the max clock: time, energy.")
    static_best = property(lambda self: self._doc["static_best"], doc="The best static clock: clock, time, energy.")
    emo = property(lambda self: self._doc["emo"], doc="EMO's policy: time, energy (measured and predicted).")
    static_curve = property(lambda self: self._doc["static_curve"],
                            doc="Every static run measured: [{clock_mhz, time_ns, energy_j}], descending clock "
                                "(the simulated device: every option clock).")

    def frontier_frame(self):
        """The predicted frontier as a pandas DataFrame (time_s, energy_j)."""
        return _pandas("OptimizeResult.frontier_frame()").DataFrame(self.frontier)

    def report_html(self):
        """The self-contained HTML report (timeline, frontier, table), as ``emo optimize --report``."""
        return self._h.report_html()

    def save_report(self, path):
        """Writes the HTML report to `path`."""
        with open(path, "w") as f:
            f.write(self.report_html())

    def _repr_html_(self):
        return self.report_html()

    def __repr__(self):
        return "<emo.OptimizeResult savings {:.1%} at slowdown {:.1%}{}>".format(
            self.savings, self.slowdown, " [SIMULATED]" if self.simulated else "")


def optimize(trace, max_slowdown=0.05, gpu=None, seed=1, profile_clocks=3, min_pack_ms=None,
             frontier_points=24, window=None, annotation=None, instance=0):
    """``emo optimize`` on the simulated device: packs, profiles each at `profile_clocks` clocks,
    fits their models, minimises energy within max_slowdown (0.05 = at most 5 % slower than
    every GPU at its max clock) and evaluates the policy against the baseline and the best
    static clock. `gpu` is a GPU catalog id or NVML name (default: the trace's own GPU).

    Raises ValueError for a bad argument (max_slowdown < 0, an unknown gpu, ...) and
    emo.InputError for a trace it cannot optimise (no GPU ops, an unknown GPU, ...).
    """
    try:
        max_slowdown = float(max_slowdown)
    except (TypeError, ValueError):
        raise ValueError("max_slowdown {!r}: must be a number".format(max_slowdown)) from None
    if min_pack_ms is not None:
        min_pack_ms = float(min_pack_ms)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError("seed {!r}: must be an integer >= 0".format(seed))
    w, a, i = _window_args(window, annotation, instance)
    h = _handle(trace)
    return OptimizeResult(_emo.optimize(h, max_slowdown, _optional_str("gpu", gpu), seed, int(profile_clocks),
                                        min_pack_ms, int(frontier_points), w, a, i))


def resolve_gpu(name):
    """The GPU catalog entry `name` means, as ``emo gpus --resolve NAME`` and ``optimize(gpu=...)``
    choose it: a catalog id, a listed NVML name, else the same GPU with another memory size
    (stated as an assumption). Returns {"id": catalog id, "why": one sentence, "assumed": bool}.
    Raises ValueError for a name nothing in the catalog fits."""
    return _emo.resolve_gpu(str(name))
