#!/usr/bin/env python3
"""`emo.analyze` from Python vs `emo analyze --json -` from the CLI on one trace (default
hta_training_16rank_rank0): wall time of `emo.analyze(emo.load_trace(P)).critical_path_ns` (both
make the same JSON object; Python parses its tables only when they are used) against the CLI
process, median of 5 runs each (interleaved), and their ratio (the goal: within 10 %). Not a timed
test.

    PYTHONPATH=build/python:python python3 bench/python_vs_cli.py [TRACE] [--cli build/emo] [--runs 5]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    data = os.environ.get("EMO_DATA_DIR", os.path.join(REPO, "..", "shared", "data"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", default=os.path.join(data, "kineto", "hta_training_16rank_rank0.json.gz"))
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "emo"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    import emo

    def python_run():
        t0 = time.perf_counter()
        cp = emo.analyze(emo.load_trace(args.trace)).critical_path_ns
        return time.perf_counter() - t0, cp

    def cli_run():
        t0 = time.perf_counter()
        subprocess.run([args.cli, "analyze", args.trace, "--json", "-"], check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0

    python_run()  # warm the page cache and the import
    cli_run()
    py_times, cli_times = [], []
    for _ in range(args.runs):  # interleaved, so that load on the machine hits both alike
        dt, cp = python_run()
        py_times.append(dt)
        cli_times.append(cli_run())
    py, cli = statistics.median(py_times), statistics.median(cli_times)
    print("trace        {}".format(args.trace))
    print("critical path {} ns".format(cp))
    print("python       median {:.3f} s  ({})".format(py, ", ".join("{:.3f}".format(t) for t in py_times)))
    print("cli          median {:.3f} s  ({})".format(cli, ", ".join("{:.3f}".format(t) for t in cli_times)))
    print("ratio        python / cli = {:.3f} ({})".format(py / cli, "within 10 %" if py / cli <= 1.10 else "OVER 10 %"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
