"""EMO from Python: find the slack in a GPU trace and the clock policy that saves energy.

The library, not the command line::

    import emo
    trace = emo.load_trace("trace.json.gz")          # Kineto JSON (plain/gzip), nsys SQLite, emo.trace/1
    a = emo.analyze(trace)                            # critical path, bound-by, per-GPU slack, what-ifs
    r = emo.optimize(trace, max_slowdown=0.05)        # packs, models, optimiser, simulated evaluation
    r.policy.save("policy.json"); r                   # in Jupyter, r shows the HTML report

Every figure is the one the CLI's ``--json`` writes for the same call (the same C++ writers make
both). Errors: :class:`emo.InputError` for a bad file, :class:`ValueError` for a bad argument.
``emo.torch`` (PyTorch profiler helpers) is imported only when used. See docs/python.md.
"""

# The extension is built into <build>/python/emo by the CMake build and installed beside this file
# by `pip install .`; with PYTHONPATH=<build>/python:<repo>/python both halves form the package.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

try:
    from . import _emo
except ImportError as _e:  # pragma: no cover - depends on the build
    raise ImportError(
        "emo: the C++ extension emo._emo is not built or not on the path ({}). Build it with CMake "
        "(EMO_BUILD_PYTHON, needs pybind11-dev and python3-dev) and set "
        "PYTHONPATH=build/python:python, or `pip install .` (docs/python.md)".format(_e)
    ) from None

from ._api import (  # noqa: E402
    AnalysisResult,
    InputError,
    JOINT_SOLVE_MAX_RANKS,
    OptimizeResult,
    PackResult,
    Policy,
    Trace,
    analyze,
    load_job,
    load_trace,
    optimize,
    pack,
    resolve_gpu,
)

__version__ = _emo.version()
__all__ = [
    "AnalysisResult", "InputError", "JOINT_SOLVE_MAX_RANKS", "OptimizeResult", "PackResult", "Policy", "Trace",
    "analyze", "load_job", "load_trace", "optimize", "pack", "resolve_gpu", "torch",
]


def __getattr__(name):
    """Imports ``emo.torch`` on first use, so that ``import emo`` never imports torch."""
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'emo' has no attribute {!r}".format(name))
