#!/usr/bin/env python3
"""The scale work's two speed targets, measured side by side for one or more builds.

    scripts/speed_targets.py [--runs 40] [--rate-runs 20] BIN [BIN ...]

1. The reference (pyattacker 0.3.3's `pyattacker bench --quiet --json`), timed once; it is
   installed on first use into a throwaway virtual environment (REFERENCE_VENV, default
   $TMPDIR/pyattacker-reference), as scripts/bench.sh does.
2. Each build's default comparison (the reference's five strategies, 3 seeds, `--json`),
   RUNS times, the builds interleaved so that the machine's slow and fast minutes fall on all
   of them alike; wall time from this script's clock (fork and exec included).
3. The reference again: the ratio is given against both of its times.
4. Each build's bursty `wait` run of 100,000 jobs on one thread (every job run: unbounded
   horizon, a breaker that cannot retire an endpoint for good), RATE_RUNS times interleaved;
   requests per second from each run's own `requests` and `wall_s`.

Targets: the default comparison at least 1000 times faster than the reference, and at least
10 M simulated requests per second on one core. Medians are the figures to quote; the machine
is shared, so single runs move by up to a factor of two.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

FIVE = "immediate,wait,backoff,sticky,quota_aware"
LONG_RUN = [
    "--algorithms", "wait", "--seeds", "1", "--threads", "1", "--jobs", "100000",
    "--set", "horizon_s=1e12", "--set", "breaker.dead_after=1000000", "--quiet", "--json", "-",
]


def reference_bin():
    venv = os.environ.get("REFERENCE_VENV") or os.path.join(
        tempfile.gettempdir(), "pyattacker-reference")
    exe = os.path.join(venv, "bin", "pyattacker")
    if not os.access(exe, os.X_OK):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "pyattacker==0.3.3"],
                       check=True)
    return exe


def wall(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--rate-runs", type=int, default=20)
    parser.add_argument("bins", nargs="+", metavar="BIN")
    args = parser.parse_args()
    ref = reference_bin()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        subprocess.run([ref, "bench", "--list"], check=True, stdout=subprocess.DEVNULL)
        before = wall([ref, "bench", "--quiet", "--json", out])
        print(f"reference: {before:.2f} s", flush=True)
        times = {b: [] for b in args.bins}
        for _ in range(args.runs):
            for b in args.bins:
                times[b].append(wall([b, "run", "--algorithms", FIVE, "--quiet", "--json", out]))
        after = wall([ref, "bench", "--quiet", "--json", out])
        print(f"reference again: {after:.2f} s", flush=True)
        rates = {b: [] for b in args.bins}
        for _ in range(args.rate_runs):
            for b in args.bins:
                text = subprocess.run([b, "run", *LONG_RUN], check=True,
                                      capture_output=True).stdout
                m = json.loads(text)["runs"][0]["metrics"]
                rates[b].append(m["requests"] / m["wall_s"] / 1e6)
    low, high = sorted([before, after])
    print(f"\ndefault comparison with --json, {args.runs} interleaved runs; "
          f"bursty wait 100,000 jobs, one thread, {args.rate_runs} interleaved runs")
    for b in args.bins:
        med = statistics.median(times[b])
        rate = statistics.median(rates[b])
        print(f"{b}: median {med * 1000:.2f} ms (min {min(times[b]) * 1000:.2f}), "
              f"{low / med:.0f}-{high / med:.0f}x the reference (target >= 1000x); "
              f"{rate:.2f} M requests/s (min {min(rates[b]):.2f}, max {max(rates[b]):.2f}; "
              f"target >= 10)")


if __name__ == "__main__":
    main()
