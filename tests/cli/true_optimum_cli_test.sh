#!/usr/bin/env bash
# `emo optimize --true-optimum` (docs/optimize.md, "True optimum") on small shared traces. Checks,
# each derived from what the oracle is, not from an earlier run's figures:
#  - the JSON fields exist, every figure is labelled simulated, packs = the run's packs, CBC
#    proved its plan optimal, and savings, slowdown and gap are the ratios of the measured
#    energies and times (recomputed here);
#  - the oracle's plan holds the measured target (met_target, and time_ns <= floor(baseline x
#    (1 + max_slowdown)));
#  - no worse than one static clock: every pack at one option clock is one of the oracle's
#    choices, so its measured energy <= the static oracle's x 1.002 (0.2 %: the pack graph's one
#    factor per pack against the device's per-op truth);
#  - exact against EMO's plan: EMO's plan scored with the true costs costs at least the oracle's
#    predicted energy whenever its true makespan fits the oracle's model target (+1 us of per-op
#    rounding, as the optimiser allows);
#  - the text output has the oracle's row, labelled [SIMULATED]; a run without --true-optimum has
#    no true_optimum; --device nvml is refused with one line.
# Usage: true_optimum_cli_test.sh PATH/TO/emo
set -u
EMO=${1:?usage: true_optimum_cli_test.sh EMO_BINARY}
source "$(dirname "$0")/check_lib.sh"  # ok, bad, expect_error, require_data, require_tool, DATA
require_tool python3
cases=("$DATA/kineto/hta_nccl_allreduce_rank0.json.gz 0.05" "$DATA/kineto/kineto_resnet50_2021.json.gz 0.05")
for c in "${cases[@]}"; do require_data "${c% *}"; done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

for c in "${cases[@]}"; do
  t=${c% *} s=${c#* } name=$(basename "${c% *}")
  if ! "$EMO" optimize "$t" --gpu A100-SXM4-80GB --max-slowdown "$s" --true-optimum --json "$tmp/r.json" >"$tmp/r.txt" 2>"$tmp/err"; then
    bad "$name: exit $? ($(head -1 "$tmp/err"))"; continue
  fi
  if out=$(python3 - "$tmp/r.json" "$s" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1])); s = float(sys.argv[2]); t = r["true_optimum"]; errs = []
def check(cond, what):
    if not cond: errs.append(what)
for k in ["computed", "packs", "time_ns", "energy_j", "savings", "slowdown", "gap", "met_target", "solver_status",
          "solver_gap", "seconds", "solves", "runs", "model_target_ns", "predicted_time_ns", "predicted_energy_j",
          "emo_true_time_ns", "emo_true_energy_j", "pack_clocks_mhz", "simulated"]:
    check(k in t, f"field {k} missing")
if errs: print("; ".join(errs)); sys.exit(1)
b, st, emo = r["baseline"], r["static_best"], r["emo"]
check(t["computed"] and t["simulated"] and r["simulated"], "not computed or not labelled simulated")
check(t["packs"] == r["packs"], f"packs {t['packs']} != {r['packs']}")
check(t["solver_status"] == "optimal" and t["solver_gap"] <= 1e-6, f"CBC {t['solver_status']} gap {t['solver_gap']}")
check(abs(t["gap"] - (emo["energy_j"] / t["energy_j"] - 1)) < 1e-12, "gap is not EMO / oracle - 1")
check(abs(t["savings"] - (1 - t["energy_j"] / b["energy_j"])) < 1e-12, "savings is not 1 - oracle / baseline")
check(abs(t["slowdown"] - (t["time_ns"] / b["time_ns"] - 1)) < 1e-12, "slowdown is not oracle / baseline - 1")
target = math.floor(b["time_ns"] * (1 + s))
check(t["met_target"] and t["time_ns"] <= target, f"oracle {t['time_ns']} ns misses the target {target} ns")
check(t["energy_j"] <= st["energy_j"] * 1.002, f"oracle {t['energy_j']} J > static best {st['energy_j']} J x 1.002")
check(t["predicted_time_ns"] <= t["model_target_ns"] + 1000, "oracle plan over its model target")
if t["emo_true_time_ns"] <= t["model_target_ns"] + 1000:
    check(t["predicted_energy_j"] <= t["emo_true_energy_j"] * (1 + 1e-9),
          f"EMO's plan with true costs {t['emo_true_energy_j']} J < the optimum {t['predicted_energy_j']} J")
print("; ".join(errs) if errs else
      f"packs {t['packs']}, oracle {100*t['savings']:.2f} % saved, EMO {100*r['savings']:.2f} %, gap {100*t['gap']:+.2f} %, "
      f"CBC {t['seconds']:.1f} s, EMO's plan with true costs {t['emo_true_energy_j']:.3f} J vs {t['predicted_energy_j']:.3f} J")
sys.exit(1 if errs else 0)
PY
  ); then ok "$name: $out"; else bad "$name: $out"; fi
  if grep -q "true optimum (oracle).*\[SIMULATED\]" "$tmp/r.txt" && grep -q "EMO's gap to it" "$tmp/r.txt"; then ok "$name: text row"
  else bad "$name: no [SIMULATED] true-optimum row in the text output"; fi
done

t=$DATA/kineto/hta_nccl_allreduce_rank0.json.gz
if "$EMO" optimize "$t" --gpu A100-SXM4-80GB --max-slowdown 0.05 --json - 2>/dev/null | python3 -c \
    'import json, sys; sys.exit(0 if "true_optimum" not in json.load(sys.stdin) else 1)'; then ok "default run: no true_optimum"
else bad "default run: true_optimum present (or the run failed)"; fi
expect_error "--device nvml refused" "--true-optimum" \
  "$EMO" optimize "$t" --max-slowdown 0.05 --device nvml --true-optimum -- true

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
