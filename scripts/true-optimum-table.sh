#!/usr/bin/env bash
# The "True optimum" table of docs/optimize.md: `emo optimize --true-optimum --json` of every shared
# trace (Kineto traces with --gpu A100-SXM4-80GB, nsys traces on their own GPU, seed 1) at +5 %, and
# at +3 % for hta_v100_ns_resolution and hta_training_16rank_rank0, one JSON file per case, then a
# Markdown table of packs, pack-clock profiles, savings (EMO, best static clock, true optimum), EMO's
# gap and CBC's time. With a third argument, only the traces whose names contain it.
#   scripts/true-optimum-table.sh BUILD_DIR OUT_DIR
# Data: ../shared/data (override EMO_DATA_DIR). Every figure is simulated.
set -euo pipefail
build=${1:?usage: true-optimum-table.sh BUILD_DIR OUT_DIR}
out=${2:?usage: true-optimum-table.sh BUILD_DIR OUT_DIR}
data=${EMO_DATA_DIR:-$(dirname "$0")/../../shared/data}
mkdir -p "$out"
run() {  # run TRACE SLOWDOWN
  local t=$1 s=$2 n
  n=$(basename "$t"); n=${n%%.*}; n="$n@$s"
  local gpu=(--gpu A100-SXM4-80GB); [[ $t == *.sqlite ]] && gpu=()
  if "$build/emo" optimize "$t" "${gpu[@]}" --max-slowdown "$s" --seed 1 --true-optimum --json "$out/$n.json" \
      >/dev/null 2>"$out/$n.err"; then
    rm -f "$out/$n.err"; echo "ok: $n" >&2
  else
    echo "failed (exit $?): $n: $(head -1 "$out/$n.err")" >&2
  fi
}
only=${3:-}
for t in "$data"/kineto/*.json.gz "$data"/nsys/*.sqlite; do
  [[ -n $only && $(basename "$t") != *"$only"* ]] && continue
  run "$t" 0.05
  case $(basename "$t") in hta_v100_ns_resolution.*|hta_training_16rank_rank0.*) run "$t" 0.03 ;; esac
done
python3 - "$out" <<'PY'
import json, pathlib, sys
print("| trace | target | packs | profiles (per pack) | EMO savings % | static savings % | true-optimum savings % | EMO gap % | oracle slowdown % | CBC status | CBC s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    r = json.load(open(f)); t = r["true_optimum"]; name, s = f.stem.split("@")
    prof = r["profiling"]["pack_clock_profiles"]; prof = f"{prof} ({prof / r['packs']:.1f})"
    if not t["computed"]:
        print(f"| {name} | +{float(s)*100:.0f} % | {r['packs']} | {prof} | {100*r['savings']:.2f} | {100*r['static_savings']:.2f} | not computed ({t['not_computed']}) | | | | |")
        continue
    miss = "" if t["met_target"] else " (misses)"
    print(f"| {name} | +{float(s)*100:.0f} % | {r['packs']} | {prof} | {100*r['savings']:.2f} | {100*r['static_savings']:.2f} | "
          f"{100*t['savings']:.2f} | {100*t['gap']:+.2f} | {100*t['slowdown']:.2f}{miss} | {t['solver_status']} | {t['seconds']:.1f} |")
PY
