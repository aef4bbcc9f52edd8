#!/usr/bin/env python3
"""Read-only NVML facts of GPU 0 for EMO's GPU catalog (issue 9; docs/device-validation.md).

Reads: name, driver, supported memory and SM clocks, default/current application clocks, max
clocks, power-limit constraints and default, persistence and compute mode (read only); then
samples the total-energy counter and the power reading as fast as it can, first with the GPU idle
(no CUDA context in this process) and then while a child process keeps the GPU busy at the
default clocks (a bf16 matrix-product loop, then a device-to-device copy loop), to find
  * how often the energy counter (and the power reading) updates,
  * idle power and busy power at the default clocks (from the energy counter and from samples),
  * the SM clock and the clock-event (throttle) reasons under load.
Never sets anything: no clocks, power limits, persistence, compute mode or resets.

  nvml_probe.py --out nvml.json [--idle-s 4] [--busy-s 8] [--copy-s 4]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import time

LOAD = r"""
import sys, time, torch
kind, seconds = sys.argv[1], float(sys.argv[2])
torch.backends.cuda.matmul.allow_tf32 = True
if kind == "matmul":
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    work = lambda: torch.mm(a, b)
else:
    x = torch.randn(1 << 30, device="cuda", dtype=torch.float32)  # 4 GiB
    y = torch.empty_like(x)
    work = lambda: y.copy_(x)
for _ in range(3): work()
torch.cuda.synchronize()
print("READY", flush=True)
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    for _ in range(10): work()
    torch.cuda.synchronize()
    n += 10
print("DONE", n, flush=True)
"""


def nv():
    import pynvml
    pynvml.nvmlInit()
    return pynvml


def safe(f, *a):
    try:
        v = f(*a)
        return v.decode() if isinstance(v, bytes) else v
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def static_facts(p, h) -> dict:
    mem_clocks = safe(p.nvmlDeviceGetSupportedMemoryClocks, h)
    sm = {}
    if isinstance(mem_clocks, list):
        for m in mem_clocks:
            sm[str(m)] = safe(p.nvmlDeviceGetSupportedGraphicsClocks, h, m)
    c = {"sm": p.NVML_CLOCK_SM, "mem": p.NVML_CLOCK_MEM, "graphics": p.NVML_CLOCK_GRAPHICS}
    return {
        "name": safe(p.nvmlDeviceGetName, h),
        "driver_version": safe(p.nvmlSystemGetDriverVersion),
        "nvml_version": safe(p.nvmlSystemGetNVMLVersion),
        "cuda_driver_version": safe(p.nvmlSystemGetCudaDriverVersion),
        "memory_total_bytes": getattr(safe(p.nvmlDeviceGetMemoryInfo, h), "total", None),
        "supported_memory_clocks_mhz": mem_clocks,
        "supported_sm_clocks_mhz": sm,
        "max_clock_mhz": {k: safe(p.nvmlDeviceGetMaxClockInfo, h, v) for k, v in c.items()},
        "default_application_clock_mhz": {
            k: safe(p.nvmlDeviceGetDefaultApplicationsClock, h, v) for k, v in c.items()},
        "application_clock_mhz": {k: safe(p.nvmlDeviceGetApplicationsClock, h, v)
                                  for k, v in c.items()},
        "current_clock_mhz": {k: safe(p.nvmlDeviceGetClockInfo, h, v) for k, v in c.items()},
        "power_limit_constraints_mw": safe(p.nvmlDeviceGetPowerManagementLimitConstraints, h),
        "power_limit_default_mw": safe(p.nvmlDeviceGetPowerManagementDefaultLimit, h),
        "power_limit_mw": safe(p.nvmlDeviceGetPowerManagementLimit, h),
        "power_limit_enforced_mw": safe(p.nvmlDeviceGetEnforcedPowerLimit, h),
        "persistence_mode": safe(p.nvmlDeviceGetPersistenceMode, h),
        "compute_mode": safe(p.nvmlDeviceGetComputeMode, h),
        "pstate": safe(p.nvmlDeviceGetPerformanceState, h),
        "temperature_c": safe(p.nvmlDeviceGetTemperature, h, p.NVML_TEMPERATURE_GPU),
        "clock_event_reasons_supported": safe(
            getattr(p, "nvmlDeviceGetSupportedClocksEventReasons",
                    getattr(p, "nvmlDeviceGetSupportedClocksThrottleReasons", None)), h),
    }


def reasons(p, h):
    f = getattr(p, "nvmlDeviceGetCurrentClocksEventReasons",
                getattr(p, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
    try:
        return f(h)
    except Exception:
        return None


def sample(p, h, seconds: float) -> dict:
    """Polls energy (mJ) and power (mW) as fast as possible for `seconds`; every 50th poll also
    reads the SM clock and clock-event reasons. Returns the change times and summaries."""
    t_end = time.perf_counter() + seconds
    polls = 0
    e_changes: list[tuple[float, int]] = []
    p_changes: list[tuple[float, int]] = []
    power_sum, power_n = 0, 0
    clocks, why = [], []
    last_e = last_p = None
    first = None
    while True:
        t = time.perf_counter()
        if t >= t_end:
            break
        e = p.nvmlDeviceGetTotalEnergyConsumption(h)
        pw = p.nvmlDeviceGetPowerUsage(h)
        polls += 1
        if first is None:
            first = (t, e)
        if e != last_e:
            e_changes.append((t, e))
            last_e = e
        if pw != last_p:
            p_changes.append((t, pw))
            last_p = pw
        power_sum += pw
        power_n += 1
        if polls % 50 == 1:
            clocks.append(p.nvmlDeviceGetClockInfo(h, p.NVML_CLOCK_SM))
            r = reasons(p, h)
            if r is not None:
                why.append(r)
    last = (time.perf_counter(), p.nvmlDeviceGetTotalEnergyConsumption(h))

    def periods(ch):
        d = [(b[0] - a[0]) * 1e3 for a, b in zip(ch[1:], ch[2:])]  # skip the first (partial)
        if not d:
            return None
        d.sort()
        return {"changes": len(ch), "median_ms": statistics.median(d), "p10_ms": d[len(d) // 10],
                "p90_ms": d[(9 * len(d)) // 10], "min_ms": d[0], "max_ms": d[-1]}

    steps = [b[1] - a[1] for a, b in zip(e_changes[1:], e_changes[2:])]
    out = {
        "seconds": seconds, "polls": polls, "poll_us": seconds * 1e6 / max(polls, 1),
        "energy_counter_update": periods(e_changes),
        "energy_counter_step_mj_median": statistics.median(steps) if steps else None,
        "power_reading_update": periods(p_changes),
        "power_w_mean_of_samples": power_sum / power_n / 1e3 if power_n else None,
        "sm_clock_mhz": {"median": statistics.median(clocks), "min": min(clocks),
                         "max": max(clocks)} if clocks else None,
        "clock_event_reasons_seen": sorted(set(why)),
    }
    # Power from the counter: between its first and last change (whole update periods).
    if len(e_changes) >= 3:
        (ta, ea), (tb, eb) = e_changes[1], e_changes[-1]
        if tb > ta:
            out["power_w_from_energy"] = (eb - ea) / 1e3 / (tb - ta)
    out["energy_j_total"] = (last[1] - first[1]) / 1e3 if first else None
    return out


def busy(p, h, kind: str, seconds: float, warm_s: float = 1.5) -> dict:
    proc = subprocess.Popen([sys.executable, "-c", LOAD, kind, str(seconds + warm_s + 0.5)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = ""
    t0 = time.monotonic()
    while "READY" not in line:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            return {"error": f"load process exited {proc.returncode} before READY"}
        if time.monotonic() - t0 > 60:
            proc.kill()
            return {"error": "load process not READY in 60 s"}
    time.sleep(warm_s)
    res = sample(p, h, seconds)
    rest = proc.communicate(timeout=60)[0]
    res["load"] = kind
    res["load_output"] = rest.strip()[-200:]
    res["load_startup_s"] = round(time.monotonic() - t0 - seconds - warm_s, 1)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default="nvml.json")
    ap.add_argument("--idle-s", type=float, default=4)
    ap.add_argument("--busy-s", type=float, default=8)
    ap.add_argument("--copy-s", type=float, default=4)
    args = ap.parse_args()
    t0 = time.monotonic()
    p = nv()
    h = p.nvmlDeviceGetHandleByIndex(0)
    res = {"schema": "emo-nvml-probe/1",
           "measured_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "read_only": True, "static": static_facts(p, h)}
    print(f"[nvml] {res['static']['name']}, driver {res['static']['driver_version']}", flush=True)
    res["idle"] = sample(p, h, args.idle_s)
    print(f"[nvml] idle: {json.dumps(res['idle'])}", flush=True)
    if args.busy_s > 0:
        res["busy_matmul"] = busy(p, h, "matmul", args.busy_s)
        print(f"[nvml] busy matmul: {json.dumps(res['busy_matmul'])}", flush=True)
    if args.copy_s > 0:
        res["busy_copy"] = busy(p, h, "copy", args.copy_s)
        print(f"[nvml] busy copy: {json.dumps(res['busy_copy'])}", flush=True)
    res["idle_after"] = sample(p, h, min(2.0, args.idle_s))
    res["current_clock_mhz_after"] = safe(p.nvmlDeviceGetClockInfo, h, p.NVML_CLOCK_SM)
    res["wall_s"] = round(time.monotonic() - t0, 1)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print(f"[nvml] wrote {args.out} in {res['wall_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
