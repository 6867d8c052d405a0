"""How long `runners`' analysis of a fleet takes, next to a numpy argsort of as many int64 in the same process.

Synthetic window: --jobs job executions over --runners runners (2 runner processes a host, 20 pools),
each runner running its jobs one after the other (5-40 min each); 4% of jobs fail, half of those with
an infra category, 1% of jobs with a contention category (port_in_use); 5% of runs have a second
attempt. The analysis is core.health.analysis.analyse_frame on the columns records_frame() makes
(the shell's JobRecords -> columns step is not timed: the store could hand columns directly).

The ratio is analyse_frame / argsort (best of --repeats, wall clock; the process CPU time of the
best analysis is printed beside it, as the machine may be shared). Issue 14's targets: <= 10x at 1M
jobs and 2,000 runners, <= 15x at 10M (`--jobs 10000000 --runners 20000`), and <= 300 bytes of peak
memory (tracemalloc) per job. `--shuffle` hands the rows over in a random order instead of job order
(the store does not promise one).

    python benchmarks/runners_scale.py [--jobs N] [--runners N] [--repeats N] [--shuffle]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from ci_triage.core.health.analysis import analyse_frame  # noqa: E402

START = 1_767_225_600  # 2026-01-01T00:00:00Z


def fleet(jobs: int, runners: int, seed: int = 14) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    runner = rng.integers(0, runners, jobs)
    order = np.argsort(runner, kind="stable")
    duration = rng.integers(300, 2400, jobs)
    gap = rng.integers(10, 600, jobs)
    # Per runner, jobs one after the other: a running sum within each runner's segment.
    step = (duration + gap)[order]
    total = np.cumsum(step)
    first = np.r_[0, np.flatnonzero(np.diff(runner[order])) + 1]
    seg = np.repeat(first, np.diff(np.r_[first, jobs]))
    offset = total - step - np.where(seg > 0, total[seg - 1], 0)
    start = np.empty(jobs, dtype=np.int64)
    start[order] = START + offset
    end = start + duration
    failed = rng.random(jobs) < 0.04
    contention = rng.random(jobs) < 0.01
    infra = failed & (rng.random(jobs) < 0.5)
    category = np.where(contention, "port_in_use", np.where(infra, "runner_lost", np.where(failed, "test_failure", "")))
    conclusion = np.where(failed | contention, "failure", "success")
    run_id = np.arange(jobs, dtype=np.int64) // 4
    attempt = np.where(rng.random(jobs) < 0.05, 2, 1)
    names = np.array([f"job-{i}" for i in range(200)])
    name_code = rng.integers(0, 200, jobs)
    runner_names = np.array([f"host{i // 2}-r{i % 2}" for i in range(runners)])
    pools = np.array([f"pool-{i}" for i in range(20)])
    return pd.DataFrame({
        "run_id": run_id, "attempt": attempt, "job_id": np.arange(jobs, dtype=np.int64),
        "workflow": pd.Categorical.from_codes(np.zeros(jobs, dtype=np.int8), ["ci"]),
        "name": pd.Categorical.from_codes(name_code, names),
        "pr": np.where(run_id % 7 == 0, -1, run_id // 3),
        "branch": pd.Categorical.from_codes(np.zeros(jobs, dtype=np.int8), ["main"]),
        "head_sha": pd.Categorical.from_codes((run_id % 50_000).astype(np.int32), [f"sha{i}" for i in range(50_000)]),
        "runner": pd.Categorical.from_codes(runner, runner_names),
        "host": pd.Categorical.from_codes(runner // 2, [f"host{i}" for i in range((runners + 1) // 2)]),
        "pool": pd.Categorical.from_codes((runner % 20).astype(np.int8), pools),
        "labels": pd.Categorical.from_codes((runner % 20).astype(np.int8), pools),
        "start": start, "end": end,
        "conclusion": pd.Categorical(conclusion),
        "category": pd.Categorical(category),
        "ports": np.where(contention, "29500", ""),
    })


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--runners", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shuffle", action="store_true", help="rows in a random order, not job order")
    args = parser.parse_args()
    frame = fleet(args.jobs, args.runners)
    if args.shuffle:
        frame = frame.iloc[np.random.default_rng(2).permutation(len(frame))].reset_index(drop=True)
    keys = np.random.default_rng(1).integers(0, 2**62, args.jobs)
    sort_s = min(_timed(lambda: np.argsort(keys))[0] for _ in range(args.repeats))
    analyse_s, analyse_cpu = min(_timed(lambda: analyse_frame(frame, repo="o/r")) for _ in range(args.repeats))
    tracemalloc.start()
    report = analyse_frame(frame, repo="o/r")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"jobs {args.jobs:,}, runners {args.runners:,}{' (shuffled rows)' if args.shuffle else ''}: "
          f"argsort {sort_s:.3f} s, analyse {analyse_s:.3f} s (CPU {analyse_cpu:.3f} s), "
          f"ratio {analyse_s / sort_s:.1f}x; peak memory of the analysis {peak / args.jobs:.0f} bytes/job "
          f"(the frame itself: {frame.memory_usage(deep=True).sum() / args.jobs:.0f} bytes/job); "
          f"load average {load:.2f}; {sum(r.sick for r in report.runners)} runners sick, "
          f"{len(report.hotspots)} hotspots")


def _timed(fn) -> tuple[float, float]:
    """(wall, process CPU) seconds of one call."""
    began, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - began, time.process_time() - cpu


if __name__ == "__main__":
    main()
