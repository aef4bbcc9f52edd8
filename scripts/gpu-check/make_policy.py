#!/usr/bin/env python3
"""Builds a two-pack emo.policy/1 for emo_check from its emo.trace/1 trace (scripts/gpu-check.sh).

Pack 0 starts at the compute kernel of an iteration, pack 1 at its memory kernel; offsets and
durations come from the second "step#N" range of the trace; clocks are two of the GPU's supported
SM clocks (from `emo gpus --json`). The policy is only ever used with `emo run --dry-run`.
Usage: make_policy.py TRACE.jsonl GPUS.json OUT.json
"""
import json
import sys


def main(trace_path, gpus_path, out_path):
    rows = [json.loads(line) for line in open(trace_path) if line.strip()]
    header, rows = rows[0], rows[1:]
    assert header.get("format") == "emo.trace/1", header
    steps = sorted((r for r in rows if r.get("kind") == "annotation" and r["name"].startswith("step#")),
                   key=lambda r: r["start_ns"])
    if len(steps) < 2:
        sys.exit("make_policy: fewer than 2 step# ranges in the trace (NVTX not captured?)")
    step = steps[1]
    calls = {r["correlation"]: r for r in rows if r.get("kind") in ("runtime", "driver")}
    kernels = sorted((r for r in rows if r.get("kind") == "kernel" and r["correlation"] in calls
                      and step["start_ns"] <= calls[r["correlation"]]["start_ns"] <= step["start_ns"] + step["dur_ns"]),
                     key=lambda r: r["start_ns"])
    first = {}
    for k in kernels:
        for tag in ("emo_check_compute", "emo_check_memory"):
            if k["name"].startswith(tag) and tag not in first:
                first[tag] = k
    if len(first) < 2:
        sys.exit(f"make_policy: kernels of step#1 not found: {[k['name'] for k in kernels]}")
    gpus = json.load(open(gpus_path))["gpus"]
    clocks = gpus[0]["supported_sm_clocks_mhz"]
    hi, mid = clocks[0], clocks[len(clocks) // 2]
    t0 = first["emo_check_compute"]["start_ns"]
    packs = []
    for i, (tag, clock) in enumerate((("emo_check_compute", hi), ("emo_check_memory", mid))):
        k = first[tag]
        packs.append({"index": i, "start": {"op_name": k["name"], "stream": k["stream"], "ordinal": 0},
                      "start_offset_ns": k["start_ns"] - t0, "duration_ns": k["dur_ns"], "ops": 1,
                      "clock_mhz": clock, "predicted_energy_j": 0.0})
    total = packs[-1]["start_offset_ns"] + packs[-1]["duration_ns"]
    doc = {"schema": "emo.policy/1", "emo_version": header.get("emo_version", ""),
           "gpu": gpus[0]["catalog_id"], "trace": trace_path, "iteration_marker": "step#*",
           "max_slowdown": 0.05, "latency_target_ns": int(total * 1.05),
           "baseline": {"time_ns": total, "energy_j": 0.0}, "predicted": {"time_ns": total, "energy_j": 0.0},
           "switch_latency_ms": 1.0, "simulated": False,
           "gpus": [{"device": 0, "rank": -1, "default_clock_mhz": hi, "packs": packs}]}
    json.dump(doc, open(out_path, "w"), indent=2)
    print(f"make_policy: {out_path}: packs at {[p['start_offset_ns'] for p in packs]} ns, clocks {hi}/{mid} MHz")


if __name__ == "__main__":
    main(*sys.argv[1:4])
