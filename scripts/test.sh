#!/usr/bin/env bash
# The test command: installs the Debian dependencies, builds EMO and runs the whole test suite
# twice — a normal build (build/) and an AddressSanitizer + UndefinedBehaviorSanitizer build
# (build-asan/). Between the two it builds the wheel (scripts/build-wheel.sh, build-wheel/ →
# dist/) and runs the Python tests against it, installed into a clean venv (scripts/wheel-test.sh),
# instead of against the build tree (ctest's python_tests is left out here). Real-data tests read
# ../shared/data (override: EMO_DATA_DIR); with CI=true, missing data is a failure instead of a
# loud skip. The builds go through ccache when it is installed (setup-deps.sh installs it), with
# paths taken relative to the repository, so that build-wheel/ reuses build/'s objects.
#   scripts/test.sh            both suites
#   scripts/test.sh --quick    the normal build only
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

run_suite() {  # run_suite BUILD_DIR CTEST_EXCLUDE_REGEX CMAKE_ARGS...
  local dir=$1 exclude=$2; shift 2
  echo "=== configure + build: $dir $*"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "=== ctest: $dir"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" ${exclude:+-E "$exclude"}
}

# The Python tests run against the installed wheel below, not this build's extension.
run_suite build '^python_tests$'
echo "=== wheel: scripts/build-wheel.sh, then scripts/wheel-test.sh"
start=$SECONDS
scripts/build-wheel.sh
scripts/wheel-test.sh
echo "=== wheel: $((SECONDS - start)) s"
if [[ "${1:-}" != "--quick" ]]; then
  # Benchmarks are not needed under the sanitizers; every test is (bench/ still builds
  # emo-tile-trace for its ctest there). -O1 with line tables only, as the AddressSanitizer
  # documentation recommends: a quicker build, stack traces still readable.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite build-asan '' -DEMO_SANITIZE=ON -DEMO_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug \
      "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1"
fi
