#!/usr/bin/env bash
# Installs the Debian packages EMO builds and tests with, and pytest and matplotlib (PyPI) for the
# Python tests. Idempotent: installs only what is missing.
# Usage: scripts/setup-deps.sh        (needs root, or sudo on PATH)
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config ccache
  libsimdjson-dev libdeflate-dev zlib1g-dev libsqlite3-dev sqlite3
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  coinor-libcbc-dev
  libopenmpi-dev openmpi-bin
  python3 python3-dev pybind11-dev python3-matplotlib python3-yaml time
  universal-ctags
  chromium
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if ((${#missing[@]} == 0)); then
  echo "setup-deps: all ${#PKGS[@]} packages present"
else
  echo "setup-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# pytest for tests/python, into the python3 on PATH (the one CMake builds the extension for):
# from PyPI; where pip is missing or refuses (Debian's externally managed python3), Debian's
# python3-pytest.
if ! python3 -c 'import pytest' 2>/dev/null; then
  echo "setup-deps: installing pytest"
  python3 -m pip install -q pytest 2>/dev/null || $SUDO apt-get install -y -qq --no-install-recommends python3-pytest
fi
# matplotlib for docs/python.md's plot (tests/python/test_docs.py): Debian's python3-matplotlib
# (above) serves Debian's /usr/bin/python3; where the python3 on PATH is another interpreter (pyenv,
# a venv) that cannot import it, from PyPI into that one.
if ! python3 -c 'import matplotlib' 2>/dev/null; then
  echo "setup-deps: installing matplotlib for $(command -v python3)"
  python3 -m pip install -q matplotlib
fi
# PyYAML for the Kubernetes manifests' test (deploy_manifests), as matplotlib: Debian's python3-yaml, else from PyPI.
if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "setup-deps: installing PyYAML for $(command -v python3)"
  python3 -m pip install -q pyyaml
fi
