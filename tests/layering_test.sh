#!/usr/bin/env bash
# Layering check: every `#include "stage/..."` in src/ points down the pipeline, never up.
#   core → trace → graph → timing → pack → model → opt → policy → tracer → runtime → driver → job → output → cli
# A file may include its own folder and any folder to its left. Also checks each folder's
# CMakeLists.txt links only libraries of its own layer or below.
#   tests/layering_test.sh [SRC_DIR]        check SRC_DIR (default: the repository's src/)
#   tests/layering_test.sh --self-test      also prove the check fails on a forbidden include
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
LAYERS=(core trace graph timing pack model opt policy tracer runtime driver job output cli)

rank_of() {  # rank_of FOLDER -> index in LAYERS, or -1
  local i
  for i in "${!LAYERS[@]}"; do [[ ${LAYERS[$i]} == "$1" ]] && { echo "$i"; return; }; done
  echo -1
}

check() {  # check SRC_DIR -> prints each violation, returns 1 when any
  local src=$1 bad=0 f layer r inc target tr
  while IFS= read -r f; do
    layer=${f#"$src"/}; layer=${layer%%/*}
    r=$(rank_of "$layer")
    if ((r < 0)); then echo "unknown layer folder: src/$layer (add it to LAYERS in $0)"; bad=1; continue; fi
    while IFS= read -r inc; do
      target=${inc%%/*}
      tr=$(rank_of "$target")
      if ((tr < 0)); then continue; fi  # a system or generated header
      if ((tr > r)); then
        echo "layering: ${f#"$src"/} ($layer) includes \"$inc\" ($target is above $layer)"
        bad=1
      fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  done < <(find "$src" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.in' \) | sort)
  # CMake: emo_<layer> targets linked by a folder must be of its layer or below.
  while IFS= read -r f; do
    layer=${f#"$src"/}; layer=${layer%%/*}
    r=$(rank_of "$layer")
    ((r < 0)) && continue
    while IFS= read -r target; do
      tr=$(rank_of "$target")
      if ((tr > r)); then echo "layering: src/$layer/CMakeLists.txt links emo_$target ($target is above $layer)"; bad=1; fi
    done < <(grep -o 'emo_[a-z]*' "$f" | sed 's/^emo_//' | sort -u)
  done < <(find "$src" -mindepth 2 -name CMakeLists.txt | sort)
  return $bad
}

src=${1:-$here/../src}
[[ $src == --self-test ]] && src=$here/../src
check "$src"
echo "layering: src/ includes point down the pipeline (${LAYERS[*]})"
if [[ "${1:-}" == --self-test ]]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  cp -r "$here/../src" "$tmp/src"
  echo '#include "driver/optimize.h"' >> "$tmp/src/pack/packer.cpp"
  if out=$(check "$tmp/src"); then
    echo "FAIL: the check accepted pack/packer.cpp including driver/optimize.h"; exit 1
  fi
  echo "self-test: a forbidden include is caught: $out"
fi
