"""Runs every ```python block of docs/python.md, in order, in one namespace (a notebook), in a
temporary directory. A block whose first line is `# needs: MODULE` runs only where MODULE imports;
without matplotlib (which scripts/setup-deps.sh installs) the test is skipped loudly after the other
blocks ran, and fails under CI=true."""
import importlib.util
import os
import re
import xml.etree.ElementTree as ET

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
    if skipped:
        print("docs/python.md: blocks not run, module missing:", ", ".join(skipped))
    if "matplotlib" in skipped:
        missing("matplotlib is not installed: docs/python.md's plot block did not run (scripts/setup-deps.sh)")
    png = (tmp_path / "frontier.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    svg = ET.parse(tmp_path / "frontier.svg").getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    # The static curve: on the simulated A100, profiled at 1410, 1065 and 705 MHz, every supported
    # clock of that range (15 MHz steps) was run; the plot labels both curves.
    r = ns["r"]
    assert [p["clock_mhz"] for p in r.static_curve] == list(range(1410, 704, -15))
    assert r.static_curve == r.to_dict()["static_curve"]
    text = (tmp_path / "frontier.svg").read_text()
    assert "static clocks (measured)" in text and "EMO frontier (predicted)" in text
