#!/usr/bin/env bash
# Installs the wheel (dist/emo-*.whl, scripts/build-wheel.sh) into a fresh venv and checks it there,
# with LD_LIBRARY_PATH and PYTHONPATH empty, so that nothing of the build tree is reachable:
#   1. the venv holds only the wheel, its `plot` extra (matplotlib, for docs/python.md's plot) and
#      pytest;
#   2. `ldd` of every ELF file of the installed package: each library resolves, inside the venv
#      (emo/bin, emo.libs) or to a system library of the manylinux policy (glibc, libstdc++, libz, ...);
#   3. one version: the wheel's name, `emo --version`, emo.__version__ and the policy's emo_version;
#   4. the main job from the wheel alone: `emo optimize --example`, its trace read from the venv;
#      again with the Debian libraries build/emo links, /usr/include and the CUDA toolkit hidden
#      (where a private mount namespace can be made: unshare -m);
#   5. the Python tests (tests/python) against the installed package and its `emo` command
#      (EMO_TEST_INSTALLED=1: tests/python/test_install.py checks that they are the venv's).
#   scripts/wheel-test.sh [WHEEL]      (default: the one dist/emo-*.whl)
# Uses build/tests/libemo_fake_nvml.so (a test stand-in, not part of the wheel; override:
# EMO_FAKE_NVML) when present.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
whl=$(realpath "${1:-$(ls dist/emo-*.whl)}")
python=${EMO_PYTHON:-python3}
venv=$(mktemp -d /tmp/emo-wheel-venv.XXXXXX)
trap 'rm -rf "$venv"' EXIT
unset LD_LIBRARY_PATH PYTHONPATH PYTHONHOME
fail() { echo "wheel-test: FAIL: $*" >&2; exit 1; }

echo "=== wheel-test: $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB) into a fresh venv $venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --no-deps "$whl"
"$venv/bin/pip" install -q "${whl}[plot]" pytest
"$venv/bin/pip" list --format=freeze | sed 's/^/  /'
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

echo "=== ldd of the installed ELF files"
# The libraries every manylinux system has (auditwheel 6.8's policy manylinux_2_35, lib_whitelist):
# the only ones allowed to resolve outside the venv.
policy_libs="libGL.so.1 libICE.so.6 libSM.so.6 libX11.so.6 libXext.so.6 libXrender.so.1 libanl.so.1 libatomic.so.1
  libc.so.6 libdl.so.2 libexpat.so.1 libgcc_s.so.1 libglib-2.0.so.0 libgobject-2.0.so.0 libgthread-2.0.so.0 libm.so.6
  libmvec.so.1 libnsl.so.1 libpthread.so.0 libresolv.so.2 librt.so.1 libstdc++.so.6 libutil.so.1 libz.so.1"
policy_libs=$(echo $policy_libs)
bad=0
while IFS= read -r f; do
  echo "$f" | sed "s|$site/|  |"
  while IFS= read -r line; do
    lib=$(awk '{print $1}' <<<"$line")
    path=$(awk '$2 == "=>" {print $3}' <<<"$line")
    case "$line" in
      *"not found"*) echo "    $line   <- NOT FOUND"; bad=1; continue ;;
    esac
    [[ -z "$path" ]] && continue   # linux-vdso, the loader itself
    if [[ "$path" == "$site"/* ]]; then
      echo "    $lib => ${path#"$site"/}"
    elif [[ " $policy_libs " == *" $lib "* ]]; then
      echo "    $lib => $path (system, manylinux policy)"
    else
      echo "    $lib => $path   <- OUTSIDE THE WHEEL"; bad=1
    fi
  done < <(ldd "$f")
done < <(find "$site/emo" "$site"/emo.libs -type f \( -name '*.so*' -o -path '*/bin/emo' \) 2>/dev/null | sort)
((bad == 0)) || fail "a library of the installed package resolves outside the wheel or not at all"

echo "=== one version"
wheel_version=$(basename "$whl" | cut -d- -f2)
cli_version=$("$venv/bin/emo" --version) || fail "emo --version failed"
py_version=$(cd /tmp && "$venv/bin/python" -c 'import emo; print(emo.__version__)') || fail "import emo failed"
echo "  wheel name: $wheel_version; emo --version: $cli_version; emo.__version__: $py_version"
[[ "$cli_version" == "emo $wheel_version" && "$py_version" == "$wheel_version" ]] || fail "the versions differ"

echo "=== the main job from the wheel: emo optimize --example"
out=$venv/example
mkdir -p "$out"
(cd /tmp && "$venv/bin/emo" optimize --example --policy "$out/policy.json" --json "$out/result.json" \
   --report "$out/report.html") | tee "$out/text"
grep -q "^$site/emo/data/traces/kineto_resnet50_2021.json.gz" "$out/text" || fail "--example did not read the venv's trace"
policy_version=$("$venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["emo_version"])' "$out/policy.json")
echo "  policy.json emo_version: $policy_version"
[[ "$policy_version" == "$wheel_version" ]] || fail "the policy's emo_version is $policy_version"

echo "=== the main job with EMO's build dependencies hidden"
# In a private mount namespace (root, or unprivileged user namespaces), /dev/null is mounted over
# every library build/emo takes from outside the manylinux policy (the Debian ones EMO links: fmt,
# simdjson, SQLite, libdeflate, CBC, LAPACK, ...), and an empty folder over /usr/include and the
# CUDA toolkit: build/emo then cannot start (the control), the wheel's emo must.
if [[ -x "$root/build/emo" ]] && unshare -m -r true 2>/dev/null || { [[ -x "$root/build/emo" ]] && unshare -m true 2>/dev/null; }; then
  hide=$(ldd "$root/build/emo" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r lib path; do
           [[ " $policy_libs " == *" $lib "* ]] || realpath "$path"; done | sort -u | tr '\n' ' ')
  userns=(); [[ $(id -u) -eq 0 ]] || userns=(-r)
  HIDE="$hide" VENV="$venv" EMO_BUILD="$root/build/emo" unshare -m "${userns[@]}" bash -c '
    set -eu
    for f in $HIDE; do mount --bind /dev/null "$f"; done
    for d in /usr/include /usr/local/cuda; do [[ -d $d ]] && mount -t tmpfs none "$(realpath "$d")"; done
    echo "  hidden: $(wc -w <<<"$HIDE") libraries ($(for f in $HIDE; do basename "$f"; done | tr "\n" " ")), /usr/include, /usr/local/cuda"
    if "$EMO_BUILD" --version >/dev/null 2>&1; then echo "  control: build/emo still starts: nothing was hidden" >&2; exit 1; fi
    echo "  control: build/emo: $("$EMO_BUILD" --version 2>&1 | head -1)"
    v=$("$VENV/bin/emo" --version) || exit 1
    pv=$(cd /tmp && "$VENV/bin/python" -c "import emo; print(emo.__version__)") || exit 1
    echo "  wheel: $v; import emo: $pv"
    text=$("$VENV/bin/emo" optimize --example --quiet) || exit 1
    grep "EMO policy" <<<"$text" | sed "s/^ */  wheel: emo optimize --example: /"
  ' || fail "the wheel needs what was hidden (or the control started)"
else
  why="no build/emo to take the libraries from, or no private mount namespace (unshare -m) here"
  [[ "${CI:-}" == "true" ]] && fail "CI=true and $why"
  echo "  SKIPPED (not a pass): $why"
fi

echo "=== tests/python against the installed package"
fake_nvml=${EMO_FAKE_NVML:-$root/build/tests/libemo_fake_nvml.so}
[[ -f "$fake_nvml" ]] || fake_nvml=""
cd "$root/tests/python"
EMO_TEST_INSTALLED=1 EMO_CLI="$venv/bin/emo" EMO_FAKE_NVML="$fake_nvml" PYTHONDONTWRITEBYTECODE=1 \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -rs .
echo "wheel-test: OK"
