"""How long a fleet-wide correlation of a busy CI takes, next to a numpy argsort of the same starts.

Synthetic week of CI: 20 runner pools x 50 hosts x 2 runners. Each runner runs its jobs one after the
other (1-40 min each, with idle gaps), so a pool has about as many jobs in flight as it has busy runners.
Runs of about 8 jobs start together on one pool; a PR has about 3 runs; 15% of runs are not PR runs;
10% of jobs fail. Times are int64 epoch seconds.

What "correlate" is timed as (best of --repeats, same process as the argsort):
  counts   timeline_counts.count_correlations for ALL failed jobs: exact overlap, same-host, other-PRs
           in-flight and later-pass counts and the per-name duration baselines; then the died-early flags;
  lists    TimelineCounts.details() for --shown failed jobs (what a report displays): the full
           overlapping-job, in-flight-PR and later-pass lists, in timeline.py's order.
The ratio is (counts + died-early + lists) / argsort; the load average printed next to it tells whether
other processes shared the CPUs during the reading. For comparison it also times, once, the old all-lists mode
(timeline_frame.correlate: every failed job's top --cap overlaps materialised), labelled as such.
Then the peak memory (tracemalloc) of counts + lists at a quarter, half and all of --jobs, per job.

    python benchmarks/timeline_scale.py [--jobs N] [--repeats N] [--shown N] [--cap N] [--skip-old]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from ci_triage.core.evidence.timeline_counts import count_correlations  # noqa: E402
from ci_triage.core.evidence.timeline_frame import JobFrame, correlate  # noqa: E402

POOLS, HOSTS_PER_POOL, RUNNERS_PER_HOST = 20, 50, 2
JOBS_PER_RUN, RUNS_PER_PR = 8, 3
FAILED_SHARE, NON_PR_RUN_SHARE = 0.10, 0.15
WEEK_START = 1_767_225_600  # 2026-01-01T00:00:00Z


def synthetic_jobs(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    runners = POOLS * HOSTS_PER_POOL * RUNNERS_PER_HOST
    runner = np.arange(n) % runners
    duration = rng.integers(60, 2401, n)  # 1-40 min
    idle = rng.exponential(300, n).astype(np.int64)  # ~5 min between jobs on a runner
    # Serialise per runner: each job starts when the runner's previous job ended plus an idle gap.
    by_runner = np.argsort(runner, kind="stable")
    busy = (duration + idle)[by_runner]
    first = np.r_[0, np.flatnonzero(np.diff(runner[by_runner])) + 1]
    ends = np.cumsum(busy)
    offset = np.repeat(ends[first] - busy[first], np.diff(np.r_[first, n]))
    start = np.empty(n, dtype=np.int64)
    start[by_runner] = WEEK_START + ends - busy - offset + rng.integers(0, 600, runners)[runner[by_runner]]
    end = start + duration
    pool = runner // (HOSTS_PER_POOL * RUNNERS_PER_HOST)
    host = runner // RUNNERS_PER_HOST

    # Runs are consecutive starts on one pool; PRs are consecutive runs.
    by_pool_start = np.lexsort((start, pool))
    run_id = np.empty(n, dtype=np.int64)
    run_id[by_pool_start] = np.arange(n) // JOBS_PER_RUN
    runs = int(run_id.max()) + 1
    pr_of_run = np.where(rng.random(runs) < NON_PR_RUN_SHARE, -1, rng.permutation(runs) // RUNS_PER_PR)
    conclusion = np.where(rng.random(n) < FAILED_SHARE, 1, 0)  # CONCLUSIONS: 0 success, 1 failure
    job_id = np.empty(n, dtype=np.int64)
    job_id[np.argsort(start, kind="stable")] = 30_000_000_000 + np.arange(n)  # ids grow with time, as on GitHub
    return dict(job_id=job_id, run_id=run_id + 9_000_000_000, pr=pr_of_run[run_id], pool=pool, host=host,
                start=start, end=end, conclusion=conclusion, name=rng.integers(0, 50, n))


def best_of(repeats: int, action) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        began = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - began)
    return best, result


def shown_jobs(counts, shown: int) -> list[int]:
    """A report-sized subset: evenly spread failed jobs, as a triage report across the fleet would pick."""
    picks = np.linspace(0, len(counts.failed) - 1, num=min(shown, len(counts.failed))).astype(int)
    return [int(counts.frame.job_id[counts.failed[i]]) for i in np.unique(picks)]


def correlate_fleet(frame: JobFrame, shown: int):
    counts = count_correlations(frame, window_s=3600)
    counts.died_early()
    return counts, counts.details(shown_jobs(counts, shown))


def peak_mb(columns: dict[str, np.ndarray], shown: int) -> float:
    frame = JobFrame.from_arrays(**columns)
    tracemalloc.start()
    tracemalloc.reset_peak()
    correlate_fleet(frame, shown)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shown", type=int, default=100, help="failed jobs whose lists a report materialises")
    parser.add_argument("--cap", type=int, default=50, help="overlaps kept per failed job in the old all-lists mode")
    parser.add_argument("--skip-old", action="store_true", help="do not time the old all-lists mode")
    args = parser.parse_args(argv)

    columns = synthetic_jobs(args.jobs)
    frame = JobFrame.from_arrays(**columns)
    counts_s, counts = best_of(args.repeats, lambda: count_correlations(frame, window_s=3600))
    early_s, early = best_of(args.repeats, counts.died_early)
    shown = shown_jobs(counts, args.shown)
    lists_s, lists = best_of(args.repeats, lambda: counts.details(shown))
    argsort_s, _ = best_of(args.repeats, lambda: np.argsort(columns["start"]))
    total_s = counts_s + early_s + lists_s
    print(f"jobs {args.jobs:,}  failed {len(counts.failed):,}  pools {POOLS}  "
          f"runners {POOLS * HOSTS_PER_POOL * RUNNERS_PER_HOST}")
    print(f"per failed job (mean): {counts.overlap_count.mean():.1f} overlapping jobs"
          f" ({counts.same_host_count.mean():.2f} on its host), {counts.in_flight_count.mean():.1f} other PRs in"
          f" flight, {counts.later_passed_count.mean():.1f} later passes; died early: {int(early.sum()):,};"
          f" overlapping pairs never materialised: {int(counts.overlap_count.sum()):,}")
    print(f"counts, all {len(counts.failed):,} failed jobs  {counts_s * 1000:9.1f} ms")
    print(f"died-early flags                   {early_s * 1000:9.1f} ms")
    print(f"lists for {len(shown)} shown failed jobs      {lists_s * 1000:9.1f} ms"
          f"  ({len(lists.overlap_job):,} overlaps, {len(lists.in_flight_pr):,} PRs, {len(lists.later_job):,} passes)")
    print(f"correlate (total)                  {total_s * 1000:9.1f} ms")
    print(f"numpy argsort of the starts        {argsort_s * 1000:9.1f} ms")
    # The machine may be shared: the load next to the ratio says how much to trust one reading.
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"ratio                              {total_s / argsort_s:9.2f}  (target <= 10; load average {load})")
    if not args.skip_old:
        began = time.perf_counter()
        old = correlate(frame, window_s=3600, cap=args.cap)
        old_s = time.perf_counter() - began
        same = all(np.array_equal(getattr(old, name), getattr(counts, name))
                   for name in ("overlap_count", "in_flight_count", "later_passed_count"))
        print(f"old all-lists mode (timeline_frame.correlate, top {args.cap} lists for every failed job, one run):"
              f" {old_s * 1000:.1f} ms, ratio {old_s / argsort_s:.1f}; counts equal: {same}")

    print("peak memory of counts + died-early + lists (tracemalloc):")
    for size in (args.jobs // 4, args.jobs // 2, args.jobs):
        peak = peak_mb(synthetic_jobs(size), args.shown)
        print(f"  {size:>10,} jobs  {peak:9.1f} MB  {peak * 2**20 / size:7.0f} bytes per job")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
