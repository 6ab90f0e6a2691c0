#!/usr/bin/env python3
"""How often the simulator issue's 10-seed criterion holds for two samples of one distribution.

usage: scripts/fidelity_odds.py REFERENCE.json [OTHER.json] [--draws N]

The criterion (docs/fidelity.md §2): for each headline metric, the median of 10 runs lies
inside the reference's 10-run [min, max] and within 12 % of the reference's 10-run median.

REFERENCE.json and OTHER.json are `--json` outputs over many seeds. Each draw takes 10 finished
runs of an algorithm from REFERENCE as "the reference's sample" and 10 other finished runs —
from REFERENCE again when OTHER is absent (the reference judged against itself), else from
OTHER — and checks every metric. Printed: per algorithm, the share of draws in which all 8
metrics pass, and per metric the share in which that metric passes; then the share of draws in
which every cell of every algorithm passes when each side's 10 seeds are shared by all
algorithms, as in one `bench --seeds 10` (seed sets with an unfinished run are drawn again: the
reference's bench aborts on a stall). Draws are seeded, so the output is reproducible.
"""
import json
import random
import statistics
import sys

METRICS = ["jobs_done", "throughput_rps", "refusal_rate", "error_rate",
           "attempt_inflation", "utilization", "request_latency_p50_ms", "endpoint_spread"]
SAMPLE = 10
TOLERANCE = 0.12


def finished(report):
    by_algorithm = {}
    for run in report["runs"]:
        if run.get("metrics") is not None:
            by_algorithm.setdefault(run["algorithm"], []).append(run["metrics"])
    return by_algorithm


def passes(reference, other, metric):
    ref = [r[metric] for r in reference]
    med_ref = statistics.median(ref)
    med_other = statistics.median(r[metric] for r in other)
    inside = min(ref) <= med_other <= max(ref)
    if med_ref == 0:
        close = med_other == 0
    else:
        close = abs(med_other - med_ref) / abs(med_ref) <= TOLERANCE
    return inside and close


def two_samples(rng, pool, other_pool):
    """10 items from `pool` and 10 from `other_pool`, or 10 other items of `pool` when None."""
    if other_pool is None:
        picked = rng.sample(pool, 2 * SAMPLE)
        return picked[:SAMPLE], picked[SAMPLE:]
    return rng.sample(pool, SAMPLE), rng.sample(other_pool, SAMPLE)


def by_seed(report):
    table = {}
    for run in report["runs"]:
        table.setdefault(run["seed"], {})[run["algorithm"]] = run.get("metrics")
    return table


def complete_seeds(table, algorithms):
    return [s for s, runs in table.items()
            if all(runs.get(a) is not None for a in algorithms)]


def joint(reference_report, other_report, draws, rng):
    """Share of draws in which all cells of all algorithms pass, seeds shared across algorithms."""
    ref_table = by_seed(reference_report)
    algorithms = sorted({r["algorithm"] for r in reference_report["runs"]})
    ref_seeds = complete_seeds(ref_table, algorithms)
    if other_report is None:
        other_table, other_seeds = ref_table, None
    else:
        other_table = by_seed(other_report)
        other_seeds = complete_seeds(other_table, algorithms)
    passed = 0
    for _ in range(draws):
        a, b = two_samples(rng, ref_seeds, other_seeds)
        passed += all(
            passes([ref_table[s][alg] for s in a], [other_table[s][alg] for s in b], m)
            for alg in algorithms for m in METRICS)
    return len(algorithms), passed / draws


def main(argv):
    draws = 10_000
    if "--draws" in argv:
        i = argv.index("--draws")
        draws = int(argv[i + 1])
        del argv[i:i + 2]
    reference = finished(json.load(open(argv[0])))
    other = finished(json.load(open(argv[1]))) if len(argv) > 1 else None
    rng = random.Random(20260917)
    print(f"| algorithm | runs | all 8 pass | " + " | ".join(METRICS) + " |")
    print("|---|---|---|" + "---|" * len(METRICS))
    for algorithm, runs in reference.items():
        pool_other = other.get(algorithm) if other is not None else None
        if other is not None and not pool_other:
            continue
        all_pass, per_metric = 0, {m: 0 for m in METRICS}
        for _ in range(draws):
            ref, oth = two_samples(rng, runs, pool_other)
            results = [passes(ref, oth, m) for m in METRICS]
            all_pass += all(results)
            for m, ok in zip(METRICS, results):
                per_metric[m] += ok
        n = f"{len(runs)}" + (f" / {len(pool_other)}" if pool_other else "")
        cells = " | ".join(f"{per_metric[m] / draws:.0%}" for m in METRICS)
        print(f"| {algorithm} | {n} | {all_pass / draws:.1%} | {cells} |")
    reference_report = json.load(open(argv[0]))
    other_report = json.load(open(argv[1])) if len(argv) > 1 else None
    count, share = joint(reference_report, other_report, draws, rng)
    print(f"\nall {count * len(METRICS)} cells of the {count} algorithms at once (shared seeds): "
          f"{share:.2%} of {draws} draws")


if __name__ == "__main__":
    main(sys.argv[1:])
