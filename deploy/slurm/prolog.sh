#!/usr/bin/env bash
# slurm.conf: Prolog=/usr/local/lib/emo/slurm/prolog.sh (as root on each node of a job, before it
# starts): gives the job's GPUs to its user in the clock service's jobs_dir (emo_job_hook.sh).
exec "$(dirname "$(readlink -f "$0")")/emo_job_hook.sh" prolog
