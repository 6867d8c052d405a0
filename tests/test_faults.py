"""Fault injection: a real HTTP proxy (tests/fault_proxy.py) in front of the local GitHub fake stalls,
resets, truncates and corrupts answers; the fake itself answers GitHub's rate limits and 5xx.

Every case must end within the wait budget with the right report or `needs_review` -- never a rerun
on partial evidence, never an internal error, nothing on stderr. Time is virtual: the retry policy's
`sleep` advances a clock instead of sleeping, so no test waits on a real backoff (only the stall case
waits for the client's one-second read timeout).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ci_triage.demo.replay import FakeGitHub
from ci_triage.errors import GitHubError, RateLimited
from ci_triage.github.client import Connection, GitHubClient
from ci_triage.github.transport import RetryPolicy, over_budget
from ci_triage.model import LogStatus, Verdict
from ci_triage.service import Triage
from ci_triage.store import Store
from tests.conftest import DEMO_REPO
from tests.fault_proxy import FaultProxy

BUDGET_S = 300.0
LOGS = r"/actions/jobs/\d+/logs$"
LOG_BLOB = r"^/logs/\d+\.txt$"
JOBS = r"/actions/runs/\d+/jobs$"


class VirtualTime:
    """A clock that `sleep` moves forward: waits are counted, never slept."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.slept: list[float] = []

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.offset)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.offset += seconds


@pytest.fixture
def rig(demo_case: dict[str, Any], tmp_path: Path) -> Iterator[tuple[FakeGitHub, FaultProxy, GitHubClient, VirtualTime]]:
    with FakeGitHub(demo_case) as fake, FaultProxy(fake) as proxy:
        time = VirtualTime()
        connection = Connection(api_url=proxy.api_url, token="test-token-0123456789", timeout_s=1.0, retries=4)
        policy = RetryPolicy(BUDGET_S, max_attempts=5, sleep=time.sleep, clock=time.now, base_delay_s=0.5,
                             secrets=(connection.token,))
        client = GitHubClient(connection, policy=policy)
        yield fake, proxy, client, time
        client.close()


def report_67(client: GitHubClient, tmp_path: Path) -> Any:
    with Store(tmp_path / "store.sqlite3") as store:
        [verdict] = Triage(client, store).report(DEMO_REPO, 67).failed_jobs
    return verdict


def assert_correct(verdict: Any) -> None:
    assert verdict.facts.log_status is LogStatus.AVAILABLE
    assert verdict.verdict is Verdict.INFRA_FLAKE and verdict.rerun_recommended


def assert_needs_review(verdict: Any, status: LogStatus) -> None:
    assert verdict.facts.log_status is status
    assert verdict.verdict is Verdict.NEEDS_REVIEW and not verdict.rerun_recommended


def within_budget(client: GitHubClient, time: VirtualTime) -> None:
    assert sum(time.slept) == pytest.approx(client.policy.waited_s)
    assert client.policy.waited_s <= BUDGET_S


# --- faults the client recovers from ------------------------------------------------------------

RECOVERED = {
    "secondary 403 with retry-after": lambda f, p: f.inject_secondary_limit("GET", JOBS, 30, times=2),
    "secondary 429 with retry-after": lambda f, p: f.inject_secondary_limit("GET", JOBS, 7, status=429),
    "secondary 403 without retry-after": lambda f, p: f.inject_secondary_limit("GET", r"/pulls/67$", None),
    "429 without retry-after": lambda f, p: f.inject("GET", r"/pulls/67$", 429, body={"message": "Too many"}),
    "primary 403 resetting in 20 s": lambda f, p: f.inject_primary_limit("GET", r"/actions/runs$", 20),
    "primary 429 resetting in 20 s": lambda f, p: f.inject_primary_limit("GET", r"/actions/runs$", 20, status=429),
    "5xx burst": lambda f, p: [f.inject("GET", JOBS, status, times=1) for status in (502, 503, 500)],
    "5xx on a log": lambda f, p: f.inject("GET", LOGS, 503, times=2),
    "connection reset": lambda f, p: p.add("reset", "GET", r"/pulls/67$", times=2),
    "reset on the log host": lambda f, p: p.add("reset", "GET", LOG_BLOB),
    "stall past the timeout": lambda f, p: p.add("stall", "GET", r"/actions/runs$", seconds=1.6),
    "truncated body": lambda f, p: p.add("truncate", "GET", JOBS),
    "truncated JSON": lambda f, p: p.add("cut_json", "GET", JOBS, times=2),
    "truncated JSON of a pull request": lambda f, p: p.add("cut_json", "GET", r"/pulls/67$"),
    "truncated log": lambda f, p: p.add("truncate", "GET", LOG_BLOB),
    "corrupt gzip log once": lambda f, p: p.add("gzip_corrupt", "GET", LOG_BLOB),
    "secondary limit on a log": lambda f, p: f.inject_secondary_limit("GET", LOGS, 5),
}


@pytest.mark.parametrize("fault", list(RECOVERED), ids=list(RECOVERED))
def test_transient_faults_are_retried_to_the_right_report(rig, tmp_path, capfd, fault: str) -> None:
    fake, proxy, client, time = rig
    RECOVERED[fault](fake, proxy)
    assert_correct(report_67(client, tmp_path))
    within_budget(client, time)
    assert all(f.times == 0 for f in [*fake.faults, *proxy.faults]), "the fault was never hit"
    assert capfd.readouterr().err == ""


def test_rate_limit_waits_follow_githubs_rules(rig, tmp_path) -> None:
    fake, proxy, client, time = rig
    fake.inject_secondary_limit("GET", JOBS, 30)         # retry-after: exactly 30 s
    fake.inject_secondary_limit("GET", r"/pulls/67$", None)  # nothing named: a minute
    assert_correct(report_67(client, tmp_path))
    assert sorted(time.slept) == [30, 60]


def test_a_primary_limit_is_waited_out_until_its_reset(rig, tmp_path) -> None:
    fake, proxy, client, time = rig
    fake.inject_primary_limit("GET", r"/actions/runs$", 20)  # until x-ratelimit-reset (+1 s skew)
    assert_correct(report_67(client, tmp_path))
    assert len(time.slept) == 1 and 19 <= time.slept[0] <= 22, time.slept


# --- faults that leave one job without evidence -------------------------------------------------

MISSING_EVIDENCE = {
    "404 log (not there yet)": (lambda f, p: f.inject("GET", LOGS, 404, times=9), LogStatus.MISSING),
    "410 log (expired)": (lambda f, p: f.inject("GET", LOGS, 410, times=9), LogStatus.EXPIRED),
    "corrupt gzip log": (lambda f, p: p.add("gzip_corrupt", "GET", LOG_BLOB, times=9), LogStatus.UNREADABLE),
    "truncated gzip log": (lambda f, p: p.add("gzip_truncate", "GET", LOG_BLOB, times=9), LogStatus.UNREADABLE),
    "log truncated every time": (lambda f, p: p.add("truncate", "GET", LOG_BLOB, times=9), LogStatus.UNREADABLE),
    "log host resets every time": (lambda f, p: p.add("reset", "GET", LOG_BLOB, times=9), LogStatus.UNREADABLE),
    "5xx on the log every time": (lambda f, p: f.inject("GET", LOGS, 502, times=9), LogStatus.UNREADABLE),
}


@pytest.mark.parametrize("fault", list(MISSING_EVIDENCE), ids=list(MISSING_EVIDENCE))
def test_a_log_that_cannot_be_had_is_missing_evidence_not_a_crash(rig, tmp_path, capfd, fault: str) -> None:
    fake, proxy, client, time = rig
    inject, status = MISSING_EVIDENCE[fault]
    inject(fake, proxy)
    assert_needs_review(report_67(client, tmp_path), status)
    within_budget(client, time)
    assert capfd.readouterr().err == ""


def test_a_missing_log_is_asked_for_again_and_an_expired_one_is_not(rig, tmp_path) -> None:
    fake, proxy, client, time = rig
    fake.inject("GET", LOGS, 404, times=9)
    assert_needs_review(report_67(client, tmp_path), LogStatus.MISSING)
    fake.faults.clear()
    assert_correct(report_67(client, tmp_path))  # same store: the 404 was not cached
    fake.inject("GET", LOGS, 410, times=9)
    with Store(tmp_path / "other.sqlite3") as store:
        Triage(client, store).report(DEMO_REPO, 67)
        fake.faults.clear()
        fake.reset_log()
        [verdict] = Triage(client, store).report(DEMO_REPO, 67).failed_jobs
    assert verdict.facts.log_status is LogStatus.EXPIRED and not fake.served(path_regex=LOGS)


# --- faults past the budget ---------------------------------------------------------------------

@pytest.mark.parametrize("status", [403, 429])
def test_a_primary_limit_an_hour_away_stops_at_once_with_a_clear_error(rig, tmp_path, status: int) -> None:
    fake, proxy, client, time = rig
    fake.inject_primary_limit("GET", r"/actions/runs$", 3600, times=99, status=status)
    with pytest.raises(RateLimited) as caught:
        report_67(client, tmp_path)
    assert over_budget(caught.value) and time.slept == []
    line = caught.value.one_line()
    assert "wait budget" in line and "resets at" in line and "Nothing was rerun" in line
    assert "test-token" not in line and "\n" not in line


def test_secondary_limits_that_keep_coming_stop_within_the_budget(rig, tmp_path) -> None:
    fake, proxy, client, time = rig
    fake.inject_secondary_limit("GET", JOBS, None, times=99)  # 60, 120, 240 s...: the third passes 300
    with pytest.raises(RateLimited) as caught:
        report_67(client, tmp_path)
    assert over_budget(caught.value)
    assert time.slept == [60, 120] and client.policy.waited_s <= BUDGET_S


def test_persistent_5xx_on_a_list_is_one_clear_error(rig, tmp_path) -> None:
    fake, proxy, client, time = rig
    fake.inject("GET", JOBS, 502, times=99)
    with pytest.raises(GitHubError) as caught:
        report_67(client, tmp_path)
    assert "502" in caught.value.one_line() and len(time.slept) == client.policy.max_attempts - 1


def test_persistent_truncated_json_is_one_clear_error(rig, tmp_path) -> None:
    fake, proxy, client, time = rig
    proxy.add("cut_json", "GET", JOBS, times=99)
    with pytest.raises(GitHubError, match="could not be decoded"):
        report_67(client, tmp_path)
