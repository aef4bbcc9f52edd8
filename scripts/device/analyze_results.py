#!/usr/bin/env python3
"""Predicts the device run's perturbed step times with `emo analyze --what-if` (issue 9).

  analyze_results.py RESULTS_DIR [--emo build/emo] [--md FILE] [--json FILE]
                     [--catalog data/gpu_catalog.json]

RESULTS_DIR is what scripts/device/validate.sh left under $OUT (workload.json, the traces as
*.pt.trace.json.gz or inside traces.tar, nvml.json, validate.json). No GPU is needed.

For every experiment session and every profiled step (ProfilerStep#N) of the first baseline
(base0):
  * target op = the GPU op launched last inside the hook's range (emo_hook/<hook>) of that step;
  * what-if  = `corr=<its correlation>:+<D>ns` for each perturbed hook, with D either the
    calibrated spin length (cycles -> ns, from the sleep calibration) or the median spin_kernel
    duration seen in the experiment's own trace ("trace D": isolates the graph model);
  * predicted step = `emo analyze base0 --window ProfilerStep#N --what-if ...` makespan.
Measured step = `emo analyze <experiment> --window ProfilerStep#N` makespan (same definition).
Medians over the steps are compared: error = (predicted - measured) / measured.
The target's slack in base0 comes from `emo analyze --overlay`.

--catalog: writes the NVML facts of nvml.json into the H200 entry of the GPU catalog (with
'measured: ...' sources and the date).
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
API_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
SPIN = "spin_kernel"


def ns(us) -> int:
    return int(round(float(us) * 1000))


class KTrace:
    """The few things of a Kineto trace the analysis needs, in integer ns."""

    def __init__(self, path: Path, hook_prefix: str) -> None:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt") as f:
            events = json.load(f)["traceEvents"]
        self.path = path
        self.steps: dict[str, tuple[int, int]] = {}
        self.hooks: list[tuple[str, int, int, object, object]] = []
        self.launches: list[tuple[int, int, object, object]] = []  # ts, corr, pid, tid
        self.gpu: dict[int, dict] = {}
        for e in events:
            if e.get("ph") != "X":
                continue
            cat, name = e.get("cat", ""), e.get("name", "")
            args = e.get("args") or {}
            if cat in ("user_annotation", "cpu_op", "Operator", "python_function"):
                if name.startswith("ProfilerStep#"):
                    self.steps[name] = (ns(e["ts"]), ns(e["ts"]) + ns(e.get("dur", 0)))
                elif name.startswith(hook_prefix):
                    self.hooks.append((name[len(hook_prefix):], ns(e["ts"]),
                                       ns(e["ts"]) + ns(e.get("dur", 0)), e.get("pid"),
                                       e.get("tid")))
            elif cat in API_CATS and "correlation" in args:
                self.launches.append((ns(e["ts"]), int(args["correlation"]), e.get("pid"),
                                      e.get("tid")))
            elif cat in GPU_CATS and "correlation" in args:
                self.gpu[int(args["correlation"])] = {
                    "name": name, "stream": args.get("stream", e.get("tid")),
                    "start_ns": ns(e["ts"]), "dur_ns": ns(e.get("dur", 0)),
                    "correlation": int(args["correlation"])}
        self.launches.sort()

    def hook_in(self, step: str, hook: str):
        b, e = self.steps[step]
        found = [h for h in self.hooks if h[0] == hook and b <= h[1] <= e]
        return found[0] if found else None

    def target(self, step: str, hook: str) -> dict | None:
        """GPU op launched last inside the hook's range of `step` (any thread)."""
        h = self.hook_in(step, hook)
        if h is None:
            return None
        inside = [l for l in self.launches if h[1] <= l[0] < h[2] and l[1] in self.gpu]
        return self.gpu[inside[-1][1]] if inside else None

    def spin_after(self, step: str, hook: str) -> dict | None:
        """The spin kernel launched by the hook's thread first after the hook's range."""
        h = self.hook_in(step, hook)
        if h is None:
            return None
        for ts, corr, pid, tid in self.launches:
            if ts >= h[2] and (pid, tid) == (h[3], h[4]) and corr in self.gpu:
                op = self.gpu[corr]
                return op if SPIN in op["name"] else None
        return None


def emo_json(emo: str, args: list[str]) -> dict:
    r = subprocess.run([emo, "analyze", *args, "--json", "-"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"emo analyze {' '.join(args)}: {r.stderr.strip() or r.returncode}")
    return json.loads(r.stdout)


def overlay_slack(emo: str, trace: Path, step: str, tmp: Path) -> dict[int, int]:
    """correlation -> slack_ns of the GPU ops of `step` (emo analyze --overlay)."""
    out = tmp / f"overlay-{trace.name}-{step.replace('#', '_')}.json"
    r = subprocess.run([emo, "analyze", str(trace), "--window", step, "--overlay", str(out)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {}
    events = json.loads(out.read_text())
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    res = {}
    for e in events:
        a = e.get("args") or {}
        if e.get("cat") in ("kernel", "memcpy", "memset") and "slack_ns" in a:
            res[int(a["correlation"])] = int(a["slack_ns"])
    return res


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def pct(x):
    return "–" if x is None else f"{100 * x:+.2f} %"


def ms(x):
    return "–" if x is None else f"{x / 1e6:.3f}"


def locate_traces(results: Path, tmp: Path) -> dict[str, Path]:
    found = {p.name: p for p in results.glob("*.pt.trace.json*")}
    for tarname in sorted(results.glob("traces*.tar")):
        with tarfile.open(tarname) as tf:
            for m in tf.getmembers():
                if m.isfile() and ".pt.trace.json" in m.name and "/" not in m.name.strip("./"):
                    if hasattr(tarfile, "data_filter"):
                        tf.extract(m, tmp, filter="data")
                    else:
                        tf.extract(m, tmp)
                    found.setdefault(Path(m.name).name, tmp / Path(m.name).name)
    return found


def analyze(results: Path, emo: str, tmp: Path) -> dict:
    w = json.loads((results / "workload.json").read_text())
    prefix = w.get("hook_prefix", "emo_hook/")
    traces = locate_traces(results, tmp)
    sessions = {s["id"]: s for s in w["sessions"]}
    base = sessions.get("base0")
    if base is None or base["trace"] not in traces:
        raise SystemExit("analyze_results: no base0 session or trace")
    base_path = traces[base["trace"]]
    kb = KTrace(base_path, prefix)
    steps = [s for s in base["profiled_steps"] if s in kb.steps]
    report = {"results_dir": str(results), "emo": emo, "base_trace": base["trace"],
              "steps": steps, "baselines": {}, "experiments": [],
              "sleep_calibration": {k: v for k, v in w.get("sleep_calibration", {}).items()
                                    if k != "points"},
              "batch": w.get("batch"), "config": w.get("config"), "gpu": w.get("gpu"),
              "energy": {k: v for k, v in (w.get("energy") or {}).items() if k != "step_ms"}}

    base_json = {st: emo_json(emo, [str(base_path), "--window", st]) for st in steps}
    slack = {st: overlay_slack(emo, base_path, st, tmp) for st in steps}
    for sid, s in sessions.items():
        if s["kind"] != "baseline" or s["trace"] not in traces:
            continue
        kt = KTrace(traces[s["trace"]], prefix)
        js = [emo_json(emo, [str(traces[s["trace"]]), "--window", st]) for st in s["profiled_steps"]
              if st in kt.steps]
        report["baselines"][sid] = {
            "makespan_ns": [j["makespan_ns"] for j in js],
            "median_ns": med([j["makespan_ns"] for j in js]),
            "replay_error_max": max((j["replay_error"] for j in js), default=None),
            "unprofiled_median_ms": med(s.get("unprofiled_step_ms", []))}
    b0 = report["baselines"]["base0"]["median_ns"]
    others = [v["median_ns"] for k, v in report["baselines"].items() if v["median_ns"]]
    report["baseline_spread"] = (max(others) - min(others)) / b0 if others and b0 else None

    for sid, s in sessions.items():
        if s["kind"] != "experiment":
            continue
        ex = {"id": sid, "expect": s.get("expect"), "hooks": {}, "notes": []}
        if s["trace"] not in traces:
            ex["notes"].append("trace missing")
            report["experiments"].append(ex)
            continue
        kp = KTrace(traces[s["trace"]], prefix)
        psteps = [st for st in s["profiled_steps"] if st in kp.steps]
        for hook, spin in s["spins"].items():
            spins = [kp.spin_after(st, hook) for st in psteps]
            durs = [sp["dur_ns"] for sp in spins if sp]
            gaps = []
            for st, sp in zip(psteps, spins):
                tgt = kp.target(st, hook)
                if sp and tgt:
                    gaps.append(sp["start_ns"] - (tgt["start_ns"] + tgt["dur_ns"]))
            targets = [kb.target(st, hook) for st in steps]
            ex["hooks"][hook] = {
                "calibrated_ns": spin["calibrated_ns"], "target_ns": spin["target_ns"],
                "trace_spin_ns": med(durs), "spins_found": len(durs),
                "spin_start_after_target_end_ns": med(gaps),
                "target": None if not targets or targets[0] is None else
                {k: targets[0][k] for k in ("name", "stream")},
                "spin_stream": spins[0]["stream"] if spins and spins[0] else None,
                "slack_ns": med([slack[st].get(t["correlation"]) for st, t in zip(steps, targets)
                                 if t]),
                "_targets": targets}
            if len(durs) < len(psteps):
                ex["notes"].append(f"{hook}: spin found in {len(durs)} of {len(psteps)} steps")
            tgt0 = ex["hooks"][hook]["target"]
            if tgt0 and spins and spins[0] and str(spins[0]["stream"]) != str(tgt0["stream"]):
                ex["notes"].append(f"{hook}: spin on stream {spins[0]['stream']}, target on "
                                   f"{tgt0['stream']}")
        pred_cal, pred_trace, base_ms_, matched_bad, missing = [], [], [], 0, 0
        for i, st in enumerate(steps):
            rules_cal, rules_tr = [], []
            for hook, h in ex["hooks"].items():
                t = h["_targets"][i]
                if t is None:
                    continue
                rules_cal.append(f"corr={t['correlation']}:+{round(h['calibrated_ns'])}ns")
                d_tr = h["trace_spin_ns"] if h["trace_spin_ns"] is not None else h["calibrated_ns"]
                rules_tr.append(f"corr={t['correlation']}:+{round(d_tr)}ns")
            if len(rules_cal) != len(ex["hooks"]):
                missing += 1
                continue
            j = emo_json(emo, [str(base_path), "--window", st, "--what-if", ";".join(rules_cal),
                               "--what-if", ";".join(rules_tr)])
            matched_bad += sum(1 for wi in j["what_if"] if wi["matched_ops"] != len(rules_cal))
            pred_cal.append(j["what_if"][0]["makespan_ns"])
            pred_trace.append(j["what_if"][1]["makespan_ns"])
            base_ms_.append(j["makespan_ns"])
        if missing:
            ex["notes"].append(f"a hook's target was not found in {missing} of {len(steps)} steps")
        if matched_bad:
            ex["notes"].append(f"{matched_bad} what-if(s) matched another number of ops than rules")
        meas = [emo_json(emo, [str(traces[s["trace"]]), "--window", st]) for st in psteps]
        ex["measured_ns"] = [m["makespan_ns"] for m in meas]
        ex["measured_replay_error_max"] = max((m["replay_error"] for m in meas), default=None)
        ex["base_ns"] = med(base_ms_)
        ex["base_replay_error_max"] = max((base_json[st]["replay_error"] for st in steps),
                                          default=None)
        ex["predicted_cal_ns"] = med(pred_cal)
        ex["predicted_trace_ns"] = med(pred_trace)
        ex["measured_median_ns"] = med(ex["measured_ns"])
        m = ex["measured_median_ns"]
        ex["error_cal"] = (ex["predicted_cal_ns"] - m) / m if m and ex["predicted_cal_ns"] else None
        ex["error_trace"] = (ex["predicted_trace_ns"] - m) / m if m and ex["predicted_trace_ns"] \
            else None
        total_d = sum(h["calibrated_ns"] for h in ex["hooks"].values())
        if ex["base_ns"] and ex["predicted_cal_ns"] and total_d:
            ex["predicted_delta_ns"] = ex["predicted_cal_ns"] - ex["base_ns"]
            ex["predicted_share_of_delay"] = ex["predicted_delta_ns"] / total_d
        for h in ex["hooks"].values():
            sl = h["slack_ns"]
            h["emo_class"] = None if sl is None else "critical" if sl == 0 else \
                "within slack" if sl >= h["calibrated_ns"] else "exceeds slack"
        # Unprofiled wall-clock steps, against the nearest baseline (by position in the run).
        un = med(s.get("unprofiled_step_ms", []))
        bases = [v["unprofiled_median_ms"] for v in report["baselines"].values()
                 if v["unprofiled_median_ms"]]
        if un and bases:
            ub = statistics.median(bases)
            ex["unprofiled_change"] = (un - ub) / ub
            if ex["base_ns"] and ex["predicted_cal_ns"]:
                ex["predicted_change"] = (ex["predicted_cal_ns"] - ex["base_ns"]) / ex["base_ns"]
        for h in ex["hooks"].values():
            h.pop("_targets")
        report["experiments"].append(ex)
    errs = [abs(e["error_trace"]) for e in report["experiments"] if e.get("error_trace") is not None]
    report["max_abs_error_trace"] = max(errs) if errs else None
    errs = [abs(e["error_cal"]) for e in report["experiments"] if e.get("error_cal") is not None]
    report["max_abs_error_cal"] = max(errs) if errs else None
    return report


def to_markdown(r: dict, nvml: dict | None) -> str:
    L = []
    L.append(f"Base trace `{r['base_trace']}`, steps {', '.join(r['steps'])}; batch {r['batch']}; "
             f"GPU {((r.get('gpu') or {}).get('name'))}.")
    c = r["sleep_calibration"]
    if c:
        L.append(f"Spin calibration (torch.cuda._sleep, CUDA events, idle GPU): "
                 f"{c.get('ns_per_cycle', 0):.5f} ns/cycle + {c.get('offset_ns', 0):.0f} ns "
                 f"(implied {c.get('implied_clock_mhz') or 0:.0f} MHz; NVML SM clock "
                 f"{c.get('nvml_sm_clock_mhz')} MHz; max residual {c.get('max_residual_ns') or 0:.0f} ns).")
    L.append("")
    L.append("| baseline session | step makespan, median (ms) | replay error (max) | unprofiled step, median (ms) |")
    L.append("|---|---|---|---|")
    for k, v in r["baselines"].items():
        L.append(f"| {k} | {ms(v['median_ns'])} | {pct(v['replay_error_max'])} | "
                 f"{v['unprofiled_median_ms'] and round(v['unprofiled_median_ms'], 2)} |")
    L.append("")
    L.append(f"Spread of the baseline sessions' medians: {pct(r['baseline_spread'])} of base0.")
    L.append("")
    L.append("| exp | hook → target op (stream) | slack of target in base0 (ms) | spin D calibrated / in trace (ms) | emo: predicted Δ (share of ΣD) | base0 step (ms) | measured step (ms) | predicted, calibrated D (ms) | error | predicted, trace D (ms) | error | replay error base / exp | unprofiled Δ measured / predicted |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for e in r["experiments"]:
        hooks = "; ".join(
            f"`{h}` → `{(v['target'] or {}).get('name', '?')[:48]}` ({(v['target'] or {}).get('stream')})"
            for h, v in e["hooks"].items())
        sl = "; ".join(f"{ms(v['slack_ns'])} ({v.get('emo_class') or '?'})" for v in e["hooks"].values())
        share = e.get("predicted_share_of_delay")
        says = "–" if share is None else f"{ms(e['predicted_delta_ns'])} ms ({100 * share:.0f} %)"
        d = "; ".join(f"{ms(v['calibrated_ns'])} / {ms(v['trace_spin_ns'])}" for v in e["hooks"].values())
        L.append(f"| {e['id']} | {hooks} | {sl} | {d} | {says} | {ms(e.get('base_ns'))} | "
                 f"{ms(e.get('measured_median_ns'))} | {ms(e.get('predicted_cal_ns'))} | {pct(e.get('error_cal'))} | "
                 f"{ms(e.get('predicted_trace_ns'))} | {pct(e.get('error_trace'))} | "
                 f"{pct(e.get('base_replay_error_max'))} / {pct(e.get('measured_replay_error_max'))} | "
                 f"{pct(e.get('unprofiled_change'))} / {pct(e.get('predicted_change'))} |")
    L.append("")
    def absp(x):
        return "–" if x is None else f"{100 * x:.2f} %"
    L.append(f"Largest |prediction error|: {absp(r['max_abs_error_trace'])} with the spin lengths "
             f"seen in the traces, {absp(r['max_abs_error_cal'])} with the calibrated ones (goal ≤ 2 %).")
    notes = [f"{e['id']}: {n}" for e in r["experiments"] for n in e["notes"]]
    if notes:
        L.append("")
        L.append("Notes: " + "; ".join(notes) + ".")
    en = r.get("energy") or {}
    if en.get("energy_j_per_step") is not None:
        L.append("")
        L.append(f"Energy of {en['steps']} unprofiled steps (NVML total-energy counter): "
                 f"{en['energy_j_per_step']:.1f} J/step, {en.get('power_w_from_energy', 0):.0f} W "
                 f"mean; SM clock median {en.get('sm_clock_mhz_median')} MHz "
                 f"({en.get('sm_clock_mhz_min')}–{en.get('sm_clock_mhz_max')}).")
    if nvml:
        L.append("")
        L.extend(nvml_lines(nvml))
    return "\n".join(L) + "\n"


def nvml_lines(n: dict) -> list[str]:
    s = n["static"]
    sm = s.get("supported_sm_clocks_mhz") or {}
    lines = [f"NVML (read-only, {n['measured_utc']}): {s.get('name')}, driver {s.get('driver_version')}."]
    for mem, clocks in sm.items():
        if isinstance(clocks, list) and clocks:
            lines.append(f"* memory clock {mem} MHz: {len(clocks)} SM clocks, {min(clocks)}–{max(clocks)} MHz")
    lines.append(f"* default application clocks {s.get('default_application_clock_mhz')}, "
                 f"max {s.get('max_clock_mhz')}; power limit {s.get('power_limit_mw')} mW "
                 f"(default {s.get('power_limit_default_mw')}, range {s.get('power_limit_constraints_mw')})")
    def num(x, fmt_=".1f"):
        return "–" if x is None else format(x, fmt_)

    for key in ("idle", "busy_matmul", "busy_copy", "idle_after"):
        v = n.get(key)
        if not v or "error" in v:
            continue
        up = v.get("energy_counter_update") or {}
        pu = v.get("power_reading_update") or {}
        lines.append(f"* {key}: {num(v.get('power_w_from_energy'))} W from the energy counter, "
                     f"{num(v.get('power_w_mean_of_samples'))} W mean of power readings; "
                     f"energy counter updates every {num(up.get('median_ms'), '.2f')} ms (p10 "
                     f"{num(up.get('p10_ms'), '.2f')}, p90 {num(up.get('p90_ms'), '.2f')}), power "
                     f"reading every {num(pu.get('median_ms'), '.2f')} ms; SM clock "
                     f"{v.get('sm_clock_mhz')}; {v.get('polls')} polls ({num(v.get('poll_us'))} µs each)")
    return lines


def update_catalog(catalog: Path, n: dict) -> list[str]:
    """Writes the NVML facts into the H200 entry; returns what changed."""
    cat = json.loads(catalog.read_text())
    s = n["static"]
    name = s.get("name")
    entry = next(g for g in cat["gpus"] if name in g.get("nvml_names", []) or g["id"].startswith("H200"))
    date = n["measured_utc"][:10]
    src = f"measured: NVML read-only on an {name} (driver {s.get('driver_version')}), {date}, scripts/device/nvml_probe.py"
    changed = []
    sm = s.get("supported_sm_clocks_mhz") or {}
    mems = [m for m in (s.get("supported_memory_clocks_mhz") or []) if isinstance(m, int)]
    if mems and isinstance(sm.get(str(max(mems))), list):
        clocks = sorted(set(sm[str(max(mems))]))
        entry["sm_clock_mhz"] = clocks
        entry["sm_clock_mhz_source"] = src + f" (at memory clock {max(mems)} MHz)"
        entry["memory_clock_mhz"] = sorted(mems)
        entry["memory_clock_mhz_source"] = src
        changed += ["sm_clock_mhz", "memory_clock_mhz"]
    pl = s.get("power_limit_constraints_mw")
    if isinstance(pl, list) and len(pl) == 2 and isinstance(s.get("power_limit_default_mw"), int):
        entry["power_limit_w"] = {"min": pl[0] / 1e3, "max": pl[1] / 1e3,
                                  "default": s["power_limit_default_mw"] / 1e3}
        entry["power_limit_w_source"] = src
        changed.append("power_limit_w")
    idle = (n.get("idle") or {}).get("power_w_from_energy")
    if idle:
        entry["idle_power_w"] = round(idle, 1)
        entry["idle_power_w_source"] = src + " (energy counter, no CUDA context, default clocks)"
        changed.append("idle_power_w")
    busy = (n.get("busy_matmul") or {}).get("power_w_from_energy")
    if busy:
        clk = (n["busy_matmul"].get("sm_clock_mhz") or {}).get("median")
        entry["busy_power_w"] = round(busy, 1)
        entry["busy_power_w_source"] = src + f" (bf16 8192^3 matmul loop at default clocks, SM {clk} MHz)"
        changed.append("busy_power_w")
    up = ((n.get("busy_matmul") or n.get("idle") or {}).get("energy_counter_update") or {}).get("median_ms")
    if up:
        entry["energy_counter_update_ms"] = round(up, 2)
        entry["energy_counter_update_ms_source"] = src + " (median interval between counter changes)"
        changed.append("energy_counter_update_ms")
    catalog.write_text(json.dumps(cat, indent=1) + "\n")
    return changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--emo", default=str(Path(__file__).resolve().parents[2] / "build" / "emo"))
    ap.add_argument("--md", help="write the markdown table here")
    ap.add_argument("--json", help="write the full report here")
    ap.add_argument("--catalog", help="update this GPU catalog's H200 entry from nvml.json")
    args = ap.parse_args()
    results = Path(args.results)
    with tempfile.TemporaryDirectory(prefix="emo-results-") as tmp:
        r = analyze(results, args.emo, Path(tmp))
    nvml_path = results / "nvml.json"
    nvml = json.loads(nvml_path.read_text()) if nvml_path.exists() else None
    md = to_markdown(r, nvml)
    print(md)
    if args.md:
        Path(args.md).write_text(md)
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1) + "\n")
    if args.catalog and nvml:
        print("catalog: updated " + ", ".join(update_catalog(Path(args.catalog), nvml)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
