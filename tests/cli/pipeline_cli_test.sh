#!/usr/bin/env bash
# `emo pipeline`: frontier CSV and JSON on the Perseus profile (12 microbatches), and bad input
# (exit 2, one line on stderr). Usage: pipeline_cli_test.sh PATH/TO/emo
set -u
EMO=${1:?usage: pipeline_cli_test.sh EMO_BINARY}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_data, DATA
prof="$DATA/perseus/stage_profile/gpt3-175b+a100_sxm_bf16.csv"
require_data "$prof"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

if "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 12 --points 20 \
     --frontier "$out/f.csv" --json "$out/p.json" --plans > "$out/out.txt" 2> "$out/err.txt"; then
  ok "pipeline runs"
else
  bad "pipeline exited non-zero: $(cat "$out/err.txt")"
fi
if python3 - "$out" <<'PY'
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(f"{d}/f.csv")))
assert rows and list(rows[0].keys()) == ["time", "energy"], rows[:1]
t = [float(r["time"]) for r in rows]; e = [float(r["energy"]) for r in rows]
assert all(a < b for a, b in zip(t, t[1:])) and all(a > b for a, b in zip(e, e[1:])), "not a Pareto frontier"
j = json.load(open(f"{d}/p.json"))
assert abs(j["max_clock"]["time_s"] - 2.8365) < 1e-4 and abs(j["max_clock"]["energy_j"] - 7339.0) < 0.05, j["max_clock"]
assert j["p_blocked_w"] == 83.64 and j["passes"] == 192 and len(j["frontier"]) == len(rows)
assert len(j["frontier"][0]["clock_mhz"]) == 192 and len(j["pass_names"]) == 192
assert e[0] < j["max_clock"]["energy_j"] and t[0] <= j["max_clock"]["time_s"] + 1e-6
PY
then ok "frontier CSV and JSON"; else bad "frontier CSV/JSON content"; fi

# --max-slowdown on a hand profile, 1 stage x 1 micro-batch (F then B), P_blocked 0: forward 1 s /
# 100 J at 1410 MHz, 1.2 s / 70 J at 1005; backward 2 s / 200 J, 2.4 s / 150 J. Max clock: 3 s,
# 300 J. Within +10 % (3.3 s): only F slowed fits (3.2 s, 270 J); +20 % (3.6 s): both (220 J);
# +0 %: the max clock (300 J).
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,1,100\n0,forward,1005,1.2,70\n0,backward,1410,2,200\n0,backward,1005,2.4,150\n' > "$out/hand.csv"
for case in "0% 3 300 1410,1410" "10% 3.2 270 1005,1410" "20% 3.6 220 1005,1005"; do
  read -r x t e c <<< "$case"
  if "$EMO" pipeline --stage-profile "$out/hand.csv" --stages 1 --microbatches 1 --p-blocked 0 --points 2 \
       --max-slowdown "$x" --plans --json "$out/t.json" > "$out/t.txt" 2>&1 &&
     python3 - "$out/t.json" "$x" "$t" "$e" "$c" <<'PY' &&
import json, sys
j = json.load(open(sys.argv[1])); x, t, e, c = sys.argv[2:]
tg = j["target"]
assert abs(tg["time_s"] - float(t)) < 1e-9 and abs(tg["energy_j"] - float(e)) < 1e-9, tg
assert tg["clock_mhz"] == [float(v) for v in c.split(",")], tg["clock_mhz"]
assert abs(tg["max_slowdown"] - float(x.rstrip("%")) / 100) < 1e-12
PY
     grep -q "^target $x" "$out/t.txt"; then
    ok "--max-slowdown $x: the plan worked out by hand ($t s, $e J, clocks $c)"
  else bad "--max-slowdown $x: $(cat "$out/t.txt")"; fi
done
expect_error "bad max-slowdown" "--max-slowdown" "$EMO" pipeline --stage-profile "$out/hand.csv" --stages 1 --microbatches 1 --max-slowdown 3

printf 'stage,instruction,frequency,time,energy\n0,forward,1410,1,1\n0,backward,1410,2,2\n0,recompute,1410,1,1\n' > "$out/odd.csv"
printf 'stage,instruction,frequency,time\n0,forward,1410,1\n' > "$out/nocol.csv"
expect_error "missing file" "emo: error: $out/none.csv" "$EMO" pipeline --stage-profile "$out/none.csv" --stages 8 --microbatches 4
expect_error "too many stages" "no measurements for stage 8" "$EMO" pipeline --stage-profile "$prof" --stages 9 --microbatches 4
expect_error "too few stages" "the pipeline has 4 stages" "$EMO" pipeline --stage-profile "$prof" --stages 4 --microbatches 4
# Stop 50: bounds (before: out of memory, exit 3, or hours of solving).
expect_error "too many micro-batches" "--microbatches: 8 stages x 100000000 micro-batches is more than 1000000" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 100000000
expect_error "too many points" "--points: 1000000000 is more than 100000 points" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 4 --points 1000000000
expect_error "zero microbatches" "--microbatches" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 0
expect_error "unknown instruction" "recompute" "$EMO" pipeline --stage-profile "$out/odd.csv" --stages 1 --microbatches 2
expect_error "bad CSV" "nocol.csv" "$EMO" pipeline --stage-profile "$out/nocol.csv" --stages 1 --microbatches 2
expect_error "unknown schedule" "--schedule" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 4 --schedule gpipe
expect_error "negative p-blocked" "--p-blocked" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 4 --p-blocked -5
expect_error "too few points" "--points" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 4 --points 1

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
