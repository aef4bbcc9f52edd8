#!/usr/bin/env bash
# The main job on the default input: installs the Debian dependencies, builds EMO and runs the
# pipeline as far as it exists today: `emo inspect` (trace summary) and `emo analyze` (critical
# path, slack, what-if) on each trace; later `emo optimize` end to end.
#   scripts/main-job.sh [TRACE...]     (default: real traces from ../shared/data)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target emo
DATA=${EMO_DATA_DIR:-../shared/data}
if (($# == 0)); then
  set -- "$DATA/kineto/hta_nccl_allreduce_rank0.json.gz" "$DATA/nsys/perlmutter-cloverleaf-cuda.sqlite"
fi
build/emo inspect "$@"
for t in "$@"; do
  echo
  build/emo analyze "$t" --what-if 'kind=kernel:x1.1'
done
