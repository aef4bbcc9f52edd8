#!/usr/bin/env bash
# ctest's python_tests: runs the pytest suite in tests/python against the extension the CMake build
# made (PYTHONPATH=<build>/python:<repo>/python).
#   run_pytest.sh PYTHON BUILD_PYTHON_DIR|"" EMO_CLI
# An empty BUILD_PYTHON_DIR means the extension was not built (EMO_BUILD_PYTHON=OFF). A missing
# extension or pytest is a loud skip (exit 77), and a failure with CI=true.
set -uo pipefail
python=$1 build_python=$2 cli=$3
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
missing() {
  if [[ "${CI:-}" == "true" ]]; then
    echo "python_tests: FAIL (CI=true): $1" >&2
    exit 1
  fi
  echo "python_tests: SKIPPED: $1" >&2
  exit 77
}
[[ -n "$build_python" ]] || missing "the extension is not built (EMO_BUILD_PYTHON=OFF: install pybind11-dev and python3-dev, reconfigure)"
"$python" -c 'import pytest' 2>/dev/null || missing "pytest is not installed for $python (scripts/setup-deps.sh installs it)"
export PYTHONPATH="$build_python:$src/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
export EMO_CLI="$cli"
"$python" -c 'import emo' || missing "import emo fails with PYTHONPATH=$PYTHONPATH"
exec "$python" -m pytest -q -p no:cacheprovider -rs "$here" "${@:4}"
