#!/usr/bin/env python3
"""A stand-in for torchrun/mpirun in the tests of `emo run` on many GPUs (no GPU here).

  fake_launcher.py --nproc N --visible 2,0,3,1 [--rank-env torch|ompi] [--ranks 0,1,2,3] [--exit R=CODE]
                   [--stagger S] [--hold S]

starts N worker processes (this script again, --worker), each with CUDA_VISIBLE_DEVICES set to
--visible and its rank environment (torch: RANK/LOCAL_RANK/WORLD_SIZE; ompi:
OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_LOCAL_RANK), like a launcher does, waits for all and exits
with the first non-zero worker exit code (0 when all succeed).

A worker does what EMO's tracer does in a CUDA process (src/tracer/process_identity.h): its rank
from the environment; its CUDA device = LOCAL_RANK (as torch.cuda.set_device(local_rank)), whose
identity is that of the NVML GPU CUDA_VISIBLE_DEVICES[LOCAL_RANK] -- the recording NVML stand-in
names GPU i "GPU-fake-0000-0000-0000-<i, 12 digits>" -- never the CUDA ordinal; the policy
section of its rank from the watch list ($EMO_WATCH_FILE, "gpu DEVICE RANK" lines); then, on the
progress pipe ($EMO_PROGRESS_FD), one write per line:
    H PID RANK SECTION UUID
    P SECTION 0 0 T_NS PID          (pack 0 of iteration 0, T_NS = CLOCK_MONOTONIC)
and sleeps --hold seconds so that `emo run` plays the rest of the section's switches.

  fake_launcher.py --nproc N --visible 1,0 -- CMD ARGS...

starts N processes of CMD instead (e.g. tests/cli/fake_workload.py), each with the same
environment as a worker (torch variables, WORLD_SIZE), and FAKE_BARRIER_DIR, a directory made
fresh for this launch, for their collectives.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def worker(hold_s):
    rank = int(os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "-1")))
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")))
    visible = os.environ["CUDA_VISIBLE_DEVICES"].split(",")
    nvml_index = int(visible[local])
    uuid = "GPU-fake-0000-0000-0000-%012d" % nvml_index
    section = None
    with open(os.environ["EMO_WATCH_FILE"]) as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "gpu" and int(w[2]) == rank:
                section = int(w[1])
    if section is None:
        sys.exit(f"worker rank {rank}: no section")
    fd = int(os.environ["EMO_PROGRESS_FD"])
    pid = os.getpid()
    os.write(fd, f"H {pid} {rank} {section} {uuid}\n".encode())
    os.write(fd, f"P {section} 0 0 {time.monotonic_ns()} {pid}\n".encode())
    time.sleep(hold_s)


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--worker", action="store_true")
    a.add_argument("--nproc", type=int, default=4)
    a.add_argument("--visible", default="0,1,2,3")
    a.add_argument("--rank-env", choices=["torch", "ompi"], default="torch")
    a.add_argument("--ranks", default="", help="rank of each worker (default 0..N-1)")
    a.add_argument("--hold", type=float, default=0.3)
    a.add_argument("--exit", default="", help="R=CODE: worker R exits with CODE")
    a.add_argument("--stagger", type=float, default=0, help="seconds between worker starts (a known order)")
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    o = a.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if o.worker:
        worker(o.hold)
        code = os.environ.get("FAKE_EXIT_CODE")
        sys.exit(int(code) if code else 0)
    ranks = [int(r) for r in o.ranks.split(",")] if o.ranks else list(range(o.nproc))
    bad_rank, bad_code = (o.exit.split("=") + [""])[:2] if o.exit else ("", "")
    procs = []
    barrier_dir = tempfile.mkdtemp(prefix="fake-barrier-") if command else None
    for local, rank in enumerate(ranks):
        if local > 0:
            time.sleep(o.stagger)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=o.visible)
        if o.rank_env == "torch":
            env.update(RANK=str(rank), LOCAL_RANK=str(local), WORLD_SIZE=str(len(ranks)))
        else:
            env.update(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_LOCAL_RANK=str(local))
        if bad_rank == str(rank):
            env["FAKE_EXIT_CODE"] = bad_code
        if command:
            env.update(FAKE_BARRIER_DIR=barrier_dir, WORLD_SIZE=str(len(ranks)))
        argv = command or [sys.executable, __file__, "--worker", "--hold", str(o.hold)]
        procs.append(subprocess.Popen(argv, env=env, pass_fds=(int(os.environ["EMO_PROGRESS_FD"]),)))
    codes = [p.wait() for p in procs]
    if barrier_dir:
        shutil.rmtree(barrier_dir, ignore_errors=True)
    sys.exit(next((c for c in codes if c != 0), 0))


if __name__ == "__main__":
    main()
