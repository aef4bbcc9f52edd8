"""The CLI and the Python package choose a GPU from its name the same way (issue 27): for every
catalog id and listed NVML name (data/gpu_catalog.json), spelling variants, same-family names
with another memory size (the fallback `emo optimize --gpu` always had and the Python module did
not), the same catalog entry and reason; for an unknown name, the same error. The expected ids of
the hand-picked names are read off the catalog file, not from either front end."""
import json
import pathlib
import subprocess

import pytest

import emo

REPO = pathlib.Path(__file__).resolve().parents[2]

CATALOG = json.loads((REPO / "data" / "gpu_catalog.json").read_text())["gpus"]

# Names nobody lists, whose family (the name without its memory size) is a catalog entry's.
FAMILY = {"Tesla V100-SXM2-16GB": "V100-SXM2-32GB", "H100-SXM5-94GB": "H100-SXM5-80GB",
          "NVIDIA H200-SXM-96GB": "H200-SXM-141GB"}


def names():
    """(name, expected catalog id) of every id, NVML name, a spelling variant of each id, and FAMILY."""
    out = []
    for g in CATALOG:
        out.append((g["id"], g["id"]))
        out.append((g["id"].lower().replace("-", " "), g["id"]))
        out += [(n, g["id"]) for n in g.get("nvml_names", [])]
    return out + sorted(FAMILY.items())


def cli_resolve(exe, name):
    p = subprocess.run([exe, "gpus", "--resolve", name, "--json", "-"], capture_output=True, text=True)
    return p


@pytest.mark.parametrize("name,want", names())
def test_cli_and_python_resolve_alike(cli, name, want):
    p = cli_resolve(cli.exe, name)
    assert p.returncode == 0, p.stderr
    from_cli = json.loads(p.stdout)
    from_python = emo.resolve_gpu(name)
    assert from_cli["id"] == want and from_python["id"] == want
    assert from_cli == dict(from_python, name=name)
    assert from_python["assumed"] == (name in FAMILY)


def test_unknown_gpu_same_error(cli):
    p = cli_resolve(cli.exe, "Z9000")
    assert p.returncode == 2
    # CLI: "emo: error: --gpu Z9000: <problem> (see emo --help)"; Python: "gpu Z9000: <problem>"
    prefix = "emo: error: --gpu Z9000: "
    assert p.stderr.startswith(prefix), p.stderr
    cli_problem = p.stderr[len(prefix):].rsplit(" (see emo --help)", 1)[0]
    with pytest.raises(ValueError) as e:
        emo.resolve_gpu("Z9000")
    assert str(e.value) == "gpu Z9000: " + cli_problem
    assert cli_problem.startswith("unknown GPU; known: ") and all(g["id"] in cli_problem for g in CATALOG)


def test_optimize_takes_a_family_name_as_the_cli_does(hand_trace, cli):
    """optimize(gpu=) goes through the same resolution: a same-family name works in both front
    ends and optimises for the same entry (the Python module refused it before)."""
    name = "Tesla V100-SXM2-16GB"
    r = emo.optimize(hand_trace, max_slowdown=0.05, gpu=name, seed=1)
    doc = cli("optimize", hand_trace, "--gpu", name, "--max-slowdown", "0.05", "--seed", "1", "--json", "-")
    assert r.to_dict()["gpu"] == doc["gpu"] == FAMILY[name]
    with pytest.raises(ValueError) as e:
        emo.optimize(hand_trace, gpu="Z9000")
    assert str(e.value).startswith("gpu Z9000: unknown GPU; known: ")


def test_max_slowdown_and_min_pack_checked_alike(hand_trace, cli):
    """One parser (driver::parse_max_slowdown, parse_min_pack_ms) for both: a fraction above 1
    is refused by both with the same reason, and so is a zero shortest pack."""
    for args, kwargs, field in [(["--max-slowdown", "3"], {"max_slowdown": 3}, "max_slowdown"),
                                (["--max-slowdown", "0.05", "--min-pack-ms", "0"], {"min_pack_ms": 0}, "min_pack_ms")]:
        p = subprocess.run([cli.exe, "optimize", hand_trace, "--gpu", "A100-SXM4-80GB", *args],
                           capture_output=True, text=True)
        assert p.returncode == 2
        with pytest.raises(ValueError) as e:
            emo.optimize(hand_trace, gpu="A100-SXM4-80GB", **kwargs)
        problem = str(e.value).split(": ", 1)[1]
        assert problem in p.stderr, (p.stderr, str(e.value))
        assert str(e.value).startswith(field + " ")
