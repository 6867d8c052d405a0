"""How long correlating every failed job of a busy CI takes, next to a numpy argsort of the same starts.

Synthetic week of CI: 20 runner pools x 50 hosts x 2 runners. Each runner runs its jobs one after the
other (1-40 min each, with idle gaps), so a pool has about as many jobs in flight as it has busy runners.
Runs of about 8 jobs start together on one pool; a PR has about 3 runs; 15% of runs are not PR runs;
10% of jobs fail. Times are int64 epoch seconds.

Prints the correlation time, the argsort time (best of --repeats each, same process) and their ratio,
then the peak memory (tracemalloc) of the correlation at a quarter, half and all of --jobs, per job.

    python benchmarks/timeline_scale.py [--jobs N] [--repeats N] [--cap N]
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from ci_triage.core.timeline_frame import JobFrame, correlate  # noqa: E402

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


def peak_mb(columns: dict[str, np.ndarray], cap: int) -> float:
    frame = JobFrame.from_arrays(**columns)
    tracemalloc.start()
    tracemalloc.reset_peak()
    correlate(frame, window_s=3600, cap=cap)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cap", type=int, default=50, help="overlaps kept per failed job")
    args = parser.parse_args(argv)

    columns = synthetic_jobs(args.jobs)
    frame = JobFrame.from_arrays(**columns)
    correlate_s, result = best_of(args.repeats, lambda: correlate(frame, window_s=3600, cap=args.cap))
    argsort_s, _ = best_of(args.repeats, lambda: np.argsort(columns["start"]))
    failed = len(result.failed)
    print(f"jobs {args.jobs:,}  failed {failed:,}  pools {POOLS}  runners {POOLS * HOSTS_PER_POOL * RUNNERS_PER_HOST}")
    print(f"overlapping pairs {int(result.overlap_count.sum()):,} (mean {result.overlap_count.mean():.0f} per failed job,"
          f" {len(result.overlap_job):,} kept at cap {args.cap}); other PRs in flight: mean"
          f" {result.in_flight_count.mean():.0f}; later passes: mean {result.later_passed_count.mean():.0f}")
    print(f"correlate      {correlate_s * 1000:9.1f} ms")
    print(f"numpy argsort  {argsort_s * 1000:9.1f} ms")
    print(f"ratio          {correlate_s / argsort_s:9.2f}  (target <= 10)")

    print("peak memory of the correlation (tracemalloc):")
    for size in (args.jobs // 4, args.jobs // 2, args.jobs):
        part = synthetic_jobs(size)
        peak = peak_mb(part, args.cap)
        print(f"  {size:>10,} jobs  {peak:9.1f} MB  {peak * 2**20 / size:7.0f} bytes  "
              f"{peak / size:.6f} MB per job")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
