#!/usr/bin/env python3
"""Writes a synthetic device-results folder, as scripts/device/validate.sh leaves under $OUT,
for testing scripts/device/analyze_results.py without a GPU (tests/device/analyze_results_test.sh).

The traces are Kineto JSON made by a small simulator of the workload's step (scripts/device/
workload.py): a main stream (7) and a side stream (13), hook ranges (emo_hook/...), launches with
correlation ids, event record/wait and stream-sync records (cuda_sync), backward launched from a
second thread, and, in experiment sessions, a spin_kernel launched right after a hook's range.
GPU op start = max(launch call start + launch latency, stream free, event waited for): the same
physics as EMO's graph, so predictions must match the measured makespans up to the CPU time of
the spin's own launch call (4 us).

  synth_results.py OUT_DIR
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

MAIN, SIDE = 7, 13
PID, TID, BWD_TID = 100, 1, 2
LAUNCH_CPU, LAUNCH_LAT, RECORD_CPU, SYNC_RET = 4_000, 6_000, 2_000, 3_000
PREFIX = "emo_hook/"

# (hook, stream, [(kernel name, duration ns)], launching thread)
PROGRAM = [
    ("side.teacher", SIDE, [("teacher_gemm", 400_000), ("teacher_ln", 300_000)], TID),
    ("record", SIDE, "T", TID),
    ("side.prefetch", SIDE, [("Memcpy HtoD (Pinned -> Device)", 50_000)], TID),
    ("record", SIDE, "P", TID),
    ("fwd.block0.attn", MAIN, [("attn_gemm", 2_000_000), ("flash_fwd", 1_000_000)], TID),
    ("fwd.block0.mlp", MAIN, [("mlp_gemm", 3_000_000)], TID),
    ("fwd.block1.attn", MAIN, [("attn_gemm", 2_000_000), ("flash_fwd", 1_000_000)], TID),
    ("fwd.block1.mlp", MAIN, [("mlp_gemm", 3_000_000)], TID),
    ("fwd.head", MAIN, [("head_gemm", 2_000_000)], TID),
    ("wait", MAIN, "T", TID),
    ("loss", MAIN, [("cross_entropy", 500_000)], TID),
    ("bwd", MAIN, [("bwd_gemm", 4_000_000), ("bwd_gemm", 4_000_000)], BWD_TID),
    ("optim", MAIN, [("multi_tensor_apply_kernel", 1_000_000)], TID),
]


class Sim:
    def __init__(self) -> None:
        self.events: list[dict] = []
        self.corr = 1000
        self.t = 1_000_000            # CPU time of thread TID, ns
        self.free = {MAIN: 0, SIDE: 0}
        self.dep = {MAIN: 0, SIDE: 0}  # event waits pending for the next op of a stream
        self.event_done: dict[str, int] = {}
        self.event_corr: dict[str, int] = {}

    def ev(self, cat, name, pid, tid, start, dur, **args):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                            "ts": round(start / 1000, 3), "dur": round(dur / 1000, 3),
                            "args": args})

    def call(self, name, dur, tid=TID, start=None):
        self.corr += 1
        s = self.t if start is None else start
        self.ev("cuda_runtime", name, PID, tid, s, dur, correlation=self.corr)
        if start is None:
            self.t += dur
        return self.corr, s

    def launch(self, name, stream, dur, tid=TID, start=None):
        api = "cudaMemcpyAsync" if name.startswith("Memcpy") else "cudaLaunchKernel"
        corr, s = self.call(api, LAUNCH_CPU, tid, start)
        begin = max(s + LAUNCH_LAT, self.free[stream], self.dep[stream])
        self.dep[stream] = 0
        cat = "gpu_memcpy" if name.startswith("Memcpy") else "kernel"
        self.ev(cat, name, 0, stream, begin, dur, device=0, stream=stream, correlation=corr)
        self.free[stream] = begin + dur

    def step(self, n: int, spins: dict[str, int]) -> None:
        step_start = self.t
        self.t += 10_000
        for item in PROGRAM:
            hook, stream, what, tid = item
            if hook == "record":
                corr, _ = self.call("cudaEventRecord", RECORD_CPU)
                self.event_done[what] = self.free[stream]
                self.event_corr[what] = corr
                continue
            if hook == "wait":
                corr, s = self.call("cudaStreamWaitEvent", RECORD_CPU)
                self.ev("cuda_sync", "Stream Wait Event", 0, stream, s, RECORD_CPU,
                        cuda_sync_kind="Stream Wait Event", wait_on_stream=SIDE,
                        wait_on_cuda_event_record_corr_id=self.event_corr[what],
                        wait_on_cuda_event_id=1, stream=stream, correlation=corr, device=0)
                self.dep[stream] = max(self.dep[stream], self.event_done[what])
                continue
            h0 = self.t
            if tid == TID:
                for name, dur in what:
                    self.launch(name, stream, dur)
            else:  # launched from another thread while this one waits inside the hook
                t2 = self.t + 20_000
                for name, dur in what:
                    self.launch(name, stream, dur, tid=tid, start=t2)
                    t2 += LAUNCH_CPU + 1_000
                self.t = t2 + 5_000
            self.t += 1_000
            self.ev("user_annotation", PREFIX + hook, PID, TID, h0, self.t - h0)
            if spins.get(hook):
                self.launch("void at::cuda::(anonymous namespace)::spin_kernel<long>(long)", stream,
                            spins[hook])
        # loss.item(): DtoH copy then a stream sync that returns SYNC_RET after the GPU is done.
        self.launch("Memcpy DtoH (Device -> Pageable)", MAIN, 2_000)
        corr, s = self.call("cudaStreamSynchronize", 0)
        end = max(s + 2_000, self.free[MAIN] + SYNC_RET)
        self.events[-1]["dur"] = round((end - s) / 1000, 3)
        self.ev("cuda_sync", "Stream Sync", 0, MAIN, s, end - s, cuda_sync_kind="Stream Sync",
                stream=MAIN, correlation=corr, device=0)
        self.t = end + 20_000
        self.ev("user_annotation", f"ProfilerStep#{n}", PID, TID, step_start, self.t - step_start)
        self.t += 30_000

    def write(self, path: Path) -> None:
        doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Synthetic GPU"}],
               "traceEvents": self.events}
        with gzip.open(path, "wt") as f:
            json.dump(doc, f)


SESSIONS = [
    ("base0", {}, None),
    ("S1", {"fwd.block1.mlp": 1_000_000}, "critical"),
    ("S2", {"side.teacher": 500_000}, "slack"),
    ("base1", {}, None),
    ("S3", {"side.teacher": 20_000_000}, "partly"),
    ("S4", {"bwd": 2_000_000, "side.prefetch": 300_000}, "critical (+ slack)"),
]


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    sessions = []
    for sid, spins, expect in SESSIONS:
        sim = Sim()
        for n in range(2, 6):
            sim.step(n, spins)
        trace = f"{sid}.pt.trace.json.gz"
        sim.write(out / trace)
        sessions.append({
            "id": sid, "kind": "experiment" if spins else "baseline", "expect": expect,
            "spins": {h: {"fraction_of_step": None, "target_ns": d, "cycles": d // 2,
                          "calibrated_ns": d} for h, d in spins.items()},
            "trace": trace, "profiled_steps": [f"ProfilerStep#{n}" for n in range(2, 6)],
            "unprofiled_step_ms": [30.0, 30.1, 29.9]})
    workload = {"schema": "emo-device-workload/1", "device": "synthetic", "hook_prefix": PREFIX,
                "batch": 1, "config": {}, "gpu": {"name": "Synthetic GPU"},
                "sleep_calibration": {"ns_per_cycle": 2.0, "offset_ns": 0.0,
                                      "implied_clock_mhz": 500.0, "max_residual_ns": 0.0},
                "sessions": sessions, "skipped": []}
    (out / "workload.json").write_text(json.dumps(workload, indent=1) + "\n")
    nvml = {"schema": "emo-nvml-probe/1", "measured_utc": "2000-01-01T00:00:00+00:00",
            "read_only": True,
            "static": {"name": "NVIDIA H200", "driver_version": "0.0",
                       "supported_memory_clocks_mhz": [3201, 1593],
                       "supported_sm_clocks_mhz": {"3201": [1980, 1965, 345], "1593": [1000]},
                       "power_limit_constraints_mw": [200000, 700000],
                       "power_limit_default_mw": 700000, "power_limit_mw": 700000,
                       "default_application_clock_mhz": {"sm": 1980}, "max_clock_mhz": {"sm": 1980}},
            "idle": {"power_w_from_energy": 75.5, "power_w_mean_of_samples": 76.0, "polls": 10,
                     "poll_us": 5.0, "energy_counter_update": {"median_ms": 25.0, "p10_ms": 24.0,
                                                               "p90_ms": 26.0}},
            "busy_matmul": {"power_w_from_energy": 650.2, "polls": 10, "poll_us": 5.0,
                            "sm_clock_mhz": {"median": 1755},
                            "energy_counter_update": {"median_ms": 25.0}}}
    (out / "nvml.json").write_text(json.dumps(nvml, indent=1) + "\n")
    print(f"synthetic results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
