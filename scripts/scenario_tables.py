#!/usr/bin/env python3
"""Regenerates the report tables in docs/scenarios.md from real runs.

Each table sits between `<!-- table:NAME -->` and `<!-- /table -->`; NAME is a world in
scenarios/ (optionally `world+label` for a run with extra arguments, listed in RUNS). The
table is the world's markdown report (5 seeds) cut down to the rows listed for it, with the
per-seed min–max lines dropped. Prose numbers are not touched: re-read them after a run.

    scripts/scenario_tables.py          # runs target/release/simbench; build it first
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "simbench"
DOC = ROOT / "docs" / "scenarios.md"

RUNS = {
    "multi_vendor": ([], ["jobs_done", "throughput_rps", "successful_job_latency_p50_ms",
                          "successful_job_latency_p99_ms", "acquire_wait_p99_ms", "utilization",
                          "recovery_s", "goodput_lost_jobs"]),
    "dead_endpoint": ([], ["jobs_done", "jobs_failed", "throughput_rps", "failed_attempt_rate",
                           "error_rate", "successful_job_latency_p99_ms"]),
    "recovery_herd": ([], ["jobs_done", "throughput_rps", "refusal_rate",
                           "successful_job_latency_p99_ms", "recovery_s", "goodput_lost_jobs"]),
    "recovery_herd+no_jitter": (["--set", 'retry.jitter="none"'],
                                ["jobs_done", "throughput_rps", "refusal_rate",
                                 "successful_job_latency_p99_ms", "recovery_s",
                                 "goodput_lost_jobs"]),
    "recovery_herd+retry_after_spread": (["--set", "retry.retry_after_spread=1"],
                                         ["jobs_done", "throughput_rps", "refusal_rate",
                                          "successful_job_latency_p99_ms", "recovery_s",
                                          "goodput_lost_jobs"]),
    "aimd_tuning": (["--algorithms", "wait,retry_after_aware,aimd,aimd_gentle,aimd_fast"],
                    ["jobs_done", "throughput_rps", "refusal_rate",
                     "successful_job_latency_p99_ms", "observed_p99_ms", "queue_share",
                     "recovery_s", "goodput_lost_jobs"]),
    "llm_tpm_tier": ([], ["jobs_done", "jobs_failed", "makespan_s", "output_goodput_tps",
                          "refusals_by_token_limit", "tokens_wasted", "cost",
                          "cost_per_completed_job", "ttft_p99_ms"]),
    "llm_two_vendors": ([], ["jobs_done", "jobs_failed", "makespan_s", "throughput_rps",
                             "refusals_by_token_limit", "error_rate", "tokens_wasted", "cost",
                             "cost_per_completed_job"]),
    "llm_agent_loop": ([], ["jobs_done", "jobs_failed", "makespan_s", "refusals_by_token_limit",
                            "tokens_wasted", "cost", "cost_per_completed_job", "cache_hit_rate",
                            "ttft_p99_ms"]),
    "llm_daily_quota": ([], ["jobs_done", "jobs_failed", "makespan_s", "requests",
                             "refusals_by_daily_limit", "refusals_by_token_limit",
                             "tokens_wasted", "cost"]),
    "cache_reuse": ([], ["throughput_rps", "successful_job_latency_p50_ms",
                         "successful_job_latency_p99_ms", "request_latency_p50_ms",
                         "cache_hit_rate"]),
}


def table(name: str) -> str:
    extra, keep = RUNS[name]
    world = name.split("+")[0]
    with tempfile.TemporaryDirectory() as tmp:
        md = Path(tmp) / "report.md"
        subprocess.run([str(BIN), "run", f"scenarios/{world}.toml", "--seeds", "5", "--quiet",
                        "--markdown", str(md), *extra], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        lines = md.read_text().splitlines()
    out, started = [], False
    for line in lines:
        if line.startswith("| metric"):
            started = True
        if not started:
            continue
        if not line.startswith("|"):
            break
        name_cell = line.split("|")[1].strip().split(" ")[0]
        if line.startswith(("| metric", "|---")) or name_cell in keep:
            out.append(re.sub(r"<br>[^|)]*", "", line))
    return "\n".join(out)


def main() -> int:
    text = DOC.read_text()
    for name in RUNS:
        pattern = re.compile(rf"(<!-- table:{re.escape(name)} -->\n)(?:[^<]*?\n)?(<!-- /table -->)")
        if not pattern.search(text):
            print(f"no marker for {name} in {DOC}", file=sys.stderr)
            return 1
        text = pattern.sub(lambda m: m.group(1) + table(name) + "\n" + m.group(2), text)
    DOC.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
