#!/usr/bin/env bash
# Packing benchmark: pack_timeline + contract (the issue's "packing") on a >= 1 M-op tiled trace,
# plus the pack graph what-if and the whole `emo pack` pipeline. See docs/packing.md.
#
#   scripts/bench-pack.sh [BUILD_DIR]      (default: build-bench, Release)
#
# Environment: as scripts/bench-graph.sh (EMO_DATA_DIR, TMPDIR, EMO_BENCH_CPU, EMO_BENCH_REPS,
# EMO_BENCH_COPIES; the tiled trace is shared with it). Needs python3, taskset, /usr/bin/time.
set -euo pipefail

source "$(dirname "$0")/bench-common.sh"
bench_setup bench-pack "${1:-build-bench}" emo emo-tile-trace emo-bench-pack
copies=${EMO_BENCH_COPIES:-23}
tiled=$tmp/emo-bench-graph-v100x${copies}.json
out=$(mktemp -d "$tmp/emo-bench-pack.XXXXXX")
trap 'rm -rf "$out"' EXIT

echo "== tiled trace ($tiled)"
if [[ -f $tiled ]]; then
  echo "reusing it"
else
  "$build/emo-tile-trace" "$v100" "$tiled.part" --copies "$copies"
  mv "$tiled.part" "$tiled"
fi

for name in v100 tiled; do
  trace=$v100
  [[ $name == tiled ]] && trace=$tiled
  echo "== emo-bench-pack on $name (pinned to CPU $cpu, $reps repetitions)"
  EMO_BENCH_TRACE=$trace taskset -c "$cpu" "$build/emo-bench-pack" \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/$name.json" --benchmark_out_format=json >"$out/$name.log" 2>&1 ||
    { cat "$out/$name.log" >&2; die "emo-bench-pack failed on $trace"; }
done

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def medians(name):
    return {r["run_name"].split("/")[0]: r for r in json.load(open(f"{out}/{name}.json"))["benchmarks"]
            if r.get("aggregate_name") == "median"}
def ms(r):
    return r["cpu_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[r.get("time_unit", "ns")]
print("\nMedians of the repetitions, CPU time of one pinned core.")
for name, label in (("v100", "hta_v100_ns_resolution"), ("tiled", "v100 tiled")):
    m = medians(name)
    a = m["BM_Pack"]
    print(f"\n{label}: {int(a['ops']):,} ops, {int(a['gpu_ops']):,} GPU ops, {int(a['nodes']):,} graph nodes "
          f"-> {int(a['packs']):,} packs; pack graph {int(a['pack_nodes']):,} nodes, {int(a['pack_edges']):,} edges")
    for b in ("BM_PackTimeline", "BM_Contract", "BM_Pack", "BM_EvaluateFactors", "BM_RunPack"):
        print(f"  {b[3:]:<16}{ms(m[b]):>10.2f} ms")
    if name == "tiled":
        t = ms(m["BM_Pack"])
        print(f"  target: packing (pack_timeline + contract) < 1000 ms: {t:.0f} ms: {'ok' if t < 1000 else 'MISSED'}")
PY
