"""Issue 12 item 5: one sticky comment per identity however many triages write, the cooldown across
identities, and the identity itself (GET /user, or the author of what we wrote).

The concurrent trials run real `ci-triage` subprocesses (tests/converge_trials.py); the default suite
runs one trial of two cells, `CI_TRIAGE_CONVERGE_REPS=N` runs N of every cell, and
`benchmarks/converge.py` counts 20 or more.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ci_triage.act import Actor
from ci_triage.core.decide.comment_state import MARKER, CommentState, RerunRecord, parse_comment, serialize_state
from ci_triage.core.github.events import parse_issue_comment
from ci_triage.demo import payloads
from ci_triage.demo.replay import FakeGitHub
from ci_triage.github.client import Connection, GitHubClient
from ci_triage.github.writer import GitHubWriter
from ci_triage.service import Triage
from ci_triage.store import Store
from tests.conftest import DEMO_REPO
from tests.converge_trials import IDENTITIES, PAT, SCENARIOS, trial
from tests.test_act import case, comment_event, latest_runs, pr_of_run, reruns  # noqa: F401 - `case` is a fixture

REPS = int(os.environ.get("CI_TRIAGE_CONVERGE_REPS", "0"))
CELLS = [(s, i) for s in SCENARIOS for i in IDENTITIES] if REPS else [("five", "actions"), ("bot", "pat")]
MIA = payloads.user("maintainer-mia", 7_700_001)


@pytest.mark.parametrize("scenario,identity", CELLS)
def test_concurrent_writers_end_with_one_rerun_and_one_sticky_comment(scenario, identity):
    for _ in range(max(REPS, 1)):
        result = trial(scenario, identity)
        assert result.failures == []
        assert (result.reruns, result.stickies, result.records) == (1, 1, 1), result


def actor(fake: FakeGitHub, store: Store, token: str, settle_s: float = 0.0) -> Actor:
    connection = Connection(fake.base_url, token, retries=2, backoff_s=0.01)
    writer = GitHubWriter(connection, sleep=lambda s: None, min_write_interval_s=0)
    return Actor(Triage(GitHubClient(connection, sleep=lambda s: None), store), writer, sleep=lambda s: None,
                 settle_s=settle_s)


def _sticky_body(state: CommentState) -> str:
    return f"{MARKER}\n{serialize_state(state)}\n## ci-triage: PR #67\n"


def _seed(case: dict[str, Any], *comments: tuple[int, str, dict, datetime, str]) -> None:  # noqa: F811
    case.setdefault("comments", {})["67"] = [
        payloads.issue_comment(DEMO_REPO, 67, comment_id, body, author, created, author_association=association)
        for comment_id, body, author, created, association in comments]


def _comments(fake: FakeGitHub) -> list[dict]:
    with fake._state:
        return list(fake._comments_of(67))


def _failed_run(case):  # noqa: F811
    return next(r for r in latest_runs(case) if pr_of_run(case, r) == 67 and r["conclusion"] == "failure")


def test_a_personal_token_learns_its_login_from_get_user_and_writes_its_own_comment(case, tmp_path):  # noqa: F811
    bot_state = CommentState(last_bot_rerun_at="2026-05-12T12:00:00Z")
    _seed(case, (11, _sticky_body(bot_state), payloads.bot_user(), datetime(2026, 5, 12, 12, tzinfo=UTC), "NONE"))
    with FakeGitHub(case, users={PAT: MIA}) as fake, Store(tmp_path / "s.sqlite3") as store:
        one = actor(fake, store, PAT)
        outcome = one.triage_run(DEMO_REPO, _failed_run(case)["id"], apply=True)
        assert one.identity() == "maintainer-mia"
        assert len(fake.served(path_regex=r"^/user$")) == 1
        comments = _comments(fake)
    bots, mine = [c for c in comments if c["id"] == 11], [c for c in comments if c["id"] != 11]
    assert outcome.comment == "created" and len(reruns(fake)) == 1
    assert bots[0]["body"] == _sticky_body(bot_state)  # another identity's comment: read, never edited
    [sticky] = mine
    assert sticky["user"]["login"] == "maintainer-mia"
    state = parse_comment(sticky["body"])
    assert state.last_bot_rerun_at == "2026-05-12T12:00:00Z"  # the bot's state was read and carried over


def test_the_rerun_cooldown_holds_across_identities(case, tmp_path):  # noqa: F811
    """A `/rerun` answered through a personal token starts the cooldown for the Actions bot, and back."""
    recent = (datetime.now(UTC) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    by_mia = _sticky_body(CommentState(last_bot_rerun_at=recent))
    event = parse_issue_comment(comment_event(case, 67, "khazic", "/rerun"))  # puts the comment in the case
    case["comments"]["67"].insert(0, payloads.issue_comment(DEMO_REPO, 67, 11, by_mia, MIA,
                                                            datetime(2026, 5, 12, 12, tzinfo=UTC),
                                                            author_association="COLLABORATOR"))
    with FakeGitHub(case, users={PAT: MIA}) as fake, Store(tmp_path / "s.sqlite3") as store:
        outcome = actor(fake, store, "ghs_installation").handle_comment(event)
        assert reruns(fake) == [] and outcome.reruns == []
        assert any("ran less than" in note for note in outcome.notes)
        assert next(c for c in _comments(fake) if c["id"] == 11)["body"] == by_mia


def test_a_duplicate_of_ours_is_merged_into_the_oldest_and_deleted(case, tmp_path):  # noqa: F811
    """What a race (or a writer that died) left: two sticky comments by our identity, each with a record."""
    run = _failed_run(case)
    old = datetime.now(UTC) - timedelta(hours=2)
    first = CommentState().with_rerun(RerunRecord(1, 1, (), "failed", "2026-05-12T10:00:00Z", "auto", "a"))
    second = CommentState().with_rerun(RerunRecord(2, 1, (), "failed", "2026-05-12T10:00:01Z", "auto", "b"))
    _seed(case, (11, _sticky_body(first), payloads.bot_user(), old, "NONE"),
          (12, _sticky_body(second), payloads.bot_user(), old + timedelta(seconds=1), "NONE"))
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        outcome = actor(fake, store, "ghs_installation").triage_run(DEMO_REPO, run["id"], apply=True)
        assert fake.served(path_regex=r"^/user$") == []  # an installation token: GET /user would be 403
        assert [r.status for r in fake.served(path_regex=r"^/graphql$")] == [200]
        [kept] = [c for c in _comments(fake) if c["body"].startswith(MARKER)]
        deleted = fake.served(method="DELETE")
    assert outcome.comment == "updated" and kept["id"] == 11
    assert [d.status for d in deleted] == [204]
    state = parse_comment(kept["body"])
    assert {r.run_id for r in state.runs if r.reruns} == {1, 2, run["id"]}


@pytest.mark.parametrize("graphql", [True, False], ids=["graphql-viewer", "first-comment"])
def test_an_app_token_learns_its_bot_login(case, tmp_path, graphql):  # noqa: F811
    """An App's token comments as `<slug>[bot]`, which GET /user will not tell (403): GraphQL's viewer
    does, or else the comment it creates; the older comment of that App is then the one kept."""
    app = payloads.bot_user("triage-app[bot]", 99_000_001)
    older = CommentState().with_rerun(RerunRecord(1, 1, (), "failed", "2026-05-12T10:00:00Z", "bot:khazic", "a"))
    _seed(case, (11, _sticky_body(older), app, datetime.now(UTC) - timedelta(minutes=1), "NONE"))
    with FakeGitHub(case, bot_login="triage-app[bot]") as fake, Store(tmp_path / "s.sqlite3") as store:
        if not graphql:
            fake.inject("POST", r"^/graphql$", 404)  # e.g. an Enterprise Server without it
        one = actor(fake, store, "test-token")
        outcome = one.triage_run(DEMO_REPO, _failed_run(case)["id"], apply=True)
        assert [r.status for r in fake.served(path_regex=r"^/user$")] == [403]
        assert one.identity() == "triage-app[bot]"
        [kept] = [c for c in _comments(fake) if c["body"].startswith(MARKER)]
        deleted = fake.served(method="DELETE")
    assert kept["id"] == 11 and parse_comment(kept["body"]).run(1) is not None
    # Knowing its login up front, it edits its comment; learning it from its own new one, it merges and deletes.
    assert (outcome.comment, len(deleted)) == (("updated", 0) if graphql else ("merged", 1))


def test_the_actions_token_asks_graphql_who_it_is_not_get_user(case, tmp_path):  # noqa: F811
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        one = actor(fake, store, "ghs_installation")
        assert one.identity() == "github-actions[bot]"
        assert fake.served(path_regex=r"^/user$") == [] and len(fake.served(path_regex=r"^/graphql$")) == 1
