#!/usr/bin/env python3
"""A fake GPU workload for `emo optimize --device nvml` tests (no GPU): it plays the program and
EMO's CUPTI tracer at once.

Usage: fake_workload.py ITERATIONS EXIT_CODE NAME=MEM_MS:COMP_MS...

Each iteration "runs" the listed kernels in order; kernel NAME takes MEM_MS + COMP_MS * 1410 / f
milliseconds, where f is the SM clock the recording NVML stand-in says is in effect
($EMO_FAKE_NVML_STATE, read just before the kernel starts; 1410 when absent). A kernel whose name
starts a pack of the watch list ($EMO_WATCH_FILE, emo.watch/1, matched by name as the tracer
matches launches) is reported when it starts, as the tracer reports it:
`P DEVICE PACK ITERATION T_NS` on $EMO_PROGRESS_FD, T_NS = CLOCK_MONOTONIC ns. Kernels the watch
list does not name run silently (a trace that does not match the workload: nothing is reported).
Durations are kept to ~10 us by sleeping to 0.5 ms before the end and spinning the rest.
Exits with EXIT_CODE after the last iteration.

One process of a job (RANK set in the environment, as tests/cli/fake_launcher.py --run sets it with
LOCAL_RANK, WORLD_SIZE and CUDA_VISIBLE_DEVICES): its GPU is the stand-in's NVML GPU
CUDA_VISIBLE_DEVICES[LOCAL_RANK], whose clock it reads from $EMO_FAKE_NVML_STATE.<GPU>; it follows
the watch list's section of its rank ("gpu SECTION RANK" lines) and writes, as the tracer does,
`H PID RANK SECTION UUID` (the stand-in's UUID of its GPU) before its first
`P SECTION PACK ITERATION T_NS PID` (no hello with FAKE_NO_HELLO=1). A spec "R/NAME=MEM:COMP" is run by rank R only. A kernel
whose name starts with "nccl" is a collective: it first waits until every rank of WORLD_SIZE has
reached it (a barrier through files in $FAKE_BARRIER_DIR), then takes its MEM + COMP * 1410 / f.
"""
import os
import sys
import time


def clock_mhz(gpu=None):
    try:
        path = os.environ["EMO_FAKE_NVML_STATE"] + ("" if gpu is None else f".{gpu}")
        with open(path) as f:
            return float(f.read().split()[0])
    except (KeyError, OSError, ValueError, IndexError):
        return 1410.0


def watched(rank=None):
    """name -> (device, pack index) from the watch list (of the section of `rank` when given)."""
    out = {}
    path = os.environ.get("EMO_WATCH_FILE", "")
    if not path:
        return out
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or lines[0] != "emo.watch/1":
        return out
    section = None
    for line in lines[1:]:
        w = line.split()
        if rank is not None and len(w) == 3 and w[0] == "gpu" and int(w[2]) == rank:
            section = int(w[1])
    for line in lines[1:]:
        if line.startswith("pack "):
            _, device, pack, _stream, _ordinal, name = line.split(" ", 5)
            if rank is None or int(device) == section:
                out[name] = (int(device), int(pack))
    return out, section


def barrier(rank, world, count):
    """Waits until every rank has reached its `count`-th collective (files in $FAKE_BARRIER_DIR)."""
    d = os.environ["FAKE_BARRIER_DIR"]
    tmp = f"{d}/rank.{rank}.tmp"
    with open(tmp, "w") as f:
        f.write(str(count))
    os.rename(tmp, f"{d}/rank.{rank}")
    while True:
        done = 0
        for r in range(world):
            try:
                with open(f"{d}/rank.{r}") as f:
                    done += int(f.read() or 0) >= count
            except (OSError, ValueError):
                pass
        if done == world:
            return
        time.sleep(0.0005)


def wait_until(t_end):
    while True:
        left = t_end - time.monotonic()
        if left <= 0:
            return
        if left > 0.0005:
            time.sleep(left - 0.0005)


def main():
    iterations, exit_code = int(sys.argv[1]), int(sys.argv[2])
    rank = int(os.environ["RANK"]) if "RANK" in os.environ else None
    kernels = []
    for spec in sys.argv[3:]:
        if "/" in spec.split("=")[0]:
            only, spec = spec.split("/", 1)
            if int(only) != rank:
                continue
        name, times = spec.rsplit("=", 1)
        mem, comp = (float(x) for x in times.split(":"))
        kernels.append((name, mem, comp))
    packs, section = watched(rank)
    fd = int(os.environ["EMO_PROGRESS_FD"]) if "EMO_PROGRESS_FD" in os.environ else None
    gpu, tail = None, ""
    if rank is not None:
        gpu = int(os.environ["CUDA_VISIBLE_DEVICES"].split(",")[int(os.environ.get("LOCAL_RANK", "0"))])
        tail = f" {os.getpid()}"
        if fd is not None and section is not None and not os.environ.get("FAKE_NO_HELLO"):
            os.write(fd, f"H {os.getpid()} {rank} {section} GPU-fake-0000-0000-0000-{gpu:012d}\n".encode())
    collectives = 0
    for it in range(iterations):
        for name, mem, comp in kernels:
            f = clock_mhz(gpu)
            t0_ns = time.monotonic_ns()
            if name in packs and fd is not None:
                device, pack = packs[name]
                os.write(fd, f"P {device} {pack} {it} {t0_ns}{tail}\n".encode())
            if name.startswith("nccl") and rank is not None:
                collectives += 1
                barrier(rank, int(os.environ["WORLD_SIZE"]), collectives)
                f = clock_mhz(gpu)
                t0_ns = time.monotonic_ns()
            wait_until(t0_ns * 1e-9 + (mem + comp * 1410.0 / f) * 1e-3)
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
