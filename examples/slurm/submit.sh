#!/usr/bin/env bash
# Submit a simbench grid sweep to Slurm: a job array of TASKS shards, then the merge as a job
# that depends on the whole array (afterok), so the report appears when the last shard ends.
#
#   SIMBENCH_OUT=runs/router TASKS=16 examples/slurm/submit.sh \
#       scenarios/llm_two_vendors.toml scenarios/multi_vendor.toml \
#       --grid retry.max_attempts=3,5,8 --grid concurrency=8,16,32 --seeds 20
#
# Environment: TASKS (array size) [8], SIMBENCH (the binary) [simbench on PATH],
# SIMBENCH_OUT (the directory for parts, logs and the report) [simbench-grid], and any sbatch
# input variable (SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_TIMELIMIT, …) for the site's rules.
# Prints the two job ids: the array's, then the merge's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || { echo "usage: submit.sh WORLD.toml… --grid KEY=V1,V2 [--grid …] [--seeds N] [sweep flags]" >&2; exit 2; }
tasks=${TASKS:-8}
export SIMBENCH=${SIMBENCH:-simbench}
export SIMBENCH_OUT=${SIMBENCH_OUT:-simbench-grid}
# Check the worlds, axes and algorithms here, before anything is queued: a typo then fails in a
# second instead of in every task of the array.
plan=$("$SIMBENCH" sweep "$@" --shard "1/$tasks" --dry-run) || exit
printf '%s\n' "$plan" | sed 's/^/submit.sh: /' >&2
mkdir -p "$SIMBENCH_OUT/parts" "$SIMBENCH_OUT/logs"
# A part left from an earlier submission would be merged with this one's (and refused, or
# worse, fill a shard that failed): start from an empty directory.
rm -f "$SIMBENCH_OUT"/parts/part-*.json "$SIMBENCH_OUT"/grid.json "$SIMBENCH_OUT"/grid.csv
array=$(sbatch --parsable --array="1-$tasks" \
    --output="$SIMBENCH_OUT/logs/shard-%a.out" \
    "$here/sweep.sbatch" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
    --output="$SIMBENCH_OUT/logs/merge.out" \
    "$here/merge.sbatch")
merge=${merge%%;*}
echo "$array $merge"
echo "submit.sh: job array $array ($tasks shards) and merge job $merge; the report will be $SIMBENCH_OUT/grid.json" >&2
