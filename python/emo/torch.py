"""PyTorch profiler helpers: record a trace the way EMO needs it and analyse it when it is ready.

Imported only when used (``import emo.torch`` or ``emo.torch``); ``import emo`` never imports
torch::

    import emo.torch
    with emo.torch.profiler("traces/", steps=3) as prof:   # writes traces/<worker>.<ts>.pt.trace.json.gz
        for batch in loader:
            train_step(batch)
            prof.step()

    # applying a policy without the CUPTI tracer: `emo run --policy P --no-tracer -- python train.py`
    for batch in loader:
        emo.torch.step()                                    # a step (the policy's iteration) begins
        train_step(batch)

    # or: analyse each trace as soon as it is written
    handler = emo.torch.on_trace_ready("traces/", callback=lambda r: print(r.critical_path_ns))
    with emo.torch.profiler("traces/", steps=3, on_trace_ready=handler) as prof: ...
"""
import os as _os
import time as _time
import warnings as _warnings

try:
    import torch as _torch
    import torch.profiler as _profiler
except ImportError as _e:
    raise ImportError(
        "emo.torch needs PyTorch (pip install torch): {}. The rest of emo works without it.".format(_e)
    ) from None

import emo as _emo
# The pack-start reports need no torch: they live in emo.progress (one trigger per process, shared).
from emo.progress import StepTrigger, step  # noqa: E402,F401

__all__ = ["profiler", "on_trace_ready", "StepTrigger", "step"]


def profiler(dir, steps=3, wait=1, warmup=1, repeat=1, on_trace_ready=None, record_shapes=False, **kwargs):
    """A ``torch.profiler.profile`` configured as EMO needs: CPU and CUDA activity, the CUDA sync
    events EMO's dependency graph reads (``enable_cuda_sync_events``), and a schedule of `wait`
    idle, `warmup` warm-up and `steps` recorded steps (call ``prof.step()`` once per training step).
    Traces go to `dir` (gzip Kineto JSON, one per recorded cycle) unless `on_trace_ready` is given.
    Other keyword arguments go to ``torch.profiler.profile``.

    Degrades with a RuntimeWarning instead of failing: where CUDA is not available (a CPU-only
    build, no GPU) it records CPU activity only — a trace EMO can read but not analyse, as it has no
    GPU ops; where this torch's profiler has no ``enable_cuda_sync_events`` (before torch 2.1) it
    records without the sync events (EMO's graph then misses the waits on CUDA events).
    Raises ValueError when `steps` < 1.
    """
    if int(steps) < 1:
        raise ValueError("steps {!r}: at least one step must be recorded".format(steps))
    _os.makedirs(dir, exist_ok=True)
    handler = on_trace_ready or _profiler.tensorboard_trace_handler(str(dir), use_gzip=True)
    activities = [_profiler.ProfilerActivity.CPU]
    if _cuda_available():
        activities.append(_profiler.ProfilerActivity.CUDA)
    else:
        _warnings.warn("emo.torch.profiler: CUDA is not available to torch {} (a CPU-only build or no GPU): "
                       "recording CPU activity only; EMO analyses traces with GPU ops".format(_version()),
                       RuntimeWarning, stacklevel=2)
    return _profiler.profile(
        activities=activities,
        schedule=_profiler.schedule(wait=wait, warmup=warmup, active=int(steps), repeat=repeat),
        on_trace_ready=handler,
        record_shapes=record_shapes,
        **_sync_events_config(),
        **kwargs,
    )


def _cuda_available():
    """torch.cuda.is_available(), False where torch has no cuda module."""
    cuda = getattr(_torch, "cuda", None)
    return bool(cuda is not None and cuda.is_available())


def _version():
    return getattr(_torch, "__version__", "(unknown version)")


def _sync_events_config():
    """{"experimental_config": ...} asking for the CUDA sync events, or {} with a RuntimeWarning
    where this torch's _ExperimentalConfig does not know them (torch < 2.1)."""
    try:
        return {"experimental_config": _torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)}
    except (AttributeError, TypeError):
        _warnings.warn("emo.torch.profiler: torch {} cannot record CUDA sync events (its profiler config has no "
                       "enable_cuda_sync_events); EMO's graph will miss the waits on CUDA events (torch >= 2.1 "
                       "records them)".format(_version()), RuntimeWarning, stacklevel=3)
        return {}


class _TraceReady:
    """The callable on_trace_ready() returns; its ``results``, ``paths`` and ``errors`` grow per
    trace."""

    def __init__(self, dir, analyze, callback, what_if):
        self.dir = str(dir)
        self.analyze = analyze
        self.callback = callback
        self.what_if = list(what_if)
        self.paths = []
        self.results = []
        self.errors = []

    def __call__(self, prof):
        _os.makedirs(self.dir, exist_ok=True)
        path = _os.path.join(self.dir, "emo_trace_{}_{}.json".format(_os.getpid(), _time.time_ns()))
        prof.export_chrome_trace(path)
        self.paths.append(path)
        if not self.analyze:
            return
        try:
            result = _emo.analyze(_emo.load_trace(path), what_if=self.what_if)
        except _emo.InputError as e:  # e.g. no GPU op (CPU-only torch): warn, do not stop training
            self.errors.append(e)
            _warnings.warn("emo.torch.on_trace_ready: not analysed: {}".format(e), RuntimeWarning, stacklevel=2)
            return
        self.results.append(result)
        if self.callback is not None:
            self.callback(result)


def on_trace_ready(dir, analyze=True, callback=None, what_if=()):
    """A callback for ``torch.profiler.profile(on_trace_ready=...)``: writes each trace to `dir`
    (Kineto JSON) and, with `analyze`, runs :func:`emo.analyze` on it, appends the result to the
    callback's ``results`` and passes it to `callback`. The written files are in ``paths``. A trace
    EMO cannot analyse (emo.InputError, e.g. no GPU op: CPU-only torch) goes to ``errors`` with a
    RuntimeWarning, and the training loop goes on.
    """
    return _TraceReady(dir, analyze, callback, what_if)


