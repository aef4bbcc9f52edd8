"""emo.torch with a stand-in `torch` package (real torch is not installed on the test machines; the
stand-in records what emo.torch configures and plays the profiler's export). When real torch is
importable (CPU-only is enough), the test_real_torch_* tests record with it too: the profiler's
trace, on_trace_ready and emo.torch.step()."""
import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
import warnings

import pytest

import emo
from conftest import HAND_TRACE, REPO

FAKE_TORCH = {
    "torch/__init__.py": "from . import _C, cuda, profiler\n__version__ = '0.0-stand-in'\n",
    "torch/cuda/__init__.py": "AVAILABLE = True\ndef is_available():\n    return AVAILABLE\n",
    "torch/_C/__init__.py": "from . import _profiler\n",
    "torch/_C/_profiler.py": textwrap.dedent("""
        OLD = False  # True: a torch before 2.1, whose config knows no enable_cuda_sync_events
        class _ExperimentalConfig:
            def __init__(self, **kwargs):
                if OLD and "enable_cuda_sync_events" in kwargs:
                    raise TypeError("__init__() got an unexpected keyword argument 'enable_cuda_sync_events'")
                self.kwargs = kwargs
        """),
    "torch/profiler/__init__.py": textwrap.dedent("""
        import enum, json, os
        STAND_IN = True
        class ProfilerActivity(enum.Enum):
            CPU = 0
            CUDA = 1
        def schedule(**kwargs):
            return ("schedule", kwargs)
        def tensorboard_trace_handler(dir_name, use_gzip=False):
            return ("tensorboard_trace_handler", dir_name, use_gzip)
        TRACE = None  # the test puts a Kineto document here
        class profile:
            def __init__(self, **kwargs):
                self.kwargs = kwargs
                self.steps = 0
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                ready = self.kwargs.get("on_trace_ready")
                if callable(ready) and self.steps > 0:
                    ready(self)
            def step(self):
                self.steps += 1
            def export_chrome_trace(self, path):
                with open(path, "w") as f:
                    json.dump(TRACE, f)
        """),
}


@pytest.fixture
def fake_torch(tmp_path, monkeypatch):
    """Puts the stand-in torch first on sys.path and forgets any imported torch / emo.torch."""
    root = tmp_path / "fake_site"
    for rel, text in FAKE_TORCH.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    monkeypatch.syspath_prepend(str(root))
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.") or m == "emo.torch"]:
        monkeypatch.delitem(sys.modules, name)
    yield importlib.import_module("torch")
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.") or m == "emo.torch"]:
        sys.modules.pop(name, None)


def test_import_emo_does_not_import_torch():
    code = "import sys, emo; assert 'torch' not in sys.modules and 'emo.torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


def test_clear_message_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    monkeypatch.delitem(sys.modules, "emo.torch", raising=False)
    with pytest.raises(ImportError, match="emo.torch needs PyTorch"):
        importlib.import_module("emo.torch")


def test_profiler_configuration(fake_torch, tmp_path):
    et = emo.torch  # lazy attribute import
    prof = et.profiler(tmp_path / "traces", steps=4, wait=2, warmup=1)
    kw = prof.kwargs
    acts = {a.name for a in kw["activities"]}
    assert acts == {"CPU", "CUDA"}
    assert kw["experimental_config"].kwargs == {"enable_cuda_sync_events": True}
    assert kw["schedule"] == ("schedule", {"wait": 2, "warmup": 1, "active": 4, "repeat": 1})
    assert kw["on_trace_ready"] == ("tensorboard_trace_handler", str(tmp_path / "traces"), True)
    assert (tmp_path / "traces").is_dir()
    with pytest.raises(ValueError, match="steps"):
        et.profiler(tmp_path, steps=0)


def test_profiler_degrades_without_cuda_or_sync_events(fake_torch, tmp_path):
    """CPU-only torch: CPU activity only, with a warning naming the cause; a torch before 2.1: no
    sync-event config, with a warning. Neither raises."""
    import emo.torch as et
    fake_torch.cuda.AVAILABLE = False
    with pytest.warns(RuntimeWarning, match="CUDA is not available to torch 0.0-stand-in"):
        prof = et.profiler(tmp_path, steps=1)
    assert [a.name for a in prof.kwargs["activities"]] == ["CPU"]
    assert prof.kwargs["experimental_config"].kwargs == {"enable_cuda_sync_events": True}
    fake_torch.cuda.AVAILABLE = True
    fake_torch._C._profiler.OLD = True
    with pytest.warns(RuntimeWarning, match="cannot record CUDA sync events"):
        prof = et.profiler(tmp_path, steps=1)
    assert "experimental_config" not in prof.kwargs
    assert {a.name for a in prof.kwargs["activities"]} == {"CPU", "CUDA"}


def test_on_trace_ready_warns_on_a_trace_without_gpu_ops(fake_torch, tmp_path):
    """A trace of CPU ops only (CPU-only torch) is written and kept, not analysed: a warning and
    an entry in `errors`, no exception into the training loop, the callback not called."""
    import emo.torch as et
    fake_torch.profiler.TRACE = {"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}
    seen = []
    handler = et.on_trace_ready(tmp_path / "out", callback=seen.append)
    with pytest.warns(RuntimeWarning, match="not analysed: .*no GPU op"):
        handler(et.profiler(tmp_path / "out", steps=1, on_trace_ready=handler))
    assert len(handler.paths) == 1 and os.path.isfile(handler.paths[0])
    assert len(handler.errors) == 1 and isinstance(handler.errors[0], emo.InputError)
    assert handler.results == [] and seen == []


def test_on_trace_ready_analyses(fake_torch, tmp_path):
    import emo.torch as et
    fake_torch.profiler.TRACE = HAND_TRACE
    seen = []
    handler = et.on_trace_ready(tmp_path / "out", callback=seen.append)
    prof = et.profiler(tmp_path / "out", steps=1, on_trace_ready=handler)
    assert prof.kwargs["on_trace_ready"] is handler
    handler(prof)  # what torch does when the recorded steps end
    assert len(handler.paths) == 1 and json.load(open(handler.paths[0])) == HAND_TRACE
    assert len(seen) == 1 and seen[0] is handler.results[0]
    assert seen[0].critical_path_ns == 200_000


def test_step_trigger_writes_progress_lines(fake_torch, tmp_path, monkeypatch):
    import emo.torch as et
    watch = tmp_path / "watch"
    watch.write_text("emo.watch/1\npack 0 0 7 0 gemm\npack 0 1 7 3 relu\npack 2 0 9 0 gemm\n")
    r, w = os.pipe()
    monkeypatch.setenv("EMO_PROGRESS_FD", str(w))
    monkeypatch.setenv("EMO_WATCH_FILE", str(watch))
    trig = et.StepTrigger()
    assert trig.active and trig.devices == [0, 2]
    trig.step()
    trig.pack(1, device=0)
    trig.step()
    os.close(w)
    lines = os.read(r, 4096).decode().splitlines()
    os.close(r)
    fields = [line.split() for line in lines]
    assert [f[:4] for f in fields] == [["P", "0", "0", "0"], ["P", "2", "0", "0"], ["P", "0", "1", "0"],
                                       ["P", "0", "0", "1"], ["P", "2", "0", "1"]]
    assert all(int(f[4]) > 0 for f in fields)  # CLOCK_MONOTONIC ns, as the tracer writes


def test_step_without_emo_run_does_nothing(fake_torch, monkeypatch):
    import emo.torch as et
    monkeypatch.delenv("EMO_PROGRESS_FD", raising=False)
    trig = et.StepTrigger()
    assert not trig.active
    trig.step()  # no pipe: nothing written, no error
    with pytest.raises(ValueError, match="pack -1"):
        trig.pack(-1)


def test_step_drives_emo_run(fake_torch, cli, tmp_path):
    """End to end: `emo run --dry-run --no-tracer` (NVML stand-in) switches clocks at the pack
    starts a Python training loop reports with emo.torch.step()."""
    import os
    fake_nvml = os.environ.get("EMO_FAKE_NVML")
    if not fake_nvml or not os.path.exists(fake_nvml):
        from conftest import missing
        missing("the NVML stand-in libemo_fake_nvml.so is not given (EMO_FAKE_NVML)")
    packs = [{"index": i, "start": {"op_name": "kernel_{}".format(i), "stream": 7, "ordinal": 0},
              "start_offset_ns": 10_000_000 * i, "duration_ns": 10_000_000, "ops": 3,
              "clock_mhz": c, "predicted_energy_j": 1.0} for i, c in enumerate([1200.0, 990.0, 1410.0])]
    policy = {"schema": "emo.policy/1", "emo_version": "0.1.0", "gpu": "A100-SXM4-80GB", "trace": "t.json",
              "iteration_marker": "", "max_slowdown": 0.05, "latency_target_ns": 31_500_000,
              "baseline": {"time_ns": 30_000_000, "energy_j": 4.0},
              "predicted": {"time_ns": 31_000_000, "energy_j": 3.0}, "switch_latency_ms": 2, "simulated": True,
              "gpus": [{"device": 0, "rank": -1, "default_clock_mhz": 1410, "packs": packs}]}
    (tmp_path / "p.json").write_text(json.dumps(policy))
    script = "import time, emo.torch\nfor _ in range(2):\n    emo.torch.step()\n    time.sleep(0.1)\n"
    env = dict(os.environ, EMO_NVML_LIBRARY=fake_nvml, EMO_FAKE_NVML_LOG=str(tmp_path / "nvml.log"),
               PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([cli.exe, "run", "--policy", str(tmp_path / "p.json"), "--dry-run", "--no-tracer", "--",
                          sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "GPU 0 pack 1 iteration 0 -> 990 MHz (early)" in out.stderr, out.stderr
    assert "GPU 0 pack 1 iteration 1 -> 990 MHz" in out.stderr, out.stderr


def _real_torch():
    """Real torch, or a skip (the stand-in tests above ran)."""
    torch = pytest.importorskip("torch", reason="real torch not installed (the stand-in tests above ran)")
    if getattr(torch.profiler, "STAND_IN", False):
        pytest.skip("stand-in torch on the path")
    return torch


def _train(torch, prof, steps):
    """`steps` steps of a tiny CPU loop (a matmul, a relu, a sum), each ending in prof.step()."""
    x = torch.randn(64, 64)
    for _ in range(steps):
        (x @ x).relu().sum()
        prof.step()


def test_real_torch_profiler_writes_a_trace(tmp_path):
    """Real torch (CPU-only where CUDA is absent): the helper's profiler records the scheduled
    steps and tensorboard_trace_handler writes one gzip Kineto trace, which emo reads."""
    torch = _real_torch()
    import emo.torch as et
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prof = et.profiler(tmp_path / "tb", steps=2, wait=1, warmup=1)
    assert isinstance(prof, torch.profiler.profile)
    cuda_warned = any("CUDA is not available" in str(w.message) for w in caught)
    assert cuda_warned == (not torch.cuda.is_available())
    with prof:
        _train(torch, prof, 5)  # wait 1, warmup 1, 2 recorded: one trace
    files = sorted((tmp_path / "tb").glob("*.pt.trace.json.gz"))
    assert len(files) == 1, os.listdir(tmp_path / "tb")
    trace = emo.load_trace(str(files[0]))
    assert trace.format == "kineto-json"
    if not torch.cuda.is_available():
        assert trace.counts["kernel"] == 0


def test_real_torch_on_trace_ready(tmp_path):
    """on_trace_ready runs when torch's recorded steps end; without CUDA the CPU-only trace is
    written (aten::mm in it) and lands in `errors` with a warning, with CUDA it is analysed."""
    torch = _real_torch()
    import emo.torch as et
    seen = []
    handler = et.on_trace_ready(tmp_path / "out", callback=seen.append)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with et.profiler(tmp_path / "out", steps=1, wait=0, warmup=1, on_trace_ready=handler) as prof:
            _train(torch, prof, 3)
    assert len(handler.paths) == 1
    with open(handler.paths[0]) as f:
        doc = json.load(f)  # Kineto's {"traceEvents": [...]}, or the bare event list of a torch without Kineto
    names = {e.get("name") for e in (doc["traceEvents"] if isinstance(doc, dict) else doc)}
    assert "aten::mm" in names
    if torch.cuda.is_available():
        assert len(handler.results) == 1 and seen == handler.results
    else:
        assert handler.results == [] and seen == [] and len(handler.errors) == 1
        assert "no GPU op" in str(handler.errors[0])
        assert any("not analysed" in str(w.message) for w in caught)


def test_real_torch_step(monkeypatch):
    """emo.torch.step() with real torch imported: one `P 0 0 ITERATION T_NS` line a step on
    $EMO_PROGRESS_FD (GPU 0 without a watch file)."""
    _real_torch()
    import emo.torch as et
    r, w = os.pipe()
    monkeypatch.setenv("EMO_PROGRESS_FD", str(w))
    monkeypatch.delenv("EMO_WATCH_FILE", raising=False)
    import emo.progress
    monkeypatch.setattr(emo.progress, "_trigger", None)  # emo.torch.step is emo.progress.step
    et.step()
    et.step()
    os.close(w)
    lines = os.read(r, 4096).decode().splitlines()
    os.close(r)
    assert [line.split()[:4] for line in lines] == [["P", "0", "0", "0"], ["P", "0", "0", "1"]]


def test_readme_python_lines_run(fake_torch, tmp_path, monkeypatch, capsys):
    """The README's first Python lines (profile a loop with emo.torch, print the savings), with the
    stand-in torch recording the 3-kernel trace: the loop runs every step and one optimize result
    is printed, marked simulated."""
    code = re.search(r"^```python\n(.*?)^```", (REPO / "README.md").read_text(), flags=re.S | re.M).group(1)
    assert "emo.torch.profiler" in code and "emo.optimize" in code
    fake_torch.profiler.TRACE = HAND_TRACE
    monkeypatch.chdir(tmp_path)
    steps = []
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__", "loader": range(5), "train_step": steps.append})
    out = capsys.readouterr().out.strip().splitlines()
    assert steps == [0, 1, 2, 3, 4]
    assert len(out) == 1 and out[0].startswith("<emo.OptimizeResult savings ") and out[0].endswith("[SIMULATED]>"), out
    assert len(list((tmp_path / "traces").iterdir())) == 1


def test_step_is_emo_progress_step(fake_torch):
    """emo.torch's pack-start reports are emo.progress's (torch-free; its rank routing is tested in
    test_progress.py and end to end under a launcher in tests/cli/torch_ranks_test.sh)."""
    import emo.progress
    import emo.torch as et
    assert et.step is emo.progress.step and et.StepTrigger is emo.progress.StepTrigger
