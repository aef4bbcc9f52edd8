"""Writes the small emo.policy/1 the guardian, clock-service and many-GPU tests run (3 packs of 10 ms
per GPU at 0, 10 and 20 ms, on an A100, 2 ms switch latency, default clock 1410 MHz).

Usage: three_pack_policy.py PATH DEVICE...
         sections DEVICE... (no rank), packs at 1200, 990 and 1410 MHz
       three_pack_policy.py PATH --job CLOCKS... [--min-switch-interval-ms MS]
         a job's policy: section r is rank r, its packs at CLOCKS number r (e.g. 1395,1200,1005)
"""
import json
import sys

path, args = sys.argv[1], sys.argv[2:]
interval = None
if "--min-switch-interval-ms" in args:
    at = args.index("--min-switch-interval-ms")
    interval = float(args[at + 1])
    del args[at:at + 2]
if args and args[0] == "--job":
    sections = [(r, r, [int(c) for c in clocks.split(",")]) for r, clocks in enumerate(args[1:])]
else:
    sections = [(int(d), -1, [1200, 990, 1410]) for d in args]


def packs(clocks):
    return [{"index": i, "start": {"op_name": f"kernel_{i}", "stream": 7, "ordinal": 0},
             "start_offset_ns": 10_000_000 * i, "duration_ns": 10_000_000, "ops": 3,
             "clock_mhz": float(c), "predicted_energy_j": 1.0} for i, c in enumerate(clocks)]


doc = {"schema": "emo.policy/1", "emo_version": "0.1.0", "gpu": "A100-SXM4-80GB", "trace": "t.json",
       "iteration_marker": "", "max_slowdown": 0.05, "latency_target_ns": 31_500_000,
       "baseline": {"time_ns": 30_000_000, "energy_j": 4.0},
       "predicted": {"time_ns": 31_000_000, "energy_j": 3.0}, "switch_latency_ms": 2, "simulated": True,
       "gpus": [{"device": d, "rank": r, "default_clock_mhz": 1410, "packs": packs(c)} for d, r, c in sections]}
if interval is not None:
    doc["min_switch_interval_ms"] = interval
with open(path, "w") as f:
    f.write(json.dumps(doc))
