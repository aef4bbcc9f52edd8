# Shared by the CLI test scripts that run whole commands (source it): pass/fail counting, the
# one-line-error check and the real-data check. The script prints "$passes passed, $fails failed"
# at the end itself.
fails=0; passes=0
ok() { passes=$((passes + 1)); echo "ok   $1"; }
bad() { fails=$((fails + 1)); echo "FAIL $1"; }

# expect_error NAME SUBSTRING CMD...: exit 2, exactly one line on stderr containing SUBSTRING.
expect_error() {
  local name=$1 want=$2; shift 2
  local err rc lines
  err=$("$@" 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if [[ $rc -eq 2 && $lines -eq 1 && "$err" == *"$want"* && "$err" != *Sanitizer* ]]; then ok "$name: $err"
  else bad "$name: rc=$rc lines=$lines stderr=<<$err>>"; fi
}

# skip_or_fail MESSAGE: a loud skip (exit 77), or under CI=true a failure (exit 1).
skip_or_fail() {
  if [[ "${CI:-}" == "true" ]]; then echo "FAIL (CI=true, so not skipped): $1"; exit 1; fi
  echo "*** SKIPPED: $1 ***"; exit 77
}

# require_tool CMD...: each command on PATH, else skip_or_fail.
require_tool() {
  local c
  for c in "$@"; do command -v "$c" >/dev/null || skip_or_fail "$c not installed (scripts/setup-deps.sh installs it)"; done
}

# require_built FILE...: a library or program the tests build (e.g. the NVML stand-in): a
# partial build (only `--target emo`, as scripts/main-job.sh does) skips the script, loudly;
# under CI=true it fails.
require_built() {
  local f
  for f in "$@"; do
    [[ -f "$f" ]] || skip_or_fail "$f is not built (cmake --build build builds every test's target)"
  done
}

# require_data FILE...: the shared real data (../shared/data, or $EMO_DATA_DIR). When a file is
# missing the whole script is skipped, loudly (exit 77), except under CI=true, where it fails.
DATA=${EMO_DATA_DIR:-${EMO_DEFAULT_DATA_DIR:-}}
require_data() {
  local f
  for f in "$@"; do
    [[ -f "$f" ]] || skip_or_fail "real data not found at $DATA: $f (set EMO_DATA_DIR)"
  done
}
