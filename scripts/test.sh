#!/usr/bin/env bash
# The test command: installs the Debian dependencies, builds EMO and runs the whole test suite
# twice — a normal build (build/) and an AddressSanitizer + UndefinedBehaviorSanitizer build
# (build-asan/). Real-data tests read ../shared/data (override: EMO_DATA_DIR); with CI=true,
# missing data is a failure instead of a loud skip.
#   scripts/test.sh            both suites
#   scripts/test.sh --quick    the normal build only
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)

run_suite() {  # run_suite BUILD_DIR CMAKE_ARGS...
  local dir=$1; shift
  echo "=== configure + build: $dir $*"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "=== ctest: $dir"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
}

run_suite build
if [[ "${1:-}" != "--quick" ]]; then
  # Benchmarks are not needed under the sanitizers; every test is (bench/ still builds
  # emo-tile-trace for its ctest there). -O1 with line tables only, as the AddressSanitizer
  # documentation recommends: a quicker build, stack traces still readable.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite build-asan -DEMO_SANITIZE=ON -DEMO_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug \
      "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1"
fi
