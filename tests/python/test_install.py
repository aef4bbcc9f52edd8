"""One version from one place, and (under scripts/wheel-test.sh, EMO_TEST_INSTALLED=1) the installed
wheel rather than the build tree."""
import importlib.metadata
import json
import os
import re
import subprocess
import sys

import pytest

import emo
from conftest import REPO


def cmake_version():
    """The version in CMakeLists.txt's `project(emo VERSION X.Y.Z)`, read here independently of
    the build (pyproject.toml takes the wheel's version from the same line)."""
    m = re.search(r"project\(emo VERSION ([0-9]+\.[0-9]+\.[0-9]+)", (REPO / "CMakeLists.txt").read_text())
    assert m, "CMakeLists.txt has no project(emo VERSION ...)"
    return m.group(1)


def test_one_version(cli, hand_trace, tmp_path):
    """emo.__version__, `emo --version` and the emo_version of a policy (written by the Python
    optimiser and by the CLI) are all CMakeLists.txt's project version."""
    v = cmake_version()
    assert emo.__version__ == v
    out = subprocess.run([cli.exe, "--version"], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "emo " + v
    r = emo.optimize(emo.load_trace(hand_trace), max_slowdown=0.05, gpu="A100-SXM4-80GB")
    r.policy.save(str(tmp_path / "py.json"))
    assert json.loads((tmp_path / "py.json").read_text())["emo_version"] == v
    subprocess.run([cli.exe, "optimize", hand_trace, "--max-slowdown", "0.05", "--gpu", "A100-SXM4-80GB",
                    "--policy", str(tmp_path / "cli.json"), "--json", "-"], check=True, capture_output=True)
    assert json.loads((tmp_path / "cli.json").read_text())["emo_version"] == v


def test_pyproject_takes_the_version_from_cmakelists():
    """pyproject.toml has no version of its own: scikit-build-core reads CMakeLists.txt's."""
    text = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^dynamic = \["version"\]', text, flags=re.M)
    assert not re.search(r"^version\s*=", text, flags=re.M)
    assert 'input = "CMakeLists.txt"' in text


@pytest.mark.skipif(os.environ.get("EMO_TEST_INSTALLED") != "1", reason="build-tree run (scripts/wheel-test.sh sets EMO_TEST_INSTALLED=1)")
def test_installed_wheel_is_under_test(cli):
    """Under scripts/wheel-test.sh: the package, its metadata and the `emo` command are the venv's,
    not the build tree's."""
    prefix = os.path.realpath(sys.prefix)
    assert os.path.realpath(emo.__file__).startswith(prefix + os.sep), emo.__file__
    assert os.path.realpath(emo._emo.__file__).startswith(prefix + os.sep), emo._emo.__file__
    assert importlib.metadata.version("emo") == emo.__version__ == cmake_version()
    assert os.path.realpath(cli.exe).startswith(prefix + os.sep), cli.exe
    from emo import _cli
    assert os.access(_cli.executable(), os.X_OK)
