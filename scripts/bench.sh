#!/usr/bin/env bash
# Whole-command timings for docs/performance.md: simbench against the reference on the same
# machine in one session (ratios, not absolute times), the 1,000,000-job run's time and peak
# memory, requests per second on one core, seeds in parallel, and how cost grows with jobs,
# workers and endpoints. Uses hyperfine when installed, else repeated /usr/bin/time.
#   scripts/bench.sh            # everything (the reference part takes about a minute)
#   SKIP_REFERENCE=1 scripts/bench.sh
#   SIMBENCH_BIN=target/pgo/simbench scripts/bench.sh   # another build, e.g. scripts/build-pgo.sh's
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${SIMBENCH_BIN:-}" ]; then
  bin=$SIMBENCH_BIN
else
  cargo build --release --quiet
  bin=target/release/simbench
fi
echo "binary: $bin"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The reference, pyattacker 0.3.3's `pyattacker bench`, installed on first use into a throwaway
# virtual environment (REFERENCE_VENV to choose where); it is a yardstick, never a dependency.
venv=${REFERENCE_VENV:-${TMPDIR:-/tmp}/pyattacker-reference}
reference() {
  if [ ! -x "$venv/bin/pyattacker" ]; then
    python3 -m venv "$venv" >/dev/null
    "$venv/bin/pip" install -q "pyattacker==0.3.3" >&2
  fi
  "$venv/bin/pyattacker" bench "$@"
}

# Best of N wall-clock seconds of a command (stdout and stderr discarded).
best_of() {
  local n=$1; shift
  local best=""
  for _ in $(seq "$n"); do
    local t
    # Nanosecond clock around the command: /usr/bin/time's 10 ms would be a third of a run.
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || true
    end=$(date +%s.%N)
    t=$(awk "BEGIN{printf \"%.4f\", $end - $start}")
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
  done
  echo "$best"
}

# A variant of the bursty world: jobs, workers, endpoint copies; unbounded horizon and a breaker
# that cannot retire an endpoint for good, so every job runs and the cost is the engine's.
world() {
  python3 - "$1" "$2" "$3" > "$4" <<'PY'
import re, sys
jobs, workers, copies = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
text = open("scenarios/bursty.toml").read()
head, _, tail = text.partition("[[endpoints]]")
endpoints = "[[endpoints]]" + tail
head = re.sub(r"(?m)^jobs = .*$", f"jobs = {jobs}", head)
head = re.sub(r"(?m)^concurrency = .*$", f"concurrency = {workers}", head)
head = re.sub(r"(?m)^horizon_s = .*$", "horizon_s = 1e12", head)
head = re.sub(r"(?m)^dead_after = .*$", "dead_after = 1000000", head)
head = re.sub(r"(?m)^#:schema.*$", "", head)
body = "".join(re.sub(r'id = "([^"]+)"', rf'id = "\1-{k}"', endpoints) for k in range(copies))
print(head + body)
PY
}

# Simulated requests per wall second of one single-threaded run, from the run's own JSON.
rate() {
  "$bin" run "$1" --algorithms wait --seeds 1 --threads 1 --quiet --json - | python3 -c '
import json, sys
run = json.load(sys.stdin)["runs"][0]
m = run["metrics"]
n, s = m["requests"], m["wall_s"]
print(f"{int(n)} requests in {s:.3f} s = {n / s / 1e6:.2f} M requests/s")'
}

echo "## machine"
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo
echo "## default comparison (5 algorithms x 3 seeds x 3000 jobs), whole commands"
# The reference's five strategies: the registry has more now, and the ratio must compare the
# same work.
five=immediate,wait,backoff,sticky,quota_aware
ours=$(best_of 5 "$bin" run --algorithms "$five" --quiet --json "$tmp/ours.json")
echo "simbench run: best of 5 = ${ours} s"
if [ -z "${SKIP_REFERENCE:-}" ]; then
  reference --list >/dev/null  # install outside the timing
  theirs=$(best_of 2 reference --quiet --json "$tmp/theirs.json")
  echo "reference bench: best of 2 = ${theirs} s"
  awk "BEGIN{printf \"ratio: simbench is %.0fx faster\n\", $theirs / ($ours > 0.001 ? $ours : 0.001)}"
fi
echo
echo "## one core, simulated requests per second (wait, 100,000 jobs)"
world 100000 12 1 "$tmp/w100k.toml"
rate "$tmp/w100k.toml"
echo
echo "## 1,000,000 jobs (wait, every job run), time and peak memory"
world 1000000 12 1 "$tmp/w1m.toml"
/usr/bin/time -f "%e s wall, %M KB peak RSS" "$bin" run "$tmp/w1m.toml" --algorithms wait --seeds 1 --quiet >/dev/null
rate "$tmp/w1m.toml"
echo
echo "## seeds in parallel: bursty, 5 algorithms x 40 seeds"
serial=$(best_of 3 "$bin" run --algorithms "$five" --seeds 40 --threads 1 --quiet)
parallel=$(best_of 3 "$bin" run --algorithms "$five" --seeds 40 --threads 2 --quiet)
awk "BEGIN{printf \"1 thread %.3f s, 2 threads %.3f s: %.2fx the serial time\n\", $serial, $parallel, $parallel / $serial}"
"$bin" run --algorithms "$five" --seeds 40 --threads 1 --quiet --json "$tmp/s1.json"
"$bin" run --algorithms "$five" --seeds 40 --threads 2 --quiet --json "$tmp/s2.json"
strip_wall() {
  python3 -c '
import json, sys
def blank(v):
    if isinstance(v, dict):
        return {k: (None if k == "wall_s" else blank(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [blank(x) for x in v]
    return v
print(json.dumps(blank(json.load(open(sys.argv[1]))), indent=1))' "$1"
}
if diff <(strip_wall "$tmp/s1.json") <(strip_wall "$tmp/s2.json") >/dev/null; then
  echo "outputs identical apart from wall_s"
else
  echo "OUTPUTS DIFFER"
fi
echo
echo "## cost against size (wait, one thread)"
for jobs in 10000 100000 1000000; do
  world "$jobs" 12 1 "$tmp/j.toml"; printf "jobs %-8s " "$jobs"; rate "$tmp/j.toml"
done
for workers in 12 48 192; do
  world 100000 "$workers" 1 "$tmp/c.toml"; printf "workers %-5s " "$workers"; rate "$tmp/c.toml"
done
for copies in 1 4 16; do
  world 100000 "$((12 * copies))" "$copies" "$tmp/e.toml"; printf "endpoints %-3s " "$((3 * copies))"; rate "$tmp/e.toml"
done
