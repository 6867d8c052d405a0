"""Runner health: exact tests, BH, sickness with evidence only, hotspots through the engine, reruns, flakes."""

from __future__ import annotations

import math
import random
import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ci_triage.core.health.analysis import DEFAULT_ALPHA, DEFAULT_MIN_INFRA_FAILURES, analyse, pool_of
from ci_triage.core.health.records import UNCLASSIFIED, JobRecord, is_infra
from ci_triage.core.health.stats import benjamini_hochberg, fisher_greater, sick_mask

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def _tail(k, n, K, N):
    return sum(math.comb(K, x) * math.comb(N - K, n - x) for x in range(k, min(n, K) + 1)) / math.comb(N, n)


def test_fisher_tail_equals_the_exact_sum():
    rng = random.Random(5)
    cases = []
    for _ in range(400):
        N = rng.randint(1, 80)
        K, n = rng.randint(0, N), rng.randint(0, N)
        cases.append((rng.randint(0, n), n, K, N))
    got = fisher_greater(*(np.array(c) for c in zip(*cases)))
    assert max(abs(g - _tail(*c)) for g, c in zip(got, cases)) < 1e-12


def test_fisher_tail_stays_finite_far_out():
    p = fisher_greater(300, 1000, 400, 1_000_000)[0]
    assert 0.0 <= p < 1e-300 or p == 0.0
    assert fisher_greater(0, 10, 5, 100)[0] == 1.0


def test_benjamini_hochberg_matches_the_textbook_example():
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.5])
    assert q == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])


def test_pool_is_the_specific_labels():
    assert pool_of(("self-hosted", "linux", "a2-8")) == "a2-8"
    assert pool_of(("ubuntu-latest",)) == "ubuntu-latest"


def job(job_id, runner, start_min, minutes, conclusion="success", category=None, *, run_id=None, attempt=1,
        name="test", pr=None, sha=None, labels=("self-hosted", "pool-a"), captures=None, workflow="ci"):
    start = T0 + timedelta(minutes=start_min)
    return JobRecord(run_id=run_id or job_id, attempt=attempt, job_id=job_id, workflow=workflow, name=name, pr=pr,
                     branch=None if pr else "main", head_sha=sha or f"sha{run_id or job_id}", runner_name=runner,
                     runner_group="Default", labels=labels, started_at=start,
                     completed_at=start + timedelta(minutes=minutes), conclusion=conclusion, category=category,
                     captures=captures or {})


def _pool(rng, runners, jobs_each, rate, sick_runner=None, sick_rate=0.0):
    records, next_id = [], 1
    for runner in runners:
        for index in range(jobs_each):
            p = sick_rate if runner == sick_runner else rate
            failed = rng.random() < p
            records.append(job(next_id, runner, index * 30, 20, "failure" if failed else "success",
                               "runner_lost" if failed else None))
            next_id += 1
    return records


def test_a_runner_failing_far_more_than_its_pool_is_sick_and_only_it():
    rng = random.Random(1)
    runners = [f"node{i}-r0" for i in range(8)]
    report = analyse(_pool(rng, runners, 60, 0.03, "node5-r0", 0.35), repo="o/r")
    sick = [r.key for r in report.runners if r.sick]
    assert sick == ["node5-r0"]
    top = report.runners[0]
    assert top.infra_failure_rate > 0.2 and top.pool_infra_failure_rate < 0.06 and top.p_value < 1e-6
    assert [h.key for h in report.hosts if h.sick] == ["node5"]


def test_two_unlucky_jobs_are_not_evidence():
    records = [job(i, f"n{i % 4}-r0", i * 30, 20) for i in range(1, 40)]
    records.append(job(100, "n9-r0", 0, 20, "failure", "runner_lost"))
    records.append(job(101, "n9-r0", 30, 20, "failure", "runner_lost"))
    report = analyse(records, repo="o/r")
    assert not any(r.sick for r in report.runners)
    assert report.runners[0].key == "n9-r0" and report.runners[0].infra_failure_rate == 1.0


def test_code_failures_do_not_count_against_a_runner():
    rng = random.Random(2)
    records = _pool(rng, [f"h{i}-r0" for i in range(6)], 40, 0.02)
    records += [job(1000 + i, "h0-r0", 2000 + i * 30, 20, "failure", "test_failure") for i in range(20)]
    report = analyse(records, repo="o/r")
    h0 = next(r for r in report.runners if r.key == "h0-r0")
    assert h0.failures >= 20 and not h0.sick and h0.categories["test_failure"] == 20


def test_failures_whose_log_was_never_read_are_not_infra_failures():
    """A failure nobody classified (category None: `sync --logs none`, an expired log) counts as a
    failure, not as evidence against its runner, as trends.py reads it."""
    assert not is_infra(UNCLASSIFIED) and not is_infra(None) and is_infra("runner_lost")
    rng = random.Random(3)
    runners = [f"node{i}-r0" for i in range(8)]
    records = _pool(rng, runners, 60, 0.03)
    unread = [job(10_000 + i, "node5-r0", 2000 + i * 30, 20, "failure") for i in range(25)]
    report = analyse(records + unread, repo="o/r")
    node5 = next(r for r in report.runners if r.key == "node5-r0")
    assert node5.failures >= 25 and node5.categories[UNCLASSIFIED] == 25
    assert node5.infra_failures == node5.categories.get("runner_lost", 0) and not node5.sick
    assert not any(r.sick for r in report.runners) and not any(h.sick for h in report.hosts)
    assert any("not classified" in note for note in report.notes)


def test_healthy_pools_raise_almost_no_false_alarm_end_to_end():
    """Random infra failures at one rate across a pool: nobody is sick (20 seeds through analyse)."""
    for seed in range(20):
        rng = random.Random(seed)
        report = analyse(_pool(rng, [f"node{i}-r0" for i in range(12)], 50, 0.08), repo="o/r")
        assert not any(r.sick for r in report.runners), seed


@pytest.mark.parametrize("runners,jobs,rate", [(12, 50, 0.08), (40, 200, 0.03), (5, 20, 0.2)])
def test_healthy_pools_false_alarm_rate_over_many_seeds(runners, jobs, rate):
    """The same decision (sick_mask) over 5,000 seeded healthy pools: the share of pools with any
    runner marked sick stays below alpha (0.01; measured about 0.5%)."""
    rng = np.random.default_rng(14)
    seeds = 5000
    k = rng.binomial(jobs, rate, size=(seeds, runners))
    alarms = 0
    for row in k:
        n = np.full(runners, jobs)
        _, _, sick = sick_mask(row, n, np.full(runners, row.sum()), np.full(runners, runners * jobs),
                               alpha=DEFAULT_ALPHA, min_infra_failures=DEFAULT_MIN_INFRA_FAILURES)
        alarms += bool(sick.any())
    assert alarms / seeds < DEFAULT_ALPHA, alarms


def test_overlapping_jobs_on_one_host_make_a_hotspot_with_ports():
    records = [
        job(1, "node2-r0", 0, 20, name="example (eagle3)", pr=66),
        job(2, "node2-r1", 5, 10, "failure", "port_in_use", name="example (dflash)", pr=67,
            captures={"port": "35191"}),
        job(3, "node3-r0", 5, 10, name="example (dspark)", pr=68),  # another host: not a pair
        job(4, "node2-r0", 40, 20, name="example (eagle3)", pr=70),
        job(5, "node2-r1", 45, 10, "failure", "port_in_use", name="example (dflash)", pr=71,
            captures={"port": "39403"}),
    ]
    report = analyse(records, repo="o/r", host_pattern=re.compile(r"^(?P<host>.+)-r\d+$"))
    assert len(report.hotspots) == 1
    spot = report.hotspots[0]
    assert spot.host == "node2" and spot.jobs == ("ci / example (dflash)", "ci / example (eagle3)")
    assert spot.count == 2 and spot.prs == ("#66", "#67", "#70", "#71") and spot.ports == ("35191", "39403")
    assert "RUNNER_NAME" in spot.recommendation


def test_a_hotspot_never_lists_an_empty_branch_as_a_pr():
    """A push run without a head branch (GitHub sends null for some events) names nobody, on either side."""
    records = [
        job(1, "node2-r0", 0, 20, name="example (eagle3)", pr=66),
        JobRecord(**{**job(2, "node2-r1", 5, 10, "failure", "port_in_use", name="example (dflash)").__dict__,
                     "branch": None}),
    ]
    report = analyse(records, repo="o/r", host_pattern=re.compile(r"^(?P<host>.+)-r\d+$"))
    assert [spot.prs for spot in report.hotspots] == [("#66",)]


def test_reruns_flakes_and_their_cost():
    records = [
        job(1, "a-r0", 0, 10, "failure", "port_in_use", run_id=7, name="e", sha="s1"),
        job(2, "a-r0", 20, 12, "success", run_id=7, attempt=2, name="e", sha="s1"),  # rescued, automatic
        job(3, "a-r0", 40, 10, "failure", "test_failure", run_id=8, name="e", sha="s2"),
        job(4, "a-r0", 60, 6, "failure", "test_failure", run_id=8, attempt=2, name="e", sha="s2"),  # manual, not
        job(5, "a-r0", 80, 10, "success", run_id=9, name="e", sha="s3"),
    ]
    report = analyse(records, repo="o/r", automatic={(7, 2): True})
    r = report.reruns
    assert (r.requested, r.automatic, r.manual, r.rescued, r.runner_minutes) == (2, 1, 1, 1, 18.0)
    flaky = report.flaky_jobs[0]
    assert (flaky.name, flaky.runs, flaky.flaky_runs) == ("e", 3, 1)
    assert flaky.rate == pytest.approx(1 / 3)
