#!/usr/bin/env bash
# Bad input to `emo inspect` (and `emo model`): each case must exit with code 2 and print exactly one line on
# stderr that names the file, and nothing may crash. Usage: bad_input_test.sh PATH/TO/emo
set -u
EMO=${1:?usage: bad_input_test.sh EMO_BINARY}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0; passes=0

python3 - "$dir" <<'PY'
import gzip, os, sqlite3, sys
d = sys.argv[1]
def w(name, data):
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)
w('empty.json', b'')
good = b'{"traceEvents": [' + b','.join(
    b'{"ph": "X", "cat": "kernel", "name": "k%d", "pid": 0, "tid": 7, "ts": %d, "dur": 1, '
    b'"args": {"device": 0, "stream": 7, "correlation": %d}}' % (i, i, i) for i in range(2000)) + b']}'
z = gzip.compress(good)
w('truncated.json.gz', z[: len(z) // 2])
w('truncated.json', good[: len(good) // 2])
w('invalid.json', b'{"traceEvents": [ {"ph": "X", } ]}')
w('no_events.json', b'{"schemaVersion": 1, "deviceProperties": []}')
w('wrong_type.json', b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}]}')
w('wrong_type_args.json', b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": [7]}}]}')
w('binary.bin', bytes(range(256)) * 4)
w('gzip_garbage.gz', b'\x1f\x8b' + b'\x00' * 40)
con = sqlite3.connect(os.path.join(d, 'not_nsys.sqlite'))
con.execute('create table t (x)'); con.commit(); con.close()
con = sqlite3.connect(os.path.join(d, 'nsys_missing_column.sqlite'))
con.execute('create table StringIds (id, value)')
con.execute('create table CUPTI_ACTIVITY_KIND_KERNEL (start, deviceId)')
con.commit(); con.close()
PY
mkdir "$dir/a_directory"

check() {  # check NAME FILE...
  local name=$1; shift
  local err rc lines
  err=$("$EMO" inspect "$@" 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if [[ $rc -eq 2 && $lines -eq 1 && "$err" == *"$(basename "$1")"* && "$err" != *Sanitizer* ]]; then
    passes=$((passes + 1)); echo "ok   $name: $err"
  else
    fails=$((fails + 1)); echo "FAIL $name: rc=$rc lines=$lines stderr=<<$err>>"
  fi
}

check empty "$dir/empty.json"
check truncated_gzip "$dir/truncated.json.gz"
check truncated_json "$dir/truncated.json"
check invalid_json "$dir/invalid.json"
check no_trace_events "$dir/no_events.json"
check wrong_type "$dir/wrong_type.json"
check wrong_type_args "$dir/wrong_type_args.json"
check unknown_binary "$dir/binary.bin"
check gzip_garbage "$dir/gzip_garbage.gz"
check sqlite_not_nsys "$dir/not_nsys.sqlite"
check nsys_missing_column "$dir/nsys_missing_column.sqlite"
check directory "$dir/a_directory"
check missing "$dir/does_not_exist.json"

check_cmd() {  # check_cmd NAME NEEDLE ARGS...: `emo ARGS` exits 2 with one line containing NEEDLE
  local name=$1 needle=$2; shift 2
  local err rc lines
  err=$("$EMO" "$@" 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if [[ $rc -eq 2 && $lines -eq 1 && "$err" == *"$needle"* && "$err" != *Sanitizer* ]]; then
    passes=$((passes + 1)); echo "ok   $name: $err"
  else
    fails=$((fails + 1)); echo "FAIL $name: rc=$rc lines=$lines stderr=<<$err>>"
  fi
}
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,0.05,oops\n' > "$dir/bad_profile.csv"
check_cmd model_check_bad_number bad_profile.csv model check "$dir/bad_profile.csv" --fit-clocks 1410,990
check_cmd model_check_missing nope.csv model check "$dir/nope.csv" --fit-clocks 1410,990
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,0.05,20\n0,forward,990,0.07,18\n' > "$dir/good_profile.csv"
check_cmd model_check_one_clock fit-clocks model check "$dir/good_profile.csv" --fit-clocks 1410
check_cmd model_check_nothing_fitted "nothing was fitted" model check "$dir/good_profile.csv" --fit-clocks 5000,6000
check_cmd model_calibrate_missing_dir "$dir/no_data" model calibrate --data-dir "$dir/no_data"

# Issue 19: nothing to analyse, EMO's own overlay, an nsys report, our wording for usage errors,
# --max-slowdown above 1 without '%'.
printf '{"traceEvents":[]}' > "$dir/empty_events.json"
check_cmd analyze_empty_trace "empty_events.json: nothing to analyse" analyze "$dir/empty_events.json"
printf '{"displayTimeUnit": "ns", "otherData": {"emo_origin_ns": 0, "emo_trace": "x.json"}, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 1, "args": {"device": 0, "stream": 7}}]}' > "$dir/overlay.json"
check_cmd analyze_own_overlay "overlay.json: nothing to analyse: this is an overlay EMO wrote" analyze "$dir/overlay.json"
printf 'not a sqlite file' > "$dir/report.nsys-rep"
check_cmd nsys_report "nsys export --type sqlite" inspect "$dir/report.nsys-rep"
check_cmd unknown_command "unknown command 'frobnicate'; the commands are inspect, analyze" frobnicate x
check_cmd negative_instance "--instance: -1 is negative; give a number >= 0" analyze "$dir/overlay.json" --annotation ProfilerStep --instance -1
check_cmd instance_not_a_number "--instance: abc is not a number; give a number >= 0" analyze "$dir/overlay.json" --annotation ProfilerStep --instance abc
check_cmd max_slowdown_above_one "would mean +300 %; for 3 % write 0.03 or 3%" optimize "$dir/overlay.json" --max-slowdown 3
check_cmd empty_window "--window: an empty name selects nothing" optimize "$dir/overlay.json" --max-slowdown 1% --window ''
check_cmd empty_annotation "--annotation: an empty name selects nothing" analyze "$dir/overlay.json" --annotation '' --instance 0
check_cmd empty_durations_window "--durations-window: an empty name selects nothing" analyze "$dir/overlay.json" --durations-from "$dir/overlay.json" --durations-window ''
check_cmd seed_beyond_64_bits "--seed: 18446744073709551616 is beyond 2^64 - 1" optimize "$dir/overlay.json" --max-slowdown 1% --seed 18446744073709551616
check_cmd seed_plus_sign "--seed: +18446744073709551616 is not a number; give digits only" optimize "$dir/overlay.json" --max-slowdown 1% --seed +18446744073709551616
check_cmd seed_hex "--seed: 0x1FFFFFFFFFFFFFFFF is not a number; give digits only" optimize "$dir/overlay.json" --max-slowdown 1% --seed 0x1FFFFFFFFFFFFFFFF
check_cmd max_slowdown_not_a_number "--max-slowdown abc: expected a fraction" optimize "$dir/overlay.json" --max-slowdown abc

# Data changed on load is said by every command that computes from the trace (not only by
# `emo inspect`): a kernel of negative duration (set to 0) and a host op ending 0.5 us past its
# parent (clamped), each counted by hand below. Exit 0, the work done, one warning line each.
python3 "$(dirname "$0")/three_pack_trace.py" "$dir/changed.json"
python3 - "$dir/changed.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ev = doc["traceEvents"]
ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 500000.0, "dur": 5, "pid": 10, "tid": 11,
           "args": {"correlation": 900}})
ev.append({"ph": "X", "cat": "kernel", "name": "neg_k", "ts": 500010.0, "dur": -3, "pid": 0, "tid": 7,
           "args": {"device": 0, "stream": 7, "correlation": 900}})
ev.append({"ph": "X", "cat": "cpu_op", "name": "parent", "ts": 400000.0, "dur": 10, "pid": 10, "tid": 12, "args": {}})
ev.append({"ph": "X", "cat": "cpu_op", "name": "child", "ts": 400002.0, "dur": 8.5, "pid": 10, "tid": 12, "args": {}})
json.dump(doc, open(sys.argv[1], "w"))
PY
neg="emo CMD: warning: $dir/changed.json: 1 event had a negative duration; set to 0"
clamp="emo CMD: warning: $dir/changed.json: 1 host op ended after the enclosing op (by up to 500 ns); clamped to the parent's end"
for cmd in optimize analyze pack; do
  args=(); [[ $cmd == optimize ]] && args=(--max-slowdown 5% -q)
  err=$("$EMO" "$cmd" "$dir/changed.json" "${args[@]}" 2>&1 >/dev/null); rc=$?
  if [[ $rc -eq 0 && $(printf '%s\n' "$err" | grep -cxF "${neg/CMD/$cmd}") -eq 1 && $(printf '%s\n' "$err" | grep -cxF "${clamp/CMD/$cmd}") -eq 1 ]]; then
    passes=$((passes + 1)); echo "ok   changed_on_load_$cmd"
  else
    fails=$((fails + 1)); echo "FAIL changed_on_load_$cmd: rc=$rc stderr=<<$err>>"
  fi
done
# Ten such traces optimised alone: the first 8 named (2 lines each), the other 2 counted in one line.
copies=()
for i in $(seq 0 9); do cp "$dir/changed.json" "$dir/changed_$i.json"; copies+=("$dir/changed_$i.json"); done
err=$("$EMO" optimize "${copies[@]}" --max-slowdown 5% -q 2>&1 >/dev/null); rc=$?
named=$(printf '%s\n' "$err" | grep -c "^emo optimize: warning: $dir/changed_[0-7].json: ")
if [[ $rc -eq 0 && $named -eq 16 && $(printf '%s\n' "$err" | grep -c 'changed_[89].json') -eq 0 &&
      $(printf '%s\n' "$err" | grep -cxF 'emo optimize: warning: and 2 more traces changed on load (emo inspect lists each)') -eq 1 ]]; then
  passes=$((passes + 1)); echo "ok   changed_on_load_capped"
else
  fails=$((fails + 1)); echo "FAIL changed_on_load_capped: rc=$rc named=$named stderr=<<$err>>"
fi

# Usage errors also exit 2; --help exits 0.
"$EMO" >/dev/null 2>&1; rc=$?
if [[ $rc -eq 2 ]]; then passes=$((passes + 1)); echo "ok   no_subcommand"; else fails=$((fails + 1)); echo "FAIL no_subcommand rc=$rc"; fi
"$EMO" inspect --bogus x >/dev/null 2>&1; rc=$?
if [[ $rc -eq 2 ]]; then passes=$((passes + 1)); echo "ok   unknown_option"; else fails=$((fails + 1)); echo "FAIL unknown_option rc=$rc"; fi
"$EMO" --help >/dev/null 2>&1; rc=$?
if [[ $rc -eq 0 ]]; then passes=$((passes + 1)); echo "ok   help"; else fails=$((fails + 1)); echo "FAIL help rc=$rc"; fi

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
