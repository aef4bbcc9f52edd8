#!/usr/bin/env bash
# Installs the Debian packages EMO builds and tests with. Idempotent: installs only what is missing.
# Usage: scripts/setup-deps.sh        (needs root, or sudo on PATH)
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config
  libsimdjson-dev libdeflate-dev zlib1g-dev libsqlite3-dev sqlite3
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  coinor-libcbc-dev
  python3 time
  chromium
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "setup-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
