#!/usr/bin/env bash
# scripts/main-job.sh's output folder (README, "Run the main job"): each run empties build/main-job/
# first, so a run on one trace after a run on three leaves policy/result/report.0 only, not the
# earlier run's .1 and .2. Hermetic: the script runs in a scratch copy of the repository layout
# with stand-ins for scripts/setup-deps.sh, cmake and build/emo (which logs its arguments and
# writes the files it is asked for), so nothing is installed or built; the emo command lines the
# script runs are checked too.
# Usage: main_job_test.sh PATH/TO/scripts/main-job.sh
set -u
MAIN_JOB=${1:?usage: main_job_test.sh PATH/TO/scripts/main-job.sh}
source "$(dirname "$0")/check_lib.sh"  # ok, bad
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
repo=$dir/repo
mkdir -p "$repo/scripts" "$repo/build" "$dir/bin"
cp "$MAIN_JOB" "$repo/scripts/main-job.sh"
printf '#!/bin/sh\nexit 0\n' > "$repo/scripts/setup-deps.sh"
printf '#!/bin/sh\nexit 0\n' > "$dir/bin/cmake"
cat > "$repo/build/emo" <<'EOF'
#!/usr/bin/env bash
# Stand-in for emo: logs its arguments, writes the files named by --policy, --json, --report.
echo "emo $*" >> "$(dirname "$0")/emo.log"
while (($#)); do
  case $1 in --policy | --json | --report) echo stand-in > "$2"; shift ;; esac
  shift
done
EOF
chmod +x "$repo/scripts/main-job.sh" "$repo/scripts/setup-deps.sh" "$dir/bin/cmake" "$repo/build/emo"

# run TRACE...: scripts/main-job.sh in the scratch repository; its stdout and stderr in $dir/out.
run() { (cd "$repo" && PATH="$dir/bin:$PATH" EMO_GPU='' EMO_MAX_SLOWDOWN='' scripts/main-job.sh "$@") > "$dir/out" 2>&1; }
files() { (cd "$repo/build/main-job" && LC_ALL=C ls | tr '\n' ' '); }

if run a.json b.json c.json; then ok "main-job.sh on three traces"; else bad "main-job.sh on three traces: $(cat "$dir/out")"; fi
three="policy.0.json policy.1.json policy.2.json report.0.html report.1.html report.2.html result.0.json result.1.json result.2.json "
[[ "$(files)" == "$three" ]] && ok "three traces: three sets of files" || bad "three traces: files <<$(files)>>"

rm -f "$repo/build/emo.log"
if run only.json; then ok "main-job.sh on one trace"; else bad "main-job.sh on one trace: $(cat "$dir/out")"; fi
[[ "$(files)" == "policy.0.json report.0.html result.0.json " ]] \
  && ok "a run on one trace after one on three: only its own files in build/main-job/" \
  || bad "stale files of the earlier run left in build/main-job/: <<$(files)>>"
want="emo inspect only.json
emo optimize only.json --gpu A100-SXM4-80GB --max-slowdown 0.05 --policy build/main-job/policy.0.json --json build/main-job/result.0.json --report build/main-job/report.0.html"
[[ "$(cat "$repo/build/emo.log")" == "$want" ]] && ok "emo inspect, then emo optimize with the defaults" \
  || bad "emo command lines: <<$(cat "$repo/build/emo.log")>>"
grep -q "wrote build/main-job/policy.0.json, build/main-job/result.0.json, build/main-job/report.0.html" "$dir/out" \
  && ok "prints the files it wrote" || bad "output: $(cat "$dir/out")"

echo "$passes passed, $fails failed"
((fails == 0))
