"""The vectorised runner-health analysis against the pandas reading it replaced (tests/core/health_oracle.py),
on random fleets of a few thousand job executions with every awkward value the store can hand over:
unknown runners, jobs without times, cancelled and running jobs, failures never classified, runners on
several pools, reruns, PRs and pushes, contention failures overlapping on shared hosts."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ci_triage.core.evidence import frame_overlaps
from ci_triage.core.health import analysis, columns, stats
from ci_triage.core.health.analysis import analyse_frame, records_frame
from ci_triage.core.health.records import JobRecord
from ci_triage.core.health.stats import fisher_greater
from tests.core import health_oracle

T0 = datetime(2026, 5, 1, tzinfo=UTC)
LABELS = (("self-hosted", "linux", "pool-a"), ("self-hosted", "pool-b"), ("ubuntu-latest",),
          ("self-hosted", "linux"), (), ("self-hosted", "pool-a", "pool-b"))
CONCLUSIONS = (("success", 60), ("failure", 22), ("timed_out", 3), ("cancelled", 5), ("skipped", 3),
               (None, 2), ("startup_failure", 2), ("neutral", 1), ("some_new_conclusion", 2))
CATEGORIES = ("port_in_use", "host_oom", "accelerator_oom", "collective_timeout", "runner_lost", "test_failure",
              "unknown", None, None, "compile_error", "disk_full")


def random_fleet(seed: int, jobs: int = 3000, hosts: int = 8, tidy: bool = False) -> tuple[list[JobRecord], dict]:
    """`tidy`: every runner always carries its own labels (else one job in ten carries others)."""
    rng = random.Random(seed)
    runners = [f"node{h}-r{i}" for h in range(hosts) for i in range(rng.randint(1, 3))]
    runners += ["GitHub Actions 7", "solo", None]
    usual = {runner: rng.choice(LABELS) for runner in runners}
    names = [f"job ({i})" for i in range(rng.randint(3, 14))]
    records: list[JobRecord] = []
    automatic: dict[tuple[int, int], bool] = {}
    run_id, job_id = 1000 + rng.randint(0, 50), 10**9
    while len(records) < jobs:
        run_id += rng.randint(1, 3)
        pr = rng.choice([None, None, 60, 61, 62, 63, 64])
        workflow = rng.choice(["ci", "nightly", "e2e"])
        sha = f"sha{rng.randint(0, 40)}"
        for attempt in range(1, rng.choice([1, 1, 1, 2, 2, 3]) + 1):
            if attempt > 1 and rng.random() < 0.3:
                automatic[(run_id, attempt)] = rng.random() < 0.7
            if rng.random() < 0.1:  # an attempt whose jobs are not all in the window
                continue
            for _ in range(rng.randint(1, 6)):
                job_id += rng.randint(1, 40)
                runner = rng.choice(runners)
                labels = usual[runner] if tidy or rng.random() < 0.9 else rng.choice(LABELS)
                start = T0 + timedelta(seconds=rng.randint(0, 200_000))
                end = start + timedelta(seconds=rng.choice([0, rng.randint(1, 4000), rng.randint(1, 600)]))
                conclusion = rng.choices([c for c, _ in CONCLUSIONS], [w for _, w in CONCLUSIONS])[0]
                category = rng.choice(CATEGORIES) if conclusion in ("failure", "timed_out") or rng.random() < 0.05 \
                    else None
                captures = {key: str(rng.randint(1, 4) * (29500 if key == "port" else 1))
                            for key in ("port", "device", "rank", "other") if rng.random() < 0.3}
                records.append(JobRecord(
                    run_id=run_id, attempt=attempt, job_id=job_id, workflow=workflow, name=rng.choice(names), pr=pr,
                    branch=rng.choice([None, "main", "feature/x", ""]) if pr is None else f"pr-{pr}",
                    head_sha=sha, runner_name=runner, runner_group="Default", labels=labels,
                    started_at=None if rng.random() < 0.02 else start,
                    completed_at=None if rng.random() < 0.03 else end,
                    conclusion=conclusion, category=category, captures=captures))
    rng.shuffle(records)
    return records, automatic


@pytest.mark.parametrize("seed", range(12))
def test_the_vectorised_analysis_equals_the_pandas_reading(seed):
    records, automatic = random_fleet(seed, jobs=2000 + 300 * seed, hosts=3 + seed % 6, tidy=seed % 2 == 1)
    pattern = re.compile(r"^(?P<host>node\d+)") if seed % 3 == 0 else None
    frame = records_frame(records, pattern)
    got = analyse_frame(frame, repo="o/r", automatic=automatic)
    expected = health_oracle.analyse_frame(frame, repo="o/r", automatic=automatic)
    assert got.runners == expected.runners
    assert got.hosts == expected.hosts
    assert got.hotspots == expected.hotspots
    assert got.reruns == expected.reruns
    assert got.flaky_jobs == expected.flaky_jobs
    assert got == expected
    assert got.hotspots and got.reruns.requested and any(r.infra_failures for r in got.runners)


@pytest.mark.parametrize("seed", range(4))
def test_runners_on_several_hosts_and_hosts_without_runners_equal_the_pandas_reading(seed):
    """Frames records_frame() cannot make: a runner's jobs on two hosts, a host with no runner name."""
    records, automatic = random_fleet(200 + seed, jobs=3000, hosts=4, tidy=seed % 2 == 0)
    frame = records_frame(records)
    rng = np.random.default_rng(seed)
    codes = frame["host"].cat.codes.to_numpy().copy()
    moved = rng.random(len(frame)) < 0.05
    codes[moved] = rng.integers(0, len(frame["host"].cat.categories), int(moved.sum()))
    frame["host"] = pd.Categorical.from_codes(codes, frame["host"].cat.categories)
    got = analyse_frame(frame, repo="o/r", automatic=automatic)
    assert got == health_oracle.analyse_frame(frame, repo="o/r", automatic=automatic)


@pytest.mark.parametrize("seed", range(3))
def test_the_sort_paths_equal_the_pandas_reading(seed, monkeypatch):
    """Every count by sorts instead of bincounts, keys too wide to pack, run ids spanning 2^61."""
    monkeypatch.setattr(columns, "DENSE_FACTOR", -1)
    monkeypatch.setattr(columns, "PACK_BITS", 0)
    monkeypatch.setattr(frame_overlaps, "PACKED_BITS", 0)
    records, automatic = random_fleet(300 + seed, jobs=2500, hosts=5, tidy=seed == 1)
    frame = records_frame(records)
    run_id = frame["run_id"].to_numpy()
    frame["run_id"] = run_id + (run_id % 2) * 2**61
    automatic = {(run + (run % 2) * 2**61, attempt): value for (run, attempt), value in automatic.items()}
    got = analyse_frame(frame, repo="o/r", automatic=automatic)
    assert got == health_oracle.analyse_frame(frame, repo="o/r", automatic=automatic)
    assert got.reruns.requested and got.hotspots


@pytest.mark.parametrize("seed", range(4))
def test_the_top_hotspots_cut_equals_the_pandas_reading(seed, monkeypatch):
    records, _ = random_fleet(100 + seed, jobs=4000, hosts=2)
    monkeypatch.setattr(analysis, "MAX_HOTSPOTS", 3)
    monkeypatch.setattr(health_oracle, "MAX_HOTSPOTS", 3)
    frame = records_frame(records)
    got, expected = analyse_frame(frame, repo="o/r"), health_oracle.analyse_frame(frame, repo="o/r")
    assert len(got.hotspots) == 3 and got.hotspots == expected.hotspots


@pytest.mark.parametrize("seed", range(4))
def test_the_kept_hotspots_are_the_top_of_the_full_ranking(seed, monkeypatch):
    """One ranking picks the hotspots kept and orders them: cutting at 3 keeps the first 3 of the whole list."""
    frame = records_frame(random_fleet(100 + seed, jobs=4000, hosts=2)[0])
    everything = analyse_frame(frame, repo="o/r").hotspots
    monkeypatch.setattr(analysis, "MAX_HOTSPOTS", 3)
    assert len(everything) > 3 and analyse_frame(frame, repo="o/r").hotspots == everything[:3]


def test_a_fleet_without_failures_or_times_is_empty_not_an_error():
    records, _ = random_fleet(7, jobs=300)
    quiet = [JobRecord(**{**r.__dict__, "conclusion": "success", "started_at": None, "completed_at": None})
             for r in records]
    for rows in (quiet, quiet[:1], []):
        frame = records_frame(rows)
        assert analyse_frame(frame, repo="o/r") == health_oracle.analyse_frame(frame, repo="o/r")


@pytest.mark.parametrize("seed", range(6))
def test_the_cut_fisher_tail_is_the_whole_tail_to_the_bit(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    top, size = [(60, 4000), (3000, 2000), (200_000, 100), (1_000_000, 20), (50, 4000), (50_000, 200)][seed]
    N = rng.integers(1, top, size)
    K = rng.integers(0, N + 1)
    n = rng.integers(0, N + 1)
    # k around the expectation, far above it, and at the ends of its range
    expected = n * K // np.maximum(N, 1)
    k = np.clip(expected + rng.integers(-5, 40, size) * (1 + seed % 3), 0, n)
    k[::7], k[1::7] = 0, n[1::7]
    cut = fisher_greater(k, n, K, N)
    monkeypatch.setattr(stats, "_last_term", lambda lf, low, high, *_: high)  # every term of every tail summed
    assert np.array_equal(cut, fisher_greater(k, n, K, N))


def test_benchmark_script_runs_on_a_small_fleet():
    root = Path(__file__).resolve().parents[2]
    finished = subprocess.run([sys.executable, str(root / "benchmarks" / "runners_scale.py"), "--jobs", "20000",
                               "--runners", "100", "--repeats", "1", "--shuffle"],
                              capture_output=True, text=True, timeout=120, cwd=root)
    assert finished.returncode == 0, finished.stderr
    assert "(shuffled rows)" in finished.stdout and "ratio" in finished.stdout and "bytes/job" in finished.stdout
