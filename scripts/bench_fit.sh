#!/usr/bin/env bash
# The fit benchmark for docs/performance.md: a request log of over a million requests from the
# built-in world (one `wait` run, the breaker kept from going DEAD so the run does not stall),
# then `simbench fit` on it, its wall time and peak memory (GNU time when installed), without and
# with the world as --client (which weighs its cycle and storm timing against the log too).
#   scripts/bench_fit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/simbench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" run --algorithms wait --seeds 1 --set jobs=170000 --set horizon_s=10000000 \
  --set breaker.dead_after=1000000 --request-log "$tmp/big.jsonl" --quiet > /dev/null
echo "log: $(wc -l < "$tmp/big.jsonl") requests, $(du -m "$tmp/big.jsonl" | cut -f1) MB"
fit() {
  local what=$1
  shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "$what: %e s wall, %M KB peak resident" "$bin" fit "$tmp/big.jsonl" -o "$tmp/big.toml" --quiet "$@"
  else
    start=$(date +%s.%N)
    "$bin" fit "$tmp/big.jsonl" -o "$tmp/big.toml" --quiet "$@"
    echo "$what: $(echo "$(date +%s.%N) - $start" | bc) s wall"
  fi
}
fit "fit"
fit "fit --client" --client scenarios/bursty.toml
