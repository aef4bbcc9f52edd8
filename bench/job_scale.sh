#!/usr/bin/env bash
# Scale-out of a multi-rank job's loading and solve (issue 16): wall time and peak RSS of `emo optimize` over
# every rank trace of a directory, as one plain process and under `mpirun -np K ... --mpi` for each
# K given, median of 3 runs. Under mpirun each process is measured on its own (/usr/bin/time -v
# inside mpirun), so the root's peak RSS (all reduced traces, the joint solve) and the other
# processes' (their share of the loading, and with EMO_SOLVE=decomposed of the rank solves) are
# seen apart.
#
#   bench/job_scale.sh BUILD DIR NPROCS...     e.g. bench/job_scale.sh build /tmp/job 1 2 4
#
# BUILD holds a built `emo` (BUILD/emo; built with MPI for K > 0). DIR holds the rank traces
# (*.json, *.json.gz, *.sqlite, taken in name order). Environment: EMO_GPU (default
# A100-SXM4-80GB), EMO_MAX_SLOWDOWN (default 0.05), EMO_BENCH_RUNS (default 3), EMO_LOAD_THREADS
# (--load-threads, default 0), EMO_SOLVE (--solve, default auto), EMO_SOLVE_THREADS (--solve-threads,
# default 0). Needs /usr/bin/time, python3 and, for K, mpirun.
set -euo pipefail

die() { echo "job_scale: error: $*" >&2; exit 1; }
[[ $# -ge 2 ]] || die "usage: bench/job_scale.sh BUILD DIR NPROCS..."
build=$1 dir=$2
shift 2
emo=$build/emo
[[ -x $emo ]] || die "$emo not found (build it first)"
[[ -d $dir ]] || die "$dir is not a directory"
mapfile -t traces < <(find "$dir" -maxdepth 1 -type f \( -name '*.json' -o -name '*.json.gz' -o -name '*.sqlite' \) | sort)
[[ ${#traces[@]} -gt 0 ]] || die "no traces (*.json, *.json.gz, *.sqlite) in $dir"
command -v /usr/bin/time >/dev/null || die "needs /usr/bin/time (apt-get install time)"
for k in "$@"; do
  [[ $k =~ ^[1-9][0-9]*$ ]] || die "NPROCS must be positive integers, not '$k'"
  command -v mpirun >/dev/null || die "needs mpirun for NPROCS (apt-get install openmpi-bin)"
done
runs=${EMO_BENCH_RUNS:-3}
out=$(mktemp -d "${TMPDIR:-/tmp}/emo-job-scale.XXXXXX")
trap 'rm -rf "$out"' EXIT
opt=(optimize --gpu "${EMO_GPU:-A100-SXM4-80GB}" --max-slowdown "${EMO_MAX_SLOWDOWN:-0.05}" --quiet
     --load-threads "${EMO_LOAD_THREADS:-0}" --solve "${EMO_SOLVE:-auto}" --solve-threads "${EMO_SOLVE_THREADS:-0}"
     --json "$out/result.json")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_flags=(-q --oversubscribe --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none)

# summarise LABEL FILE...: median over runs of wall time and peak RSS, per process (the time -v
# files are named RUN.PROCESS).
summarise() {
  python3 - "$@" <<'PY'
import re, statistics, sys, collections
label, files = sys.argv[1], sys.argv[2:]
per = collections.defaultdict(lambda: {"wall": [], "rss": []})
for f in files:
    proc = f.rsplit(".", 1)[1]
    text = open(f).read()
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", text)
    wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    status = re.search(r"Exit status: (\d+)", text)
    if status and status.group(1) != "0":
        sys.exit(f"job_scale: error: {label}: process {proc} exited {status.group(1)}")
    per[proc]["wall"].append(wall); per[proc]["rss"].append(rss)
for proc in sorted(per, key=int):
    v = per[proc]
    print(f"{label:<12} process {proc:>3}: wall {statistics.median(v['wall']):8.2f} s   "
          f"peak RSS {statistics.median(v['rss']) / 1024:9.1f} MiB   ({len(v['wall'])} runs)")
PY
}

echo "== ${#traces[@]} traces in $dir; emo optimize, median of $runs runs"
files=()
for r in $(seq 1 "$runs"); do
  /usr/bin/time -v -o "$out/plain.$r.0" "$emo" "${opt[@]}" "${traces[@]}" > /dev/null
  files+=("$out/plain.$r.0")
done
summarise plain "${files[@]}"
for k in "$@"; do
  files=()
  jobwall=()
  for r in $(seq 1 "$runs"); do
    t0=$(date +%s.%N)
    # Each process writes its own time -v file, named by its MPI rank.
    mpirun "${mpirun_flags[@]}" -np "$k" sh -c \
      'exec /usr/bin/time -v -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$out/np$k.$r" "$emo" "${opt[@]}" --mpi "${traces[@]}" \
      > /dev/null
    jobwall+=("$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$(date +%s.%N)")")
    for ((p = 0; p < k; ++p)); do
      mv "$out/np$k.$r.$p" "$out/np$k.run$r.$p"
      files+=("$out/np$k.run$r.$p")
    done
  done
  summarise "np $k" "${files[@]}"
  python3 -c "import statistics, sys; print(f'np {sys.argv[1]:<9} job wall (mpirun): {statistics.median(map(float, sys.argv[2:])):8.2f} s')" \
    "$k" "${jobwall[@]}"
done
