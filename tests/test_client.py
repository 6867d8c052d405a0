"""The read client against the local fake: job lists after a single-job rerun, logs that are missing
or expired, conditional requests, and PyGithub kept quiet."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import httpx

from ci_triage.demo.replay import FakeGitHub
from ci_triage.github.client import Connection, GitHubClient
from ci_triage.model import LogStatus
from ci_triage.store import Store
from tests.conftest import DEMO_REPO


def _failing_run(case: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A completed run with a failed job and another job, (run, failed job, other job)."""
    for run in case["runs"]:
        jobs = [j for j in case["jobs"] if j["run_id"] == run["id"] and j["run_attempt"] == run["run_attempt"]]
        failed = [j for j in jobs if j["conclusion"] == "failure"]
        others = [j for j in jobs if j["conclusion"] != "failure"]
        if run["status"] == "completed" and failed and others:
            return run, failed[0], others[0]
    raise AssertionError("the demo has no run with a failed and another job")


def _rerun_one_job(fake: FakeGitHub, job_id: int) -> None:
    with httpx.Client(base_url=fake.base_url, headers={"Authorization": "Bearer t"}) as http:
        assert http.post(f"/repos/{DEMO_REPO}/actions/jobs/{job_id}/rerun", json={}).status_code == 201


def test_a_still_failing_job_stays_listed_after_another_job_is_rerun(demo_case, tmp_path) -> None:
    # After a single-job rerun, attempt 2 runs only that job; the job that failed in attempt 1 and was
    # not rerun must stay in attempt 2's list, or a still-failing job is hidden.
    run, failed, other = _failing_run(demo_case)
    with FakeGitHub(demo_case) as fake:
        _rerun_one_job(fake, other["id"])
        client = GitHubClient(Connection(fake.base_url, "t", retries=0))
        jobs = client.jobs(DEMO_REPO, run["id"], 2)
        by_name = {j.name: j for j in jobs}
        assert by_name[failed["name"]].id == failed["id"] and by_name[failed["name"]].failed
        assert by_name[other["name"]].run_attempt == 2 and by_name[other["name"]].id != other["id"]
        # Attempt 1 as it stood: the original executions only.
        assert {j.id for j in client.jobs(DEMO_REPO, run["id"], 1)} >= {failed["id"], other["id"]}
        # The store's view of attempt 2 keeps the carried-over job too.
        with Store(tmp_path / "s.sqlite3") as store:
            completed = dataclasses.replace(client.runs(DEMO_REPO, head_sha=run["head_sha"])[0], status="completed")
            completed = dataclasses.replace(completed, id=run["id"], attempt=2)
            store.save_jobs(DEMO_REPO, completed, jobs)
            cached = store.jobs_of(DEMO_REPO, run["id"], 2)
        assert cached is not None and {j.id for j in cached} == {j.id for j in jobs}
        client.close()


def test_the_fake_lists_jobs_as_githubs_description_says(demo_case) -> None:
    run, failed, other = _failing_run(demo_case)
    with FakeGitHub(demo_case) as fake, httpx.Client(base_url=fake.base_url) as http:
        _rerun_one_job(fake, other["id"])
        path = f"/repos/{DEMO_REPO}/actions/runs/{run['id']}"
        attempt_2 = http.get(f"{path}/attempts/2/jobs").json()["jobs"]
        latest = http.get(f"{path}/jobs", params={"filter": "latest"}).json()["jobs"]
        every = http.get(f"{path}/jobs", params={"filter": "all"}).json()["jobs"]
    from ci_triage.core.github.protocol import jobs_of_attempt

    # "Lists jobs for a specific workflow run attempt": only what ran in it (the narrow reading).
    assert {j["run_attempt"] for j in attempt_2} == {2}
    # filter=latest: each job's most recent execution; filter=all: every execution, once.
    assert failed["id"] in {j["id"] for j in latest} and other["id"] not in {j["id"] for j in latest}
    ids = [j["id"] for j in every]
    assert len(ids) == len(set(ids)) and {failed["id"], other["id"]} <= set(ids)
    assert [j["id"] for j in jobs_of_attempt(every, 2)] == sorted(j["id"] for j in latest)


def test_a_404_log_is_missing_and_a_410_log_is_expired(fake, client) -> None:
    job = next(j for j in fake.index.jobs.values() if j["id"] in fake.index.logs)
    fake.inject("GET", r"/actions/jobs/\d+/logs$", 404, times=9)
    assert client.log(DEMO_REPO, job["id"]) == (LogStatus.MISSING, None)
    fake.faults.clear()
    fake.inject("GET", r"/actions/jobs/\d+/logs$", 410, times=9)
    assert client.log(DEMO_REPO, job["id"]) == (LogStatus.EXPIRED, None)
    fake.faults.clear()
    status, text = client.log(DEMO_REPO, job["id"])
    assert status is LogStatus.AVAILABLE and text


def test_a_429_without_retry_after_on_a_log_is_retried(fake) -> None:
    slept: list[float] = []
    client = GitHubClient(Connection(fake.base_url, "t", retries=2), sleep=slept.append)
    job_id = next(iter(fake.index.logs))
    fake.inject("GET", r"/actions/jobs/\d+/logs$", 429, body={"message": "Too many requests"})
    assert client.log(DEMO_REPO, job_id)[0] is LogStatus.AVAILABLE
    assert slept == [60]  # GitHub: no retry-after, no reset -> at least a minute
    client.close()


def test_repeated_reads_are_conditional_and_a_304_reuses_the_body(fake, client) -> None:
    first = client.runs(DEMO_REPO, status="success")
    second = client.runs(DEMO_REPO, status="success")
    assert first == second
    answers = [r.status for r in fake.served(path_regex=r"/actions/runs$")]
    assert answers[0] == 200 and 304 in answers[1:]


def test_pygithub_does_not_write_to_stderr(fake, capfd) -> None:
    client = GitHubClient(Connection(fake.base_url, "t", retries=0))
    logging.getLogger("github").warning("Setting next backoff to 3600s")
    client.pull(DEMO_REPO, 67)
    client.close()
    assert capfd.readouterr().err == ""
