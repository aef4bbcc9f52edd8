"""Shared fixtures of the Python tests: the CLI (to compare figures with), the shared data and a
tiny hand-written trace. Missing data or CLI is a loud skip, and a failure with CI=true."""
import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CI = os.environ.get("CI") == "true"


def missing(what):
    """Skips the test loudly, or fails it under CI=true."""
    if CI:
        pytest.fail("CI=true and " + what)
    pytest.skip("SKIPPED (not a pass): " + what)


def data_dir():
    """The shared data directory: EMO_DATA_DIR, else ../shared/data beside the checkout."""
    d = os.environ.get("EMO_DATA_DIR") or os.environ.get("EMO_DEFAULT_DATA_DIR") or str(REPO.parent / "shared" / "data")
    return pathlib.Path(d)


@pytest.fixture
def real_trace():
    """real_trace("kineto/NAME") -> path of a shared trace (skips loudly when absent)."""
    def get(rel):
        p = data_dir() / rel
        if not p.is_file():
            missing("shared trace {} not found (set EMO_DATA_DIR)".format(p))
        return str(p)
    return get


@pytest.fixture
def cli():
    """cli("analyze", P, "--json", "-") -> the parsed JSON the `emo` CLI prints."""
    exe = os.environ.get("EMO_CLI") or str(REPO / "build" / "emo")
    if not os.access(exe, os.X_OK):
        missing("the emo CLI {} is not built".format(exe))

    def run(*args):
        out = subprocess.run([exe, *args], check=True, capture_output=True, text=True).stdout
        return json.loads(out)
    run.exe = exe
    return run


# Three kernels on one stream, launched from one CPU thread (µs): launches at 0, 10, 20 (5 each);
# kernels 10–110, 110–160, 160–200. The GPU runs back to back from 10 to 200, so the makespan
# (from the first start, 0) is 200 µs and the critical path is the first launch, its launch gap
# and the three kernels: all 200 µs.
HAND_TRACE = {
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920,
                          "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
    "traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 0, "dur": 5,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 10, "dur": 5,
         "args": {"correlation": 2}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 20, "dur": 5,
         "args": {"correlation": 3}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 100,
         "args": {"device": 0, "stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 110, "dur": 50,
         "args": {"device": 0, "stream": 7, "correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 160, "dur": 40,
         "args": {"device": 0, "stream": 7, "correlation": 3}},
    ],
}


@pytest.fixture
def hand_trace(tmp_path):
    """Path of the 3-kernel trace above, written to a temporary directory."""
    p = tmp_path / "three_kernels.json"
    p.write_text(json.dumps(HAND_TRACE))
    return str(p)
