"""The emo package against hand-known values and against the CLI's JSON (the same library through
an independent path: the CLI process vs the extension in this interpreter)."""
import json
import threading
import time
import warnings

import pytest

import emo
from emo import _api

TRAINING = "kineto/hta_training_16rank_rank0.json.gz"
SMALL = "kineto/hta_simple_add.json.gz"


# --- A hand-written trace: figures known without EMO -------------------------------------------

def test_hand_trace_metadata_and_ops(hand_trace):
    t = emo.load_trace(hand_trace)
    assert t.format == "kineto-json"
    assert t.path == hand_trace
    assert len(t) == 6
    assert t.counts["kernel"] == 3
    assert t.counts["runtime"] == 3
    assert t.rank is None
    ops = t.ops
    kernels = [i for i in range(len(t)) if t.kind_names[ops["kind"][i]] == "kernel"]
    assert [int(ops["dur_ns"][i]) for i in kernels] == [100_000, 50_000, 40_000]
    assert [int(ops["start_ns"][i]) for i in kernels] == [10_000, 110_000, 160_000]
    assert [t.strings[ops["name_id"][i]] for i in kernels] == ["gemm", "relu", "gemm"]
    assert {int(ops["stream"][i]) for i in kernels} == {7}
    assert "kineto-json" in repr(t)


def test_hand_trace_analysis(hand_trace):
    a = emo.analyze(emo.load_trace(hand_trace))
    assert a.makespan_ns == 200_000  # 0 .. 200 µs
    assert a.critical_path_ns == 200_000
    assert a.replay_error == pytest.approx(0.0, abs=1e-12)
    kinds = [op["kind"] for op in a.critical_path]
    assert kinds.count("kernel") == 3
    assert len(a.gpus) == 1 and a.gpus[0]["busy_ns"] == 190_000
    assert sum(a.bound_by.values()) == pytest.approx(1.0, abs=1e-9)
    # All three kernels 2x longer: the GPU chain grows by 190 µs.
    w = emo.analyze(hand_trace, what_if=["kind=kernel:x2"])
    assert w.what_if[0]["makespan_ns"] == 390_000
    assert w.what_if[0]["change"] == pytest.approx(390 / 200 - 1)


def test_hand_trace_equals_cli(hand_trace, cli):
    a = emo.analyze(hand_trace, what_if=["name~gemm:x1.5"])
    assert a.to_dict() == cli("analyze", hand_trace, "--what-if", "name~gemm:x1.5", "--json", "-")
    assert emo.load_trace(hand_trace).summary() == cli("inspect", hand_trace, "--json", "-")


def test_ops_without_numpy(hand_trace, monkeypatch):
    monkeypatch.setattr(_api, "_numpy", lambda: None)
    ops = emo.load_trace(hand_trace).ops
    assert isinstance(ops["dur_ns"], list) and len(ops["dur_ns"]) == 6
    assert sorted(ops["dur_ns"]) == [5000, 5000, 5000, 40_000, 50_000, 100_000]


def test_ops_as_numpy(hand_trace):
    np = pytest.importorskip("numpy")
    ops = emo.load_trace(hand_trace).ops
    assert isinstance(ops["start_ns"], np.ndarray) and ops["start_ns"].dtype == np.int64
    assert int(ops["dur_ns"].sum()) == 205_000


def test_to_pandas(hand_trace):
    pytest.importorskip("pandas")
    df = emo.load_trace(hand_trace).to_pandas()
    assert len(df) == 6
    assert list(df[df.kind == "kernel"].name) == ["gemm", "relu", "gemm"]
    a = emo.analyze(hand_trace)
    assert a.gpus_frame().busy_ns.tolist() == [190_000]


# --- Real traces: the same figures as the CLI --------------------------------------------------

def test_frames(real_trace):
    pytest.importorskip("pandas")
    p = real_trace(TRAINING)
    a = emo.analyze(p)
    sw = a.slack_windows_frame()
    assert len(sw) == sum(len(w) for w in a.slack_windows.values()) > 0
    assert set(sw.device) <= set(a.slack_windows)
    assert (sw.dur_ns > 0).all() and (sw.end_ns - sw.start_ns == sw.dur_ns).all()
    packs = emo.pack(p).packs_frame()
    assert len(packs) == emo.pack(p).packs


def test_analyze_equals_cli(real_trace, cli):
    p = real_trace(TRAINING)
    a = emo.analyze(emo.load_trace(p))
    doc = cli("analyze", p, "--json", "-")
    assert a.critical_path_ns == doc["critical_path_ns"]
    assert a.makespan_ns == doc["makespan_ns"]
    assert a.to_dict() == doc


def test_analyze_window_and_what_if_equal_cli(real_trace, cli):
    p = real_trace(TRAINING)
    t = emo.load_trace(p)
    a = emo.analyze(t, annotation="ProfilerStep", instance=0, what_if=["kind=kernel:x1.5"])
    doc = cli("analyze", p, "--annotation", "ProfilerStep", "--instance", "0", "--what-if", "kind=kernel:x1.5",
              "--json", "-")
    assert a.to_dict() == doc
    assert a.what_if[0]["spec"] == "kind=kernel:x1.5"
    assert set(a.slack_windows) == {g["device"] for g in doc["gpus"]}


def test_pack_equals_cli(real_trace, cli):
    p = real_trace(TRAINING)
    r = emo.pack(p, min_pack_ms=5)
    doc = cli("pack", p, "--min-pack-ms", "5", "--json", "-")
    # Where min_pack came from names the parameter the caller used: the option in the CLI.
    assert (doc["min_pack_source"], r["min_pack_source"]) == ("--min-pack-ms", "min_pack_ms")
    assert dict(r.to_dict(), min_pack_source="--min-pack-ms") == doc
    assert r.packs == doc["packs"] and r.packs > 0
    assert emo.pack(p).to_dict() == cli("pack", p, "--json", "-")  # min_pack from the catalog


@pytest.fixture(scope="module")
def optimized(tmp_path_factory):
    """One optimize() run on a small shared trace (and its CLI twin), shared by the tests below."""
    from conftest import data_dir
    p = data_dir() / SMALL
    if not p.is_file():
        return None
    return str(p), emo.optimize(str(p), max_slowdown=0.05, gpu="A100-SXM4-80GB", seed=1)


def test_optimize_equals_cli(optimized, real_trace, cli, tmp_path):
    real_trace(SMALL)
    p, r = optimized
    policy_file = tmp_path / "policy.json"
    doc = cli("optimize", p, "--max-slowdown", "0.05", "--gpu", "A100-SXM4-80GB", "--seed", "1",
              "--policy", str(policy_file), "--json", "-")
    assert r.to_dict() == doc
    assert r.savings == doc["savings"] and r.slowdown == doc["slowdown"]
    assert r.simulated is True
    assert r.frontier == doc["frontier"] and len(r.frontier) >= 1
    assert r.policy == json.loads(policy_file.read_text())
    assert "[SIMULATED]" in repr(r)
    try:
        import pandas  # noqa: F401
    except ImportError:
        return
    assert r.frontier_frame().energy_j.tolist() == [f["energy_j"] for f in doc["frontier"]]


def test_policy_round_trip(optimized, real_trace, tmp_path):
    real_trace(SMALL)
    _, r = optimized
    f = tmp_path / "p.json"
    r.policy.save(f)
    back = emo.Policy.load(f)
    assert back == r.policy
    assert back["schema"] == "emo.policy/1"


def test_report_html(optimized, real_trace):
    real_trace(SMALL)
    _, r = optimized
    html = r._repr_html_()
    # The report's script draws its SVGs (timeline, frontier) from the embedded data at load time.
    for marker in ('id="timeline-box"', 'id="frontier-box"', 'id="emo-data"', "el('svg'", "Simulated device"):
        assert marker in html, marker
    assert html == r.report_html()


# --- Errors ------------------------------------------------------------------------------------

def test_missing_file_is_input_error(tmp_path):
    missing = str(tmp_path / "nope.json.gz")
    assert issubclass(emo.InputError, Exception)
    with pytest.raises(emo.InputError) as e:
        emo.load_trace(missing)
    assert missing in str(e.value) and "\n" not in str(e.value)


def test_malformed_file_is_input_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(emo.InputError, match="bad.json"):
        emo.load_trace(str(bad))


def test_bad_arguments_are_value_errors(hand_trace):
    t = emo.load_trace(hand_trace)
    with pytest.raises(ValueError, match="max_slowdown"):
        emo.optimize(t, max_slowdown=-1)
    with pytest.raises(ValueError, match="gpu"):
        emo.optimize(t, gpu="no-such-gpu")
    with pytest.raises(ValueError, match="what_if"):
        emo.analyze(t, what_if=["nonsense"])
    with pytest.raises(ValueError, match="min_pack_ms"):
        emo.pack(t, min_pack_ms=0)
    with pytest.raises(ValueError, match="instance"):
        emo.analyze(t, annotation="x", instance=-1)
    with pytest.raises(ValueError):
        emo.analyze(42)
    # An empty window name would select nothing and leave the whole trace (the CLI refuses it too).
    with pytest.raises(ValueError, match="window '': an empty name selects nothing"):
        emo.analyze(t, window="")
    with pytest.raises(ValueError, match="annotation '': an empty name selects nothing"):
        emo.pack(t, annotation="", instance=0)


def test_missing_window_is_input_error(hand_trace):
    with pytest.raises(emo.InputError, match="three_kernels.json"):
        emo.analyze(hand_trace, window="ProfilerStep#99")


# --- The GIL is released during long calls -----------------------------------------------------

def test_long_calls_release_the_gil(real_trace):
    t = emo.load_trace(real_trace(TRAINING))
    done = threading.Event()
    ticks = 0

    def work():
        emo.analyze(t)
        done.set()

    th = threading.Thread(target=work)
    th.start()
    while not done.is_set():  # this thread runs Python while the other is inside C++
        ticks += 1
        time.sleep(0.001)
    th.join()
    assert ticks > 5


# --- Jobs of several ranks (what `emo optimize A B ...` does, from Python) ---------------------

PAIR = ("kineto/hta_sampled_2rank_rank0.json.gz", "kineto/hta_sampled_2rank_rank1.json.gz")


def test_load_job_links_as_the_cli_does(real_trace, cli):
    a, b = (real_trace(p) for p in PAIR)
    j = emo.load_job([a, b])
    doc = cli("analyze", a, b, "--json", "-")
    assert j.job is not None and emo.load_trace(a).job is None
    assert [r["rank"] for r in j.job["ranks"]] == [0, 1]
    assert j.job["collectives_linked"] == doc["job"]["collectives_linked"] > 0
    assert emo.analyze(j).to_dict() == doc
    assert emo.analyze([a, b]).makespan_ns == doc["makespan_ns"]  # a list is linked the same way
    assert emo.pack([a, b]).packs == cli("pack", a, b, "--json", "-")["packs"]


@pytest.mark.parametrize("solve", ["joint", "decomposed"])
def test_optimize_of_a_job_equals_the_cli(real_trace, cli, tmp_path, solve):
    a, b = (real_trace(p) for p in PAIR)
    r = emo.optimize([a, b], max_slowdown=0.05, gpu="A100-SXM4-80GB", solve=solve)
    policy_file = tmp_path / "policy.json"
    # --report: the CLI then loads the traces as Python does (whole for the joint solve, with the
    # job view for the decomposed one), so the two JSON objects are the same to the last digit.
    doc = cli("optimize", a, b, "--max-slowdown", "0.05", "--gpu", "A100-SXM4-80GB", "--solve", solve,
              "--policy", str(policy_file), "--report", str(tmp_path / "r.html"), "--json", "-")
    assert r.to_dict() == doc
    assert r.savings == doc["savings"] and r.simulated is True
    assert r.policy == json.loads(policy_file.read_text()) and len(r.policy["gpus"]) == 2
    assert r.job["collectives_linked"] == doc["job"]["collectives_linked"]
    assert (r.frontier is None) == (solve == "decomposed")
    assert "<html" in r.report_html()[:200].lower()
    # "auto" with 2 ranks (<= JOINT_SOLVE_MAX_RANKS) is the joint solve.
    if solve == "joint":
        assert emo.optimize([a, b], max_slowdown=0.05, gpu="A100-SXM4-80GB").to_dict() == doc


def test_job_arguments_are_checked(real_trace, hand_trace):
    a, b = (real_trace(p) for p in PAIR)
    with pytest.raises(ValueError, match="ranks"):
        emo.load_job([a, b], ranks=[0])
    with pytest.raises(ValueError, match="solve 'fastest'"):
        emo.optimize([a, b], solve="fastest")
    with pytest.raises(ValueError, match="solve 'decomposed': needs the files of a job's ranks"):
        emo.optimize(a, solve="decomposed")
    with pytest.raises(ValueError, match="the decomposed solve optimises the whole traces"):
        emo.optimize([a, b], solve="decomposed", window="ProfilerStep#1")
    with pytest.raises(ValueError, match="ranks"):
        emo.optimize(a, ranks=[0])
    with pytest.raises(ValueError, match="already a linked job"):
        emo.load_job([emo.load_job([a, b]), b])
    # The same rank twice, and a trace of no job beside a rank: not one job.
    with pytest.raises(emo.InputError, match="hta_sampled_2rank_rank0"):
        emo.load_job([a, a])
    with pytest.raises(emo.InputError, match="three_kernels.json"):
        emo.optimize([a, hand_trace], solve="decomposed")
    with pytest.raises(emo.InputError, match="no_such.json"):
        emo.load_job([a, "no_such.json"])
    with pytest.raises(emo.InputError, match="given twice"):
        emo.load_job([a, a], ranks=[0, 1])  # one file, two ranks: not linked to itself
    # Values the C++ side cannot take are ValueErrors here, not pybind11's TypeError.
    for bad in ({"gpu": ""}, {"seed": 2**64}, {"ranks": 4}, {"ranks": {0, 1}}, {"ranks": [0, 2**31]},
                {"ranks": [0, True]}, {"solve_threads": 2**31}, {"profile_clocks": 11}, {"instance": 5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            emo.optimize([a, b], solve="decomposed", **bad)
    with pytest.raises(ValueError, match="NUL"):
        emo.load_trace(a + "\0x")
    with pytest.raises(ValueError, match="UTF-8"):
        emo.load_job([a, b"\xff.json"])
    assert emo.load_job([a, b], ranks=range(2)).job["ranks"][1]["rank"] == 1


def test_what_loading_changed_is_warned(hand_trace, tmp_path):
    # A kernel of negative duration (set to 0): load_trace says so, as the CLI does on stderr; the
    # unchanged trace loads without a warning.
    doc = json.loads(open(hand_trace).read())
    doc["traceEvents"][3]["dur"] = -4
    p = tmp_path / "negative.json"
    p.write_text(json.dumps(doc))
    with pytest.warns(RuntimeWarning, match="negative.json: 1 event had a negative duration; set to 0") as w:
        t = emo.load_trace(p)
    assert w[0].filename == __file__  # reported at the caller's line, not inside emo
    with pytest.warns(RuntimeWarning) as w:
        emo.analyze(str(p))
    assert w[0].filename == __file__
    assert "1 event had a negative duration; set to 0" in t.warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        emo.load_trace(hand_trace)
