#!/usr/bin/env bash
# `emo optimize --mpi` under mpirun (issue 16, scale-out of loading): with 1, 2 and 4 processes
# (more processes than traces included) the policy and JSON files are byte-identical to a plain
# single-process run, on the shared 2-rank pair and on three other traces at once (Kineto and
# nsys); only process 0 writes. A bad trace among the inputs (on process 0 or on another) makes
# every process exit 2 with one line naming the file, printed once, and nothing hangs.
# The decomposed solve (--solve decomposed: each process solves the ranks it loaded) gives the
# same files as a plain run on the real pair and on two generated 4-rank jobs (SYNTHETIC,
# emo_make_job), one of which takes the second round, and its --report/--overlay; a failure in any
# process's solves, or a bad file, ends every process with exit 2 and one line.
# The failing process is emo_test_mpi_fault (tests/job/mpi_fault_main.cpp): emo's decomposed
# --mpi path with that process's rank solves failing through the RankWorker seam.
# Usage: optimize_mpi_test.sh PATH/TO/emo [PATH/TO/emo_make_job [PATH/TO/emo_test_mpi_fault]]
#        (registered only when CMake found MPI)
set -u
EMO=${1:?usage: optimize_mpi_test.sh EMO_BINARY [EMO_MAKE_JOB [EMO_TEST_MPI_FAULT]]}
MAKE_JOB=${2:-$(dirname "$EMO")/emo_make_job}
MPI_FAULT=${3:-$(dirname "$EMO")/emo_test_mpi_fault}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_data, require_tool, DATA
require_tool mpirun timeout
[[ -x $MAKE_JOB ]] || skip_or_fail "emo_make_job not built at $MAKE_JOB (cmake --build BUILD --target emo_make_job)"
[[ -x $MPI_FAULT ]] || skip_or_fail "emo_test_mpi_fault not built at $MPI_FAULT (cmake --build BUILD --target emo_test_mpi_fault)"
pair=("$DATA/kineto/hta_sampled_2rank_rank0.json.gz" "$DATA/kineto/hta_sampled_2rank_rank1.json.gz")
three=("$DATA/kineto/hta_simple_add.json.gz" "$DATA/kineto/hta_cuda_event_sync_multi_stream.json.gz"
       "$DATA/nsys/perlmutter-cloverleaf-cuda.sqlite")
require_data "${pair[@]}" "${three[@]}" "$DATA/kineto/hta_nccl_allreduce_rank0.json.gz" \
  "$DATA/kineto/hta_training_16rank_rank0.json.gz"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

# In a container, as root, without network devices: allow root, keep to shared memory and loopback
# TCP, no cross-memory-attach (often refused in containers), no help banners (-q: the one error
# line stays one line).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun -q --oversubscribe --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none)
OPT=(optimize --gpu A100-SXM4-80GB --max-slowdown 0.05 --quiet)

# run NAME PREFIX... -- TRACES...: emo optimize into $out/NAME.{policy.json,json,txt}.
run() {
  local name=$1; shift
  local pre=()
  while [[ $1 != -- ]]; do pre+=("$1"); shift; done
  shift
  timeout 300 "${pre[@]}" "$EMO" "${OPT[@]}" "$@" --policy "$out/$name.policy.json" --json "$out/$name.json" \
    > "$out/$name.txt" 2> "$out/$name.err"
}

# same SET NAME NP: the files of run NAME are those of run SET.plain (ok/bad), its text too.
same() {
  local set=$1 name=$2 np=$3 same=1 f g
  # One policy per trace (policy.N.json), or one for a job of linked ranks (policy.json).
  local files=("$out/$set.plain".policy*.json)
  [[ -s ${files[0]} ]] || same=0
  for f in "${files[@]}"; do
    g=$out/$name${f#"$out/$set.plain"}
    cmp -s "$f" "$g" || same=0
    [[ -s "$g" ]] || same=0
  done
  cmp -s "$out/$set.plain.json" "$out/$name.json" || same=0
  if [[ $same == 1 ]]; then ok "$set: mpirun -np $np --mpi: policies and JSON byte-identical to the plain run"
  else bad "$set: mpirun -np $np --mpi: outputs differ from the plain run"; fi
  # Process 0 alone prints: the text once (one 'baseline' line per trace, as the plain run).
  if cmp -s "$out/$set.plain.txt" "$out/$name.txt"; then ok "$set: -np $np prints the text once"
  else bad "$set: -np $np text differs from the plain run"; fi
}

# compare SET NP...: SET (an array of traces) plain, then under mpirun -np NP for each NP.
compare() {
  local set=$1 np name; shift
  declare -n traces=$set
  run "$set.plain" -- "${traces[@]}" || bad "$set: plain run failed: $(head -c 300 "$out/$set.plain.err")"
  for np in "$@"; do
    name="$set.np$np"
    if run "$name" "${MPIRUN[@]}" -np "$np" -- --mpi "${traces[@]}"; then same "$set" "$name" "$np"
    else bad "$set: mpirun -np $np failed: $(head -c 300 "$out/$name.err")"; fi
  done
  unset -n traces
}

compare pair 1 2 4
compare three 1 2 4
run loadthreads -- --load-threads 1 "${pair[@]}" && cmp -s "$out/pair.plain.json" "$out/loadthreads.json" \
  && ok "--load-threads 1 gives the same JSON" || bad "--load-threads 1 differs"

# A bad trace: exit 2, one line naming it, from process 0 only, whichever process read it.
bad_trace="$out/broken.json"
printf '{"traceEvents": [ {"ph": "X", "cat": "kernel"' > "$bad_trace"
expect_error "mpirun -np 2, bad trace on process 1" "$bad_trace" \
  timeout 120 "${MPIRUN[@]}" -np 2 "$EMO" "${OPT[@]}" --mpi "${pair[0]}" "$bad_trace"
expect_error "mpirun -np 2, bad trace on process 0" "$bad_trace" \
  timeout 120 "${MPIRUN[@]}" -np 2 "$EMO" "${OPT[@]}" --mpi "$bad_trace" "${pair[1]}"
expect_error "mpirun -np 2, the lowest-index bad file is named" "$out/missing.json" \
  timeout 120 "${MPIRUN[@]}" -np 2 "$EMO" "${OPT[@]}" --mpi "${pair[0]}" "$out/missing.json" "$bad_trace"
expect_error "mpirun -np 4, missing file" "$out/missing.json" \
  timeout 120 "${MPIRUN[@]}" -np 4 "$EMO" "${OPT[@]}" --mpi "${pair[0]}" "$out/missing.json"

# --- the decomposed solve: each process solves the ranks it loaded, process 0 composes -----------
OPT=(optimize --gpu A100-SXM4-80GB --max-slowdown 0.05 --solve decomposed --quiet)
decomposed_pair=("${pair[@]}")
compare decomposed_pair 1 2 4   # -np 4: two processes without a rank
for src in nccl_allreduce training_16rank; do
  "$MAKE_JOB" "$DATA/kineto/hta_${src}_rank0.json.gz" "$out/$src" --ranks 4 --straggler 1 --slowdown 0.1 --seed 3 \
    > /dev/null || bad "emo_make_job $src failed"
done
gen4=("$out"/nccl_allreduce/rank*.json.gz)     # SYNTHETIC; the composed plan is kept at 2 %
OPT=(optimize --max-slowdown 0.02 --solve decomposed --quiet)
compare gen4 2 4
# SYNTHETIC. Before issue 26's float pins, the first composed plan missed at 0.1 % and the second
# round was taken here; the pins now compose within the target on every generated job tried
# (docs/multi-rank.md), so the second round is not exercised under MPI by this test.
train4=("$out"/training_16rank/rank*.json.gz)
OPT=(optimize --max-slowdown 0.1% --solve decomposed --quiet)
compare train4 2

# The decomposed solve's report and overlay (issue 26): each process sends process 0 its ranks'
# lanes (a few numbers per pack, the 'L' message) and process 0 draws them: the files are
# byte-identical to a plain run's, with a lane per rank and the critical path across ranks.
OPT=(optimize --max-slowdown 0.5% --solve decomposed --quiet)
run view.plain -- --report "$out/view.plain.html" --overlay "$out/view.plain.ov.json" "${train4[@]}" ||
  bad "decomposed report: plain run failed: $(head -c 300 "$out/view.plain.err")"
if run view.np2 "${MPIRUN[@]}" -np 2 -- --mpi --report "$out/view.np2.html" --overlay "$out/view.np2.ov.json" "${train4[@]}" &&
   cmp -s "$out/view.plain.html" "$out/view.np2.html" && cmp -s "$out/view.plain.ov.json" "$out/view.np2.ov.json" &&
   python3 - "$out/view.np2.html" <<'PY'
import json, re, sys
d = json.loads(re.search(r'<script type="application/json" id="emo-data">(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1))
assert [k["rank"] for k in d["ranks"]] == [0, 1, 2, 3] and {p["gpu"] for p in d["packs"]} == {0, 1, 2, 3}, d["ranks"]
assert d["rank_path"] and d["rank_path"][-1][2] == d["makespan_ns"], d["rank_path"]
PY
then ok "decomposed --report/--overlay: mpirun -np 2 --mpi gives the plain run's files (a lane per rank, the critical path)"
else bad "decomposed --report/--overlay under mpirun -np 2: $(head -c 300 "$out/view.np2.err")"; fi
# The same with the static clock kept (a balanced job at +0.2 %: the ranks run at it again, 'S').
"$MAKE_JOB" "$DATA/kineto/hta_training_16rank_rank0.json.gz" "$out/bal4" --ranks 4 > /dev/null || bad "emo_make_job bal4 failed"
bal4=("$out"/bal4/rank*.json.gz)
OPT=(optimize --gpu A100-SXM4-80GB --max-slowdown 0.2% --solve decomposed --quiet)
run sview.plain -- --report "$out/sview.plain.html" --overlay "$out/sview.plain.ov.json" "${bal4[@]}" ||
  bad "decomposed report, static kept: plain run failed: $(head -c 300 "$out/sview.plain.err")"
if run sview.np2 "${MPIRUN[@]}" -np 2 -- --mpi --report "$out/sview.np2.html" --overlay "$out/sview.np2.ov.json" "${bal4[@]}" &&
   cmp -s "$out/sview.plain.html" "$out/sview.np2.html" && cmp -s "$out/sview.plain.ov.json" "$out/sview.np2.ov.json" &&
   grep -q "MHz kept)" "$out/sview.np2.html"
then ok "decomposed --report/--overlay, static clock kept: mpirun -np 2 --mpi gives the plain run's files"
else bad "decomposed --report/--overlay, static kept, under mpirun -np 2: $(head -c 300 "$out/sview.np2.err")"; fi

# A failure in one process's rank solves (emo_test_mpi_fault P: process P's RankWorker fails its
# solves), or a bad file, under --solve decomposed: every process ends, exit 2, one line from process 0.
OPT=(optimize --gpu A100-SXM4-80GB --max-slowdown 0.05 --solve decomposed --quiet)
for p in 0 1; do
  expect_error "decomposed, mpirun -np 2, process $p's solve fails" "process $p fails its rank solves" \
    timeout 120 "${MPIRUN[@]}" -np 2 "$MPI_FAULT" "$p" "${pair[@]}"
done
expect_error "decomposed, mpirun -np 2, bad trace on process 1" "$bad_trace" \
  timeout 120 "${MPIRUN[@]}" -np 2 "$EMO" "${OPT[@]}" --mpi "${pair[0]}" "$bad_trace"

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
