"""How long the report's correlation of a busy window takes through the engine, next to the per-job
oracle (tests/core/timeline_oracle.py, what the report ran before) on the same window, in one process.

Synthetic window: --runs runs of 8 jobs each over two weeks, on one pool of 32 runners (16 hosts,
two runner processes each), 10% of jobs failed; the PR has --failed failed jobs in the middle of it.
Both answers are compared; the ratio is oracle / engine (best of --repeats).

    python benchmarks/report_window.py [--runs N] [--failed N] [--repeats N]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from ci_triage.core.evidence.window import correlate_window  # noqa: E402
from ci_triage.model import Job, Run  # noqa: E402
from tests.core import timeline_oracle as oracle  # noqa: E402

T0 = datetime(2026, 5, 12, tzinfo=UTC)
WINDOW_S = 7200.0


def make_run(run_id: int, pr: int) -> Run:
    return Run(run_id, 1, 1, "NPU", ".github/workflows/npu.yml", "pull_request", "completed", "failure", f"sha{run_id}",
               f"branch-{run_id}", "o/r", (pr,), T0, T0, f"https://example/run/{run_id}")


def make_job(job_id: int, run_id: int, start_s: float, end_s: float, conclusion: str, name: str, runner: str) -> Job:
    return Job(job_id, run_id, 1, "NPU", name, "completed", conclusion, T0, T0 + timedelta(seconds=start_s),
               T0 + timedelta(seconds=end_s), runner, "Default", ("self-hosted", "linux-a2"), "sha", "branch",
               f"https://example/job/{job_id}")


def window(runs: int, failed: int) -> tuple[list[tuple[Run, Job]], list[Job], dict[int, Run], dict[int, int | None]]:
    rng = random.Random(1)
    window_runs, jobs = {}, []
    for run_id in range(runs):
        window_runs[run_id] = make_run(run_id, rng.randrange(1, 200))
        begin = rng.uniform(0, 14 * 86400)
        for k in range(8):
            start = begin + rng.uniform(0, 600)
            jobs.append(make_job(run_id * 10 + k, run_id, start, start + rng.uniform(300, 3600),
                                 "success" if rng.random() > 0.1 else "failure", f"job{k}",
                                 f"node{rng.randrange(16)}-r{rng.randrange(2)}"))
    own = make_run(10**9, 67)
    window_runs[own.id] = own
    own_jobs = [make_job(10**10 + k, own.id, 7 * 86400 + k * 60, 7 * 86400 + 1800 + k * 60, "failure", f"job{k % 8}",
                         f"node{k % 16}-r0") for k in range(failed)]
    jobs += own_jobs
    pr_of_run = {run_id: run.pr_numbers[0] for run_id, run in window_runs.items()}
    return [(own, job) for job in own_jobs], jobs, window_runs, pr_of_run


def per_job(failed, jobs, runs, pr_of_run):
    found = []
    for _, job in failed:
        overlapping = oracle.overlapping_jobs(job, jobs, runs, pr_of_run)
        later = oracle.later_jobs_passed(job, jobs, runs, WINDOW_S, pr_of_run)
        in_flight = tuple(sorted({o.pr for o in overlapping if o.pr is not None and o.pr != 67}))
        found.append((overlapping, in_flight, later, oracle.duration_baseline(job.name, jobs)))
    return found


def best_of(repeats: int, work):
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2500)
    parser.add_argument("--failed", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    failed, jobs, runs, pr_of_run = window(args.runs, args.failed)
    engine_s, evidence = best_of(args.repeats, lambda: correlate_window(failed, jobs, runs, pr_of_run,
                                                                         later_window_s=WINDOW_S))
    oracle_s, expected = best_of(args.repeats, lambda: per_job(failed, jobs, runs, pr_of_run))
    same = [(e.overlapping, e.in_flight_prs, e.later_passed, e.baseline) for e in evidence] == expected
    print(f"window jobs {len(jobs):,}, failed {len(failed)}: engine {engine_s * 1000:.1f} ms, "
          f"per-job oracle {oracle_s * 1000:.1f} ms, ratio {oracle_s / engine_s:.1f}x; answers equal: {same}")


if __name__ == "__main__":
    main()
