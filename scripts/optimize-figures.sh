#!/usr/bin/env bash
# Writes `emo optimize --json` of every shared trace into one folder, one file per trace, so that
# two builds (before and after a change) can be compared figure by figure:
#   scripts/optimize-figures.sh BUILD_DIR OUT_DIR        run every shared trace (A100 simulated),
#                                                        then, when BUILD_DIR has emo_make_job, the
#                                                        generated jobs (job_*.json, below)
#   scripts/optimize-figures.sh --diff DIR_A DIR_B       compare two such folders (exit 1 on a change)
#   scripts/optimize-figures.sh --table DIR              the Markdown table of docs/optimize.md from a folder
#   scripts/optimize-figures.sh --times BUILD_DIR [RUNS] wall time of each trace's run, median of
#                                                        RUNS (default 3), s: docs/optimize.md "Speed"
# Data: ../shared/data (override EMO_DATA_DIR). Kineto traces run with --gpu A100-SXM4-80GB, nsys
# traces on their own GPU; target +5 %, seed 1 — the table of docs/optimize.md.
set -euo pipefail
if [[ "${1:-}" == "--diff" ]]; then
  a=$2 b=$3 status=0
  for f in "$a"/*.json; do
    n=$(basename "$f")
    if [[ ! -f "$b/$n" ]]; then echo "missing in $b: $n"; status=1; continue; fi
    if python3 - "$f" "$b/$n" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
diffs = []
def walk(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            if k not in x or k not in y: diffs.append(f"{path}.{k}: only in {'A' if k in x else 'B'}")
            else: walk(x[k], y[k], f"{path}.{k}")
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y): diffs.append(f"{path}: {len(x)} vs {len(y)} items")
        for i, (u, v) in enumerate(zip(x, y)): walk(u, v, f"{path}[{i}]")
    elif x != y: diffs.append(f"{path}: {x} vs {y}")
walk(a, b, "")
for d in diffs[:20]: print("   ", d)
sys.exit(1 if diffs else 0)
PY
    then echo "same: $n"; else echo "DIFFERENT: $n"; status=1; fi
  done
  exit $status
fi
data=${EMO_DATA_DIR:-$(dirname "$0")/../../shared/data}
traces=("$data"/kineto/*.json.gz "$data"/nsys/*.sqlite)
# optimize TRACE ARGS...: the table's run of one trace (Kineto on the A100, nsys on its own GPU).
optimize() {
  local t=$1; shift
  local gpu=(--gpu A100-SXM4-80GB); [[ $t == *.sqlite ]] && gpu=()
  "$build/emo" optimize "$t" "${gpu[@]}" --max-slowdown 0.05 --seed 1 "$@"
}
if [[ "${1:-}" == "--times" ]]; then
  build=${2:?usage: optimize-figures.sh --times BUILD_DIR [RUNS]} runs=${3:-3}
  printf '%-45s %9s   %s\n' trace "median s" runs
  for t in "${traces[@]}"; do
    n=$(basename "$t"); n=${n%%.*} times=()
    for ((i = 0; i < runs; ++i)); do
      start=$(date +%s%N)
      optimize "$t" >/dev/null 2>&1 || { echo "failed: $n"; exit 1; }
      times+=($(( ($(date +%s%N) - start) / 1000000 )))  # ms
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$((runs / 2 + 1))p")
    s() { printf '%d.%02d' $(($1 / 1000)) $(($1 % 1000 / 10)); }
    printf '%-45s %9s   %s\n' "$n" "$(s "$median")" "$(for x in "${times[@]}"; do printf '%s ' "$(s "$x")"; done)"
  done
  exit 0
fi
if [[ "${1:-}" == "--table" ]]; then  # the docs/optimize.md table of a folder the figures mode wrote
  python3 - "${2:?usage: optimize-figures.sh --table DIR}" <<'PY'
import json, pathlib, sys
print("| trace | packs | baseline ms | baseline J | static MHz | static savings % | static slowdown % | EMO savings % "
      "| EMO slowdown % | EMO keeps | switches/iter | profiles per pack | profiling (iterations) | policy runs |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(p for p in pathlib.Path(sys.argv[1]).glob("*.json") if not p.name.startswith("job_")):  # traces only
    r = json.load(open(f)); b = r["baseline"]; prof = r["profiling"]
    keeps = f"static {r['static_candidate_mhz']:.0f} MHz" if r.get("static_kept") else "its plan"
    print(f"| {f.stem} | {r['packs']} | {b['time_ns'] / 1e6:.3f} | {b['energy_j']:.3f} | {r['static_best']['clock_mhz']:.0f} "
          f"| {100 * r['static_savings']:.2f} | {100 * r['static_slowdown']:.2f} | {100 * r['savings']:.2f} "
          f"| {100 * r['slowdown']:.2f} | {keeps} | {r['clock_switches']} | {prof['pack_clock_profiles'] / r['packs']:.1f} "
          f"| {prof['equivalent_iterations']:.1f} | {r['validation_runs']} |")
PY
  exit 0
fi
build=${1:?usage: optimize-figures.sh BUILD_DIR OUT_DIR}
out=${2:?usage: optimize-figures.sh BUILD_DIR OUT_DIR}
mkdir -p "$out"
for t in "${traces[@]}"; do
  n=$(basename "$t"); n=${n%%.*}
  if optimize "$t" --json "$out/$n.json" >/dev/null 2>"$out/$n.err"; then
    rm -f "$out/$n.err"; echo "ok: $n"
  else
    echo "failed (exit $?): $n: $(head -1 "$out/$n.err")"
  fi
done
# Generated 4-rank jobs (SYNTHETIC, emo_make_job: rank 1 a 10 % straggler, seed 3), as
# tests/cli/optimize_mpi_test.sh makes them: decomposed at 2 % and at 0.1 % (two rounds), joint at
# 5 % with the comparison against per-rank plans. They exercise the port reduction, the job's
# timing and the pack problem of a job.
if [[ -x "$build/emo_make_job" ]]; then
  jobs=$(mktemp -d); trap 'rm -rf "$jobs"' EXIT
  for src in nccl_allreduce training_16rank; do
    "$build/emo_make_job" "$data/kineto/hta_${src}_rank0.json.gz" "$jobs/$src" --ranks 4 --straggler 1 \
      --slowdown 0.1 --seed 3 > /dev/null
  done
  emo=$(cd "$build" && pwd)/emo outabs=$(cd "$out" && pwd)
  # job NAME ARGS...: emo optimize ARGS --json $out/job_NAME.json, run in the jobs' folder so that
  # the file names in the JSON are the same from one run to the next
  job() {
    local n=$1; shift
    if (cd "$jobs" && "$emo" optimize "$@" --quiet --json "$outabs/job_$n.json") >/dev/null 2>"$out/job_$n.err"; then
      rm -f "$out/job_$n.err"; echo "ok: job_$n"
    else
      echo "failed (exit $?): job_$n: $(head -1 "$out/job_$n.err")"
    fi
  }
  job nccl4_decomposed nccl_allreduce/rank0000{0,1,2,3}.json.gz --max-slowdown 0.02 --solve decomposed
  job train4_decomposed training_16rank/rank0000{0,1,2,3}.json.gz --max-slowdown 0.1% --solve decomposed
  job nccl4_joint nccl_allreduce/rank0000{0,1,2,3}.json.gz --gpu A100-SXM4-80GB --max-slowdown 0.05 --solve joint \
    --compare-independent
fi
