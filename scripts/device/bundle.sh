#!/usr/bin/env bash
# Prepares what a device session carries to the H200 machine (issue 9; docs/device-validation.md):
#   .device-bundle/emo/bin/emo        emo built here, stripped, RUNPATH $ORIGIN/../lib
#   .device-bundle/emo/lib/           every shared library it needs except glibc's own
#                                     (fmt, simdjson, libdeflate, sqlite3, libstdc++, libgcc_s)
#   .device-bundle/emo/glibc/         this machine's glibc and loader, for emo-loader
#   .device-bundle/emo/emo-loader     runs bin/emo through the bundled loader (any target glibc)
#   .device-bundle/debs/              (--with-debs) the Debian -dev packages, so that validate.sh
#                                     can build emo there (EMO_BUILD_ON_DEVICE=1), e.g. for a
#                                     CUPTI-enabled `emo trace`
# .device-bundle/ is ignored by git (.gitignore); name it in the run tool's `carry`.
#   scripts/device/bundle.sh [--with-debs] [--skip-build]
set -euo pipefail
cd "$(dirname "$0")/../.."
with_debs=0 skip_build=0
for a in "$@"; do
  case $a in
    --with-debs) with_debs=1 ;;
    --skip-build) skip_build=1 ;;
    *) echo "usage: $0 [--with-debs] [--skip-build]" >&2; exit 2 ;;
  esac
done
B=.device-bundle
if ((!skip_build)); then
  scripts/setup-deps.sh
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target emo
fi
command -v patchelf >/dev/null || { apt-get install -y -qq --no-install-recommends patchelf >/dev/null; }

rm -rf "$B/emo"
mkdir -p "$B/emo/bin" "$B/emo/lib" "$B/emo/glibc"
cp build/emo "$B/emo/bin/emo"
strip --strip-debug "$B/emo/bin/emo"
patchelf --set-rpath '$ORIGIN/../lib' "$B/emo/bin/emo"
# Libraries: glibc's own (libc, libm, loader, ...) go to glibc/, the rest to lib/.
ldd build/emo | awk '/=> \//{print $3} $1 ~ /ld-linux/{print $1}' | while read -r lib; do
  base=$(basename "$lib")
  case $base in
    libc.so.*|libm.so.*|ld-linux*|libpthread.so.*|libdl.so.*|librt.so.*) cp -L "$lib" "$B/emo/glibc/$base" ;;
    *) cp -L "$lib" "$B/emo/lib/$base" ;;
  esac
done
# The loader path: works whatever glibc the target has (also none of these libraries).
cat > "$B/emo/emo-loader" <<'EOF'
#!/bin/sh
# Runs the bundled emo through the bundled glibc loader (for a target with an older glibc).
here=$(dirname "$(readlink -f "$0")")
exec "$here/glibc/ld-linux-x86-64.so.2" --library-path "$here/lib:$here/glibc" "$here/bin/emo" "$@"
EOF
chmod +x "$B/emo/emo-loader"
git rev-parse HEAD > "$B/emo/COMMIT"
git status --porcelain --untracked-files=no | grep -q . && echo "(plus uncommitted changes)" >> "$B/emo/COMMIT"
ldd --version | head -1 > "$B/emo/BUILT_WITH"

if ((with_debs)); then
  rm -rf "$B/debs" && mkdir -p "$B/debs"
  (cd "$B/debs" && apt-get download -qq libsimdjson-dev libsimdjson14 libfmt-dev libfmt9 \
      libcli11-dev nlohmann-json3-dev libdeflate-dev libdeflate0 libsqlite3-dev libsqlite3-0)
fi
du -sh "$B"/* | sed 's/^/bundle: /'
echo "bundle: $(du -sh "$B" | cut -f1) in $B (commit $(head -c 12 "$B/emo/COMMIT"))"
