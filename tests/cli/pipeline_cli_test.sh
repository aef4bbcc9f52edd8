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

printf 'stage,instruction,frequency,time,energy\n0,forward,1410,1,1\n0,backward,1410,2,2\n0,recompute,1410,1,1\n' > "$out/odd.csv"
printf 'stage,instruction,frequency,time\n0,forward,1410,1\n' > "$out/nocol.csv"
expect_error "missing file" "emo: error: $out/none.csv" "$EMO" pipeline --stage-profile "$out/none.csv" --stages 8 --microbatches 4
expect_error "too many stages" "no measurements for stage 8" "$EMO" pipeline --stage-profile "$prof" --stages 9 --microbatches 4
expect_error "too few stages" "the pipeline has 4 stages" "$EMO" pipeline --stage-profile "$prof" --stages 4 --microbatches 4
expect_error "zero microbatches" "--microbatches" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 0
expect_error "unknown instruction" "recompute" "$EMO" pipeline --stage-profile "$out/odd.csv" --stages 1 --microbatches 2
expect_error "bad CSV" "nocol.csv" "$EMO" pipeline --stage-profile "$out/nocol.csv" --stages 1 --microbatches 2
expect_error "unknown schedule" "--schedule" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 4 --schedule gpipe
expect_error "negative p-blocked" "--p-blocked" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 4 --p-blocked -5
expect_error "too few points" "--points" "$EMO" pipeline --stage-profile "$prof" --stages 8 --microbatches 4 --points 1

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
