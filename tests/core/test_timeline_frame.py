"""The correlation engine gives the per-job oracle's answers (tests/core/timeline_oracle.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_triage.core.evidence.frame_baselines import died_early
from ci_triage.core.evidence.timeline_frame import (
    CONCLUSIONS,
    MISSING,
    JobFrame,
    correlate,
)
from ci_triage.model import Job, Run
from tests.core import timeline_oracle as timeline

T0 = datetime(2026, 5, 12, 13, 0, tzinfo=UTC)
LABEL_SETS = [("self-hosted", "linux-a2"), ("linux-a2",), ("self-hosted", "linux-a2", "big"), ("big", "x64"),
              ("self-hosted", "linux"), ("linux", "self-hosted"), ("ubuntu-latest",), ()]
RUNNERS = [None, "n1-r0", "n1-r1", "n2-r0", "n2-r1", "n3", ""]


def make_job(job_id, run_id, start, length, runner, conclusion, name, labels) -> Job:
    """Times in microseconds after T0; a job can have ended without a known start (end = length then)."""
    started = None if start is None else T0 + timedelta(microseconds=start)
    completed = None if length is None else T0 + timedelta(microseconds=(start or 0) + length)
    return Job(job_id, run_id, 1, "CI", name, "completed", conclusion, T0, started, completed, runner, "Default",
               labels, "sha", "branch", f"https://example/job/{job_id}")


def make_run(run_id: int, prs: tuple[int, ...]) -> Run:
    return Run(run_id, 1, 1, "CI", ".github/workflows/ci.yml", "pull_request", "completed", "failure", "sha",
               f"branch-{run_id}", "o/r", prs, T0, T0, f"https://example/run/{run_id}")


# Times on a coarse grid (so ties and touching intervals are common), in microseconds.
times = st.one_of(st.none(), st.integers(0, 40).map(lambda m: m * 30_000_000))
lengths = st.one_of(st.none(), st.integers(-2, 30).map(lambda m: m * 30_000_000), st.integers(1, 999_999))
job_rows = st.tuples(st.integers(0, 5), times, lengths, st.sampled_from(RUNNERS),
                     st.sampled_from(["success", "failure", "timed_out", "cancelled", None, "weird"]),
                     st.sampled_from(["build", "test", "lint"]))


@st.composite
def scenarios(draw, one_pool: bool):
    rows = draw(st.lists(job_rows, min_size=1, max_size=25))
    labels = draw(st.lists(st.sampled_from(LABEL_SETS[:2] if one_pool else LABEL_SETS),
                           min_size=len(rows), max_size=len(rows)))
    jobs = [make_job(1000 - 7 * index, run, start, length, runner, conclusion, name, label)
            for index, ((run, start, length, runner, conclusion, name), label) in enumerate(zip(rows, labels))]
    runs = {run_id: make_run(run_id, draw(st.sampled_from([(), (run_id % 3 + 1,), (7, 8)]))) for run_id in range(5)}
    pr_of_run = draw(st.one_of(st.none(), st.dictionaries(st.integers(0, 5), st.one_of(st.none(), st.integers(1, 4)))))
    return jobs, runs, pr_of_run


def check_equal_to_timeline(jobs, runs, pr_of_run, window_s, cap, chunk_pairs):
    frame = JobFrame.from_jobs(jobs, runs, pr_of_run)
    result = correlate(frame, window_s=window_s, cap=cap, chunk_pairs=chunk_pairs)
    failed = [job for job in jobs if job.failed]
    assert [frame.jobs[i].id for i in result.failed] == [job.id for job in failed]
    for job in failed:
        expected = timeline.overlapping_jobs(job, jobs, runs, pr_of_run)
        index = result.index_of(job.id)
        assert result.overlap_count[index] == len(expected)
        assert result.overlapping_jobs(job.id) == expected[:cap]
        own = frame.pr[result.failed[index]]
        assert result.in_flight_prs(job.id) == tuple(sorted({o.pr for o in expected if o.pr not in (None, own)}))
        assert result.in_flight_count[index] == len(result.in_flight_prs(job.id))
        later = timeline.later_jobs_passed(job, jobs, runs, window_s, pr_of_run)
        assert result.later_passed_count[index] == len(later)
        if cap is None or len(later) <= cap:
            assert result.later_jobs_passed(job.id) == later
        else:
            assert set(result.later_jobs_passed(job.id)) < set(later) and len(result.later_of(index)) == cap
    for name in {job.name for job in jobs}:
        assert result.baseline(name) == timeline.duration_baseline(name, jobs)
    expected_early = [died_early(job, timeline.duration_baseline(job.name, jobs)) for job in failed]
    assert result.died_early().tolist() == expected_early


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(one_pool=True), st.sampled_from([0.0, 600.0, 1e9]), st.sampled_from([None, 2, 50]),
       st.sampled_from([1, 5, 1 << 21]))
def test_one_pool_per_job_equals_timeline(scenario, window_s, cap, chunk_pairs):
    check_equal_to_timeline(*scenario, window_s, cap, chunk_pairs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(one_pool=False), st.sampled_from([0.0, 600.0, 1e9]), st.sampled_from([None, 2, 50]),
       st.sampled_from([1, 5, 1 << 21]))
def test_jobs_on_several_pools_equal_timeline(scenario, window_s, cap, chunk_pairs):
    check_equal_to_timeline(*scenario, window_s, cap, chunk_pairs)


def test_one_run_of_overlaps_same_host_first_then_longest():
    def job(job_id, run_id, start_min, end_min, runner, conclusion="success", labels=("linux-a2",)):
        return make_job(job_id, run_id, start_min * 60_000_000, (end_min - start_min) * 60_000_000, runner,
                        conclusion, "test", labels)

    failed = job(1, 10, 0, 12, "node2-r0", "failure")
    jobs = [failed, job(2, 20, 5, 20, "node2-r1"), job(3, 30, -10, 11, "node3-r0"), job(4, 40, 13, 30, "node2-r1"),
            job(5, 50, 0, 12, "node2-r1", labels=("ubuntu-latest",)), job(6, 10, 0, 12, "node2-r1")]
    runs = {10: make_run(10, (67,)), 20: make_run(20, (66,)), 30: make_run(30, ()), 40: make_run(40, (68,))}
    result = correlate(JobFrame.from_jobs(jobs, runs), window_s=3600)
    assert [(o.job_id, o.pr, o.same_host, o.overlap_s) for o in result.overlapping_jobs(1)] == [
        (2, 66, True, 420.0), (3, None, False, 660.0)]
    assert result.in_flight_prs(1) == (66,)
    assert [o.job_id for o in result.later_jobs_passed(1)] == [4]


def random_arrays(rng, n, span, scale=1):
    pool = rng.integers(0, 3, n)
    start = rng.integers(0, span, n) * scale
    end = start + rng.integers(-2, span // 3, n) * scale
    start[rng.random(n) < 0.05] = MISSING
    return dict(job_id=rng.permutation(n) * 3 + 11, run_id=rng.integers(0, n // 4 + 1, n), pr=rng.integers(-1, 6, n),
                pool=pool, host=rng.integers(-1, 4, n), start=start, end=end,
                conclusion=rng.choice([0, 0, 0, 1, 2, 4, -1], n), name=rng.integers(0, 3, n))


def pure_jobs(columns):
    """The same jobs as model values: pool -> one specific label, host -> runner name."""
    jobs, runs = [], {}
    for i in range(len(columns["job_id"])):
        start = None if columns["start"][i] == MISSING else int(columns["start"][i])
        length = int(columns["end"][i]) - (start or 0)
        conclusion = None if columns["conclusion"][i] < 0 else CONCLUSIONS[columns["conclusion"][i]]
        runner = None if columns["host"][i] < 0 else f"h{columns['host'][i]}-r0"
        jobs.append(make_job(int(columns["job_id"][i]), int(columns["run_id"][i]), start,
                             length, runner, conclusion,
                             str(columns["name"][i]), (f"pool{columns['pool'][i]}",)))
        pr = int(columns["pr"][i])
        runs[int(columns["run_id"][i])] = make_run(int(columns["run_id"][i]), () if pr < 0 else (pr,))
    return jobs, runs


def test_array_frames_match_timeline_including_huge_tick_counts():
    rng = np.random.default_rng(4)
    for scale in (1, 2**48):  # 2**48 overflows every composite key: the rank and lexsort fallbacks run
        columns = random_arrays(rng, 300, 400, scale)
        # PRs follow runs, as they do for real jobs.
        columns["pr"] = columns["run_id"] % 7 - 1
        frame = JobFrame.from_arrays(**columns, ticks_per_second=1e6)
        result = correlate(frame, window_s=100 * scale / 1e6, cap=20)
        jobs, runs = pure_jobs(columns)
        by_id = {job.id: job for job in jobs}
        assert len(result.failed) > 20
        for index, position in enumerate(result.failed):
            failed = by_id[int(frame.job_id[position])]
            expected = timeline.overlapping_jobs(failed, jobs, runs)
            found, seconds, same_host = result.overlaps_of(index)
            assert [(int(frame.job_id[j]), s, h) for j, s, h in zip(found, seconds, same_host)] == [
                (o.job_id, o.overlap_s, o.same_host) for o in expected[:20]]
            assert result.overlap_count[index] == len(expected)
            own = frame.pr[position]
            assert result.in_flight_of(index) == tuple(sorted({o.pr for o in expected if o.pr not in (None, own)}))
            later = timeline.later_jobs_passed(failed, jobs, runs, 100 * scale / 1e6)
            assert result.later_passed_count[index] == len(later)


def test_other_prs_count_components_minus_the_gaps_inside():
    """PR 2 ran [0, 10) and [20, 30) on the pool, PR 3 ran [0, 10) and [10, 20) (touching): each counts once."""
    def job(job_id, run_id, start_min, end_min, conclusion="success"):
        return make_job(job_id, run_id, start_min * 60_000_000, (end_min - start_min) * 60_000_000, "n1-r0",
                        conclusion, "test", ("linux-a2",))

    jobs = [job(1, 10, 5, 25, "failure"), job(2, 20, 0, 10), job(3, 21, 20, 30), job(4, 30, 0, 10),
            job(5, 31, 10, 20), job(6, 40, 12, 15, "failure"), job(7, 50, 8, 9, "failure")]
    runs = {10: make_run(10, (1,)), 20: make_run(20, (2,)), 21: make_run(21, (2,)), 30: make_run(30, (3,)),
            31: make_run(31, (3,)), 40: make_run(40, ()), 50: make_run(50, (2,))}
    found = correlate(JobFrame.from_jobs(jobs, runs))
    assert found.in_flight_count.tolist() == [2, 2, 2]  # [5, 25): 2 and 3; [12, 15): 1 and 3; [8, 9): 1 and 3
    assert found.in_flight_prs(6) == (1, 3) and found.in_flight_prs(7) == (1, 3)
    assert found.overlap_count.tolist() == [6, 2, 3]


def test_no_jobs_and_no_failures():
    empty = JobFrame.from_jobs([], {})
    assert len(correlate(empty).failed) == 0
    passing = [make_job(1, 1, 0, 60_000_000, "n1-r0", "success", "build", ("linux-a2",))]
    result = correlate(JobFrame.from_jobs(passing, {}))
    assert len(result.failed) == 0 and result.baseline("build").median_s == 60.0
    assert result.died_early().tolist() == []



@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-3, 6), max_size=30))
def test_factorize_gives_pandas_codes(values):
    import pandas as pd

    from ci_triage.core.evidence.frame_arrays import _factorize

    array = np.array(values, dtype=np.int64)
    assert _factorize(array).tolist() == pd.factorize(array)[0].tolist()
