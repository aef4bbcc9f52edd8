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

# require_data FILE...: the shared real data (../shared/data, or $EMO_DATA_DIR). When a file is
# missing the whole script is skipped, loudly (exit 77), except under CI=true, where it fails.
DATA=${EMO_DATA_DIR:-${EMO_DEFAULT_DATA_DIR:-}}
require_data() {
  local f
  for f in "$@"; do
    if [[ ! -f "$f" ]]; then
      if [[ "${CI:-}" == "true" ]]; then echo "FAIL: real data missing in CI at $DATA"; exit 1; fi
      echo "*** SKIPPED: real data not found at $DATA (set EMO_DATA_DIR) ***"; exit 77
    fi
  done
}
