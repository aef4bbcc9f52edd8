#!/usr/bin/env bash
# scripts/pipeline-crosscheck.sh on a 2-stage x 2-micro-batch generated job (SYNTHETIC), and
# emo_pipeline_crosscheck's bad input (exit 2, one line). The script itself checks that the replay
# and emo optimize measure the same baseline (it fails otherwise).
# Usage: pipeline_crosscheck_test.sh BUILD_DIR (holding emo, emo_make_job, emo_pipeline_crosscheck)
set -u
BUILD=${1:?usage: pipeline_crosscheck_test.sh BUILD_DIR}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_data, DATA
require_data "$DATA/kineto/hta_training_16rank_rank0.json.gz"
require_tool python3
require_built "$BUILD/emo" "$BUILD/emo_make_job" "$BUILD/emo_pipeline_crosscheck"
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

if EMO_DATA_DIR=$DATA PIPELINE_CROSSCHECK_TARGETS="1%" "$root/scripts/pipeline-crosscheck.sh" "$BUILD" 2x2:1.5 \
     > "$out/t.md" 2> "$out/err"; then
  ok "the script runs on 2 x 2"
else bad "the script failed: $(cat "$out/err")"; fi
python3 - "$out/t.md" <<'PY' && ok "one row: 2 x 2, +1 %, every figure a percentage; labelled SIMULATED" || bad "table: $(cat "$out/t.md")"
import re, sys
text = open(sys.argv[1]).read()
rows = [l for l in text.splitlines() if l.startswith("| 2 × 2")]
assert len(rows) == 1, text
cells = [c.strip() for c in rows[0].strip("|").split("|")]
assert cells[1] == "1.5×" and cells[2] == "+1 %", cells
assert all(re.search(r"-?\d+\.\d\d %", c) for c in cells[4:10]), cells
# Step 5: the reference on EMO's clock range, cut at its lowest profiled clock: 0.5 x f_max =
# 705 MHz on the A100 (1410 MHz max; 705 is one of its 15 MHz steps from 210).
assert re.fullmatch(r"\d+\.\d\d %, [+-]\d+\.\d{3} % \(≥ 705 MHz\)", cells[10]), cells
assert "SIMULATED" in text and "SYNTHETIC" in text
PY

X="$BUILD/emo_pipeline_crosscheck"
expect_error "no such job" "$out/none: not a directory" "$X" profile "$out/none" --stages 2 --microbatches 2 --out "$out/p.csv"
expect_error "no stages" "--stages and --microbatches" "$X" profile "$out" --microbatches 2 --out "$out/p.csv"
expect_error "unknown verb" "unknown verb 'plot'" "$X" plot "$out" --stages 2 --microbatches 2
"$BUILD/emo_make_job" "$DATA/kineto/hta_training_16rank_rank0.json.gz" "$out/job" --mode pipeline --stages 2 \
  --microbatches 2 > /dev/null
# 2 x 2 passes of 12 kernels: 48 kernels per rank. As 3 micro-batches, 6 passes of 8 kernels whose
# forwards differ; as 5, no split into 10 equal passes.
expect_error "3 micro-batches" "pass 1 (forward of micro-batch 1) runs other kernels than the stage's first forward: not the 1F1B order" \
  "$X" profile "$out/job" --stages 2 --microbatches 3 --out "$out/p.csv"
expect_error "5 micro-batches" "48 compute kernels do not split into 10 passes of equal length" \
  "$X" profile "$out/job" --stages 2 --microbatches 5 --out "$out/p.csv"
echo '{}' > "$out/plan.json"
expect_error "no target plan" "$out/plan.json: no target plan" "$X" replay "$out/job" --stages 2 --microbatches 2 \
  --plan "$out/plan.json" --max-slowdown 1%

# `packs` (the analysis verb): EMO's packs with the passes they hold, EMO's policy replayed. Its
# switched replay of EMO's policy must be the very run emo optimize measured and kept (same device,
# seeds, switch requests): time to the ns, energy to 1e-9 relative.
"$X" profile "$out/job" --stages 2 --microbatches 2 --out "$out/p.csv" > /dev/null
"$BUILD/emo" pipeline --stage-profile "$out/p.csv" --stages 2 --microbatches 2 --p-blocked 60 --max-slowdown 1% \
  --points 20 --plans --json "$out/pl.json" > /dev/null
"$BUILD/emo" optimize "$out"/job/*.json.gz --max-slowdown 1% -q --json "$out/o.json" --policy "$out/pol.json" > /dev/null
if "$X" packs "$out/job" --stages 2 --microbatches 2 --plan "$out/pl.json" --policy "$out/pol.json" \
     --max-slowdown 1% --json "$out/packs.json" > "$out/packs.txt" 2> "$out/err"; then
  ok "packs runs on 2 x 2"
else bad "packs failed: $(cat "$out/err")"; fi
python3 - "$out/packs.json" "$out/o.json" <<'PY' && ok "packs: EMO's policy replayed as emo optimize measured it; every pass in a pack of its stage's GPU" || bad "packs: $(head -c 600 "$out/packs.json")"
import json, sys
k, o = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
run = k["runs"]["EMO policy, switched"]
if not o.get("static_kept") and not o.get("baseline_kept"):
    assert run["time_ns"] == o["emo"]["time_ns"], (run, o["emo"])
    assert abs(run["energy_j"] / o["emo"]["energy_j"] - 1) < 1e-9, (run, o["emo"])
seen = set()
for p in k["packs"]:
    for q in p["passes"]:
        assert q["pass"].startswith(f"stage {p['device']} "), p
        seen.add(q["pass"])
assert len(seen) == 2 * 2 * 2, seen  # 2 stages x 2 micro-batches x (forward, backward)
assert k["baseline"]["time_ns"] == o["baseline"]["time_ns"]
PY
expect_error "packs without a policy" "packs needs --policy" "$X" packs "$out/job" --stages 2 --microbatches 2 \
  --plan "$out/pl.json" --max-slowdown 1%
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['gpus'][0]['packs'].pop(); json.dump(d, open(sys.argv[2],'w'))" \
  "$out/pol.json" "$out/short.json"
expect_error "policy of another packing" "$out/short.json:" "$X" packs "$out/job" --stages 2 --microbatches 2 \
  --plan "$out/pl.json" --policy "$out/short.json" --max-slowdown 1%

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
