#!/usr/bin/env python3
"""Side-by-side table of the reference's and simbench's per-seed metrics (docs/fidelity.md).

usage: scripts/fidelity_table.py REFERENCE.json SIMBENCH.json
Both files are `--json` outputs over the same seeds. For each algorithm and headline metric it
prints the reference's median [min–max], simbench's median, the relative gap of the medians,
whether simbench's median lies inside the reference's range, and a two-sided Mann–Whitney p.
"""
import json
import math
import statistics
import sys

METRICS = ["jobs_done", "throughput_rps", "refusal_rate", "error_rate",
           "attempt_inflation", "utilization", "request_latency_p50_ms", "endpoint_spread"]


def column(report, algorithm, metric):
    return [r["metrics"][metric] for r in report["runs"]
            if r["algorithm"] == algorithm and r.get("metrics") is not None]


def mann_whitney_p(a, b):
    pooled = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    ranks, i = [0.0] * len(pooled), 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    n1, n2 = len(a), len(b)
    u = sum(r for r, (_, g) in zip(ranks, pooled) if g == 0) - n1 * (n1 + 1) / 2
    z = (u - n1 * n2 / 2) / math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    return math.erfc(abs(z) / math.sqrt(2))


def main(reference_path, simbench_path):
    reference = json.load(open(reference_path))
    ours = json.load(open(simbench_path))
    algorithms = list(dict.fromkeys(r["algorithm"] for r in reference["runs"]))
    print("| algorithm | metric | reference median [min – max] | simbench median | gap | in range | within 12 % | Mann–Whitney p |")
    print("|---|---|---|---|---|---|---|---|")
    for algorithm in algorithms:
        for metric in METRICS:
            theirs, mine = column(reference, algorithm, metric), column(ours, algorithm, metric)
            if not mine:
                continue
            rm, om = statistics.median(theirs), statistics.median(mine)
            gap = abs(om - rm) / abs(rm) if rm else abs(om)
            inside = min(theirs) <= om <= max(theirs)
            print(f"| {algorithm} | {metric} | {rm:.4g} [{min(theirs):.4g} – {max(theirs):.4g}] | "
                  f"{om:.4g} | {100 * gap:.1f} % | {'yes' if inside else '**no**'} | "
                  f"{'yes' if gap <= 0.12 else '**no**'} | {mann_whitney_p(theirs, mine):.2f} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
