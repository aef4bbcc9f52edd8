#!/usr/bin/env bash
# Bad pipeline jobs (issue 26, "Must show"): a job missing one stage's trace, point-to-point counts
# that differ between peers, a transfer naming a rank outside the job. Each is made from a generated
# 3-stage x 2-micro-batch 1F1B job (SYNTHETIC, emo_make_job) by dropping a file or editing one
# rank's trace, and must give a warning that says what was done (exit 0), or a one-line error
# naming the file and the problem (exit 2) — never a silently wrong graph.
# Usage: pipeline_bad_input_test.sh PATH/TO/emo PATH/TO/emo_make_job
set -u
EMO=${1:?usage: pipeline_bad_input_test.sh EMO MAKE_JOB}
MAKE_JOB=${2:?usage: pipeline_bad_input_test.sh EMO MAKE_JOB}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_data, DATA
src="$DATA/kineto/hta_training_16rank_rank0.json.gz"
require_data "$src"
require_tool python3
require_built "$EMO" "$MAKE_JOB"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

"$MAKE_JOB" "$src" "$out/job" --mode pipeline --stages 3 --microbatches 2 --forward-ms 2 > /dev/null ||
  { bad "emo_make_job failed"; echo "$passes passed, $fails failed"; exit 1; }
# edit IN OUT MODE: drop-send deletes rank's first send kernel (1 -> 2 on rank 1); peer-out sets its
# Dst Rank to 7 (the job has 3 ranks).
edit() {
  python3 - "$@" <<'PY'
import gzip, json, sys
src, dst, mode = sys.argv[1:4]
d = json.load(gzip.open(src, "rt"))
ev = d["traceEvents"]
i = next(k for k, e in enumerate(ev) if e.get("args", {}).get("Collective name") == "send")
assert ev[i]["args"]["Dst Rank"] == 2, ev[i]["args"]
if mode == "drop-send":
    del ev[i]
else:
    ev[i]["args"]["Dst Rank"] = 7
json.dump(d, gzip.open(dst, "wt"))
PY
}
mkdir "$out/missing" "$out/counts" "$out/outside"
cp "$out/job/rank00000.json.gz" "$out/job/rank00002.json.gz" "$out/missing/"
cp "$out/job/rank00000.json.gz" "$out/job/rank00002.json.gz" "$out/counts/"
cp "$out/job/rank00000.json.gz" "$out/job/rank00002.json.gz" "$out/outside/"
edit "$out/job/rank00001.json.gz" "$out/counts/rank00001.json.gz" drop-send
edit "$out/job/rank00001.json.gz" "$out/outside/rank00001.json.gz" peer-out

# The job as made: 8 transfers (2 x 2 each way between 0-1 and 1-2) linked, for comparison.
"$EMO" analyze "$out"/job/*.json.gz --json "$out/whole.json" > /dev/null 2>&1 &&
  python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['job']; assert j['collectives_linked']==8, j" "$out/whole.json" &&
  ok "the whole job: 8 transfers linked" || bad "the whole job does not link its 8 transfers"

# --- a stage's trace missing: a warning naming the missing rank; nothing of it linked ----------------
if "$EMO" analyze "$out"/missing/*.json.gz --json "$out/m.json" > "$out/m.txt" 2> "$out/m.err"; then
  ok "missing stage: exit 0 (a subset of a job's ranks is allowed)"
else bad "missing stage: rc=$? $(cat "$out/m.err")"; fi
grep -q "job warning: 2 of 3 ranks given (missing: rank 1): collectives are linked among the ranks given" "$out/m.txt" &&
  grep -q "8 point-to-point kernels have their peer outside the ranks given (e.g. from rank 0 to rank 1): not linked, each keeps its recorded duration" "$out/m.txt" &&
  ok "missing stage: the warnings name rank 1 and say its 8 transfers keep their recorded durations" ||
  bad "missing stage warnings: $(grep warning "$out/m.txt")"
python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['job']; assert j['collectives_linked']==0 and [r['rank'] for r in j['ranks']]==[0,2], j" "$out/m.json" &&
  ok "missing stage: 0 transfers linked, ranks 0 and 2" || bad "missing stage JSON: $(head -c 400 "$out/m.json")"

# --- counts that differ between peers: the pair unlinked, both files named; the others linked -------
if "$EMO" analyze "$out"/counts/*.json.gz --json "$out/c.json" > "$out/c.txt" 2> "$out/c.err"; then
  ok "counts differ: exit 0"
else bad "counts differ: rc=$? $(cat "$out/c.err")"; fi
want="point-to-point kernels from rank 1 to rank 2 differ in number between the two (rank 1: 1 in $out/counts/rank00001.json.gz, rank 2: 2 in $out/counts/rank00002.json.gz): none of them linked, each keeps its recorded duration"
grep -qF "$want" "$out/c.txt" && ok "counts differ: one warning naming both files and what was done" ||
  bad "counts differ warning: $(grep warning "$out/c.txt")"
python3 - "$out/c.json" <<'PY' && ok "counts differ: the 6 other transfers linked, rank 1 6 of 7, rank 2 2 of 4, replay exact" || bad "counts differ JSON"
import json, sys
a = json.load(open(sys.argv[1])); j = a["job"]
assert j["collectives_linked"] == 6, j["collectives_linked"]
assert [r["collectives_matched"] for r in j["ranks"]] == [4, 6, 2], j["ranks"]
assert a["replay_error"] < 1e-9, a["replay_error"]
PY

# --- a transfer naming a rank outside the job: one-line error naming the file, exit 2 --------------
for cmd in analyze pack "optimize --max-slowdown 1%" "optimize --max-slowdown 1% --solve decomposed"; do
  expect_error "$cmd, peer outside the job" \
    "$out/outside/rank00001.json.gz: point-to-point kernel 'send' at" \
    "$EMO" $cmd "$out"/outside/*.json.gz
done
err=$("$EMO" analyze "$out"/outside/*.json.gz 2>&1 >/dev/null)
[[ "$err" == *"names rank 7 as its receiver: outside the job (world size 3)"* ]] &&
  ok "the error says which rank and why" || bad "error text: $err"

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
