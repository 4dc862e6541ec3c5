#!/usr/bin/env bash
# A multi-node sweep on a Slurm cluster: one training job and one all-reduce job per node count,
# then a job that collects every result into one report (after all of them succeed).
#   bench/slurm/submit.sh --nodes 1,2,4,8 --out $PWD/sweep               # submit
#   bench/slurm/submit.sh --nodes 1,2,4,8 --out $PWD/sweep --dry-run     # print the sbatch lines
# Extra environment (MODEL, MICRO_BATCH, SEQ, GLOBAL_BATCH, STEPS, LAUNCH, COSTBENCH) is passed to
# the jobs; see train_sweep.sbatch. --instance TYPE prices the runs (data/prices.csv).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nodes=1,2,4 out= dry=0 instance=
while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) nodes=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --instance) instance=$2; shift 2 ;;
        --dry-run) dry=1; shift ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) echo "error: bench/slurm/submit.sh: unknown flag '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || { echo "error: bench/slurm/submit.sh: flag '--out DIR' is required" >&2; exit 2; }
case "$nodes" in (*[!0-9,]*|'') echo "error: flag '--nodes': expected a list like 1,2,4, got '$nodes'" >&2; exit 2 ;; esac
IFS=, read -r -a nl <<< "$nodes"
sub() { # prints the job id (a placeholder in a dry run)
    if [ "$dry" = 1 ]; then printf 'sbatch --parsable %s\n' "$*" >&2; echo "JOB$RANDOM"; else sbatch --parsable "$@"; fi
}
ids=()
for n in "${nl[@]}"; do
    ids+=("$(sub --nodes "$n" --export=ALL,OUT="$out" "$here/train_sweep.sbatch")")
    [ "$n" -ge 2 ] && ids+=("$(sub --nodes "$n" --export=ALL,OUT="$out" "$here/allreduce.sbatch")")
done
dep=$(IFS=:; echo "${ids[*]}")
sub --nodes 1 --dependency=afterok:"$dep" --export=ALL,OUT="$out",INSTANCE="$instance" "$here/collect.sbatch" > /dev/null
[ "$dry" = 1 ] && echo "(dry run: nothing submitted)" >&2 || true
