#!/usr/bin/env python3
"""A training-like loop whose packs start at a copy and inside a CUDA graph (issue 32), for the
device check of `emo run`'s observation of pack starts (docs/device-validation.md, "Pack starts at
copies and inside CUDA graphs"; scripts/device/observe_starts.sh).

One step, inside the NVTX range "emo_step#N" (the policy's iteration marker):
  host sync (the previous step's loss.item()) -> the GPU idles, so a pack starts at the next op:
  [copy]   the batch, pinned host -> device, non_blocking           (cudaMemcpyAsync: pack at a copy)
  [eager]  LAYERS bf16 matmuls + relu, launched one by one            (cudaLaunchKernel)
  [graph]  one replay of a captured CUDA graph: GRAPH_MM compute-bound matmuls, then GRAPH_EW
           memory-bound elementwise passes over a large tensor: the change of clock sensitivity
           inside the graph is where the packer's phase cut starts a pack inside the graph
           (cudaGraphLaunch + the kernel's index)
  [loss]   a reduction and loss.item() (DtoH copy + sync)

Usage: copy_graph_workload.py [--steps N] [--batch B] [--dim D] [--device cuda|cpu]
--device cpu runs the same loop without CUDA (no graph, no copy: a syntax check where no GPU is).
"""
import argparse
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--graph-mm", type=int, default=24)
    ap.add_argument("--graph-ew", type=int, default=24)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    import torch

    cuda = a.device == "cuda"
    dev = torch.device(a.device)
    dt = torch.bfloat16 if cuda else torch.float32
    host = torch.randn(a.batch, a.dim, dtype=dt, pin_memory=cuda)
    w = [torch.randn(a.dim, a.dim, device=dev, dtype=dt) / a.dim ** 0.5 for _ in range(2)]
    big = torch.randn(64 << 20, device=dev, dtype=torch.float32)  # 256 MiB: memory-bound passes
    static_in = torch.zeros(a.batch, a.dim, device=dev, dtype=dt)

    def graph_body():
        y = static_in
        for i in range(a.graph_mm):
            y = torch.relu(y @ w[i % 2])
        z = big
        for _ in range(a.graph_ew):
            z = z * 0.999 + 0.001
        return y.float().mean() + z[:1].sum()

    if cuda:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                graph_body()  # warm-up before capture (cuBLAS workspaces)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = graph_body()
    t0 = time.monotonic()
    for step in range(a.steps):
        if cuda:
            torch.cuda.nvtx.range_push(f"emo_step#{step}")
        x = host.to(dev, non_blocking=True)
        for i in range(a.layers):
            x = torch.relu(x @ w[i % 2])
        static_in.copy_(x)
        if cuda:
            graph.replay()
            out = static_out
        else:
            out = graph_body()
        loss = (out + x.float().mean()).item()
        if cuda:
            torch.cuda.nvtx.range_pop()
    print(f"copy_graph_workload: {a.steps} steps in {time.monotonic() - t0:.3f} s, loss {loss:.4f}")


if __name__ == "__main__":
    main()
