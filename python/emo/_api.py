"""The Python layer over emo._emo: traces, analysis, packs and optimisation results.

Each result keeps the JSON object the CLI writes for the same call (``to_dict()``) and exposes its
main figures as attributes; tables become pandas DataFrames when pandas is installed.
"""
import array as _array
import json as _json
import warnings as _warnings

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


def _is_path(x):
    return isinstance(x, (str, bytes)) or hasattr(x, "__fspath__")


def _path_str(x):
    """`x` (str, bytes or os.PathLike) as the str the C++ side reads; ValueError for a path it
    cannot pass on whole (a NUL byte, bytes that are not UTF-8)."""
    import os
    p = os.fsdecode(x)
    if "\0" in p:
        raise ValueError("path {!r}: contains a NUL byte".format(x))
    try:
        p.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("path {!r}: not valid UTF-8".format(x)) from None
    return p


def _int_in(name, value, lo, hi):
    """`value` as an int in [lo, hi] (bool refused; NumPy integers taken); else ValueError."""
    import operator
    if isinstance(value, bool):
        raise ValueError("{} {!r}: must be an integer in [{}, {}]".format(name, value, lo, hi))
    try:
        v = operator.index(value)
    except TypeError:
        raise ValueError("{} {!r}: must be an integer in [{}, {}]".format(name, value, lo, hi)) from None
    if not lo <= v <= hi:
        raise ValueError("{} {!r}: must be an integer in [{}, {}]".format(name, value, lo, hi))
    return v


_INT32_MAX = 2**31 - 1


def _handle(trace):
    """The C++ trace of `trace`: an emo.Trace, a path, or a list/tuple of a job's ranks (paths or
    emo.Trace, linked by load_job)."""
    if isinstance(trace, Trace):
        return trace._h
    if _is_path(trace):
        return load_trace(trace)._h
    if isinstance(trace, (list, tuple)):
        return load_job(trace)._h if len(trace) != 1 else _handle(trace[0])
    raise ValueError("trace {!r}: expected an emo.Trace, a path, or a list of a job's ranks".format(trace))


def _job_paths(traces):
    """The files of `traces` (paths or emo.Trace, whose file is read again), in order."""
    out = []
    for t in traces:
        if isinstance(t, Trace):
            if t.job is not None:
                raise ValueError("trace {!r}: already a linked job; give the ranks' files".format(t))
            out.append(t.path)
        elif _is_path(t):
            out.append(_path_str(t))
        else:
            raise ValueError("trace {!r}: expected an emo.Trace or a path".format(t))
    return out


def _ranks_arg(ranks, n):
    """`ranks` (None, or a sequence of one rank per trace, in their order: a list, tuple, range or
    1-D array — not a set, which has no order) as a list of ints in [0, 2^31 - 1]."""
    if ranks is None:
        return []
    if isinstance(ranks, (set, frozenset, dict, str, bytes)) or not hasattr(ranks, "__len__"):
        raise ValueError("ranks {!r}: a list of one rank per trace expected ({} traces)".format(ranks, n))
    if len(ranks) != n:
        raise ValueError("ranks {!r}: one rank per trace expected ({} traces)".format(ranks, n))
    return [_int_in("ranks", r, 0, _INT32_MAX) for r in ranks]


def _caller_stacklevel():
    """The stacklevel of the first frame outside the emo package, for warnings.warn called here:
    a warning is then reported at the user's line (and filtered per line there, not once per line
    of emo)."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    return level


def _warn_changed(changed):
    """One RuntimeWarning per change loading made to a trace ((path, [change, ...]) pairs),
    reported at the caller's line."""
    level = _caller_stacklevel()
    for path, changes in changed:
        for change in changes:
            _warnings.warn("emo: {}: {}".format(path, change), RuntimeWarning, stacklevel=level)


def _window_args(window, annotation, instance):
    if isinstance(instance, bool) or not isinstance(instance, int):
        raise ValueError("instance {!r}: must be an integer >= 0".format(instance))
    if instance != 0 and annotation is None:
        raise ValueError("instance {!r}: picks an instance of annotation=NAME, which is not given".format(instance))
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

    @property
    def job(self):
        """A linked job's JobInfo (load_job(); ``emo optimize --json``'s "job": ranks, clock offsets,
        collectives linked, warnings), None for a single trace."""
        text = self._h.job_json
        return None if text is None else _json.loads(text)

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


def load_job(traces, ranks=None, threads=0):
    """Loads the traces of one job's ranks (paths, or emo.Trace whose files are read again) and
    links them into one trace, as ``emo analyze A B ...`` or ``emo optimize A B ...`` do: their
    collectives and point-to-point transfers matched across ranks, their clocks aligned
    (docs/multi-rank.md). `ranks`: each trace's rank, in order (``--ranks``; default: as the traces
    record them). `threads`: loading threads (0: every core). The result's ``job`` says what was
    linked, with the link's warnings; analyze(), pack() and optimize() take it like any trace (a
    joint solve; for a decomposed one pass optimize() the list of files).

    Warns as load_trace() does. Raises emo.InputError for a bad file or traces that are not one
    job's ranks, ValueError for a bad argument (fewer than 2 traces, a rank count not theirs).
    """
    if not isinstance(traces, (list, tuple)):
        raise ValueError("traces {!r}: expected a list of a job's trace files".format(traces))
    paths = _job_paths(traces)
    threads = _int_in("threads", threads, 0, 1024)
    h, changed = _emo.load_job(paths, _ranks_arg(ranks, len(paths)), threads)
    _warn_changed(changed)
    return Trace(h)


def load_trace(path):
    """Reads a trace: PyTorch profiler (Kineto) JSON, plain or gzip; an Nsight Systems SQLite
    export; or EMO's emo.trace/1. The format is detected from the content.

    Warns (RuntimeWarning, one per change) where loading changed the data: negative durations set
    to 0, host ops clamped to their parent's end. Raises emo.InputError ("FILE: problem") for a
    missing, truncated, malformed or unknown file.
    """
    if not _is_path(path):
        raise ValueError("path {!r}: expected a file path".format(path))
    t = Trace(_emo.load_trace(_path_str(path)))
    # What loading changed in the data is said, as `emo optimize` / `analyze` / `pack` say it on
    # stderr (the other, informational quirks are in Trace.warnings only; docs/trace-model.md).
    _warn_changed([(t.path, t._h.changed_on_load)])
    return t


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
    frontier = property(lambda self: self._doc.get("frontier"),
                        doc="Predicted [{time_s, energy_j}], ascending time (None for a decomposed solve).")
    job = property(lambda self: self._doc.get("job"), doc="A job's JobInfo (its ranks, links), None for one trace.")
    baseline = property(lambda self: self._doc["baseline"], doc="Every pack at the max clock: time, energy.")
    static_best = property(lambda self: self._doc["static_best"], doc="The best static clock: clock, time, energy.")
    emo = property(lambda self: self._doc["emo"], doc="EMO's policy: time, energy (measured and predicted).")
    static_curve = property(lambda self: self._doc.get("static_curve"),
                            doc="Every static run measured: [{clock_mhz, time_ns, energy_j}], descending clock "
                                "(the simulated device: every option clock; None for a decomposed solve).")

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
             frontier_points=24, window=None, annotation=None, instance=0, ranks=None, solve="auto",
             solve_threads=0):
    """``emo optimize`` on the simulated device: packs, profiles each at `profile_clocks` clocks,
    fits their models, minimises energy within max_slowdown (0.05 = at most 5 % slower than
    every GPU at its max clock) and evaluates the policy against the baseline and the best
    static clock. `gpu` is a GPU catalog id or NVML name (default: the trace's own GPU).

    `trace`: an emo.Trace or a path; or a job: a list of its ranks' files (or emo.Trace), or the
    trace load_job() linked. A list is optimised as ``emo optimize A B ... --solve SOLVE`` does
    (docs/multi-rank.md): `ranks` as ``--ranks``; `solve` "auto" (jointly up to
    JOINT_SOLVE_MAX_RANKS ranks, decomposed above), "joint" or "decomposed" (each rank solved on
    its own against prices on its collectives, on `solve_threads` threads, 0: every core; whole
    traces only, no window; its result has no frontier or static_curve). The result's ``job`` is
    the job's JobInfo and its policy has a section per rank.

    Raises ValueError for a bad argument (max_slowdown < 0, an unknown gpu, an unknown solve, a
    window with the decomposed solve, ...) and emo.InputError for a trace it cannot optimise (no
    GPU ops, an unknown GPU, traces that are not one job's ranks, ...).
    """
    try:
        max_slowdown = float(max_slowdown)
    except (TypeError, ValueError):
        raise ValueError("max_slowdown {!r}: must be a number".format(max_slowdown)) from None
    if min_pack_ms is not None:
        min_pack_ms = float(min_pack_ms)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0 or seed >= 2**64:
        raise ValueError("seed {!r}: must be an integer in [0, 2^64 - 1]".format(seed))
    profile_clocks = _int_in("profile_clocks", profile_clocks, 2, 10)  # as --profile-clocks
    if gpu is not None and (not isinstance(gpu, str) or not gpu):
        raise ValueError("gpu {!r}: a GPU catalog id or NVML name, or None for the trace's own GPU".format(gpu))
    if solve not in ("auto", "joint", "decomposed"):
        raise ValueError("solve {!r}: must be 'auto', 'joint' or 'decomposed'".format(solve))
    solve_threads = _int_in("solve_threads", solve_threads, 0, 1024)
    w, a, i = _window_args(window, annotation, instance)
    job = isinstance(trace, (list, tuple)) and len(trace) >= 2
    if ranks is not None and not job:
        raise ValueError("ranks {!r}: given for a list of a job's traces only".format(ranks))
    if solve == "decomposed" and not job:
        raise ValueError("solve 'decomposed': needs the files of a job's ranks, as a list (docs/multi-rank.md)")
    if job and (solve == "decomposed" or (solve == "auto" and len(trace) > JOINT_SOLVE_MAX_RANKS)):
        if w is not None or a is not None:
            raise ValueError("window/annotation: the decomposed solve optimises the whole traces; "
                             "give solve='joint' for a window")
        paths = _job_paths(trace)
        h = _emo.optimize_decomposed(paths, _ranks_arg(ranks, len(paths)), max_slowdown, _optional_str("gpu", gpu),
                                     seed, int(profile_clocks), min_pack_ms, solve_threads)
        _warn_changed(h.changed_on_load)
        return OptimizeResult(h)
    h = load_job(trace, ranks, solve_threads)._h if job else _handle(trace)
    return OptimizeResult(_emo.optimize(h, max_slowdown, _optional_str("gpu", gpu), seed, int(profile_clocks),
                                        min_pack_ms, int(frontier_points), w, a, i))


JOINT_SOLVE_MAX_RANKS = _emo.JOINT_SOLVE_MAX_RANKS
"""Ranks up to which optimize(solve="auto") solves a job jointly; above it, decomposed (as the CLI)."""


def resolve_gpu(name):
    """The GPU catalog entry `name` means, as ``emo gpus --resolve NAME`` and ``optimize(gpu=...)``
    choose it: a catalog id, a listed NVML name, else the same GPU with another memory size
    (stated as an assumption). Returns {"id": catalog id, "why": one sentence, "assumed": bool}.
    Raises ValueError for a name nothing in the catalog fits."""
    return _emo.resolve_gpu(str(name))
