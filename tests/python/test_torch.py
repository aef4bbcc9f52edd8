"""emo.torch with a stand-in `torch` package (real torch is not installed on the test machines; the
stand-in records what emo.torch configures and plays the profiler's export). When real torch is
importable, test_real_torch_profiler checks the configuration against it too."""
import importlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

import emo
from conftest import HAND_TRACE

FAKE_TORCH = {
    "torch/__init__.py": "from . import _C, profiler\n",
    "torch/_C/__init__.py": "from . import _profiler\n",
    "torch/_C/_profiler.py": textwrap.dedent("""
        class _ExperimentalConfig:
            def __init__(self, **kwargs):
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


def test_real_torch_profiler(tmp_path):
    torch = pytest.importorskip("torch", reason="real torch not installed (the stand-in tests above ran)")
    if getattr(torch.profiler, "STAND_IN", False):
        pytest.skip("stand-in torch on the path")
    import emo.torch as et
    prof = et.profiler(tmp_path, steps=1)
    assert isinstance(prof, torch.profiler.profile)
