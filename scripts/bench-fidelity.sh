#!/usr/bin/env bash
# Fidelity of what-if timing against measurements, without a GPU (docs/graph.md, "Fidelity").
#
# Every multi-step shared Kineto trace holds natural experiments: the same ops run again in the
# next step with other durations. For each step j, the graph of a neighbouring step (j-1, or
# j+1 for the first) is replayed with step j's measured durations and its state at the window
# start (emo analyze --durations-from), and the predicted makespan is compared with step j's
# recorded one. Prints the per-step errors and a Markdown table (median and worst |error| per
# trace and over all), also written to build/bench-fidelity/table.md.
#
#   scripts/bench-fidelity.sh [EMO_BINARY]        (default build/emo; build it first)
#
# Environment: EMO_DATA_DIR (default ../shared/data beside the checkout). ~2 min on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
emo=${1:-$root/build/emo}
data=${EMO_DATA_DIR:-$root/../shared/data}
[[ -x $emo ]] || { echo "bench-fidelity: error: no emo binary at $emo (build it first)" >&2; exit 2; }
[[ -d $data/kineto ]] || { echo "bench-fidelity: error: no shared data at $data/kineto (set EMO_DATA_DIR)" >&2; exit 2; }
out=$root/build/bench-fidelity
mkdir -p "$out"
python3 - "$emo" "$data/kineto" "$out" <<'PY'
import glob, json, os, statistics, subprocess, sys
emo, kdir, out = sys.argv[1:]

def run(*args):
    p = subprocess.run([emo, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip())
    return json.loads(p.stdout)

rows, per_trace, failures = [], [], []
for path in sorted(glob.glob(os.path.join(kdir, "*.json.gz"))):
    steps = run("inspect", path, "--json", "-")["steps"]
    if len(steps) < 2:
        continue
    name = os.path.basename(path)[: -len(".json.gz")]
    errs, errs_dur = [], []
    for j in range(len(steps)):
        g = j - 1 if j > 0 else j + 1
        try:
            a = run("analyze", path, "--annotation", "ProfilerStep", "--instance", str(g),
                    "--durations-from", path, "--durations-instance", str(j), "--json", "-")
        except RuntimeError as e:
            failures.append(f"{name} step {j} from {g}: {e}")
            continue
        d = a["durations_from"]
        err = d["error"]
        err_dur = d["durations_only_makespan_ns"] / d["source_makespan_ns"] - 1
        errs.append(abs(err)); errs_dur.append(abs(err_dur))
        unmatched = d["gpu_ops"] + d["calls"] - d["gpu_matched"] - d["calls_matched"]
        matched = d["gpu_matched"] + d["calls_matched"]
        same_work = d["gpu_matched"] >= 0.95 * max(d["gpu_ops"], d["source_gpu_ops"])
        rows.append((name, steps[j], steps[g], d["source_makespan_ns"], d["predicted_makespan_ns"], err,
                     err_dur, d["gpu_matched"], d["gpu_ops"], unmatched, d["source_unmatched"], same_work,
                     d["source_gpu_ops"]))
        print(f"{name:32} {steps[j]:>18} from {steps[g]:>18}: recorded {d['source_makespan_ns']/1e6:9.3f} ms, "
              f"predicted {d['predicted_makespan_ns']/1e6:9.3f} ms, error {100*err:+7.2f} % "
              f"(durations only {100*err_dur:+7.2f} %), GPU ops matched {d['gpu_matched']}/{d['gpu_ops']}, "
              f"unmatched {unmatched} here / {d['source_unmatched']} there", flush=True)
    if errs:
        per_trace.append((name, len(errs), statistics.median(errs), max(errs), statistics.median(errs_dur), max(errs_dur)))

all_errs = [abs(r[5]) for r in rows]
all_dur = [abs(r[6]) for r in rows]
# A graph whose GPU ops are not the step's own (more than 5 % of the GPU ops of either window
# have no counterpart in the other: steps that run different work, such as the first profiled step of a
# DDP job) cannot predict it; such pairs are listed as failures and left out of "same work".
same_errs = [abs(r[5]) for r in rows if r[11]]
for r in rows:
    if not r[11]:
        failures.append(f"{r[0]} {r[1]} from the graph of {r[2]}: error {100*r[5]:+.2f} %; {r[8] - r[7]} of the graph's "
                        f"{r[8]} GPU ops have no counterpart in {r[1]}, and {r[12] - r[7]} of its {r[12]} none in the graph "
                        f"(the steps run different work)")
lines = ["| trace | steps | median abs error | worst abs error | durations only: median | durations only: worst |",
         "|---|---|---|---|---|---|"]
for name, n, med, worst, med_d, worst_d in per_trace:
    lines.append(f"| {name} | {n} | {100*med:.2f} % | {100*worst:.2f} % | {100*med_d:.2f} % | {100*worst_d:.2f} % |")
if all_errs:
    lines.append(f"| **all** | {len(all_errs)} | **{100*statistics.median(all_errs):.2f} %** | "
                 f"**{100*max(all_errs):.2f} %** | {100*statistics.median(all_dur):.2f} % | {100*max(all_dur):.2f} % |")
if same_errs and len(same_errs) != len(all_errs):
    lines.append(f"| **all, same work** (<= 5 % of GPU ops unmatched either way) | {len(same_errs)} | "
                 f"**{100*statistics.median(same_errs):.2f} %** | **{100*max(same_errs):.2f} %** | | |")
table = "\n".join(lines)
print("\n" + table)
if failures:
    print("\nfailures:\n" + "\n".join("- " + f for f in failures))
with open(os.path.join(out, "table.md"), "w") as f:
    f.write(table + "\n")
with open(os.path.join(out, "steps.json"), "w") as f:
    json.dump([dict(zip(("trace", "step", "graph_of", "recorded_ns", "predicted_ns", "error", "error_durations_only",
                          "gpu_matched", "gpu_ops", "unmatched_here", "unmatched_there", "same_work", "source_gpu_ops"), r)) for r in rows], f, indent=1)
if all_errs:
    med, worst = statistics.median(all_errs), max(all_errs)
    print(f"\nmedian |error| {100*med:.2f} % (goal <= 2 %), worst {100*worst:.2f} % (goal <= 5 %)")
    if same_errs:
        print(f"same work only: median {100*statistics.median(same_errs):.2f} %, worst {100*max(same_errs):.2f} %")
PY
