"""emo.progress (emo.torch.step without torch): a process's rank from the launcher's variables, its
GPU's identity, and the lines it writes for a job's policy (its own section only, after a hello)
or for a one-process policy (every section, as before). Expected lines are written by hand from
the protocol in docs/runtime.md ("Many GPUs, many processes")."""
import os
import sys
import types
import warnings

import pytest

import emo.progress as ep

UUID_A = "GPU-fake-0000-0000-0000-000000000002"
UUID_B = "GPU-fake-0000-0000-0000-000000000001"
# A job's watch list: section 0 is rank 0, section 1 rank 1, each with two pack starts.
JOB_WATCH = ("emo.watch/1\nmarker \ngpu 0 0\ngpu 1 1\npack 0 0 7 0 gemm\npack 0 1 7 3 relu\n"
             "pack 1 0 7 0 gemm\ncopy 1 1 7 0 copy\n")


def lines_of(env, watch, *calls, **kwargs):
    """Runs `calls` (("step",), ("pack", 2), ("pack", 1, 0)) on a StepTrigger with environment `env`
    and watch list text `watch`; returns (the lines written, split into fields, the trigger)."""
    r, w = os.pipe()
    path = os.path.join(env.pop("_dir"), "watch")
    with open(path, "w") as f:
        f.write(watch)
    env = dict(env, EMO_PROGRESS_FD=str(w), EMO_WATCH_FILE=path)
    trig = ep.StepTrigger(environ=env, **kwargs)
    for name, *args in calls:
        getattr(trig, name)(*args)
    os.close(w)
    out = os.read(r, 65536).decode().splitlines()
    os.close(r)
    return [line.split() for line in out], trig


def test_rank_from_the_launchers_variables():
    assert ep.process_rank({}) == (None, None)
    assert ep.process_rank({"RANK": "3", "LOCAL_RANK": "1", "SLURM_PROCID": "9"}) == (3, 1)  # torchrun first
    assert ep.process_rank({"SLURM_PROCID": "5", "SLURM_LOCALID": "2"}) == (5, 2)            # srun
    assert ep.process_rank({"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}) == (4, 0)
    assert ep.process_rank({"RANK": "-1", "PMI_RANK": "6"}) == (6, None)  # not a rank: skipped


def test_gpu_identity_from_cuda_visible_devices_and_arguments(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    env = {"CUDA_VISIBLE_DEVICES": UUID_A + "," + UUID_B, "LOCAL_RANK": "1"}
    assert ep.gpu_identity(environ=env) == UUID_B                       # CUDA_VISIBLE_DEVICES[LOCAL_RANK]
    assert ep.gpu_identity(0, environ=env) == UUID_A                    # an explicit CUDA ordinal
    assert ep.gpu_identity("0000:3b:00.0", environ=env) == "0000:3b:00.0"  # an explicit id, as given
    assert ep.gpu_identity(environ={"CUDA_VISIBLE_DEVICES": UUID_B, "LOCAL_RANK": "3"}) == UUID_B  # one GPU each
    assert ep.gpu_identity(environ={"CUDA_VISIBLE_DEVICES": "2,0", "LOCAL_RANK": "1"}) is None     # an index: unknown
    assert ep.gpu_identity(environ={"CUDA_VISIBLE_DEVICES": UUID_A, "LOCAL_RANK": "0"}, gpu=1) is None


def test_gpu_identity_from_torch_when_the_program_imported_it(monkeypatch):
    raw = bytes(range(16))
    props = types.SimpleNamespace(uuid=types.SimpleNamespace(bytes=raw))
    cuda = types.SimpleNamespace(is_available=lambda: True, get_device_properties=lambda i: props if i == 1 else None)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    # bytes 00 01 … 0f as NVML prints a UUID: 8-4-4-4-12 hex digits
    assert ep.gpu_identity(environ={"LOCAL_RANK": "1"}) == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
    props.uuid = "00010203-0405-0607-0809-0a0b0c0d0e0f"  # a torch whose uuid is text only
    assert ep.gpu_identity(environ={"LOCAL_RANK": "1"}) == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"


def test_a_jobs_process_reports_its_own_section_only(tmp_path):
    env = {"_dir": str(tmp_path), "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2",
           "CUDA_VISIBLE_DEVICES": UUID_A + "," + UUID_B}
    got, trig = lines_of(env, JOB_WATCH, ("step",), ("pack", 1), ("pack", 1, 0), ("step",))
    pid = str(os.getpid())
    assert [f[:4] + f[5:] if f[0] == "P" else f for f in got] == [
        ["H", pid, "1", "1", UUID_B],   # hello: pid, rank 1, section 1, the GPU CUDA_VISIBLE_DEVICES[1] names
        ["P", "1", "0", "0", pid],      # pack 0 of iteration 0, section 1 only
        ["P", "1", "1", "0", pid],      # pack 1
        ["P", "1", "0", "1", pid],      # (pack 1 on section 0: not this rank's, nothing)
    ]
    assert all(int(f[4]) > 0 for f in got if f[0] == "P")
    assert trig.section == 1 and trig.devices == [1]


def test_rank_and_gpu_arguments_override_the_environment(tmp_path):
    env = {"_dir": str(tmp_path), "RANK": "1", "LOCAL_RANK": "1"}
    got, _ = lines_of(env, JOB_WATCH, ("step",), rank=0, gpu="GPU-x")
    assert [f[:4] for f in got] == [["H", str(os.getpid()), "0", "0"], ["P", "0", "0", "0"]]
    assert got[0][4] == "GPU-x"


def test_a_rank_the_policy_lacks_reports_nothing_and_says_so(tmp_path):
    with pytest.warns(RuntimeWarning, match=r"rank 5 has no section in the policy \(its ranks: \[0, 1\]\)"):
        got, _ = lines_of({"_dir": str(tmp_path), "RANK": "5"}, JOB_WATCH, ("step",), ("pack", 1))
    assert got == []
    with pytest.warns(RuntimeWarning, match=r"rank \(none in the environment\) has no section"):
        got, _ = lines_of({"_dir": str(tmp_path)}, JOB_WATCH, ("step",))
    assert got == []


def test_an_unknown_gpu_is_said_and_sent_as_unknown(tmp_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    env = {"_dir": str(tmp_path), "RANK": "0", "LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "3,1"}
    with pytest.warns(RuntimeWarning, match="cannot tell which GPU rank 0 runs on"):
        got, _ = lines_of(env, JOB_WATCH, ("step",))
    assert got[0] == ["H", str(os.getpid()), "0", "0", "-"]  # emo run refuses it with a warning


def test_a_policy_without_ranks_keeps_the_one_process_lines(tmp_path):
    watch = "emo.watch/1\nmarker \ngpu 0 -1\ngpu 2 -1\npack 0 0 7 0 gemm\nmemset 2 0 9 0 memset\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, trig = lines_of({"_dir": str(tmp_path), "RANK": "1"}, watch, ("step",), ("pack", 1, 2))
    assert trig.section is None and trig.devices == [0, 2]
    assert [f[:4] for f in got] == [["P", "0", "0", "0"], ["P", "2", "0", "0"], ["P", "2", "1", "0"]]
    assert all(len(f) == 5 for f in got)  # no pid: the one-process form


def test_not_under_emo_run_nothing_is_written_or_said(tmp_path):
    with open(tmp_path / "watch", "w") as f:
        f.write(JOB_WATCH)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trig = ep.StepTrigger(environ={"RANK": "7", "EMO_WATCH_FILE": str(tmp_path / "watch")})
        trig.step()
    assert not trig.active
