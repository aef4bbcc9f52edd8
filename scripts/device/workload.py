#!/usr/bin/env python3
"""EMO device-validation workload (issue 9; docs/device-validation.md).

A small GPT-like training loop with a second CUDA stream, run under the PyTorch profiler (CUDA
sync events on), with *perturbation experiments*: a calibrated spin (torch.cuda._sleep) enqueued
right after a chosen op, on that op's stream, in every step of a profiling session. Such a spin is
exactly the what-if `corr=C:+Dns` on the unperturbed trace (C: correlation id of the op, D: the
spin's duration), which scripts/device/analyze_results.py predicts with `emo analyze`.

One step (stream M = the default stream, S = a side stream):
    M waits for event P (the batch S copied in the previous step)
    S: [side.teacher]  a frozen 2-layer teacher on the batch   -> event T
    S: [side.prefetch] next batch host (pinned) -> device      -> event P
    M: [fwd.emb] [fwd.block{i}.attn] [fwd.block{i}.mlp] ... [fwd.head]
    M waits for event T; [loss] cross entropy + 0.1 * MSE(student hidden, teacher hidden)
    M: [bwd] loss.backward()   [optim] fused AdamW   then loss.item() (a stream sync)
Every [hook] is a record_function range named "emo_hook/<hook>"; the spin of an experiment is
enqueued just after its hook's range, on the stream that range launched on. The target of the
what-if is therefore the GPU op launched last inside the hook's range.

Modes:
  validate (default): sleep calibration, batch auto-sizing to --target-step-ms, baseline and
      experiment sessions (each: profiled steps + unprofiled timed steps), NVML energy of
      unprofiled steps; writes OUT/workload.json and OUT/<session>.pt.trace.json.gz.
  plain: --steps N unprofiled steps (for `emo trace` / `emo measure` to wrap); OUT/plain.json.
--device cpu --dry runs the same code on a tiny model on the CPU (no streams, no spin): it checks
the plumbing and the trace files where there is no GPU.

NVML is only read here (pynvml): never set clocks, power limits or any other setting.
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import os
import platform
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[workload +{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


# ---- read-only NVML ---------------------------------------------------------------------------

class Nvml:
    """Read-only NVML readings of one GPU (energy counter, power, SM clock); absent -> None."""

    def __init__(self, index: int = 0) -> None:
        self.ok = False
        try:
            import pynvml  # nvidia-ml-py
            pynvml.nvmlInit()
            self.nv = pynvml
            self.h = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.ok = True
        except Exception as e:  # no driver, no package, CPU run
            self.why = f"{type(e).__name__}: {e}"

    def _call(self, name: str, *args):
        if not self.ok:
            return None
        try:
            return getattr(self.nv, name)(self.h, *args)
        except Exception:
            return None

    def energy_mj(self):
        return self._call("nvmlDeviceGetTotalEnergyConsumption")

    def power_mw(self):
        return self._call("nvmlDeviceGetPowerUsage")

    def sm_clock_mhz(self):
        return self._call("nvmlDeviceGetClockInfo", self.nv.NVML_CLOCK_SM) if self.ok else None

    def clock_event_reasons(self):
        r = self._call("nvmlDeviceGetCurrentClocksEventReasons")
        return r if r is not None else self._call("nvmlDeviceGetCurrentClocksThrottleReasons")


class PowerSampler:
    """Samples power and SM clock every period_s in a thread while a block runs."""

    def __init__(self, nvml: Nvml, period_s: float = 0.02) -> None:
        self.nvml, self.period_s = nvml, period_s
        self.samples: list[tuple[float, int | None, int | None]] = []
        self._stop = threading.Event()
        self._t: threading.Thread | None = None

    def __enter__(self):
        if self.nvml.ok:
            self._t = threading.Thread(target=self._run, daemon=True)
            self._t.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), self.nvml.power_mw(), self.nvml.sm_clock_mhz()))
            time.sleep(self.period_s)

    def __exit__(self, *exc):
        self._stop.set()
        if self._t:
            self._t.join()

    def summary(self) -> dict:
        p = [s[1] for s in self.samples if s[1] is not None]
        c = [s[2] for s in self.samples if s[2] is not None]
        return {"samples": len(self.samples),
                "power_w_mean": statistics.fmean(p) / 1e3 if p else None,
                "power_w_max": max(p) / 1e3 if p else None,
                "sm_clock_mhz_median": statistics.median(c) if c else None,
                "sm_clock_mhz_min": min(c) if c else None,
                "sm_clock_mhz_max": max(c) if c else None}


# ---- the device abstraction (CUDA, or a CPU stand-in for --dry) -------------------------------

class Dev:
    def __init__(self, torch, kind: str) -> None:
        self.torch, self.kind = torch, kind
        self.cuda = kind == "cuda"
        self.device = torch.device("cuda:0" if self.cuda else "cpu")
        if self.cuda:
            self.main = torch.cuda.current_stream()
            self.side = torch.cuda.Stream()

    def stream(self, s):
        return self.torch.cuda.stream(s) if self.cuda else contextlib.nullcontext()

    def event(self):
        return self.torch.cuda.Event(enable_timing=False) if self.cuda else _NoEvent()

    def record_stream(self, t, s) -> None:
        if self.cuda:
            t.record_stream(s)

    def wait_event(self, e) -> None:
        if self.cuda:
            self.torch.cuda.current_stream().wait_event(e)

    def spin(self, cycles: int) -> None:
        if self.cuda and cycles > 0:
            self.torch.cuda._sleep(int(cycles))

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def autocast(self):
        if self.cuda:
            return self.torch.autocast("cuda", dtype=self.torch.bfloat16)
        return contextlib.nullcontext()


class _NoEvent:
    def record(self, *a):
        pass


# ---- the model ----------------------------------------------------------------------------------

def build_models(torch, cfg: dict, dev: Dev):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def attn(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(B, T, C))

        def mlp(self, x):
            return self.fc_out(F.gelu(self.fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self, layers: int) -> None:
            super().__init__()
            d = cfg["d_model"]
            self.wte = nn.Embedding(cfg["vocab"], d)
            self.wpe = nn.Embedding(cfg["seq"], d)
            self.blocks = nn.ModuleList(Block(d, cfg["heads"]) for _ in range(layers))
            self.ln_f = nn.LayerNorm(d)

        def forward(self, idx, hook, prefix: str):
            T = idx.shape[1]
            with hook(f"{prefix}.emb"):
                x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
            for i, b in enumerate(self.blocks):
                with hook(f"{prefix}.block{i}.attn"):
                    a = b.attn(x)
                x = x + a
                with hook(f"{prefix}.block{i}.mlp"):
                    m = b.mlp(x)
                x = x + m
            return self.ln_f(x)

    model = GPT(cfg["layers"]).to(dev.device)
    head = nn.Linear(cfg["d_model"], cfg["vocab"], bias=False).to(dev.device)
    teacher = GPT(cfg["teacher_layers"]).to(dev.device).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4, fused=dev.cuda)
    return model, head, teacher, opt


# ---- the training step ----------------------------------------------------------------------------

class Loop:
    HOOK_PREFIX = "emo_hook/"

    def __init__(self, torch, cfg: dict, dev: Dev) -> None:
        self.torch, self.cfg, self.dev = torch, cfg, dev
        self.model, self.head, self.teacher, self.opt = build_models(torch, cfg, dev)
        self.perturb: dict[str, int] = {}   # hook -> spin cycles
        self.make_batches(cfg["batch"])

    def make_batches(self, batch: int) -> None:
        torch, cfg = self.torch, self.cfg
        self.cfg["batch"] = batch
        g = torch.Generator().manual_seed(1234)
        self.host = [torch.randint(0, cfg["vocab"], (batch, cfg["seq"] + 1), generator=g)
                     for _ in range(3)]
        if self.dev.cuda:
            self.host = [h.pin_memory() for h in self.host]
        self.i = 0
        self.x_cur = self.host[0].to(self.dev.device)
        self.ev_prefetch = self.dev.event()
        self.ev_prefetch.record()

    @contextlib.contextmanager
    def hook(self, name: str):
        with self.torch.profiler.record_function(self.HOOK_PREFIX + name):
            yield
        cycles = self.perturb.get(name, 0)
        if cycles:
            self.dev.spin(cycles)   # on the current stream, right after the hook's last op

    def step(self) -> float:
        torch, dev, F, V = self.torch, self.dev, self.torch.nn.functional, self.cfg["vocab"]
        dev.wait_event(self.ev_prefetch)
        x = self.x_cur
        ev_teacher = dev.event()
        with dev.stream(dev.side if dev.cuda else None):
            with self.hook("side.teacher"), torch.no_grad(), dev.autocast():
                t_hidden = self.teacher(x[:, :-1], self._no_hook, "teacher")
            ev_teacher.record()
            with self.hook("side.prefetch"):
                self.i = (self.i + 1) % len(self.host)
                x_next = self.host[self.i].to(dev.device, non_blocking=True)
            self.ev_prefetch = dev.event()
            self.ev_prefetch.record()
        if dev.cuda:
            dev.record_stream(t_hidden, dev.main)
            dev.record_stream(x_next, dev.main)
        with dev.autocast():
            hidden = self.model(x[:, :-1], self.hook, "fwd")
            with self.hook("fwd.head"):
                logits = self.head(hidden)
            dev.wait_event(ev_teacher)
            with self.hook("loss"):
                loss = F.cross_entropy(logits.float().view(-1, V), x[:, 1:].reshape(-1)) \
                    + 0.1 * F.mse_loss(hidden.float(), t_hidden.float())
        with self.hook("bwd"):
            loss.backward()
        with self.hook("optim"):
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
        value = loss.item()   # cudaMemcpyAsync DtoH + cudaStreamSynchronize on the main stream
        self.x_cur = x_next
        return value

    @staticmethod
    @contextlib.contextmanager
    def _no_hook(name: str):
        yield

    def timed_steps(self, n: int) -> list[float]:
        out = []
        for _ in range(n):
            t = time.perf_counter()
            self.step()
            out.append((time.perf_counter() - t) * 1e3)
        return out


# ---- profiling sessions ------------------------------------------------------------------------

def profiled_session(torch, loop: Loop, out: Path, name: str, active: int) -> dict:
    """wait 1 + warmup 1 + `active` profiled steps; writes OUT/<name>.pt.trace.json.gz."""
    from torch.profiler import ProfilerActivity, profile, schedule
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if loop.dev.cuda else [])
    kwargs = {}
    try:
        kwargs["experimental_config"] = torch._C._profiler._ExperimentalConfig(
            enable_cuda_sync_events=True)
    except Exception as e:
        log(f"no _ExperimentalConfig(enable_cuda_sync_events=True): {e}")
    raw = out / f"{name}.pt.trace.json"
    t = time.monotonic()
    with profile(activities=acts, schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(raw)), **kwargs) as prof:
        for _ in range(2 + active):
            loop.step()
            prof.step()
    gz = out / f"{name}.pt.trace.json.gz"
    with open(raw, "rb") as fin, gzip.open(gz, "wb", compresslevel=6) as fout:
        shutil.copyfileobj(fin, fout)
    raw.unlink()
    return {"trace": gz.name, "trace_bytes": gz.stat().st_size,
            "profiled_steps": [f"ProfilerStep#{i}" for i in range(2, 2 + active)],
            "sync_events": "enable_cuda_sync_events" if kwargs else None,
            "seconds": round(time.monotonic() - t, 2)}


def calibrate_sleep(torch, dev: Dev, nvml: Nvml) -> dict:
    """Fits ns = a + b * cycles for torch.cuda._sleep, timed with CUDA events on an idle GPU."""
    if not dev.cuda:
        return {"ns_per_cycle": 0.5, "offset_ns": 0.0, "points": [], "note": "cpu: nominal 2 GHz"}
    pts = []
    dev.spin(1000)
    dev.sync()
    clocks = []
    for cycles in (1_000_000, 10_000_000, 50_000_000, 100_000_000):
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            dev.spin(cycles)
            e1.record()
            e1.synchronize()
            clocks.append(nvml.sm_clock_mhz())
            pts.append((cycles, e0.elapsed_time(e1) * 1e6))
    n = len(pts)
    mx = sum(c for c, _ in pts) / n
    my = sum(t for _, t in pts) / n
    b = sum((c - mx) * (t - my) for c, t in pts) / sum((c - mx) ** 2 for c, _ in pts)
    a = my - b * mx
    resid = max(abs(a + b * c - t) for c, t in pts)
    clocks = [c for c in clocks if c is not None]
    return {"ns_per_cycle": b, "offset_ns": a, "implied_clock_mhz": 1e3 / b,
            "max_residual_ns": resid, "points": pts,
            "nvml_sm_clock_mhz": statistics.median(clocks) if clocks else None}


def cycles_for(cal: dict, ns: float) -> int:
    return max(1, int(round((ns - cal["offset_ns"]) / cal["ns_per_cycle"])))


def default_experiments(layers: int) -> list[dict]:
    """Fixed list (by hook name); `expect` is the design's guess, the analysis decides."""
    last = layers - 1
    return [
        {"id": "E1", "hooks": {f"fwd.block{last}.attn": 0.02}, "expect": "critical"},
        {"id": "E2", "hooks": {f"fwd.block{last}.mlp": 0.05}, "expect": "critical"},
        {"id": "E3", "hooks": {"bwd": 0.03}, "expect": "critical"},
        {"id": "E4", "hooks": {"optim": 0.01}, "expect": "critical"},
        {"id": "E5", "hooks": {"side.teacher": 0.05}, "expect": "slack"},
        {"id": "E6", "hooks": {"side.teacher": 0.40}, "expect": "partly (exceeds the slack)"},
        {"id": "E7", "hooks": {"side.prefetch": 0.20}, "expect": "slack"},
        {"id": "E8", "hooks": {"fwd.block0.attn": 0.02, "side.teacher": 0.05},
         "expect": "critical (+ slack); overlaps the teacher"},
    ]


def autosize(loop: Loop, target_ms: float, max_batch: int) -> dict:
    loop.timed_steps(3)
    t0 = statistics.median(loop.timed_steps(3))
    b0 = loop.cfg["batch"]
    b = max(1, min(max_batch, int(round(b0 * target_ms / t0))))
    tried = [{"batch": b0, "step_ms": t0}]
    while True:
        try:
            loop.make_batches(b)
            loop.timed_steps(2)
            t = statistics.median(loop.timed_steps(3))
            tried.append({"batch": b, "step_ms": t})
            return {"batch": b, "step_ms": t, "tried": tried}
        except RuntimeError as e:  # out of memory: halve
            if "out of memory" not in str(e) or b <= 1:
                raise
            loop.torch.cuda.empty_cache()
            tried.append({"batch": b, "error": "out of memory"})
            b //= 2


def run_validate(args, torch, dev: Dev, out: Path, nvml: Nvml) -> dict:
    deadline = T0 + args.budget_s
    cfg = dict(vocab=8192, seq=1024, d_model=1024, heads=16, layers=12, teacher_layers=2, batch=8)
    if args.dry:
        cfg = dict(vocab=128, seq=32, d_model=32, heads=2, layers=3, teacher_layers=1, batch=2)
    res: dict = {"schema": "emo-device-workload/1", "config": cfg, "device": dev.kind,
                 "dry": args.dry, "torch": torch.__version__, "python": platform.python_version(),
                 "hook_prefix": Loop.HOOK_PREFIX, "sessions": [], "skipped": []}
    if dev.cuda:
        p = torch.cuda.get_device_properties(0)
        res["gpu"] = {"name": p.name, "sm_count": p.multi_processor_count,
                      "memory_bytes": p.total_memory}
    log("sleep calibration")
    res["sleep_calibration"] = cal = calibrate_sleep(torch, dev, nvml)
    log(f"  {json.dumps({k: v for k, v in cal.items() if k != 'points'})}")

    loop = Loop(torch, cfg, dev)
    if dev.cuda and not args.batch:
        log(f"auto-sizing the batch to a {args.target_step_ms} ms step")
        res["autosize"] = autosize(loop, args.target_step_ms, args.max_batch)
        log(f"  {res['autosize']}")
    else:
        if args.batch:
            loop.make_batches(args.batch)
        loop.timed_steps(2)
    base_ms = statistics.median(loop.timed_steps(3))
    res["batch"] = loop.cfg["batch"]
    res["step_ms_before_sessions"] = base_ms
    log(f"batch {loop.cfg['batch']}, step {base_ms:.1f} ms unprofiled")

    exps = json.loads(Path(args.experiments).read_text()) if args.experiments \
        else default_experiments(cfg["layers"])
    if args.only:
        exps = [e for e in exps if e["id"] in args.only.split(",")]
    # Baselines interleaved with the experiments to see drift.
    plan: list[dict] = [{"id": "base0"}]
    half = (len(exps) + 1) // 2
    plan += exps[:half] + [{"id": "base1"}] + exps[half:] + [{"id": "base2"}]
    per_session_s = None
    for s in plan:
        left = deadline - time.monotonic() - args.reserve_s
        if per_session_s is not None and left < 1.3 * per_session_s:
            log(f"skipping {s['id']}: {left:.0f} s left, a session takes ~{per_session_s:.0f} s")
            res["skipped"].append(s["id"])
            continue
        t = time.monotonic()
        spins = {}
        for hook, frac in s.get("hooks", {}).items():
            ns = frac * base_ms * 1e6
            spins[hook] = {"fraction_of_step": frac, "target_ns": ns,
                           "cycles": cycles_for(cal, ns),
                           "calibrated_ns": cal["offset_ns"] + cal["ns_per_cycle"] * cycles_for(cal, ns)}
        loop.perturb = {h: v["cycles"] for h, v in spins.items()}
        e0 = nvml.energy_mj()
        sess = {"id": s["id"], "kind": "baseline" if not spins else "experiment",
                "expect": s.get("expect"), "spins": spins}
        sess.update(profiled_session(torch, loop, out, s["id"], args.active_steps))
        dev.sync()
        e1, t1 = nvml.energy_mj(), time.perf_counter()
        sess["unprofiled_step_ms"] = loop.timed_steps(args.timed_steps)
        dev.sync()
        e2, t2 = nvml.energy_mj(), time.perf_counter()
        if e1 is not None and e2 is not None:
            sess["unprofiled_energy_j_per_step"] = (e2 - e1) / 1e3 / args.timed_steps
            sess["unprofiled_power_w"] = (e2 - e1) / 1e3 / (t2 - t1)
        loop.perturb = {}
        sess["seconds"] = round(time.monotonic() - t, 2)
        per_session_s = max(per_session_s or 0, sess["seconds"])
        med = statistics.median(sess["unprofiled_step_ms"])
        log(f"session {s['id']}: {sess['seconds']} s, trace {sess['trace_bytes'] / 1e6:.1f} MB, "
            f"unprofiled step median {med:.2f} ms, spins "
            f"{ {h: round(v['target_ns'] / 1e6, 3) for h, v in spins.items()} } ms")
        res["sessions"].append(sess)
        _ = e0

    if time.monotonic() < deadline - 5:
        log(f"energy: {args.energy_steps} unprofiled steps with NVML")
        dev.sync()
        with PowerSampler(nvml) as ps:
            e0, t0 = nvml.energy_mj(), time.perf_counter()
            steps = loop.timed_steps(args.energy_steps)
            dev.sync()
            e1, t1 = nvml.energy_mj(), time.perf_counter()
        en = {"steps": len(steps), "step_ms": steps, "seconds": t1 - t0, **ps.summary()}
        if e0 is not None and e1 is not None:
            en["energy_j"] = (e1 - e0) / 1e3
            en["energy_j_per_step"] = en["energy_j"] / len(steps)
            en["power_w_from_energy"] = en["energy_j"] / (t1 - t0)
        res["energy"] = en
        log(f"  {json.dumps({k: v for k, v in en.items() if k != 'step_ms'})}")
    return res


def run_plain(args, torch, dev: Dev, out: Path, nvml: Nvml) -> dict:
    cfg = dict(vocab=8192, seq=1024, d_model=1024, heads=16, layers=12, teacher_layers=2,
               batch=args.batch or 8)
    if args.dry:
        cfg = dict(vocab=128, seq=32, d_model=32, heads=2, layers=3, teacher_layers=1, batch=2)
    loop = Loop(torch, cfg, dev)
    loop.timed_steps(2)
    dev.sync()
    e0, t0 = nvml.energy_mj(), time.perf_counter()
    steps = loop.timed_steps(args.steps)
    dev.sync()
    e1, t1 = nvml.energy_mj(), time.perf_counter()
    res = {"schema": "emo-device-plain/1", "config": cfg, "step_ms": steps, "seconds": t1 - t0}
    if e0 is not None and e1 is not None:
        res["energy_j"] = (e1 - e0) / 1e3
    log(f"plain: {len(steps)} steps, median {statistics.median(steps):.2f} ms")
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mode", choices=["validate", "plain"], default="validate")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--dry", action="store_true", help="tiny model (CPU plumbing check)")
    ap.add_argument("--out", default="workload-out")
    ap.add_argument("--budget-s", type=float, default=240, help="whole run, seconds")
    ap.add_argument("--reserve-s", type=float, default=20, help="kept for the energy phase")
    ap.add_argument("--target-step-ms", type=float, default=300)
    ap.add_argument("--max-batch", type=int, default=128)
    ap.add_argument("--batch", type=int, default=0, help="fixed batch (no auto-sizing)")
    ap.add_argument("--active-steps", type=int, default=4, help="profiled steps per session")
    ap.add_argument("--timed-steps", type=int, default=5, help="unprofiled steps per session")
    ap.add_argument("--energy-steps", type=int, default=20)
    ap.add_argument("--steps", type=int, default=10, help="plain mode: steps")
    ap.add_argument("--experiments", help="JSON list of {id, hooks: {hook: fraction}, expect}")
    ap.add_argument("--only", help="comma-separated experiment ids")
    args = ap.parse_args()

    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        log("CUDA is not available: use --device cpu --dry")
        return 2
    torch.manual_seed(0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = Dev(torch, args.device)
    nvml = Nvml() if dev.cuda else Nvml.__new__(Nvml)
    if not dev.cuda:
        nvml.ok = False
    if dev.cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
    log(f"torch {torch.__version__}, device {args.device}, mode {args.mode}, NVML {nvml.ok}")
    if args.mode == "plain":
        res = run_plain(args, torch, dev, out, nvml)
        name = "plain.json"
    else:
        res = run_validate(args, torch, dev, out, nvml)
        name = "workload.json"
    res["wall_s"] = round(time.monotonic() - T0, 1)
    (out / name).write_text(json.dumps(res, indent=1) + "\n")
    log(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
