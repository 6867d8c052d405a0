"""The pure `/rerun` decision, table-driven: who asked, what GitHub says of their access, the sticky
comment's cooldown -> allowed (with or without --force) or refused, and why. No server."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ci_triage.core.decide.actions import BOT_COOLDOWN, authorize, cooldown_refusal, rerun_reply, screen_comment
from ci_triage.core.decide.comment_state import CommentState
from ci_triage.core.decide.rerun import RerunPlan
from ci_triage.core.github.events import CommentEvent, RerunCommand, parse_issue_comment
from ci_triage.model import Access, CollaboratorPermission

EXAMPLES = json.loads((Path(__file__).parents[1] / "github_schemas" / "webhook-examples.json").read_text())
AUTHOR = "author-ann"


def comment(by: str | None = "someone", body: str = "/rerun", *, kind: str = "User", action: str = "created",
            on_pull: bool = True) -> CommentEvent:
    return CommentEvent(action, "o/r", 67, on_pull, 1, body, by, "NONE", AUTHOR, kind)


def known(permission: str, role_name: str | None = None) -> CollaboratorPermission:
    return CollaboratorPermission(Access.KNOWN, permission, role_name or permission)


NOT_COLLABORATOR = CollaboratorPermission(Access.NOT_COLLABORATOR)
CANNOT_TELL = CollaboratorPermission(Access.UNKNOWN, detail="Resource not accessible by integration")
PLAIN, FORCE = RerunCommand(force=False), RerunCommand(force=True)

AUTHORIZE_CASES = {
    # name: (commenter, command, permission, allowed, force, a phrase of the note or reply)
    "the PR's author": (AUTHOR, PLAIN, known("read"), True, False, None),
    "the PR's author, not a collaborator (404)": (AUTHOR, PLAIN, NOT_COLLABORATOR, True, False, None),
    "the PR's author, the token cannot tell (403)": (AUTHOR, PLAIN, CANNOT_TELL, True, False, None),
    "an outsider (read)": ("drive-by-dan", PLAIN, known("read"), False, False, "has read access"),
    "an outsider who is no collaborator (404)": ("drive-by-dan", PLAIN, NOT_COLLABORATOR, False, False,
                                                 "is not a collaborator"),
    "an outsider the token cannot judge (403)": ("drive-by-dan", PLAIN, CANNOT_TELL, False, False,
                                                 "Resource not accessible by integration"),
    "a triager (triage shows as read)": ("triager-tom", PLAIN, known("read", "triage"), False, False, "read"),
    "a maintainer with write": ("maintainer-mia", PLAIN, known("write"), True, False, None),
    "a maintainer --force": ("maintainer-mia", FORCE, known("write"), True, True, None),
    "an admin --force": ("admin-ada", FORCE, known("admin"), True, True, None),
    "a custom role with write access --force": ("ci-reviewer", FORCE, known("write", "ci-reviewer"), True, True, None),
    "a custom role named like a maintainer without write": ("fake-maint", FORCE, known("read", "maintain"), False,
                                                            False, "has read access"),
    "--force by the author, who is no maintainer": (AUTHOR, FORCE, known("read"), True, False,
                                                    "--force is for maintainers"),
    "--force by the author, the token cannot tell": (AUTHOR, FORCE, CANNOT_TELL, True, False,
                                                     "cannot tell whether @author-ann is one"),
}


@pytest.mark.parametrize("by,command,permission,allowed,force,phrase", AUTHORIZE_CASES.values(),
                         ids=AUTHORIZE_CASES.keys())
def test_who_may_ask_for_a_rerun(by, command, permission, allowed, force, phrase):
    decision = authorize(comment(by), command, permission)
    assert (decision.allowed, decision.force) == (allowed, force)
    said = " ".join(decision.notes) + " " + (decision.reply or "")
    if phrase:
        assert phrase in said
    if not allowed:
        assert decision.reply and decision.reply.startswith(f"@{by},") and "nothing was rerun" in decision.reply
        assert decision.audit["by"] == by
    else:
        assert decision.reply is None


SCREEN_CASES = {
    "a /rerun on a PR": (comment(), True, None),
    "not a command": (comment(body="please rerun"), False, "Not a /rerun"),
    "a /rerun on an issue": (comment(on_pull=False), False, "Not a /rerun"),
    "an edited comment": (comment(action="edited"), False, "Not a /rerun"),
    "a bot": (comment("github-actions[bot]", kind="Bot"), False, "is a bot"),
    "a deleted user": (comment(None), False, "deleted"),
}


@pytest.mark.parametrize("event,is_command,note", SCREEN_CASES.values(), ids=SCREEN_CASES.keys())
def test_which_comments_are_requests(event, is_command, note):
    screening = screen_comment(event)
    assert (screening.command is not None) == is_command
    if note:
        assert note in screening.note


def test_cooldown_one_rerun_command_per_pr_per_ten_minutes():
    at = datetime(2026, 5, 12, 14, 0, tzinfo=UTC)
    state = CommentState().with_bot_rerun("2026-05-12T14:00:00+00:00")
    assert "less than 10 minutes ago" in cooldown_refusal(state, at + timedelta(minutes=9))
    assert cooldown_refusal(state, at + BOT_COOLDOWN) is None
    assert cooldown_refusal(CommentState(), at) is None


def test_the_reply_says_what_was_rerun_or_why_nothing():
    plan = RerunPlan(10, 1, "none", (), ("Run 10 has no failed job to rerun.",))
    nothing = rerun_reply("ann", [], [plan], ["--force is for maintainers; ..."])
    assert nothing.startswith("@ann, nothing was rerun.") and "- Run 10 has no failed job" in nothing
    done = rerun_reply("ann", [{"run_id": 10, "attempt": 1, "mode": "jobs", "job_ids": [5, 6]}], [], [])
    assert "- run 10 (attempt 1): job(s) 5, 6" in done


# --- the parser: GitHub's own issue_comment example (@octokit/webhooks-examples, vendored) ----------

def _example() -> dict:
    return copy.deepcopy(EXAMPLES["examples"]["issue_comment.created"][0])


def test_a_comment_by_a_deleted_user_parses_and_is_ignored():
    payload = _example()
    payload["comment"]["user"] = None  # GitHub's nullable-simple-user: the account was deleted
    payload["comment"]["body"] = "/rerun"
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    event = parse_issue_comment(payload)
    assert event.commenter is None
    assert screen_comment(event).command is None


def test_a_pr_whose_author_was_deleted_still_parses():
    payload = _example()
    payload["issue"]["user"] = None
    event = parse_issue_comment(payload)
    assert event.issue_author is None and event.commenter == payload["comment"]["user"]["login"]
    assert not authorize(event, PLAIN, known("read")).allowed  # nobody is the author of a ghost's PR


def test_the_commenters_type_comes_from_the_payload():
    payload = _example()
    payload["comment"]["user"]["type"] = "Bot"
    assert parse_issue_comment(payload).commenter_type == "Bot"
