"""Runs every ```python block of docs/python.md, in order, in one namespace (a notebook), in a
temporary directory. A block whose first line is `# needs: MODULE` runs only where MODULE imports."""
import importlib.util
import os
import re

import pytest

from conftest import REPO, data_dir, missing

DOC = REPO / "docs" / "python.md"


def blocks():
    return re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


def test_doc_has_blocks():
    assert len(blocks()) >= 5


def test_python_md_runs(tmp_path, monkeypatch, capsys):
    if not (data_dir() / "kineto" / "hta_training_16rank_rank0.json.gz").is_file():
        missing("shared data not found at {} (set EMO_DATA_DIR)".format(data_dir()))
    monkeypatch.setenv("EMO_DATA_DIR", str(data_dir()))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__docs__"}
    skipped = []
    for i, code in enumerate(blocks()):
        need = re.match(r"# needs: (\w+)", code)
        if need and importlib.util.find_spec(need.group(1)) is None:
            skipped.append(need.group(1))
            continue
        exec(compile(code, "{}[block {}]".format(DOC.name, i), "exec"), ns)
    out = capsys.readouterr().out
    assert "critical path" in out and "[SIMULATED]" in out
    assert (tmp_path / "policy.json").is_file() and (tmp_path / "report.html").is_file()
    if "matplotlib" not in skipped:
        assert (tmp_path / "frontier.png").stat().st_size > 0
    if skipped:
        print("docs/python.md: blocks not run, module missing:", ", ".join(skipped))
