#!/usr/bin/env bash
# Whether two builds of simbench give the same results: for every shipped world, the JSON of
# `run` with its default algorithms at 2 seeds on the native and the reference random numbers,
# `quota_aware` alone at 3 seeds, and the 100,000-job bursty `wait` run, each compared with wall
# times removed (the only field allowed to differ). An engine change that is meant to be only
# faster must pass this before it is committed (docs/performance.md).
#   scripts/same_outputs.sh OLD_BINARY NEW_BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 2 ]; then
  echo "usage: scripts/same_outputs.sh OLD_BINARY NEW_BINARY" >&2
  exit 2
fi
old=$1 new=$2
# The JSON without its wall times, keys sorted.
strip() {
  python3 -c '
import json, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k != "wall_s"}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
print(json.dumps(strip(json.load(sys.stdin)), sort_keys=True))'
}
differ=0
same() {
  local what=$1; shift
  if [ "$("$old" "$@" | strip | md5sum)" != "$("$new" "$@" | strip | md5sum)" ]; then
    echo "DIFFERENT: $what"
    differ=1
  fi
}
for world in scenarios/*.toml; do
  for rng in native reference; do
    same "$world --rng $rng" run "$world" --seeds 2 --rng "$rng" --quiet --json -
  done
  same "$world quota_aware" run "$world" --algorithms quota_aware --seeds 3 --quiet --json -
done
same "bursty wait, 100,000 jobs" run --algorithms wait --seeds 1 --jobs 100000 \
  --set horizon_s=1e12 --set breaker.dead_after=1000000 --quiet --json -
if [ "$differ" = 0 ]; then
  echo "same outputs: every shipped world (native and reference, 2 seeds; quota_aware, 3 seeds) and the 100,000-job run"
fi
exit "$differ"
