# Shared set-up of the benchmark scripts (sourced, not run). After `bench_setup NAME BUILD_DIR
# TARGET...`: root, build, data, cpu, reps, tmp and v100 are set, die() names the script, the
# tools are checked and the targets are built (Release) in BUILD_DIR.
# Environment: EMO_DATA_DIR, EMO_BENCH_CPU (default 0), EMO_BENCH_REPS (default 5), TMPDIR.

bench_setup() {
  bench_name=$1
  shift
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  build=${1:-build-bench}
  shift
  [[ $build = /* ]] || build=$root/$build
  data=${EMO_DATA_DIR:-$root/../shared/data}
  cpu=${EMO_BENCH_CPU:-0}
  reps=${EMO_BENCH_REPS:-5}
  # Google Benchmark writes the median aggregates only with 2 or more repetitions.
  [[ $reps =~ ^[0-9]+$ ]] && ((reps >= 2)) || die "EMO_BENCH_REPS must be an integer >= 2 (medians)"
  tmp=${TMPDIR:-/tmp}
  v100=$data/kineto/hta_v100_ns_resolution.json.gz
  [[ -f $v100 ]] || die "missing $v100 (set EMO_DATA_DIR)"
  for tool in python3 taskset /usr/bin/time; do
    command -v "$tool" >/dev/null || die "needs $tool"
  done
  echo "== build ($build, Release)"
  if [[ ! -f $build/CMakeCache.txt ]]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  else
    cmake -S "$root" -B "$build" >/dev/null  # pick up new targets
  fi
  cmake --build "$build" -j"$(nproc)" --target "$@" >/dev/null
  for exe in "$@"; do
    [[ -x $build/$exe ]] || die "$build/$exe was not built (Google Benchmark missing?)"
  done
}

die() { echo "${bench_name:-bench}: error: $*" >&2; exit 1; }
