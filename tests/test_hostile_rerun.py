"""Issue 12 item 7: bots, shown commands and repeated refusals never make ci-triage act or talk."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ci_triage.core.github.events import parse_issue_comment, parse_rerun_command
from ci_triage.demo.replay import FakeGitHub
from ci_triage.github.client import Connection
from ci_triage.github.writer import GitHubWriter
from ci_triage.store import Store
from tests.conftest import DEMO_REPO
from tests.test_act import actor_for, case, comment_event, reruns  # noqa: F401 - `case` is a fixture


@pytest.mark.parametrize("body", [
    "    /rerun",  # an indented code block (CommonMark 4.4)
    "\t/rerun",
    "\n\n     /rerun --force\n",
    "```\n/rerun\n```",  # a fenced code block (CommonMark 4.5)
    "~~~\n/rerun\n~~~",
    "> /rerun",  # a quote from a reply
    ">/rerun",
])
def test_a_shown_command_is_not_a_command(body):
    assert parse_rerun_command(body) is None


@pytest.mark.parametrize("body", ["/rerun", "  /rerun", "\r\n/rerun --force\r\nbecause the runner died"])
def test_a_given_command_still_is(body):
    assert parse_rerun_command(body) is not None


def _event(case, commenter: str, body: str = "/rerun", user_type: str = "User"):  # noqa: F811
    payload = comment_event(case, 67, commenter, body)
    payload["comment"]["user"]["type"] = user_type
    return parse_issue_comment(payload)


def test_the_user_type_is_read_from_the_payload(case):  # noqa: F811
    assert _event(case, "renovate", user_type="Bot").by_bot
    assert _event(case, "some-app[bot]").by_bot
    assert not _event(case, "khazic").by_bot


@pytest.mark.parametrize("login,user_type", [("maintainer-mia", "Bot"), ("deploy[bot]", "User")])
def test_a_bot_with_write_permission_never_triggers_a_rerun(case, tmp_path, login, user_type):  # noqa: F811
    case["collaborators"] = {login: "write"}
    event = _event(case, login, user_type=user_type)
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        outcome = actor_for(fake, store).handle_comment(event)
        assert reruns(fake) == [] and outcome.reruns == []
        assert fake.served(method="POST") == []  # no reply, no reaction


def test_an_indented_rerun_from_a_maintainer_does_nothing(case, tmp_path):  # noqa: F811
    event = _event(case, "maintainer-mia", "    /rerun --force")
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        actor_for(fake, store).handle_comment(event)
        assert reruns(fake) == [] and fake.served(method="POST") == []


def _replies(fake) -> list[dict]:
    with GitHubWriter(Connection(fake.base_url, "t"), min_write_interval_s=0) as writer:
        return [c for c in writer.comments(DEMO_REPO, 67) if c["user"]["login"] == "github-actions[bot]"]


def test_refusals_are_answered_once_per_user_per_cooldown(case, tmp_path):  # noqa: F811
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        actor = actor_for(fake, store)
        for _ in range(5):
            actor.handle_comment(_event(case, "drive-by-dan"))
        actor.handle_comment(_event(case, "another-outsider"))
        replies = _replies(fake)
    assert len(replies) == 2
    assert sum("@drive-by-dan" in r["body"] for r in replies) == 1


def test_a_refusal_is_answered_again_after_the_cooldown(case, tmp_path):  # noqa: F811
    from ci_triage.core.decide.refusals import may_answer_refusal, refusal_reply

    answered = [{"user": {"login": "github-actions[bot]"}, "created_at": "2026-05-12T13:00:00Z",
                 "body": refusal_reply("drive-by-dan", "@drive-by-dan, no.")}]
    assert not may_answer_refusal(answered, "drive-by-dan", datetime(2026, 5, 12, 13, 30, tzinfo=UTC))
    assert may_answer_refusal(answered, "drive-by-dan", datetime(2026, 5, 12, 14, 1, tzinfo=UTC))
    assert may_answer_refusal(answered, "someone-else", datetime(2026, 5, 12, 13, 30, tzinfo=UTC))
    # Anyone can paste the marker; only our own comments count.
    pasted = [{**answered[0], "user": {"login": "drive-by-dan"}}]
    assert may_answer_refusal(pasted, "drive-by-dan", datetime(2026, 5, 12, 13, 30, tzinfo=UTC))


def test_a_flood_of_rerun_during_the_cooldown_gets_one_reply(case, tmp_path):  # noqa: F811
    """The PR's author may ask, but during the cooldown each further /rerun is refused: answered once."""
    event = _event(case, "khazic")  # the /rerun comment exists before the fake starts
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        actor = actor_for(fake, store)
        for _ in range(4):
            actor.handle_comment(event)
        replies = _replies(fake)
    assert len(reruns(fake)) == 1
    assert sum(r["body"].startswith("@khazic, rerunning") for r in replies) == 1
    assert sum("ran less than" in r["body"] for r in replies) == 1
