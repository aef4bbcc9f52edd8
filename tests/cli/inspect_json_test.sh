#!/usr/bin/env bash
# `emo inspect A B --json -` prints one JSON array with one object per trace, with the keys the
# issue names; `--json FILE` writes the same and still prints the text summary.
# Usage: inspect_json_test.sh PATH/TO/emo
set -u
EMO=${1:?usage: inspect_json_test.sh EMO_BINARY}
source "$(dirname "$0")/check_lib.sh"  # require_data, DATA
a="$DATA/kineto/hta_cuda_event_sync_multi_stream.json.gz"
b="$DATA/nsys/perlmutter-cloverleaf-cuda.sqlite"
require_data "$a" "$b"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
"$EMO" inspect "$a" "$b" --json - > "$out/stdout.json" || { echo "FAIL: inspect exited $?"; exit 1; }
"$EMO" inspect "$a" --json "$out/one.json" > "$out/text.txt" || { echo "FAIL: inspect exited $?"; exit 1; }
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
arr = json.load(open(f"{d}/stdout.json"))
assert isinstance(arr, list) and len(arr) == 2, "two traces -> an array of two"
for o in arr:
    for k in ("format", "gpu", "rank", "world_size", "span_ns", "counts", "streams", "warnings"):
        assert k in o, f"missing key {k}"
    for k in ("kernel", "memcpy", "memset", "runtime", "sync", "collective"):
        assert isinstance(o["counts"][k], int), f"counts.{k}"
    for s in o["streams"]:
        assert {"device", "stream", "ops", "busy_ns"} <= set(s), s
        assert 0 < s["busy_ns"] <= o["span_ns"], s
assert arr[0]["format"] == "kineto-json" and arr[1]["format"] == "nsys-sqlite"
assert arr[0]["counts"]["sync"] == 5 and len(arr[0]["streams"]) == 3
assert arr[1]["counts"]["kernel"] == 1312
one = json.load(open(f"{d}/one.json"))
assert isinstance(one, dict) and one["counts"] == arr[0]["counts"], "one trace -> one object"
text = open(f"{d}/text.txt").read()
assert "kineto-json" in text and "streams" in text, "text summary printed alongside --json FILE"
print("1 passed, 0 failed")
PY
