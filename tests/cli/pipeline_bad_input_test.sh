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
# Dst Rank to 7 (the job has 3 ranks), peer-neg to -5, peer-big to 2^32 (beyond 32 bits).
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
    ev[i]["args"]["Dst Rank"] = {"peer-out": 7, "peer-neg": -5, "peer-big": 2**32}[mode]
json.dump(d, gzip.open(dst, "wt"))
PY
}
mkdir "$out/missing" "$out/counts" "$out/outside" "$out/negative" "$out/big"
for d in missing counts outside negative big; do cp "$out/job/rank00000.json.gz" "$out/job/rank00002.json.gz" "$out/$d/"; done
edit "$out/job/rank00001.json.gz" "$out/counts/rank00001.json.gz" drop-send
edit "$out/job/rank00001.json.gz" "$out/outside/rank00001.json.gz" peer-out
edit "$out/job/rank00001.json.gz" "$out/negative/rank00001.json.gz" peer-neg
edit "$out/job/rank00001.json.gz" "$out/big/rank00001.json.gz" peer-big

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

# Stop 50: a negative peer other than -1 ("not recorded") was read as not recorded, and one beyond
# 32 bits likewise; both are errors naming the file.
expect_error "peer -5" "$out/negative/rank00001.json.gz: point-to-point kernel 'send' at" "$EMO" analyze "$out"/negative/*.json.gz
err=$("$EMO" analyze "$out"/negative/*.json.gz 2>&1 >/dev/null)
[[ "$err" == *"names rank -5 as its receiver: outside the job (world size 3)"* ]] &&
  ok "peer -5: the error says which rank" || bad "peer -5 error text: $err"
expect_error "peer 2^32" "$out/big/rank00001.json.gz" "$EMO" analyze "$out"/big/*.json.gz
err=$("$EMO" analyze "$out"/big/*.json.gz 2>&1 >/dev/null)
[[ "$err" == *"'args.Dst Rank' is 4294967296: no rank can be"* ]] &&
  ok "peer 2^32: the reader refuses it" || bad "peer 2^32 error text: $err"

# --- ranks that record different GPU models (stop 50): the first file's was taken for all -------------
mkdir "$out/mixed"
cp "$out/job/rank00000.json.gz" "$out/job/rank00002.json.gz" "$out/mixed/"
python3 - "$out/job/rank00001.json.gz" "$out/mixed/rank00001.json.gz" <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1], "rt"))
d["deviceProperties"][0]["name"] = "NVIDIA H100 80GB HBM3"
json.dump(d, gzip.open(sys.argv[2], "wt"))
PY
for how in "" "--solve decomposed"; do
  expect_error "two GPU models ${how:-joint}" "its GPUs are not one model (GPU 0: 'NVIDIA A100-SXM4-80GB', GPU 1: 'NVIDIA H100 80GB HBM3'); give --gpu NAME" \
    "$EMO" optimize "$out"/mixed/*.json.gz --max-slowdown 1% -q $how
done
"$EMO" optimize "$out"/mixed/*.json.gz --max-slowdown 1% -q --single-target --gpu A100-SXM4-80GB > /dev/null 2>&1 &&
  ok "two GPU models: --gpu names the one to optimise for" || bad "two GPU models with --gpu: rc=$?"

# --- a stage missing from a job whose hosts' clocks differ (stop 50) ----------------------------------
# 4 stages, clocks up to 300 us apart, rank 1 missing: ranks 2 and 3 still share their transfers,
# so they are aligned to each other (before, only the first file's group was: ranks 2 and 3 kept
# offset 0 and their transfers ended up to 300 us apart); the result does not depend on file order.
"$MAKE_JOB" "$src" "$out/job4" --mode pipeline --stages 4 --microbatches 2 --forward-ms 2 --max-offset-us 300 > /dev/null ||
  bad "emo_make_job (4 stages) failed"
mkdir "$out/gap"
cp "$out"/job4/rank0000{0,2,3}.json.gz "$out/gap/"
"$EMO" analyze "$out"/gap/*.json.gz --json "$out/g1.json" > "$out/g1.txt" 2>&1 &&
  "$EMO" analyze "$out"/gap/rank00003.json.gz "$out"/gap/rank00002.json.gz "$out"/gap/rank00000.json.gz --json "$out/g2.json" > /dev/null 2>&1 &&
  ok "stage 1 missing: exit 0 in both file orders" || bad "stage 1 missing: $(tail -2 "$out/g1.txt")"
grep -q "job warning: ranks 2, 3 share linked collectives among themselves but none with rank 0's group (a rank between them missing?): their clocks are aligned to rank 2's, which is kept as recorded (offset 0)" "$out/g1.txt" &&
  ok "stage 1 missing: the warning names the group of ranks 2 and 3" || bad "stage 1 missing warnings: $(grep warning "$out/g1.txt")"
"$EMO" analyze "$out"/job4/*.json.gz --json "$out/full.json" > /dev/null 2>&1 || bad "the 4-stage job as made"
python3 - "$out/g1.json" "$out/g2.json" "$out/full.json" <<'PY' && ok "stage 1 missing: ranks 2-3 aligned as in the whole job, residual 0, the same in both file orders" || bad "stage 1 missing: offsets"
import json, sys
a, b, full = (json.load(open(p))["job"] for p in sys.argv[1:4])
off = lambda j: {r["rank"]: r["offset_ns"] for r in j["ranks"]}
assert off(a) == off(b), (off(a), off(b))
assert a["offset_residual_max_ns"] == 0 and a["collectives_linked"] > 0, a
# The whole job aligns every rank to rank 0 through rank 1; without rank 1, ranks 2 and 3 are
# aligned to rank 2: rank 3's offset is then the whole job's offset of rank 3 less that of rank 2.
o, w = off(a), off(full)
assert w[2] != 0 and w[3] != w[2], w  # the generator did skew the clocks
assert o[0] == 0 and o[2] == 0 and o[3] == w[3] - w[2], (o, w)
PY

# --- the order of the files: the same job, the same answer -----------------------------------
# link_job takes the ranks in rank order (stop 51): `emo optimize` of the files in reverse order
# gives the same JSON (the simulated figures, the policy, the job), and the policy's sections are
# ranks 0, 1, 2 in that order. Before, the simulated device drew its noise by position and the
# figures moved (4 x 8 pipeline at +1 %: 24.38 against 24.03 %).
files=("$out"/job/*.json.gz)
reversed=(); for ((i=${#files[@]}-1; i>=0; i--)); do reversed+=("${files[i]}"); done
"$EMO" optimize "${files[@]}" --max-slowdown 1% --single-target -q --json "$out/fwd.json" --policy "$out/fwd.pol" > /dev/null 2>&1
"$EMO" optimize "${reversed[@]}" --max-slowdown 1% --single-target -q --json "$out/rev.json" --policy "$out/rev.pol" > /dev/null 2>&1
if python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
f, r = json.load(open(f"{d}/fwd.json")), json.load(open(f"{d}/rev.json"))
assert f == r, [k for k in f if f[k] != r.get(k)]
pf, pr = json.load(open(f"{d}/fwd.pol")), json.load(open(f"{d}/rev.pol"))
assert pf == pr and [g["rank"] for g in pf["gpus"]] == [0, 1, 2], [g["rank"] for g in pf["gpus"]]
PY
then ok "files in reverse order: the same result and policy (sections in rank order)"
else bad "the result depends on the order of the files"
fi

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
