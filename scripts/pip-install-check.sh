#!/usr/bin/env bash
# Issue 18's must-show: from a fresh venv, `pip install .` and then
#   python -c "import emo; print(emo.analyze(emo.load_trace(P)).critical_path_ns)"
# prints the same figure as `emo analyze P --json -` (its critical_path_ns).
#   scripts/pip-install-check.sh [TRACE]      (default: hta_training_16rank_rank0 from the shared data)
# Needs build/emo (the CLI) and the Debian packages of scripts/setup-deps.sh; pip fetches
# scikit-build-core. Extra pip arguments in EMO_PIP_ARGS, e.g. to reuse ccache and a build folder:
#   EMO_PIP_ARGS="--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
#                 --config-settings=build-dir=build-pip"
set -euo pipefail
cd "$(dirname "$0")/.."
data=${EMO_DATA_DIR:-../shared/data}
trace=$(realpath "${1:-$data/kineto/hta_training_16rank_rank0.json.gz}")
venv=$(mktemp -d /tmp/emo-venv.XXXXXX)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
# shellcheck disable=SC2086
"$venv/bin/pip" install -q . ${EMO_PIP_ARGS:-}
py=$(cd /tmp && "$venv/bin/python" -c "import emo; print(emo.analyze(emo.load_trace('$trace')).critical_path_ns)")
cli=$(build/emo analyze "$trace" --json - | python3 -c 'import json, sys; print(json.load(sys.stdin)["critical_path_ns"])')
echo "python (fresh venv, pip install .): $py"
echo "emo analyze --json - critical_path_ns: $cli"
[[ "$py" == "$cli" ]] || { echo "pip-install-check: FAIL: the figures differ" >&2; exit 1; }
echo "pip-install-check: same figure"
