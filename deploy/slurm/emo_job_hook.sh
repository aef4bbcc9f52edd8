#!/usr/bin/env bash
# The clock service's job files from Slurm (docs/runtime.md, "Slurm"): `emo_job_hook.sh prolog`
# writes JOBS_DIR/<SLURM_JOB_ID> giving the job's GPUs to its user, `emo_job_hook.sh epilog`
# removes it and resets those GPUs' locked clocks. prolog.sh and epilog.sh (slurm.conf's Prolog=
# and Epilog=, run as root by slurmd on each node of the job) call it.
#
# A job file (what `emo serve` reads, src/runtime/clock_service.cpp): one "uid U" line, then one
# "gpu GPU-UUID" line per GPU, the UUIDs as NVML prints them:
#     uid 1000
#     gpu GPU-5a1c0e3b-8f2d-4c6e-9a7b-0d1e2f3a4b5c
# It is written to a temporary name starting with '.' (which the service skips) and renamed, mode
# 0644, root's; JOBS_DIR is made 0755 and refused when it is not a root-owned directory that no
# group or other may write (the service would not believe it either).
#
# From the environment: SLURM_JOB_ID, SLURM_JOB_UID, and the job's GPUs from SLURM_JOB_GPUS (the
# GPU ids Slurm allocated, taken as NVML indices: true with gres.conf AutoDetect=nvml, and with
# File=/dev/nvidia[0-N] where the minor numbers follow the PCI bus order, as NVML's indices do),
# else CUDA_VISIBLE_DEVICES; either may list GPU UUIDs instead of indices. Indices become UUIDs
# through `emo gpus --json -`.
# Configuration: EMO_SERVE_CONFIG (default /etc/emo/serve.conf; its jobs_dir, default
# /run/emo/jobs) and EMO_BIN (default: emo on PATH, else /usr/local/bin/emo).
#
# Exit status: 0, also when it cannot do its work (a failing prolog drains the node in Slurm): it
# then prints one line "emo prolog: ..." or "emo epilog: ..." on stderr (slurmd's log), and the job
# runs without a job file (the service then allows a GPU only by NVML's process list) or, in the
# epilog, the GPUs it could not reset keep their clocks until `emo reset` or the next lease.
set -uo pipefail
mode=${1:-}
config=${EMO_SERVE_CONFIG:-/etc/emo/serve.conf}
EMO=${EMO_BIN:-$(command -v emo || echo /usr/local/bin/emo)}

fail() { echo "emo $mode: job ${SLURM_JOB_ID:-?}: $*" >&2; exit 0; }

# The service's jobs_dir: the last "jobs_dir = PATH" of the config, else /run/emo/jobs.
jobs_dir() {
  local d=""
  [[ -r "$config" ]] && d=$(sed -n 's/^[[:space:]]*jobs_dir[[:space:]]*=[[:space:]]*\([^#[:space:]]*\).*/\1/p' "$config" | tail -1)
  echo "${d:-/run/emo/jobs}"
}

# gpu_table: "INDEX UUID" per GPU of the job (SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES), in the
# order given; nothing when the job has no GPU. Fails (one line) for a GPU NVML does not list.
gpu_table() {
  local list=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}} json err
  [[ -z "${list//[ ,]/}" ]] && return 0
  command -v python3 >/dev/null || { echo "python3 is needed to read \`emo gpus --json\`"; return 1; }
  err=$(mktemp) || return 1
  json=$("$EMO" gpus --json - 2>"$err") || { echo "$EMO gpus: $(head -1 "$err")"; rm -f "$err"; return 1; }
  rm -f "$err"
  python3 -c '
import json, sys
gpus, rows = json.loads(sys.argv[2])["gpus"], []
for e in [x.strip() for x in sys.argv[1].split(",") if x.strip()]:
    m = [g for g in gpus if (str(g["index"]) == e if e.isdigit() else g.get("uuid", "").lower() == e.lower())]
    if not m:
        sys.exit("GPU {}: not among the {} GPUs NVML sees".format(e, len(gpus)))
    rows.append("{} {}".format(m[0]["index"], m[0]["uuid"]))
print("\n".join(rows))' "$list" "$json" 2>&1
}

# safe_dir DIR: DIR is a real directory, root's, that no group or other may write (made 0755 when missing).
safe_dir() {
  local d=$1
  [[ -e "$d" || -L "$d" ]] || mkdir -p -m 0755 "$d" || return 1
  [[ -d "$d" && ! -L "$d" ]] || { echo "$d is not a directory (or is a symbolic link)"; return 1; }
  [[ $(stat -c %u "$d") == 0 ]] || { echo "$d is owned by uid $(stat -c %u "$d"), not root"; return 1; }
  (( (8#$(stat -c %a "$d") & 8#022) == 0 )) || { echo "$d: its group or others may write to it (mode $(stat -c %a "$d"))"; return 1; }
}

prolog() {
  local dir table why tmp
  [[ "${SLURM_JOB_ID:-}" =~ ^[0-9]+$ ]] || fail "SLURM_JOB_ID '${SLURM_JOB_ID:-}' is not a job id"
  [[ "${SLURM_JOB_UID:-}" =~ ^[0-9]+$ ]] || fail "SLURM_JOB_UID '${SLURM_JOB_UID:-}' is not a uid"
  table=$(gpu_table) || fail "$table"
  [[ -n "$table" ]] || exit 0  # a job without GPUs: nothing to give
  dir=$(jobs_dir)
  why=$(safe_dir "$dir") || fail "refusing the jobs directory: $why"
  tmp=$(mktemp "$dir/.job-$SLURM_JOB_ID.XXXXXX") || fail "cannot write in $dir"
  { echo "uid $SLURM_JOB_UID"; awk '{ print "gpu " $2 }' <<<"$table"; } > "$tmp" && chmod 0644 "$tmp" \
    && mv -f "$tmp" "$dir/$SLURM_JOB_ID" || { rm -f "$tmp"; fail "cannot write $dir/$SLURM_JOB_ID"; }
}

epilog() {
  local dir table index uuid out failed=""
  [[ "${SLURM_JOB_ID:-}" =~ ^[0-9]+$ ]] || fail "SLURM_JOB_ID '${SLURM_JOB_ID:-}' is not a job id"
  dir=$(jobs_dir)
  rm -f "$dir/$SLURM_JOB_ID"  # first: the job's user has no claim on its GPUs any more
  table=$(gpu_table) || fail "$table"
  while read -r index uuid; do
    [[ -n "$index" ]] || continue
    out=$("$EMO" reset --gpu-index "$index" 2>&1) || failed+=" GPU $index ($uuid): ${out//$'\n'/ };"
  done <<<"$table"
  [[ -z "$failed" ]] || fail "could not reset:$failed"
}

case "$mode" in
  prolog) prolog ;;
  epilog) epilog ;;
  *) echo "usage: emo_job_hook.sh prolog|epilog (run by slurmd as root; see docs/runtime.md)" >&2; exit 2 ;;
esac
