"""Writes the small emo.policy/1 the guardian and clock-service tests run (3 packs of 10 ms per
GPU at 1200, 990 and 1410 MHz on an A100, 2 ms switch latency).

Usage: three_pack_policy.py PATH DEVICE...
"""
import json
import sys

path, devices = sys.argv[1], [int(d) for d in sys.argv[2:]]


def packs():
    return [{"index": i, "start": {"op_name": f"kernel_{i}", "stream": 7, "ordinal": 0},
             "start_offset_ns": 10_000_000 * i, "duration_ns": 10_000_000, "ops": 3,
             "clock_mhz": float(c), "predicted_energy_j": 1.0} for i, c in enumerate([1200, 990, 1410])]


doc = {"schema": "emo.policy/1", "emo_version": "0.1.0", "gpu": "A100-SXM4-80GB", "trace": "t.json",
       "iteration_marker": "", "max_slowdown": 0.05, "latency_target_ns": 31_500_000,
       "baseline": {"time_ns": 30_000_000, "energy_j": 4.0},
       "predicted": {"time_ns": 31_000_000, "energy_j": 3.0}, "switch_latency_ms": 2, "simulated": True,
       "gpus": [{"device": d, "rank": -1, "default_clock_mhz": 1410, "packs": packs()} for d in devices]}
with open(path, "w") as f:
    f.write(json.dumps(doc))
