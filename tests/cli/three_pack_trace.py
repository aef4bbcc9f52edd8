"""Writes the synthetic trace of the `emo optimize --device nvml` tests: one iteration of three
packs on an A100, each behind a host sync (cudaDeviceSynchronize): gemm_big (two kernels,
gemm_big + gemm_big_tail), copy_mem, mixed_op, of 60, 60 and 40 ms; tests/cli/fake_workload.py
plays the same packs (PACKS in optimize_nvml_test.sh).

Usage: three_pack_trace.py PATH
"""
import json, sys
packs = [("gemm_big", 2, 58), ("copy_mem", 55, 5), ("mixed_op", 20, 20)]
ev, t, corr = [], 1000.0, 1   # us
def x(cat, name, ts, dur, **args):
    e = {"ph": "X", "cat": cat, "name": name, "ts": round(ts, 3), "dur": round(dur, 3), "args": args}
    e.update({"pid": 0, "tid": 7} if cat == "kernel" else {"pid": 10, "tid": 11})
    ev.append(e)
for name, mem, comp in packs:
    kernels = [(name, (mem + comp) / 2), (name + "_tail", (mem + comp) / 2)] if name == "gemm_big" else [(name, mem + comp)]
    k_start = t + 10
    for kname, ms in kernels:
        x("cuda_runtime", "cudaLaunchKernel", t, 5, correlation=corr)
        x("kernel", kname, k_start, ms * 1000, device=0, stream=7, correlation=corr)
        corr += 1; t += 6; k_start += ms * 1000
    x("cuda_runtime", "cudaDeviceSynchronize", t, k_start + 5 - t, correlation=corr)
    corr += 1; t = k_start + 10
doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}], "traceEvents": ev}
open(sys.argv[1], "w").write(json.dumps(doc))
