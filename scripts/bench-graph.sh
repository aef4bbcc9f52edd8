#!/usr/bin/env bash
# Graph benchmark: dependency graph build, replay, slack, critical path and per-GPU slack on a
# >= 1 M-op tiled trace, plus peak memory of `emo analyze`. See docs/benchmarks.md.
#
#   scripts/bench-graph.sh [BUILD_DIR]      (default: build-bench, Release)
#
# Environment: EMO_DATA_DIR (default ../shared/data beside the checkout), TMPDIR (where the tiled
# trace is kept and reused, default /tmp), EMO_BENCH_CPU (core to pin to, default 0),
# EMO_BENCH_REPS (repetitions, default 5), EMO_BENCH_COPIES (copies of the v100 trace, default 23:
# 23 x 45,419 = 1,044,637 ops).
# Takes ~1-2 minutes on a 2-core VM once built (a first build adds a few minutes). Needs python3
# (stdlib only), /usr/bin/time and taskset.
set -euo pipefail

source "$(dirname "$0")/bench-common.sh"
bench_setup bench-graph "${1:-build-bench}" emo emo-tile-trace emo-bench-graph
copies=${EMO_BENCH_COPIES:-23}
tiled=$tmp/emo-bench-graph-v100x${copies}.json
min_ops=1000000
out=$(mktemp -d "$tmp/emo-bench-graph.XXXXXX")
trap 'rm -rf "$out"' EXIT

echo "== tiled trace ($tiled)"
if [[ -f $tiled ]]; then
  echo "reusing it"
else
  "$build/emo-tile-trace" "$v100" "$tiled.part" --copies "$copies"
  mv "$tiled.part" "$tiled"
fi
"$build/emo" inspect --json - "$tiled" >"$out/inspect.json"
ops=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['counts']; \
print(sum(c[k] for k in ('kernel','memcpy','memset','runtime_api','driver_api','sync',\
'framework_op','annotation','gpu_annotation')))" \
  "$out/inspect.json")
echo "ops (emo inspect): $ops"
(( ops >= min_ops )) || die "the tiled trace has $ops ops (< $min_ops): raise EMO_BENCH_COPIES"

run_bench() {  # name trace
  echo "== emo-bench-graph on $1 (pinned to CPU $cpu, $reps repetitions)"
  EMO_BENCH_TRACE=$2 taskset -c "$cpu" "$build/emo-bench-graph" \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/$1.json" --benchmark_out_format=json >"$out/$1.log" 2>&1 ||
    { cat "$out/$1.log" >&2; die "emo-bench-graph failed on $2"; }
}
run_bench v100 "$v100"
run_bench tiled "$tiled"

echo "== peak RSS (3 runs each, median): emo analyze --json /dev/null, and emo inspect"
rss() {  # name command...
  local name=$1
  shift
  for i in 1 2 3; do
    /usr/bin/time -f %M -o "$out/$name.rss.$i" "$@" >/dev/null
    cat "$out/$name.rss.$i"
  done >"$out/$name.rss"
}
rss v100.analyze "$build/emo" analyze "$v100" --json /dev/null
rss v100.inspect "$build/emo" inspect "$v100"
rss tiled.analyze "$build/emo" analyze "$tiled" --json /dev/null
rss tiled.inspect "$build/emo" inspect "$tiled"

python3 - "$out" "$ops" <<'PY'
import json, statistics, sys

out, tiled_ops = sys.argv[1], int(sys.argv[2])
BENCHES = ["BM_BuildGraph", "BM_Replay", "BM_Slack", "BM_CriticalPath", "BM_GpuSlack",
           "BM_WhatIf", "BM_AnalyzeAll"]

def medians(name):
    res = {}
    for r in json.load(open(f"{out}/{name}.json"))["benchmarks"]:
        if r.get("aggregate_name") == "median":
            res[r["run_name"].split("/")[0]] = r
    return res

def ms(r):
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[r.get("time_unit", "ns")]
    return r["cpu_time"] * scale

def rss_mb(name):
    return statistics.median(int(x) for x in open(f"{out}/{name}.rss").read().split()) * 1024 / 1e6

print()
print("Medians of the repetitions, CPU time of one pinned core. ops = rows of the trace "
      "(trace.ops.size()).")
for name, label in (("v100", "hta_v100_ns_resolution"), ("tiled", "v100 tiled")):
    m = medians(name)
    a = m["BM_AnalyzeAll"]
    ops, nodes, edges = int(a["ops"]), int(a["nodes"]), int(a["edges"])
    if name == "tiled" and ops != tiled_ops:
        print(f"warning: emo inspect counted {tiled_ops} ops, the benchmark {ops}")
    print()
    print(f"{label}: {ops:,} ops, {nodes:,} nodes, {edges:,} edges; "
          f"graph {a['graph_bytes'] / 1e6:.1f} MB ({a['graph_bytes'] / nodes:.0f} B/node), "
          f"trace model {a['trace_bytes'] / 1e6:.1f} MB")
    head = f"  {'benchmark':<16}{'ms':>10}{'Mops/s':>10}{'Mnodes/s':>10}{'% of All':>10}"
    print(head)
    print("  " + "-" * (len(head) - 2))
    for b in BENCHES:
        r = m[b]
        print(f"  {b[3:]:<16}{ms(r):>10.2f}{r['ops/s'] / 1e6:>10.2f}{r['nodes/s'] / 1e6:>10.2f}"
              f"{100 * ms(r) / ms(a):>10.1f}")
    btrs = ms(m["BM_BuildGraph"]) + ms(m["BM_Replay"]) + ms(m["BM_Slack"])
    print(f"  {'build+replay+slack':<16}{btrs:>8.2f}{ops / btrs / 1e3:>10.2f}"
          f"{nodes / btrs / 1e3:>10.2f}{100 * btrs / ms(a):>10.1f}   (sum of the three medians)")
    ra, ri = rss_mb(f"{name}.analyze"), rss_mb(f"{name}.inspect")
    print(f"  peak RSS: emo analyze {ra:.0f} MB, emo inspect {ri:.0f} MB "
          f"(difference {round(ra - ri) + 0:+d} MB: the graph is built after the JSON buffer "
          f"is freed)")
    if name == "tiled":
        rate = a["ops/s"]
        print(f"  target >= 2 M ops/s on one core for build+timing+slack (AnalyzeAll, which also "
              f"does critical path and gpu_slack): {rate / 1e6:.2f} M ops/s: "
              f"{'ok' if rate >= 2e6 else 'MISSED'}")
PY
