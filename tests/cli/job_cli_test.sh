#!/usr/bin/env bash
# Several ranks of one job (docs/multi-rank.md): emo analyze/pack/optimize link them; the `job`
# JSON (ranks, offsets, residual); the overlay's process per rank; the joint policy's section per
# rank; and bad jobs: duplicated ranks, traces of different jobs, --ranks of the wrong length.
# The decomposed solve's report and overlay on a generated 4-rank job (SYNTHETIC, emo_make_job).
# Usage: job_cli_test.sh PATH/TO/emo [PATH/TO/emo_make_job]
set -u
EMO=${1:?usage: job_cli_test.sh EMO_BINARY [EMO_MAKE_JOB]}
MAKE_JOB=${2:-$(dirname "$EMO")/emo_make_job}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_data, DATA
r0="$DATA/kineto/hta_sampled_2rank_rank0.json.gz"
r1="$DATA/kineto/hta_sampled_2rank_rank1.json.gz"
other="$DATA/kineto/hta_nccl_allreduce_rank0.json.gz"
src16="$DATA/kineto/hta_training_16rank_rank0.json.gz"
require_data "$r0" "$r1" "$other" "$src16"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

# --- the real pair: all ten SendRecv kernels linked, offset and residual printed ----------------
if "$EMO" analyze "$r0" "$r1" --json "$out/a.json" --overlay "$out/ov.json" > "$out/a.txt" 2> "$out/a.err"; then
  ok "analyze links the pair"
else
  bad "analyze of the pair failed: $(cat "$out/a.err")"
fi
grep -q "10 collectives linked (order per stream)" "$out/a.txt" && grep -q "offset -8.000 us" "$out/a.txt" &&
  grep -q "residual median" "$out/a.txt" && ok "text: 10 linked, rank 1's offset -8 us, the residual" ||
  bad "text lacks the job lines: $(grep -E 'job|rank' "$out/a.txt")"
if python3 - "$out" "$r0" "$r1" <<'PY'
import json, sys
d, r0, r1 = sys.argv[1:]
a = json.load(open(f"{d}/a.json"))
j = a["job"]
assert j["collectives_linked"] == 10, j["collectives_linked"]
assert [r["rank"] for r in j["ranks"]] == [0, 1]
assert [r["file"] for r in j["ranks"]] == [r0, r1]
assert all(r["collectives_matched"] == 10 for r in j["ranks"])
assert j["ranks"][1]["offset_ns"] == -8000
assert j["ranks"][0]["wait_in_collectives_ns"] > 0 and "slack_ns" in j["ranks"][0]
assert j["critical_path_by_rank"] and j["critical_path_by_rank"][0]["rank"] in (0, 1)
assert a["edges"]["collective"] == 20 and a["replay_error"] < 1e-9
names = [e["args"]["name"] for e in json.load(open(f"{d}/ov.json"))["traceEvents"] if e.get("name") == "process_name"]
assert any(n.startswith("rank 0 GPU") for n in names) and any(n.startswith("rank 1 GPU") for n in names), names
assert "rank 0 host" in names and "rank 1 host" in names, names
PY
then ok "JSON: job.ranks with offsets, waits, slack; 20 collective edges; exact replay; a process per rank"
else bad "job JSON or overlay wrong"; fi

# --- the joint policy: one file, a section per rank ---------------------------------------------
if "$EMO" optimize "$r0" "$r1" --gpu A100-SXM4-80GB --max-slowdown 0.05 -q --policy "$out/p.json" \
     --json "$out/o.json" > "$out/o.txt" 2> "$out/o.err" &&
   python3 -c "import json,sys; p=json.load(open(sys.argv[1])); assert [(g['device'],g['rank']) for g in p['gpus']]==[(0,0),(1,1)], p['gpus']" "$out/p.json" &&
   python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['job']; assert j['collectives_linked']==10 and len(j['ranks'])==2" "$out/o.json"; then
  ok "optimize writes one policy with a section per rank, and the job in its JSON"
else
  bad "joint policy: $(cat "$out/o.err")"
fi
grep -q "SIMULATED" "$out/o.txt" && ok "joint figures labelled simulated" || bad "no [SIMULATED] label"

# --- one report and one overlay for the job (issue 26): a lane and a pack track per rank ---------
if "$EMO" optimize "$r0" "$r1" --gpu A100-SXM4-80GB --max-slowdown 0.05 -q --report "$out/r.html" \
     --overlay "$out/ro.json" --json "$out/ro_result.json" > /dev/null 2> "$out/r.err" &&
   [ ! -e "$out/r.0.html" ] && python3 - "$out/r.html" "$out/ro.json" "$out/ro_result.json" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script type="application/json" id="emo-data">(.*?)</script>', html, re.S).group(1))
assert [(k["rank"], k["gpu"]) for k in d["ranks"]] == [(0, 0), (1, 1)], d["ranks"]
assert d["rank_path"] and all(0 <= s[0] < 2 for s in d["rank_path"])
assert "Simulated device" in html and "baseline (J, simulated run)" in html
res = json.load(open(sys.argv[3]))
base, emo = (float(x) for x in re.search(r'the job \(sum over ranks\)</td><td>([0-9.]+)</td><td>([0-9.]+)</td>', html).groups())
assert abs(base - res["baseline"]["energy_j"]) < 1e-3 and abs(emo - res["emo"]["energy_j"]) < 1e-3, (base, emo)
o = json.load(open(sys.argv[2]))
names = [e["args"]["name"] for e in o["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"]
assert sum(bool(re.match(r"rank [01] GPU \(", n)) for n in names) == 2, names
assert sorted(n for n in names if n.startswith("EMO packs")) == ["EMO packs, rank 0 (GPU 0)", "EMO packs, rank 1 (GPU 1)"], names
PY
then ok "--report/--overlay on a job: one report with a lane per rank and sums equal to the job's; one overlay, a pack track per rank"
else bad "job report/overlay: $(cat "$out/r.err")"; fi

# --- joint vs each rank alone, run together --------------------------------------------------------
if "$EMO" optimize "$r0" "$r1" --gpu A100-SXM4-80GB --max-slowdown 0.05 -q --compare-independent \
     --json "$out/c.json" > "$out/c.txt" 2> "$out/c.err" &&
   python3 - "$out/c.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["independent"]
assert c["simulated"] is True
for k in ("baseline", "joint", "independent"):
    assert c[k]["time_ns"] > 0 and c[k]["energy_j"] > 0, c[k]
assert c["joint"]["within_target"] and c["joint"]["energy_j"] < c["baseline"]["energy_j"]
assert [r["rank"] for r in c["ranks_alone"]] == [0, 1]
PY
then
  grep -q "independent (each rank alone).*SIMULATED" "$out/c.txt" && ok "--compare-independent: both plans run together, labelled simulated" ||
    bad "--compare-independent text: $(tail -5 "$out/c.txt")"
else
  bad "--compare-independent: $(cat "$out/c.err")"
fi
expect_error "--compare-independent needs a job" "--compare-independent" "$EMO" optimize "$r0" --compare-independent \
  --gpu A100-SXM4-80GB --max-slowdown 0.05 -q

# --- the decomposed solve (job/job_solve.h): each rank against its collectives' pinned times ----
if "$EMO" optimize "$r0" "$r1" --gpu A100-SXM4-80GB --max-slowdown 0.05 -q --solve decomposed --solve-threads 2 \
     --policy "$out/pd.json" --json "$out/d.json" > "$out/d.txt" 2> "$out/d.err" &&
   python3 - "$out/d.json" "$out/pd.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
assert d["solve"] == "decomposed" and d["simulated"] is True
assert d["collectives_pinned"] == 10 and d["job"]["collectives_linked"] == 10
assert d["emo"]["within_target"] and d["emo"]["energy_j"] < d["baseline"]["energy_j"], d["emo"]
assert d["emo"]["energy_j"] <= d["own_plan"]["energy_j"] + 1e-9
assert [r["rank"] for r in d["ranks"]] == [0, 1] and all(r["collectives_pinned"] == 10 for r in d["ranks"])
assert [(g["device"], g["rank"]) for g in p["gpus"]] == [(0, 0), (1, 1)], p["gpus"]
assert abs(p["predicted"]["energy_j"] - d["emo"]["energy_j"]) < 1e-6 and p["latency_target_ns"] == d["target_ns"]
PY
then
  grep -q "EMO (decomposed).*SIMULATED" "$out/d.txt" && ok "--solve decomposed: a section per rank, within the target, labelled simulated" ||
    bad "--solve decomposed text: $(tail -8 "$out/d.txt")"
else
  bad "--solve decomposed: $(cat "$out/d.err")"
fi
expect_error "--solve decomposed needs a job" "--solve decomposed" "$EMO" optimize "$r0" --solve decomposed \
  --gpu A100-SXM4-80GB --max-slowdown 0.05 -q
expect_error "--solve decomposed has no true optimum" "--solve joint" "$EMO" optimize "$r0" "$r1" --solve decomposed \
  --true-optimum --gpu A100-SXM4-80GB --max-slowdown 0.05 -q

# --- the decomposed solve's report and overlay (issue 26): a lane per rank at pack granularity, the
# critical path across ranks, per-rank savings summing to the job's; on a generated job (SYNTHETIC:
# 4 copies of a real rank, rank 1 a 10 % straggler) ---------------------------------------------------
if [[ -x $MAKE_JOB ]] && "$MAKE_JOB" "$DATA/kineto/hta_training_16rank_rank0.json.gz" "$out/gen4" --ranks 4 --straggler 1 \
     --slowdown 0.1 > /dev/null 2> "$out/gen4.err"; then
  if "$EMO" optimize "$out"/gen4/*.json.gz --gpu A100-SXM4-80GB --max-slowdown 0.5% --solve decomposed --solve-threads 2 -q \
       --report "$out/dr.html" --overlay "$out/dro.json" --json "$out/dr.json" > /dev/null 2> "$out/dr.err" &&
     python3 - "$out/dr.html" "$out/dro.json" "$out/dr.json" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script type="application/json" id="emo-data">(.*?)</script>', html, re.S).group(1))
res = json.load(open(sys.argv[3]))
# One lane per rank, each with its packs (as many as its solve made), inside the kept run.
assert [(k["rank"], k["gpu"]) for k in d["ranks"]] == [(i, i) for i in range(4)], d["ranks"]
packs = {}
for p in d["packs"]:
    packs[p["gpu"]] = packs.get(p["gpu"], 0) + 1
    assert 0 <= p["start_ns"] <= p["end_ns"] <= d["makespan_ns"], p
assert packs == {i: r["packs"] for i, r in enumerate(res["ranks"])}, (packs, res["ranks"])
assert d["makespan_ns"] == res["emo"]["time_ns"], (d["makespan_ns"], res["emo"])  # "emo": the kept plan
# The critical path: stretches joined rank to rank, from the job's start to its end.
path = d["rank_path"]
assert path and all(0 <= s[0] < 4 for s in path), path
assert all(path[i][1] == path[i - 1][2] and path[i][0] != path[i - 1][0] for i in range(1, len(path))), path
assert path[-1][2] == d["makespan_ns"], (path[-1], d["makespan_ns"])
# Per-rank energies sum to the job's (summary and JSON).
base, emo = (float(x) for x in re.search(r'the job \(sum over ranks\)</td><td>([0-9.]+)</td><td>([0-9.]+)</td>', html).groups())
assert abs(base - res["baseline"]["energy_j"]) < 1e-3 and abs(emo - res["emo"]["energy_j"]) < 1e-3, (base, emo, res)
assert "<h2>Timeline</h2>" not in html and "Simulated device" in html and "SIMULATED" in html
o = json.load(open(sys.argv[2]))
names = sorted(e["args"]["name"] for e in o["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name")
assert names == ["EMO critical path"] + [f"EMO packs, rank {i} (GPU {i})" for i in range(4)], names
assert sum(e.get("ph") == "X" and e["pid"] == 1000000000 for e in o["traceEvents"]) == len(path)
assert sum(e.get("ph") == "X" and e.get("tid") == 0 and e["pid"] < 4 for e in o["traceEvents"]) == len(d["packs"])
PY
  then ok "--solve decomposed --report/--overlay: a lane per rank, the critical path across ranks, sums equal to the job's"
  else bad "decomposed report/overlay: $(tail -3 "$out/dr.err")"; fi
else
  bad "emo_make_job ($MAKE_JOB) failed: $(tail -3 "$out/gen4.err" 2>/dev/null)"
fi
# A balanced job (SYNTHETIC, no straggler) at +0.2 %: the best static clock is cheaper and kept; the
# ranks are run at it again, every pack is drawn at it, and the report says so.
if [[ -x $MAKE_JOB ]] && "$MAKE_JOB" "$DATA/kineto/hta_training_16rank_rank0.json.gz" "$out/bal4" --ranks 4 > /dev/null &&
   "$EMO" optimize "$out"/bal4/*.json.gz --gpu A100-SXM4-80GB --max-slowdown 0.2% --solve decomposed --solve-threads 2 -q \
     --report "$out/ds.html" --json "$out/ds.json" > /dev/null 2> "$out/ds.err" &&
   python3 - "$out/ds.html" "$out/ds.json" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script type="application/json" id="emo-data">(.*?)</script>', html, re.S).group(1))
res = json.load(open(sys.argv[2]))
assert res["static_kept"], "the static clock is no longer kept at +0.2 % on this job: pick a target where it is"
f = res["static_best_clock_mhz"]
assert {p["clock_mhz"] for p in d["packs"]} == {f} and len(d["ranks"]) == 4, {p["clock_mhz"] for p in d["packs"]}
assert d["makespan_ns"] == res["emo"]["time_ns"] and d["rank_path"][-1][2] == d["makespan_ns"]
assert f"The best static clock, {f:.0f} MHz, is kept" in html and f"EMO (static {f:.0f} MHz kept)" in html
PY
then ok "--solve decomposed --report, the static clock kept: every pack at it, and said"
else bad "decomposed report with the static clock kept: $(tail -3 "$out/ds.err")"; fi
expect_error "--solve of an unknown kind" "--solve" "$EMO" optimize "$r0" "$r1" --solve fast \
  --gpu A100-SXM4-80GB --max-slowdown 0.05 -q

# --- the per-GPU static reference is within the target, or said to be over it ---------------------
# 2 stages x 2 data-parallel replicas x 2 tensor-parallel ranks (SYNTHETIC) at +5 %: the models'
# first per-GPU static plan measured 26 us over the target (stop 48) and was shown as the per-GPU
# reference; it is re-planned at a tighter model limit (driver::per_gpu_static) and measures within.
# Two generated 8-rank jobs: run in the normal build only (they add ~340 s under the sanitizers,
# where driver::per_gpu_static still runs in the promises tests). Not indented: heredocs inside.
if [[ -n ${ASAN_OPTIONS:-} ]]; then
  echo "note: the per-GPU static checks on generated 8-rank jobs run in the normal build only"
else
if "$MAKE_JOB" "$src16" "$out/tp2p2" --mode pipeline --stages 2 --microbatches 4 --tp 2 --dp 2 \
     --last-stage-scale 1.4 --seed 5 > /dev/null 2>&1 &&
   "$EMO" optimize "$out"/tp2p2/rank*.json.gz --max-slowdown 5% --json "$out/tp.json" > "$out/tp.txt" 2> "$out/tp.err" &&
   python3 - "$out/tp.json" "$out/tp.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
g = r["per_gpu_static"]
assert g is not None, "no per-GPU static plan measured on this 8-GPU job"
assert g["within_target"], g
assert r["emo"]["energy_j"] <= g["energy_j"], (r["emo"], g)
assert "over the target of" not in text and "not a candidate" not in text
PY
then ok "per-GPU static reference within the target on the 2 x 2 x 2 job at +5 %"
else bad "per-GPU static reference on the 2 x 2 x 2 job: $(tail -3 "$out/tp.err")"; fi
# An 8-rank data-parallel job with a 20 % straggler at +0.25 %: the text says a per-GPU static plan
# is over the target exactly when the JSON does, with its measured slowdown and the target.
if "$MAKE_JOB" "$src16" "$out/dps8" --ranks 8 --straggler 3 --slowdown 0.2 --seed 21 > /dev/null 2>&1 &&
   "$EMO" optimize "$out"/dps8/rank*.json.gz --max-slowdown 0.25% --json "$out/ds8.json" > "$out/ds8.txt" 2> "$out/ds8.err" &&
   python3 - "$out/ds8.json" "$out/ds8.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
g, base = r["per_gpu_static"], r["baseline"]["time_ns"]
assert g is not None, "no per-GPU static plan measured on this 8-GPU job"
said = "static per GPU: " in text and "over the target of +0.250 %; not a candidate" in text
assert said == (not g["within_target"]), (said, g)
if said:
    assert f"static per GPU: {100 * (g['time_ns'] / base - 1):+.3f} % on its run" in text, text
    assert "not a candidate) [SIMULATED]" in text, text
    assert r["slowdown"] <= 0.0025 and not r["per_gpu_static_kept"]
PY
then ok "per-GPU static over the target said in the text exactly when --json says so"
else bad "per-GPU static text and JSON disagree: $(tail -3 "$out/ds8.err")"; fi
fi

# --- bad jobs ---------------------------------------------------------------------------------------
expect_error "the same trace twice" "given twice" "$EMO" analyze "$r0" "$r0"
expect_error "the same trace twice, --ranks giving it two ranks" "given twice" "$EMO" analyze "$r0" "$r0" --ranks 0,1
expect_error "--ranks empty" "--ranks: empty; give one rank per trace" "$EMO" analyze "$r0" "$r1" --ranks ''
expect_error "--ranks a range of the wrong length" "2147483648 ranks, one per trace expected (2 traces)" "$EMO" analyze "$r0" "$r1" --ranks 0-2147483647
expect_error "--ranks makes them duplicates" "duplicated rank" "$EMO" analyze "$r0" "$r1" --ranks 0,0
expect_error "--ranks of the wrong length" "one rank per trace" "$EMO" analyze "$r0" "$r1" --ranks 0
expect_error "--ranks not a number" "--ranks" "$EMO" analyze "$r0" "$r1" --ranks 0,x
expect_error "analyze: traces of different jobs" "world sizes differ" "$EMO" analyze "$r0" "$other"
# optimize takes traces of different jobs one by one, and says so.
if "$EMO" optimize "$r0" "$other" --gpu A100-SXM4-80GB --max-slowdown 0.05 -q --json "$out/two.json" \
     > /dev/null 2> "$out/two.err" && grep -q "not the ranks of one job (world sizes differ" "$out/two.err" &&
   python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))['traces'])==2" "$out/two.json"; then
  ok "optimize: different jobs are optimised one by one, with a note: $(cat "$out/two.err")"
else
  bad "optimize of two jobs' traces: $(cat "$out/two.err")"
fi
# --independent keeps the ranks apart.
if "$EMO" optimize "$r0" "$r1" --independent --gpu A100-SXM4-80GB --max-slowdown 0.05 -q --json "$out/ind.json" \
     > /dev/null 2>&1 && python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))['traces'])==2" "$out/ind.json"; then
  ok "--independent optimises each rank alone"
else
  bad "--independent"
fi
echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
