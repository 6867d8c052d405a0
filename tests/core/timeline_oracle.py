"""The per-job correlation, kept as the test oracle of the one engine (core/evidence/timeline_frame.py).

Plain Python, one failed job against a list of candidates, O(candidates) each: the reading the engine
must agree with (tests/core/test_timeline_frame.py checks it with hypothesis). Two jobs contend when
they ran at the same time on the same runner pool (they share a specific runner label) and, most
strongly, on the same host. No product module imports this (tests/test_import_graph.py cannot see
tests/, and the package does not ship them).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping

from ci_triage.core.evidence.hosts import host_of, pool_labels
from ci_triage.model import DurationBaseline, Job, OverlappingJob, Run


def same_pool(a: Job, b: Job) -> bool:
    specific_a, specific_b = pool_labels(a), pool_labels(b)
    if specific_a or specific_b:
        return bool(specific_a & specific_b)
    return set(a.labels) == set(b.labels)


def overlap_seconds(a: Job, b: Job) -> float:
    if not (a.started_at and a.completed_at and b.started_at and b.completed_at):
        return 0.0
    start = max(a.started_at, b.started_at)
    end = min(a.completed_at, b.completed_at)
    return max(0.0, (end - start).total_seconds())


def _pr_of(run: Run | None) -> int | None:
    return run.pr_numbers[0] if run and run.pr_numbers else None


def overlapping_jobs(
    failed: Job,
    candidates: Iterable[Job],
    runs: Mapping[int, Run],
    pr_of_run: Mapping[int, int | None] | None = None,
    host_pattern: re.Pattern[str] | None = None,
) -> tuple[OverlappingJob, ...]:
    """Jobs of other runs on the failed job's runner pool that ran while it ran: same host first, then
    the longest overlap.

    `pr_of_run` resolves fork PRs, whose runs carry no pull_requests (matched by head SHA instead).
    """
    failed_host = host_of(failed.runner_name, host_pattern)
    found = []
    for other in candidates:
        if other.run_id == failed.run_id or not same_pool(failed, other):
            continue
        seconds = overlap_seconds(failed, other)
        if seconds <= 0:
            continue
        run = runs.get(other.run_id)
        pr = pr_of_run.get(other.run_id) if pr_of_run and other.run_id in pr_of_run else _pr_of(run)
        found.append(
            OverlappingJob(
                pr=pr,
                branch=run.head_branch if run else other.head_branch,
                run_id=other.run_id,
                job_id=other.id,
                name=other.name,
                runner_name=other.runner_name,
                overlap_s=seconds,
                conclusion=other.conclusion,
                same_host=failed_host is not None and host_of(other.runner_name, host_pattern) == failed_host,
                html_url=other.html_url,
            )
        )
    found.sort(key=lambda o: (not o.same_host, -o.overlap_s, o.job_id))
    return tuple(found)


def later_jobs_passed(
    failed: Job,
    candidates: Iterable[Job],
    runs: Mapping[int, Run],
    window_s: float,
    pr_of_run: Mapping[int, int | None] | None = None,
) -> tuple[OverlappingJob, ...]:
    """Jobs on the same pool that started after the failed job ended (within window_s) and passed."""
    if failed.completed_at is None:
        return ()
    found = []
    for other in candidates:
        if other.run_id == failed.run_id or other.started_at is None or not same_pool(failed, other):
            continue
        gap = (other.started_at - failed.completed_at).total_seconds()
        if 0 <= gap <= window_s and other.conclusion == "success":
            run = runs.get(other.run_id)
            pr = pr_of_run.get(other.run_id) if pr_of_run and other.run_id in pr_of_run else _pr_of(run)
            found.append(
                OverlappingJob(pr, run.head_branch if run else None, other.run_id, other.id, other.name,
                               other.runner_name, 0.0, other.conclusion, False, other.html_url)
            )
    found.sort(key=lambda o: o.job_id)
    return tuple(found)


def duration_baseline(job_name: str, jobs: Iterable[Job]) -> DurationBaseline | None:
    """Median and median absolute deviation of successful runs of a job, by name."""
    durations = [
        job.duration_s for job in jobs if job.name == job_name and job.conclusion == "success" and job.duration_s
    ]
    if not durations:
        return None
    median = statistics.median(durations)
    spread = statistics.median(abs(d - median) for d in durations)
    return DurationBaseline(job_name=job_name, samples=len(durations), median_s=median, spread_s=spread)
