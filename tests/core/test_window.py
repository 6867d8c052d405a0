"""The report's correlation through the engine (evidence.window) equals the per-job oracle as the report
used to ask it: each failed job against the window's jobs of its own workflow, its baseline topped up
with recent successful jobs when the window has too few."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_triage.core.evidence.window import baselines, correlate_window
from tests.core import timeline_oracle as oracle
from tests.core.test_timeline_frame import job_rows, make_job, make_run

MIN_SAMPLES = 3
REPO_ROOT = Path(__file__).resolve().parents[2]


def expected(failed, window_jobs, window_runs, pr_of_run, window_s, more):
    """What core/decide/triage.py computed per job before the engine served the report."""
    found = []
    for run, job in failed:
        same = [j for j in window_jobs
                if j.run_id in window_runs and window_runs[j.run_id].workflow_id == run.workflow_id]
        overlapping = oracle.overlapping_jobs(job, same, window_runs, pr_of_run)
        later = oracle.later_jobs_passed(job, same, window_runs, window_s, pr_of_run)
        named = [j for j in same if j.name == job.name]
        baseline = oracle.duration_baseline(job.name, named)
        if baseline is None or baseline.samples < MIN_SAMPLES:
            baseline = oracle.duration_baseline(job.name, named + list(more.get(run.workflow_id, ())))
        own = pr_of_run[run.id]
        in_flight = tuple(sorted({o.pr for o in overlapping if o.pr is not None and o.pr != own}))
        found.append((overlapping, in_flight, later, baseline))
    return found


@st.composite
def windows(draw):
    rows = draw(st.lists(job_rows, min_size=1, max_size=25))
    labels = draw(st.lists(st.sampled_from([("self-hosted", "linux-a2"), ("linux-a2",), ("self-hosted", "linux")]),
                           min_size=len(rows), max_size=len(rows)))
    jobs = [make_job(1000 - 7 * index, run, start, length, runner, conclusion, name, label)
            for index, ((run, start, length, runner, conclusion, name), label) in enumerate(zip(rows, labels))]
    # Runs 0-5 in two workflows; run 6 is not in the window (the PR's run may be missing from it).
    workflow = {run_id: draw(st.sampled_from([1, 2])) for run_id in range(7)}
    runs = {run_id: replace(make_run(run_id, draw(st.sampled_from([(), (run_id % 3 + 1,)]))),
                            workflow_id=workflow[run_id]) for run_id in range(7)}
    window_runs = {run_id: run for run_id, run in runs.items() if run_id != 6}
    pr_runs = draw(st.lists(st.sampled_from([0, 1, 6]), min_size=1, max_size=3, unique=True))
    pr_of_run = {run_id: (None if not run.pr_numbers else run.pr_numbers[0]) for run_id, run in runs.items()}
    pr_of_run.update({run_id: 67 for run_id in pr_runs})
    # The PR's failed jobs: some exactly as the window holds them, some changed since, some not in it.
    failed = []
    for job in jobs:
        if job.failed and job.run_id in pr_runs and draw(st.booleans()):
            failed.append((runs[job.run_id], job if draw(st.booleans()) else replace(job, runner_name="n9-r0")))
    failed += [(runs[6], make_job(5000 + i, 6, *draw(st.tuples(st.integers(0, 40).map(lambda m: m * 30_000_000),
                                                               st.integers(1, 30).map(lambda m: m * 30_000_000))),
                                  "n1-r0", "failure", "test", ("linux-a2",)))
               for i in range(draw(st.integers(0, 2))) if 6 in pr_runs]
    more = {1: tuple(make_job(9000 + i, 90 + i, 0, (20 + i) * 30_000_000, "n1-r0", "success", "test", ("linux-a2",))
                     for i in range(draw(st.integers(0, 3))))}
    return failed, jobs, window_runs, pr_of_run, more


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(windows(), st.sampled_from([0.0, 600.0, 7200.0]))
def test_the_window_equals_the_per_job_oracle(window, window_s):
    failed, jobs, window_runs, pr_of_run, more = window
    found = correlate_window(failed, jobs, window_runs, pr_of_run, later_window_s=window_s,
                             min_baseline_samples=MIN_SAMPLES, more_baseline_jobs=more)
    assert [(e.overlapping, e.in_flight_prs, e.later_passed, e.baseline) for e in found] == expected(
        failed, jobs, window_runs, pr_of_run, window_s, more)


def test_a_workflow_run_twice_for_one_head_keeps_each_runs_added_rows_to_itself():
    """Two PR runs of one workflow (two events), their failed jobs not in the window: each is correlated
    with the window only, never with the other run's failed job."""
    runs = {10: make_run(10, (67,)), 11: make_run(11, (67,)), 20: make_run(20, (66,))}
    a = make_job(1, 10, 0, 600_000_000, "n1-r0", "failure", "test", ("linux-a2",))
    b = make_job(2, 11, 0, 600_000_000, "n1-r1", "failure", "test", ("linux-a2",))
    other = make_job(3, 20, 60_000_000, 60_000_000, "n1-r2", "success", "test", ("linux-a2",))
    found = correlate_window([(runs[10], a), (runs[11], b)], [other], {20: runs[20]}, {10: 67, 11: 67, 20: 66},
                             later_window_s=0)
    assert [[o.job_id for o in e.overlapping] for e in found] == [[3], [3]]
    assert [e.in_flight_prs for e in found] == [(66,), (66,)]


def test_baselines_by_workflow_and_name():
    runs = {1: make_run(1, ()), 2: replace(make_run(2, ()), workflow_id=2)}
    jobs = [make_job(i, 1 + i % 2, 0, (10 + i) * 1_000_000, "n1-r0", "success", "test", ("linux-a2",))
            for i in range(6)]
    first, second, missing = baselines([(1, "test"), (2, "test"), (1, "lint")], jobs, runs)
    assert (first.samples, first.median_s) == (3, 12.0) and (second.samples, second.median_s) == (3, 13.0)
    assert missing is None


def test_a_failed_job_that_changed_since_the_window_was_read_is_asked_as_it_is_now():
    runs = {10: make_run(10, (67,)), 20: make_run(20, (66,))}
    then = make_job(1, 10, 0, 600_000_000, "n1-r0", "failure", "test", ("linux-a2",))
    now = replace(then, runner_name="n2-r0")
    other = make_job(3, 20, 60_000_000, 60_000_000, "n2-r1", "success", "test", ("linux-a2",))
    found = correlate_window([(runs[10], now)], [then, other], runs, {10: 67, 20: 66}, later_window_s=0)
    assert [(o.job_id, o.same_host) for o in found[0].overlapping] == [(3, True)]


def test_benchmark_script_runs_on_a_small_window():
    finished = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "report_window.py"), "--runs", "50",
                               "--repeats", "1"], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert finished.returncode == 0, finished.stderr
    assert "answers equal: True" in finished.stdout and "ratio" in finished.stdout
