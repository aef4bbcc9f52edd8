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
"""
import os
import sys
import time


def clock_mhz():
    try:
        with open(os.environ["EMO_FAKE_NVML_STATE"]) as f:
            return float(f.read().split()[0])
    except (KeyError, OSError, ValueError, IndexError):
        return 1410.0


def watched():
    """name -> (device, pack index) from the watch list."""
    out = {}
    path = os.environ.get("EMO_WATCH_FILE", "")
    if not path:
        return out
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or lines[0] != "emo.watch/1":
        return out
    for line in lines[1:]:
        if line.startswith("pack "):
            _, device, pack, _stream, _ordinal, name = line.split(" ", 5)
            out[name] = (int(device), int(pack))
    return out


def wait_until(t_end):
    while True:
        left = t_end - time.monotonic()
        if left <= 0:
            return
        if left > 0.0005:
            time.sleep(left - 0.0005)


def main():
    iterations, exit_code = int(sys.argv[1]), int(sys.argv[2])
    kernels = []
    for spec in sys.argv[3:]:
        name, times = spec.rsplit("=", 1)
        mem, comp = (float(x) for x in times.split(":"))
        kernels.append((name, mem, comp))
    packs = watched()
    fd = int(os.environ["EMO_PROGRESS_FD"]) if "EMO_PROGRESS_FD" in os.environ else None
    for it in range(iterations):
        for name, mem, comp in kernels:
            f = clock_mhz()
            t0_ns = time.monotonic_ns()
            if name in packs and fd is not None:
                device, pack = packs[name]
                os.write(fd, f"P {device} {pack} {it} {t0_ns}\n".encode())
            wait_until(t0_ns * 1e-9 + (mem + comp * 1410.0 / f) * 1e-3)
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
