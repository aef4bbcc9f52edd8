#!/usr/bin/env bash
# Ingest benchmark: EMO's Kineto reader against a bare simdjson DOM parse, plus peak memory of
# `emo inspect` on a >= 500 MB trace. See docs/benchmarks.md.
#
#   scripts/bench-ingest.sh [BUILD_DIR]      (default: build-bench, Release)
#
# Environment: EMO_DATA_DIR (default ../shared/data beside the checkout), TMPDIR (where the tiled
# trace is kept and reused, default /tmp), EMO_BENCH_CPU (core to pin to, default 0),
# EMO_BENCH_REPS (repetitions, default 5), EMO_BENCH_TARGET_MB (tiled size, default 500).
# Takes ~3-6 minutes on a 2-core VM (most of it the first build). Needs python3 (stdlib only),
# /usr/bin/time and taskset.
set -euo pipefail

source "$(dirname "$0")/bench-common.sh"
bench_setup bench-ingest "${1:-build-bench}" emo emo-tile-trace emo-bench-ingest
target_mb=${EMO_BENCH_TARGET_MB:-500}
tiled=$tmp/emo-bench-v100-tiled-${target_mb}mb.json

echo "== tiled trace ($tiled)"
min_bytes=$(python3 -c "print(int($target_mb * 1e6))")
if [[ -f $tiled ]] && (( $(stat -c %s "$tiled") >= min_bytes )); then
  echo "reusing it"
else
  "$build/emo-tile-trace" "$v100" "$tiled.part" --target-mb "$target_mb"
  mv "$tiled.part" "$tiled"
fi

out=$(mktemp -d "$tmp/emo-bench-ingest.XXXXXX")
trap 'rm -rf "$out"' EXIT

run_bench() {  # name trace
  echo "== emo-bench-ingest on $1 (pinned to CPU $cpu, $reps repetitions)"
  EMO_BENCH_TRACE=$2 taskset -c "$cpu" "$build/emo-bench-ingest" \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/$1.json" --benchmark_out_format=json
}
run_bench v100 "$v100"
run_bench tiled "$tiled"

echo "== peak RSS of emo inspect (3 runs each)"
rss() {  # name trace
  for i in 1 2 3; do
    /usr/bin/time -f %M -o "$out/$1.rss.$i" "$build/emo" inspect "$2" >/dev/null
    cat "$out/$1.rss.$i"
  done >"$out/$1.rss"
}
rss v100 "$v100"
rss tiled "$tiled"

gzip -dc "$v100" | wc -c >"$out/v100.bytes"
stat -c %s "$tiled" >"$out/tiled.bytes"

python3 - "$out" <<'PY'
import json, os, statistics, sys

out = sys.argv[1]

def medians(name):
    runs = json.load(open(f"{out}/{name}.json"))["benchmarks"]
    res = {}
    for r in runs:
        if r.get("aggregate_name") == "median":
            res[r["run_name"].split("/")[0]] = r
    return res

def unit_s(r, key):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[r.get("time_unit", "ns")]
    return r[key] * scale

rows = []
for name, label in (("v100", "hta_v100_ns_resolution"), ("tiled", "v100 tiled")):
    m = medians(name)
    size = int(open(f"{out}/{name}.bytes").read())
    emo, dom = m["BM_EmoKinetoIngest"], m["BM_SimdjsonDomParse"]
    walk = m.get("BM_SimdjsonOnDemandWalk")
    rss_kb = statistics.median(int(x) for x in open(f"{out}/{name}.rss").read().split())
    rows.append({
        "input": label,
        "mb": size / 1e6,
        "emo": emo["bytes_per_second"] / 1e6,
        "dom": dom["bytes_per_second"] / 1e6,
        "ratio": unit_s(emo, "cpu_time") / unit_s(dom, "cpu_time"),
        "walk": walk["bytes_per_second"] / 1e6 if walk else float("nan"),
        "walk_ratio": unit_s(emo, "cpu_time") / unit_s(walk, "cpu_time") if walk else float("nan"),
        "ops": emo["ops/s"],
        "rss": rss_kb * 1024 / 1e6,
        "rss_ratio": rss_kb * 1024 / size,
        "gunzip": m["BM_Gunzip"]["bytes_per_second"] / 1e6 if "BM_Gunzip" in m else None,
    })

print()
print("Medians of the repetitions; MB = 10^6 bytes of decompressed JSON; CPU time of one core.")
head = (f"{'input':<24}{'MB':>9}{'EMO MB/s':>10}{'DOM MB/s':>10}{'EMO/DOM':>9}{'OD MB/s':>9}"
        f"{'EMO/OD':>8}{'Mops/s':>8}{'RSS MB':>9}{'RSS/size':>9}")
print(head)
print("-" * len(head))
for r in rows:
    print(f"{r['input']:<24}{r['mb']:>9.1f}{r['emo']:>10.0f}{r['dom']:>10.0f}{r['ratio']:>9.2f}"
          f"{r['walk']:>9.0f}{r['walk_ratio']:>8.2f}"
          f"{r['ops'] / 1e6:>8.2f}{r['rss']:>9.0f}{r['rss_ratio']:>9.2f}")
print(f"{'target':<24}{'':>9}{'>= 300':>10}{'':>10}{'<= 2':>9}{'':>9}{'':>8}{'':>8}{'':>9}{'<= 1.5':>9}")
print("DOM = simdjson DOM parse (the issue's 'bare parse'); OD = simdjson On-Demand walk of every")
print("event's keys, values skipped (a stricter reference: no numbers parsed, nothing stored).")
for r in rows:
    if r["gunzip"]:
        print(f"(gunzip of {r['input']}: {r['gunzip']:.0f} MB/s of output)")
t = rows[-1]
verdict = [("EMO MB/s >= 300", t["emo"] >= 300), ("EMO/DOM <= 2", t["ratio"] <= 2),
           ("RSS/size <= 1.5", t["rss_ratio"] <= 1.5)]
print("on the tiled trace: " + ", ".join(f"{n}: {'ok' if ok else 'MISSED'}" for n, ok in verdict))
print("load average:", " ".join(open("/proc/loadavg").read().split()[:3]), f"({os.cpu_count()} CPUs)")
PY
