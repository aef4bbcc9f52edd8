# Shared by the CLI test scripts that run whole commands (source it): pass/fail counting and the
# one-line-error check. The script prints "$passes passed, $fails failed" at the end itself.
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
