#!/usr/bin/env bash
# Fuzzes a trace reader with libFuzzer (clang, ASan + UBSan).
#
#   scripts/fuzz.sh [--target kineto|nsys|emo|clock] [SECONDS]     (default: kineto, 60 s)
#
# kineto: the Kineto JSON reader (fuzz/fuzz_kineto.cpp), corpus as described below.
# nsys:   the nsys SQLite reader (fuzz/fuzz_nsys.cpp); seeds in fuzz/seeds-nsys (SQL scripts built
#         from the heads of the shared exports, and a small database file), reproducers saved
#         under fuzz/crashers-nsys/.
# emo:    the emo.trace/1 reader (fuzz/fuzz_emo_trace.cpp); seeds in fuzz/seeds-emo, reproducers
#         under fuzz/crashers-emo/.
# clock:  the clock service's wire protocol (fuzz/fuzz_clock_service.cpp: the real service in a
#         thread, the NVML stand-in); seeds in fuzz/seeds-clock, reproducers under fuzz/crashers-clock/.
#
# Builds build-fuzz/ (clang, RelWithDebInfo, -DEMO_BUILD_FUZZ=ON), seeds a corpus from the small
# real traces (decompressed, < 1 MB, from $EMO_DATA_DIR/kineto, default ../shared/data) plus
# trimmed valid heads of them and the hand-written cases in fuzz/seeds/, then fuzzes for SECONDS.
# New interesting inputs accumulate in build-fuzz/fuzz-corpus/ (kept between runs). A crash,
# sanitizer report, timeout or OOM saves the reproducer under fuzz/crashers/ and exits non-zero.
# Replay one: build-fuzz/fuzz_kineto fuzz/crashers/crash-...
# Extra libFuzzer flags can be passed in EMO_FUZZ_FLAGS (e.g. "-jobs=2 -workers=2").
set -euo pipefail

target=kineto
if [[ ${1:-} == --target ]]; then
  target=${2:-}
  shift 2 || true
fi
case $target in
  kineto | nsys | emo | clock) ;;
  *) echo "fuzz.sh: error: --target takes kineto, nsys, emo or clock (got '$target')" >&2; exit 2 ;;
esac
secs=${1:-60}
[[ $secs =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [--target kineto|nsys|emo|clock] [SECONDS]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EMO_FUZZ_BUILD_DIR:-$root/build-fuzz}
data=${EMO_DATA_DIR:-$root/../shared/data}

command -v clang++ >/dev/null || { echo "fuzz.sh: error: needs clang++ (libFuzzer)" >&2; exit 2; }

echo "== build ($build, clang, fuzzer+address+undefined)"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEMO_BUILD_FUZZ=ON -DEMO_BUILD_TESTS=OFF -DEMO_BUILD_BENCH=OFF >/dev/null
binary=fuzz_kineto
[[ $target == nsys ]] && binary=fuzz_nsys
[[ $target == emo ]] && binary=fuzz_emo_trace
[[ $target == clock ]] && binary=fuzz_clock_service
cmake --build "$build" -j"$(nproc)" --target "$binary" >/dev/null

if [[ $target != kineto ]]; then
  # Seeds are the hand-written files in fuzz/seeds-TARGET; the corpus is kept between runs.
  corpus=$build/fuzz-corpus-$target
  crashers=$root/fuzz/crashers-$target
  mkdir -p "$corpus" "$crashers"
  echo "== fuzz $binary for ${secs}s ($(ls "$root/fuzz/seeds-$target" | wc -l) seeds, $(ls "$corpus" | wc -l) in the kept corpus)"
  rc=0
  (cd "$build" && ./"$binary" "$corpus" "$root/fuzz/seeds-$target" -dict="$root/fuzz/$target.dict" \
    -max_total_time="$secs" \
    -max_len=$([[ $target == clock ]] && echo 2048 || echo 65536) -timeout=10 -rss_limit_mb=4096 -artifact_prefix="$crashers/" \
    -print_final_stats=1 ${EMO_FUZZ_FLAGS:-}) || rc=$?
  if (( rc != 0 )); then
    echo "fuzz.sh: the fuzzer stopped with exit code $rc; reproducers in $crashers:" >&2
    ls -t "$crashers" | head -5 >&2
    exit "$rc"
  fi
  echo "fuzz.sh: no crash in ${secs}s ($binary)"
  exit 0
fi

echo "== seed corpus"
seed=$build/fuzz-seed
corpus=$build/fuzz-corpus
rm -rf "$seed"
mkdir -p "$seed" "$corpus" "$root/fuzz/crashers"
cp "$root"/fuzz/seeds/* "$seed/"
if [[ -d $data/kineto ]]; then
  for f in "$data"/kineto/*.json.gz; do
    name=$(basename "$f" .json.gz)
    gzip -dc "$f" >"$seed/$name.json"
    if (( $(stat -c %s "$seed/$name.json") >= 1000000 )); then
      rm "$seed/$name.json"
    fi
  done
  # Valid heads (metadata + first events) of every real trace: small enough to mutate quickly,
  # large enough (> 6 KiB) to be cut into several 4 KiB chunks.
  python3 - "$data/kineto" "$seed" <<'PY'
import glob, gzip, json, os, sys
src, dst = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(os.path.join(src, "*.json.gz"))):
    doc = json.load(gzip.open(path, "rt", encoding="utf-8"))
    name = os.path.basename(path)[: -len(".json.gz")]
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    for n, indent in ((60, 1), (25, None)):
        head = dict(doc) if isinstance(doc, dict) else {}
        head.pop("INFO", None)  # long log lines, nothing the reader uses
        head["traceEvents"] = events[:n]
        with open(os.path.join(dst, f"{name}.head{n}.json"), "w") as out:
            json.dump(head, out, indent=indent)
PY
else
  echo "(no real data at $data: hand-written seeds only)"
fi
echo "$(ls "$seed" | wc -l) seed files, $(ls "$corpus" | wc -l) in the kept corpus"

echo "== fuzz for ${secs}s"
rc=0
(cd "$build" && ./fuzz_kineto "$corpus" "$seed" \
  -dict="$root/fuzz/kineto.dict" -max_total_time="$secs" -max_len=131072 -timeout=10 \
  -rss_limit_mb=4096 -artifact_prefix="$root/fuzz/crashers/" -print_final_stats=1 \
  ${EMO_FUZZ_FLAGS:-}) || rc=$?
if (( rc != 0 )); then
  echo "fuzz.sh: the fuzzer stopped with exit code $rc; reproducers in fuzz/crashers/:" >&2
  ls -t "$root/fuzz/crashers" | head -5 >&2
  exit "$rc"
fi
echo "fuzz.sh: no crash in ${secs}s"
