#!/usr/bin/env bash
# A real Slurm cluster of one node, and the example job array on it.
#
# Installs Debian's slurm-wlm and munge when missing, generates a munge key, starts munged,
# slurmctld and slurmd (as root, state and sockets in a temporary directory, the node's real CPU
# count and memory as `slurmd -C` reads them), submits examples/slurm/submit.sh over a sharded
# grid sweep of two worlds, waits for the dependent merge job, and checks that the merged report
# equals the same sweep run whole on this machine (byte for byte but for wall times). Stops the
# daemons it started by their process ids, whatever happens.
#
#   tests/slurm/cluster.sh target/release/simbench
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:?usage: tests/slurm/cluster.sh PATH/TO/simbench}")
tasks=${TASKS:-4}

say() { echo "slurm test: $*" >&2; }
missing=()
for tool in munged slurmctld slurmd sbatch; do command -v "$tool" >/dev/null || missing=(slurm-wlm munge); done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

dir=$(mktemp -d /tmp/simbench-slurm.XXXXXX)
chmod 700 "$dir"
pids=()
stop() {
    local rc=$?
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ $rc -ne 0 ]; then
        for log in "$dir"/*.log "$dir"/*.out "$dir"/grid/logs/*.out; do
            [ -f "$log" ] && { echo "--- $log"; tail -n 30 "$log"; } >&2
        done
    fi
    rm -rf "$dir"
    exit $rc
}
trap stop EXIT

# munge: a fresh key, its own socket, in the foreground so that $! is the daemon.
dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge.key"
munged --foreground --force --key-file="$dir/munge.key" --socket="$dir/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" >"$dir/munged.out" 2>&1 &
pids+=($!)

# The node name slurmd gives itself: the host name up to its first dot.
host=$(uname -n)
host=${host%%.*}
node=$(slurmd -C | head -n 1 | sed "s/^NodeName=[^ ]*/NodeName=$host NodeAddr=127.0.0.1/")
port=$((20000 + RANDOM % 20000))
mkdir -p "$dir/state" "$dir/spool"
cat > "$dir/slurm.conf" <<CONF
ClusterName=simbench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
$node
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
say "node: $node"

for _ in $(seq 50); do [ -S "$dir/munge.socket" ] && break; sleep 0.1; done
slurmctld -D -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$dir/slurmd.out" 2>&1 &
pids+=($!)

idle=""
for _ in $(seq 120); do
    idle=$(sinfo -h -N -o '%t' 2>/dev/null | head -n 1) || true
    [ "$idle" = idle ] && break
    sleep 0.5
done
[ "$idle" = idle ] || { say "the node did not come up idle (state: ${idle:-none})"; exit 1; }
say "node $host is idle"

# The sweep: two worlds, a 2 × 2 grid, two algorithms, three seeds = 48 cells over the shards.
sweep=(scenarios/bursty.toml scenarios/multi_vendor.toml
    --grid retry.max_attempts=3,6 --grid concurrency=8,16
    --algorithms wait,backoff --seeds 3)

ids=$(SIMBENCH="$bin" SIMBENCH_OUT="$dir/grid" TASKS=$tasks examples/slurm/submit.sh "${sweep[@]}")
read -r array merge <<<"$ids"
say "submitted job array $array and merge job $merge"
for _ in $(seq 600); do
    [ -z "$(squeue -h -j "$array,$merge" -o '%i' 2>/dev/null)" ] && break
    sleep 0.5
done
[ -z "$(squeue -h -j "$array,$merge" -o '%i' 2>/dev/null)" ] || { say "jobs still queued after 300 s"; squeue >&2; exit 1; }

parts=$(find "$dir/grid/parts" -name 'part-*.json' | wc -l)
[ "$parts" -eq "$tasks" ] || { say "$parts parts for $tasks shards"; exit 1; }
[ -s "$dir/grid/grid.json" ] || { say "the merge job wrote no report"; exit 1; }
say "$tasks shards ran as array tasks; the merge job wrote the report"

"$bin" sweep "${sweep[@]}" --quiet --json "$dir/whole.json" --csv "$dir/whole.csv"
# Wall times are the only bytes allowed to differ: every "wall_s" in the JSON, the CSV's column.
mask() {
    python3 - "$1" <<'PY'
import csv, io, re, sys
text = open(sys.argv[1]).read()
if sys.argv[1].endswith(".json"):
    sys.stdout.write(re.sub(r'"wall_s": *[-0-9.eE+]+', '"wall_s": 0', text))
else:
    rows = list(csv.reader(io.StringIO(text)))
    col = rows[0].index("wall_s")
    for row in rows[1:]:
        row[col] = ""
    csv.writer(sys.stdout, lineterminator="\n").writerows(rows)
PY
}
for ext in json csv; do
    cmp <(mask "$dir/grid/grid.$ext") <(mask "$dir/whole.$ext") || {
        say "the merged $ext differs from the whole sweep's"
        diff <(mask "$dir/grid/grid.$ext") <(mask "$dir/whole.$ext") | head -n 20 >&2
        exit 1
    }
done
say "merged report = whole sweep ($(wc -c < "$dir/whole.json") bytes of JSON, $(($(wc -l < "$dir/whole.csv") - 1)) CSV rows)"
