"""GitHubWriter against the local GitHub fake over real HTTP, with every fault the fake can inject.

Time is a fake clock: `sleep` advances it instead of waiting, so rate-limit waits of seconds or
minutes cost nothing. Only client timeouts take real time (a 0.3 s timeout each).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from ci_triage import __version__
from ci_triage.demo import payloads
from ci_triage.demo.replay import FakeGitHub
from ci_triage.errors import (
    Forbidden,
    GitHubError,
    Gone,
    NoResponse,
    NotFound,
    RateLimited,
    SecondaryRateLimited,
    Unauthorized,
    Unavailable,
    UsageError,
)
from ci_triage.github.client import Connection
from ci_triage.github.writer import GitHubWriter

TOKEN = "ghs_Wr1t3rT0k3nF0rT35t5xxxxxxxxxxxxxxxxx"
REPO = "speco-demo/verl-speco"
TIMEOUT_S = 0.3


class FakeTime:
    """A clock that moves only when slept on, starting at the real now (GitHub's reset times are real)."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)
        self.sleeps: list[float] = []

    def clock(self) -> datetime:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += timedelta(seconds=seconds)


def _failed_run(case: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in case["runs"] if r["conclusion"] == "failure")


@pytest.fixture
def gh(demo_case: dict[str, Any]) -> Iterator[FakeGitHub]:
    case = {**demo_case, "collaborators": {"maintainer-m": "maintain", "triager-t": "triage", "admin-a": "admin"}}
    with FakeGitHub(case, token=TOKEN) as server:
        yield server


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def writer(gh: FakeGitHub, clock: FakeTime) -> Iterator[GitHubWriter]:
    connection = Connection(api_url=gh.base_url, token=TOKEN, timeout_s=TIMEOUT_S, retries=3)
    with GitHubWriter(connection, sleep=clock.sleep, clock=clock.clock, rng=random.Random(5)) as opened:
        yield opened


@pytest.fixture
def run_id(demo_case: dict[str, Any]) -> int:
    return _failed_run(demo_case)["id"]


def reruns(gh: FakeGitHub) -> list[Any]:
    return gh.served(path_regex=r"/rerun(-failed-jobs)?$", method="POST")


def attempt_of(gh: FakeGitHub, run_id: int) -> int:
    return max(gh.index.attempts[run_id])


# --- the happy paths ----------------------------------------------------------------------------

def test_run_is_the_latest_attempt_payload(writer: GitHubWriter, run_id: int) -> None:
    run = writer.run(REPO, run_id)
    assert run["id"] == run_id and run["status"] == "completed" and run["conclusion"] == "failure"
    assert {"run_attempt", "event", "head_sha"} <= set(run)


def test_rerun_failed_jobs_starts_the_next_attempt(gh: FakeGitHub, writer: GitHubWriter, run_id: int) -> None:
    writer.rerun_failed_jobs(REPO, run_id)
    run = writer.run(REPO, run_id)
    assert run["run_attempt"] == 2 and run["status"] == "queued" and run["conclusion"] is None
    assert run["previous_attempt_url"].endswith(f"/actions/runs/{run_id}/attempts/1")
    assert len(reruns(gh)) == 1 and reruns(gh)[0].status == 201 and reruns(gh)[0].body == {}


def test_rerun_job_requeues_that_job(gh: FakeGitHub, writer: GitHubWriter, demo_case: dict[str, Any],
                                     run_id: int) -> None:
    job = next(j for j in demo_case["jobs"] if j["run_id"] == run_id and j["conclusion"] == "failure")
    writer.rerun_job(REPO, job["id"])
    jobs = gh.index.jobs_by_attempt[(run_id, 2)]
    requeued = [j for j in jobs if j["name"] == job["name"]]
    assert len(requeued) == 1 and requeued[0]["status"] == "queued" and requeued[0]["id"] != job["id"]
    assert len(reruns(gh)) == 1


def test_a_run_that_is_still_going_cannot_be_rerun(gh: FakeGitHub, writer: GitHubWriter, run_id: int) -> None:
    writer.rerun_failed_jobs(REPO, run_id)
    with pytest.raises(Forbidden, match="already running"):
        writer.rerun_failed_jobs(REPO, run_id)
    assert attempt_of(gh, run_id) == 2


def test_comments_are_created_updated_listed_and_reacted_to(gh: FakeGitHub, writer: GitHubWriter) -> None:
    created = writer.create_comment(REPO, 67, "ci-triage: infra flake")
    assert created["user"]["login"] == "github-actions[bot]" and created["body"] == "ci-triage: infra flake"
    updated = writer.update_comment(REPO, created["id"], "ci-triage: infra flake, rerun requested")
    assert updated["id"] == created["id"] and updated["body"].endswith("rerun requested")
    writer.react(REPO, created["id"], "rocket")
    writer.react(REPO, created["id"], "rocket")  # GitHub answers 200 with the existing reaction
    listed = writer.comments(REPO, 67)
    assert [c["id"] for c in listed] == [created["id"]]
    assert listed[0]["reactions"]["rocket"] == 1 and listed[0]["reactions"]["total_count"] == 1
    statuses = [r.status for r in gh.served(path_regex="/reactions$", method="POST")]
    assert statuses == [201, 200]
    with pytest.raises(UsageError):
        writer.react(REPO, created["id"], "thumbsup")


def test_every_comment_body_is_redacted_and_sanitised_on_its_way_out(gh: FakeGitHub, writer: GitHubWriter) -> None:
    """Replies are built from text we did not all write (a /rerun's reasons, a commenter's login)."""
    leaked = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    created = writer.create_comment(REPO, 67, f"nothing was rerun: {leaked}\x1b]52;c;ZXZpbA==\x07")
    updated = writer.update_comment(REPO, created["id"], f"still {leaked}")
    for body in (created["body"], updated["body"], *(r.body["body"] for r in gh.served(path_regex="/comments")
                                                     if isinstance(r.body, dict))):
        assert leaked not in body and "\x1b" not in body


def test_comments_follow_the_link_header_over_pages(demo_case: dict[str, Any], clock: FakeTime) -> None:
    bot = payloads.bot_user()
    start = datetime(2026, 5, 12, 14, 0, tzinfo=UTC)
    seeded = [payloads.issue_comment(REPO, 67, 4_000_000_000 + n, f"comment {n}", bot, start + timedelta(minutes=n))
              for n in range(250)]
    with FakeGitHub({**demo_case, "comments": {"67": seeded}}, token=TOKEN) as server:
        with GitHubWriter(Connection(server.base_url, TOKEN), sleep=clock.sleep, clock=clock.clock) as paging:
            listed = paging.comments(REPO, 67)
        assert [c["body"] for c in listed] == [f"comment {n}" for n in range(250)]
        pages = server.served(path_regex=r"/issues/67/comments$")
        assert len(pages) == 3 and pages[0].query["per_page"] == ["100"]
        assert all(p.path.startswith("/repositories/") for p in pages[1:])  # GitHub's Link form


@pytest.mark.parametrize("login,role", [("maintainer-m", "maintain"), ("triager-t", "triage"),
                                        ("admin-a", "admin"), ("someone-else", "read")])
def test_permission_is_the_fine_grained_role(writer: GitHubWriter, login: str, role: str) -> None:
    answer = writer.permission(REPO, login)  # the base level decides; the role only informs
    assert (answer.role_name, answer.permission) == (role, payloads.ROLE_PERMISSION[role])


def test_every_request_carries_githubs_headers(gh: FakeGitHub, clock: FakeTime, run_id: int) -> None:
    seen: list[httpx.Request] = []
    with httpx.Client(timeout=5, event_hooks={"request": [seen.append]}) as http:
        writer = GitHubWriter(Connection(gh.base_url, TOKEN), http=http, sleep=clock.sleep, clock=clock.clock)
        writer.rerun_failed_jobs(REPO, run_id)
        writer.create_comment(REPO, 67, "hello")
        writer.close()  # the injected client belongs to the caller
        assert not http.is_closed
    assert len(seen) == 3
    for request in seen:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["x-github-api-version"] == "2022-11-28"
        assert request.headers["accept"] == "application/vnd.github+json"
        assert request.headers["user-agent"] == f"ci-triage/{__version__}"
        assert str(request.url).startswith(gh.base_url)


def test_writes_are_spaced_by_the_minimum_interval(gh: FakeGitHub, clock: FakeTime) -> None:
    writes: list[datetime] = []

    def on_request(request: httpx.Request) -> None:
        if request.method != "GET":
            writes.append(clock.now)

    with httpx.Client(timeout=5, event_hooks={"request": [on_request]}) as http:
        writer = GitHubWriter(Connection(gh.base_url, TOKEN), http=http, sleep=clock.sleep, clock=clock.clock,
                              min_write_interval_s=1.5)
        comment = writer.create_comment(REPO, 67, "one")
        writer.update_comment(REPO, comment["id"], "two")
        writer.react(REPO, comment["id"], "eyes")
        writer.comments(REPO, 67)  # reads are not spaced
    gaps = [(b - a).total_seconds() for a, b in zip(writes, writes[1:])]
    assert len(writes) == 3 and all(gap >= 1.5 for gap in gaps)
    assert clock.sleeps == pytest.approx([1.5, 1.5])


# --- faults, one at a time ----------------------------------------------------------------------

@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_error_then_success_on_a_read(gh: FakeGitHub, writer: GitHubWriter, clock: FakeTime,
                                             run_id: int, status: int) -> None:
    gh.inject("GET", rf"/actions/runs/{run_id}$", status, times=2)
    assert writer.run(REPO, run_id)["id"] == run_id
    assert [r.status for r in gh.served(path_regex=rf"/actions/runs/{run_id}$")] == [status, status, 200]
    assert len(clock.sleeps) == 2 and clock.sleeps[0] <= 1.0 and clock.sleeps[1] <= 2.0


def test_server_errors_that_persist_give_up_with_unavailable(gh: FakeGitHub, writer: GitHubWriter,
                                                             clock: FakeTime, run_id: int) -> None:
    gh.inject("GET", rf"/actions/runs/{run_id}$", 503, times=10)
    with pytest.raises(Unavailable) as caught:
        writer.run(REPO, run_id)
    assert caught.value.status == 503
    assert len(gh.served(path_regex=rf"/actions/runs/{run_id}$")) == 4  # retries=3
    assert len(clock.sleeps) == 3


def test_timeout_then_success_on_a_read(gh: FakeGitHub, writer: GitHubWriter, clock: FakeTime, run_id: int) -> None:
    gh.inject_delay("GET", rf"/actions/runs/{run_id}$", seconds=TIMEOUT_S * 3)
    assert writer.run(REPO, run_id)["id"] == run_id
    assert len(gh.served(path_regex=rf"/actions/runs/{run_id}$")) == 2 and len(clock.sleeps) == 1


def test_connection_reset_then_success_on_a_read(gh: FakeGitHub, writer: GitHubWriter, run_id: int) -> None:
    gh.inject_reset("GET", rf"/actions/runs/{run_id}$")
    assert writer.run(REPO, run_id)["id"] == run_id
    assert [r.status for r in gh.served(path_regex=rf"/actions/runs/{run_id}$")] == [0, 200]


def test_timeout_on_the_rerun_post_does_not_rerun_twice(gh: FakeGitHub, writer: GitHubWriter, run_id: int) -> None:
    # GitHub acts on the rerun, the answer never arrives in time: the writer re-reads the run.
    gh.inject_delay("POST", r"/rerun-failed-jobs$", seconds=TIMEOUT_S * 3)
    writer.rerun_failed_jobs(REPO, run_id)
    assert len(reruns(gh)) == 1
    assert attempt_of(gh, run_id) == 2


def test_timeout_on_a_job_rerun_does_not_rerun_twice(gh: FakeGitHub, writer: GitHubWriter,
                                                     demo_case: dict[str, Any], run_id: int) -> None:
    job = next(j for j in demo_case["jobs"] if j["run_id"] == run_id and j["conclusion"] == "failure")
    gh.inject_delay("POST", r"/jobs/\d+/rerun$", seconds=TIMEOUT_S * 3)
    writer.rerun_job(REPO, job["id"])
    assert len(reruns(gh)) == 1 and attempt_of(gh, run_id) == 2


def test_reset_after_the_rerun_took_effect_is_not_repeated(gh: FakeGitHub, writer: GitHubWriter, run_id: int) -> None:
    gh.inject_reset("POST", r"/rerun-failed-jobs$", processed=True)
    writer.rerun_failed_jobs(REPO, run_id)
    assert len(reruns(gh)) == 1 and attempt_of(gh, run_id) == 2


def test_reset_before_the_rerun_took_effect_is_repeated_once(gh: FakeGitHub, writer: GitHubWriter,
                                                             run_id: int) -> None:
    gh.inject_reset("POST", r"/rerun-failed-jobs$", processed=False)
    writer.rerun_failed_jobs(REPO, run_id)
    assert [r.status for r in reruns(gh)] == [0, 201]
    assert attempt_of(gh, run_id) == 2  # one rerun, not two


@pytest.mark.parametrize("status", [500, 502, 504])
def test_an_ambiguous_server_error_on_the_rerun_is_checked_before_repeating(
        gh: FakeGitHub, writer: GitHubWriter, run_id: int, status: int) -> None:
    gh.inject("POST", r"/rerun-failed-jobs$", status)
    writer.rerun_failed_jobs(REPO, run_id)
    assert [r.status for r in reruns(gh)] == [status, 201]
    # before the POST, and again to see that the first one did nothing
    assert len(gh.served(path_regex=rf"/actions/runs/{run_id}$", method="GET")) == 2
    assert attempt_of(gh, run_id) == 2


def test_a_503_on_the_rerun_is_repeated_without_a_check(gh: FakeGitHub, writer: GitHubWriter, run_id: int) -> None:
    gh.inject("POST", r"/rerun-failed-jobs$", 503)
    writer.rerun_failed_jobs(REPO, run_id)
    assert [r.status for r in reruns(gh)] == [503, 201]
    assert len(gh.served(path_regex=rf"/actions/runs/{run_id}$", method="GET")) == 1


def test_primary_limit_resetting_soon_is_waited_out(gh: FakeGitHub, writer: GitHubWriter, clock: FakeTime,
                                                    run_id: int) -> None:
    gh.inject_primary_limit("GET", rf"/actions/runs/{run_id}$", reset_in_s=2)
    assert writer.run(REPO, run_id)["id"] == run_id
    assert len(clock.sleeps) == 1 and 1.0 <= clock.sleeps[0] <= 4.0
    assert [r.status for r in gh.served(path_regex=rf"/actions/runs/{run_id}$")] == [403, 200]


def test_primary_limit_resetting_far_away_raises_with_the_reset(gh: FakeGitHub, writer: GitHubWriter,
                                                               clock: FakeTime, run_id: int) -> None:
    gh.inject_primary_limit("POST", r"/rerun-failed-jobs$", reset_in_s=3600)
    with pytest.raises(RateLimited) as caught:
        writer.rerun_failed_jobs(REPO, run_id)
    assert type(caught.value) is RateLimited
    assert caught.value.reset_at is not None
    # The fake stamps the reset from the wall clock when it answers; the test clock started earlier,
    # by however long a loaded machine took to get there.
    assert 3500 < (caught.value.reset_at - clock.now).total_seconds() <= 3600 + 60
    assert clock.sleeps == [] and len(reruns(gh)) == 1 and attempt_of(gh, run_id) == 1


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_limit_with_retry_after_is_honoured(gh: FakeGitHub, writer: GitHubWriter, clock: FakeTime,
                                                      status: int) -> None:
    gh.inject_secondary_limit("POST", r"/issues/67/comments$", retry_after_s=30, status=status)
    comment = writer.create_comment(REPO, 67, "after the limit")
    assert comment["body"] == "after the limit"
    assert clock.sleeps == [30.0]
    assert [r.status for r in gh.served(path_regex=r"/issues/67/comments$", method="POST")] == [status, 201]
    assert len(writer.comments(REPO, 67)) == 1


def test_secondary_limit_without_retry_after_waits_a_minute(gh: FakeGitHub, writer: GitHubWriter,
                                                            clock: FakeTime, run_id: int) -> None:
    gh.inject_secondary_limit("POST", r"/rerun-failed-jobs$", retry_after_s=None)
    writer.rerun_failed_jobs(REPO, run_id)
    assert clock.sleeps == [60.0] and attempt_of(gh, run_id) == 2


def test_secondary_limit_that_persists_raises(gh: FakeGitHub, writer: GitHubWriter, run_id: int) -> None:
    gh.inject_secondary_limit("GET", rf"/actions/runs/{run_id}$", retry_after_s=None, times=10)
    with pytest.raises(SecondaryRateLimited):
        writer.run(REPO, run_id)


@pytest.mark.parametrize("status,error", [(404, NotFound), (410, Gone)])
def test_missing_things_are_reported_not_retried(gh: FakeGitHub, writer: GitHubWriter, clock: FakeTime,
                                                 status: int, error: type[Exception]) -> None:
    gh.inject("GET", r"/issues/67/comments$", status)
    with pytest.raises(error):
        writer.comments(REPO, 67)
    assert clock.sleeps == [] and len(gh.served(path_regex=r"/issues/67/comments$")) == 1


def test_unknown_ids_are_not_found(writer: GitHubWriter) -> None:
    with pytest.raises(NotFound):
        writer.run(REPO, 1)
    with pytest.raises(NotFound):
        writer.rerun_job(REPO, 1)
    with pytest.raises(NotFound):
        writer.update_comment(REPO, 1, "x")


def test_timeout_on_create_comment_finds_the_comment_instead_of_posting_twice(
        gh: FakeGitHub, writer: GitHubWriter) -> None:
    gh.inject_delay("POST", r"/issues/67/comments$", seconds=TIMEOUT_S * 3)
    comment = writer.create_comment(REPO, 67, "exactly once")
    assert comment["body"] == "exactly once"
    assert len(gh.served(path_regex=r"/issues/67/comments$", method="POST")) == 1
    assert [c["body"] for c in writer.comments(REPO, 67)] == ["exactly once"]


def test_timeouts_on_idempotent_writes_are_repeated(gh: FakeGitHub, writer: GitHubWriter) -> None:
    comment = writer.create_comment(REPO, 67, "v1")
    gh.inject_delay("PATCH", r"/issues/comments/\d+$", seconds=TIMEOUT_S * 3)
    gh.inject_reset("POST", r"/reactions$", processed=True)
    assert writer.update_comment(REPO, comment["id"], "v2")["body"] == "v2"
    writer.react(REPO, comment["id"], "eyes")
    assert [r.status for r in gh.served(path_regex=r"/reactions$", method="POST")] == [0, 200]


# --- faults combined ----------------------------------------------------------------------------

def test_limit_then_timeout_on_the_rerun_still_reruns_once(gh: FakeGitHub, writer: GitHubWriter,
                                                           clock: FakeTime, run_id: int) -> None:
    gh.inject_secondary_limit("POST", r"/rerun-failed-jobs$", retry_after_s=5)
    gh.inject_delay("POST", r"/rerun-failed-jobs$", seconds=TIMEOUT_S * 3)
    writer.rerun_failed_jobs(REPO, run_id)
    assert [r.status for r in reruns(gh)] == [403, 201]  # the 201 came too late for the client
    assert attempt_of(gh, run_id) == 2
    assert 5.0 in clock.sleeps


def _failed_job(demo_case: dict[str, Any], run_id: int) -> dict[str, Any]:
    return next(j for j in demo_case["jobs"] if j["run_id"] == run_id and j["conclusion"] == "failure")


def test_timeout_on_the_rerun_and_errors_on_the_check_still_rerun_once(
        gh: FakeGitHub, writer: GitHubWriter, demo_case: dict[str, Any], run_id: int) -> None:
    # rerun_job reads the job first, so the run is read only to check after the timeout.
    gh.inject_delay("POST", r"/jobs/\d+/rerun$", seconds=TIMEOUT_S * 3)
    gh.inject("GET", rf"/actions/runs/{run_id}$", 502, times=2)
    writer.rerun_job(REPO, _failed_job(demo_case, run_id)["id"])
    assert [r.status for r in gh.served(path_regex=rf"/actions/runs/{run_id}$")] == [502, 502, 200]
    assert len(reruns(gh)) == 1 and attempt_of(gh, run_id) == 2


def test_a_check_that_cannot_be_made_reports_the_rerun_as_unknown(
        gh: FakeGitHub, writer: GitHubWriter, demo_case: dict[str, Any], run_id: int) -> None:
    gh.inject_reset("POST", r"/jobs/\d+/rerun$", processed=True)
    gh.inject_primary_limit("GET", rf"/actions/runs/{run_id}$", reset_in_s=3600)
    with pytest.raises(NoResponse, match="unknown"):
        writer.rerun_job(REPO, _failed_job(demo_case, run_id)["id"])
    assert len(reruns(gh)) == 1


def test_server_errors_limits_and_resets_mixed_on_reads(gh: FakeGitHub, writer: GitHubWriter, clock: FakeTime,
                                                        run_id: int) -> None:
    path = rf"/actions/runs/{run_id}$"
    gh.inject("GET", path, 502)
    gh.inject_secondary_limit("GET", path, retry_after_s=2)
    gh.inject_reset("GET", path)
    assert writer.run(REPO, run_id)["id"] == run_id
    assert [r.status for r in gh.served(path_regex=path)] == [502, 403, 0, 200]
    assert clock.sleeps[1] == 2.0


# --- secrets ------------------------------------------------------------------------------------

def test_the_token_never_appears_in_errors_or_logs(gh: FakeGitHub, writer: GitHubWriter, clock: FakeTime,
                                                   run_id: int, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []

    def attempt(action: Any) -> None:
        try:
            action()
        except GitHubError as error:
            errors.append(error)

    # A body that echoes the token, a wrong token, limits, timeouts, resets and server errors.
    gh.inject("POST", r"/issues/67/comments$", 422, body={"message": f"Invalid token {TOKEN} in request"})
    attempt(lambda: writer.create_comment(REPO, 67, "x"))
    gh.inject("GET", r"/collaborators/", 500, times=10, body={"message": f"failed for Bearer {TOKEN}"})
    attempt(lambda: writer.permission(REPO, "someone"))
    gh.inject_primary_limit("GET", rf"/actions/runs/{run_id}$", reset_in_s=3600)
    attempt(lambda: writer.run(REPO, run_id))
    gh.inject_delay("GET", rf"/actions/runs/{run_id}$", seconds=TIMEOUT_S * 3, times=4)
    attempt(lambda: writer.run(REPO, run_id))
    gh.inject_reset("POST", r"/rerun-failed-jobs$", processed=True)
    attempt(lambda: writer.rerun_failed_jobs(REPO, run_id))
    wrong = GitHubWriter(Connection(gh.base_url, TOKEN + "-revoked"), sleep=clock.sleep, clock=clock.clock)
    attempt(lambda: wrong.run(REPO, run_id))
    wrong.close()

    assert len(errors) == 5
    assert {type(e) for e in errors} >= {GitHubError, Unavailable, RateLimited, Unauthorized}
    for error in errors:
        for text in (str(error), repr(error), error.one_line(), str(error.__cause__), str(error.__context__)):
            assert TOKEN not in text
    assert any("Invalid token ***" in str(e) for e in errors)
    assert caplog.records, "retries are logged"
    for record in caplog.records:
        assert TOKEN not in record.getMessage()
    assert TOKEN not in repr(writer) and TOKEN not in repr(writer.connection)
