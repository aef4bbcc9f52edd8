#!/usr/bin/env bash
# slurm.conf: Epilog=/usr/local/lib/emo/slurm/epilog.sh (as root on each node after the job):
# removes the job file and resets the job's GPUs' locked clocks (emo_job_hook.sh).
exec "$(dirname "$(readlink -f "$0")")/emo_job_hook.sh" epilog
