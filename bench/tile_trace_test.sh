#!/usr/bin/env bash
# ctest tile_trace_roundtrip: tiles a small real Kineto trace 3 times with emo-tile-trace and
# checks the result two ways:
#   1. `emo inspect --json -` sees exactly 3x the ops (kernel, memcpy, memset, runtime, sync, ...)
#      and 3x the correlation quirks (so ids were made unique per copy), and a span of at least
#      3x the original + 2 ms;
#   2. python3 (stdlib json, numbers read as Decimal) sees valid JSON whose copy k is copy 0
#      shifted by exactly k * time step and k * id step, with metadata copied once.
# Usage: tile_trace_test.sh EMO_TILE_TRACE EMO
# Data: $EMO_DATA_DIR, else $EMO_DEFAULT_DATA_DIR, else ../shared/data beside the checkout.
# Without the data: exit 77 (skip) with a loud message, or exit 1 when CI=true.
set -euo pipefail

tile=${1:?usage: tile_trace_test.sh EMO_TILE_TRACE EMO}
emo=${2:?usage: tile_trace_test.sh EMO_TILE_TRACE EMO}
here=$(cd "$(dirname "$0")" && pwd)
data=${EMO_DATA_DIR:-${EMO_DEFAULT_DATA_DIR:-$here/../../shared/data}}
input=$data/kineto/hta_cuda_event_sync_multi_stream.json.gz

if [[ ! -f $input ]]; then
  if [[ ${CI:-} == true ]]; then
    echo "FAIL: real data missing: $input (CI=true, so this is an error)" >&2
    exit 1
  fi
  echo "SKIPPED: real data missing: $input -- set EMO_DATA_DIR to run this test" >&2
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/emo-tile-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$tile" "$input" "$work/tiled.json" --copies 3
"$emo" inspect "$input" --json - >"$work/orig.summary.json"
"$emo" inspect "$work/tiled.json" --json - >"$work/tiled.summary.json"
gzip -dc "$input" >"$work/orig.json"

# --target-mb picks enough copies: >= 0.2 MB from a ~35 KB trace.
"$tile" "$input" "$work/target.json" --target-mb 0.2 2>/dev/null
size=$(wc -c <"$work/target.json")
if (( size < 200000 )); then
  echo "FAIL: --target-mb 0.2 wrote only $size bytes" >&2
  exit 1
fi

# Bad input: one line naming the file, exit 2.
echo '{"traceEvents": [' >"$work/bad.json"
set +e
msg=$("$tile" "$work/bad.json" "$work/bad.out.json" --copies 2 2>&1)
rc=$?
set -e
if [[ $rc -ne 2 || $(printf '%s\n' "$msg" | wc -l) -ne 1 || $msg != *bad.json* ]]; then
  echo "FAIL: bad input gave rc=$rc, message: $msg" >&2
  exit 1
fi

python3 - "$work" <<'PY'
import json, sys
from decimal import Decimal

work = sys.argv[1]
N = 3
failures = []

def check(cond, what):
    if not cond:
        failures.append(what)

# 1. What emo sees.
orig = json.load(open(f"{work}/orig.summary.json"))
tiled = json.load(open(f"{work}/tiled.summary.json"))
for kind in ("kernel", "memcpy", "memset", "runtime", "sync", "driver_api", "collective",
             "framework_op", "annotation", "gpu_annotation"):
    check(tiled["counts"][kind] == N * orig["counts"][kind],
          f"counts.{kind}: {tiled['counts'][kind]} != {N} x {orig['counts'][kind]}")
check(orig["counts"]["kernel"] > 0 and orig["counts"]["sync"] > 0, "original has no kernels/syncs")
for kind, n in orig["syncs_by_kind"].items():
    check(tiled["syncs_by_kind"].get(kind) == N * n, f"syncs_by_kind.{kind}")
for q in ("duplicate_gpu_correlation", "gpu_ops_without_launch", "zero_duration",
          "negative_duration", "unknown_category"):
    check(tiled["quirks"][q] == N * orig["quirks"][q],
          f"quirks.{q}: {tiled['quirks'][q]} != {N} x {orig['quirks'][q]}")
check(tiled["span_ns"] >= N * orig["span_ns"] + (N - 1) * 1_000_000,
      f"span_ns {tiled['span_ns']} < {N} x {orig['span_ns']} + 2 ms")

# 2. What the JSON says, read exactly.
src = json.load(open(f"{work}/orig.json"), parse_float=Decimal)
out = json.load(open(f"{work}/tiled.json"), parse_float=Decimal)
ev, tev = src["traceEvents"], out["traceEvents"]
check(len(tev) == N * len(ev), f"{len(tev)} events, expected {N} x {len(ev)}")
check([k for k in out] == [k for k in src], f"top-level members {list(out)} != {list(src)}")
for k in src:
    if k != "traceEvents":
        check(out[k] == src[k], f"top-level member {k} changed")

real = [e for e in ev if e.get("ph") != "M" and "ts" in e]
span_us = max(Decimal(e["ts"]) + Decimal(e.get("dur", 0)) for e in real) - min(Decimal(e["ts"]) for e in real)
step = Decimal(tev[len(ev)]["ts"]) - Decimal(tev[0]["ts"])
check(step == span_us + Decimal(1000), f"time step {step} us != span {span_us} us + 1 ms")

ID_ARGS = ("correlation", "External id", "external id", "wait_on_cuda_event_record_corr_id")
def ids(e):
    out = []
    if e.get("ph") in ("s", "t", "f") and isinstance(e.get("id"), int) and e["id"] >= 0:
        out.append(e["id"])
    for a in ID_ARGS:
        v = e.get("args", {}).get(a)
        if isinstance(v, int) and v >= 0:
            out.append(v)
    return out
max_id = max(i for e in ev for i in ids(e))

def strip(e):
    """The event without the fields that move."""
    e = json.loads(json.dumps(e, default=str))
    e.pop("ts", None)
    if e.get("ph") in ("s", "t", "f") and isinstance(e.get("id"), int) and e["id"] >= 0:
        e.pop("id")
    for a in ID_ARGS:
        v = e.get("args", {}).get(a)
        if isinstance(v, int) and v >= 0:
            e["args"].pop(a)
    return e

bad = 0
for k in range(N):
    for i, e in enumerate(ev):
        t = tev[k * len(ev) + i]
        ok = strip(t) == strip(e)
        if "ts" in e:
            ok = ok and Decimal(t["ts"]) == Decimal(e["ts"]) + k * step
        ok = ok and ids(t) == [x + k * (max_id + 1) for x in ids(e)]
        if not ok:
            bad += 1
            if bad <= 3:
                failures.append(f"copy {k} event {i}: {json.dumps(t, default=str)[:300]} vs {json.dumps(e, default=str)[:300]}")
check(bad == 0, f"{bad} events not shifted exactly")

if failures:
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    sys.exit(1)
print(f"ok: {N} copies, {len(tev)} events, time step {step} us, id step {max_id + 1}; "
      f"emo counts {tiled['counts']['kernel']} kernels, {tiled['counts']['sync']} syncs")
PY
