"""Webhook payloads (the file at $GITHUB_EVENT_PATH) as frozen values, and the `/rerun` command.

Pure: the shell reads the file and passes its text. Everything in an event is untrusted: a comment body,
a branch name or a workflow name is whatever someone typed, so only these values leave this module, and
a payload that is not shaped like GitHub's raises UsageError with one clear line.

Payload shapes: https://docs.github.com/en/webhooks/webhook-events-and-payloads#workflow_run and
#issue_comment. An issue comment is on a PR when `issue.pull_request` is present.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ci_triage.core.github.convert import into_repository
from ci_triage.errors import UsageError

EVENT_NAMES = ("workflow_run", "issue_comment")
MAX_COMMAND_LINE = 200  # a command is short; a long first line is prose, not a command


@dataclass(frozen=True)
class WorkflowRunEvent:
    action: str  # requested, in_progress, completed
    repo: str
    run_id: int
    run_attempt: int
    workflow_name: str
    conclusion: str | None
    status: str
    event: str  # what triggered the run: pull_request, push, ...
    head_sha: str
    head_branch: str | None
    head_repo: str | None  # None when the fork was deleted
    pull_numbers: tuple[int, ...]  # empty for runs of forks: resolve those by head SHA

    @property
    def is_failed_completion(self) -> bool:
        return self.action == "completed" and self.conclusion == "failure"


@dataclass(frozen=True)
class CommentEvent:
    action: str  # created, edited, deleted
    repo: str
    issue_number: int
    is_pull_request: bool
    comment_id: int
    comment_body: str
    commenter: str | None  # None when the account was deleted (GitHub sends `user: null`)
    author_association: str  # OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, ... (a hint, not a permission)
    issue_author: str | None  # None when the PR's author deleted their account
    commenter_type: str = "User"  # comment.user.type: "User", "Bot" or "Organization"

    @property
    def by_bot(self) -> bool:
        return self.commenter is not None and is_bot(self.commenter, self.commenter_type)


def is_bot(login: str, user_type: str | None = None) -> bool:
    """A GitHub App or bot account: `user.type == "Bot"`, or a login ending `[bot]` (how GitHub names
    App accounts). A bot's comment never starts a rerun, even one with write permission: a bot that
    echoes text (a CI summary quoting a log, another triage tool) must not loop into ours."""
    return user_type == "Bot" or login.lower().endswith("[bot]")


@dataclass(frozen=True)
class RerunCommand:
    force: bool = False  # rerun failed jobs whatever their verdict (maintainers only)


class _Malformed(Exception):
    pass


def _get(payload: Any, path: str) -> Any:
    value = payload
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            raise _Malformed(f"{path} is missing")
        value = value[key]
    return value


def _int(payload: Any, path: str) -> int:
    value = _get(payload, path)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Malformed(f"{path} is not a non-negative integer")
    return value


def _str(payload: Any, path: str, nullable: bool = False) -> Any:
    value = _get(payload, path)
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _Malformed(f"{path} is not a string")
    return value


def parse_workflow_run(payload: Any) -> WorkflowRunEvent:
    try:
        run = _get(payload, "workflow_run")
        pulls = _get(run, "pull_requests")
        if not isinstance(pulls, list):
            raise _Malformed("workflow_run.pull_requests is not a list")
        # Only PRs into this repository count (see convert.into_repository).
        numbers = tuple(sorted({_int(pr, "number") for pr in pulls if into_repository(pr, payload.get("repository"))}))
        head_repo = run.get("head_repository")
        name = run.get("name")
        workflow = payload.get("workflow")
        if not name and isinstance(workflow, dict):  # some payloads name only the workflow, not the run
            name = workflow.get("name")
        if not isinstance(name, str):
            name = ""
        return WorkflowRunEvent(
            action=_str(payload, "action"),
            repo=_str(payload, "repository.full_name"),
            run_id=_int(run, "id"),
            run_attempt=_int(run, "run_attempt") if "run_attempt" in run else 1,
            workflow_name=name,
            conclusion=_str(run, "conclusion", nullable=True),
            status=_str(run, "status"),
            event=_str(run, "event"),
            head_sha=_str(run, "head_sha"),
            head_branch=_str(run, "head_branch", nullable=True),
            head_repo=_str(head_repo, "full_name") if isinstance(head_repo, dict) else None,
            pull_numbers=numbers,
        )
    except _Malformed as problem:
        raise UsageError(f"not a workflow_run event: {problem}") from None


def _login(owner: Any) -> str | None:
    """`user.login` of a comment or issue; a deleted account is `user: null` (the `nullable-simple-user`
    schema of GitHub's OpenAPI description), which is a fact about the comment, not a malformed event."""
    if _get(owner, "user") is None:
        return None
    return _str(owner, "user.login")


def _user_type(owner: Any) -> str:
    user = owner.get("user")
    kind = user.get("type") if isinstance(user, dict) else None
    return kind if isinstance(kind, str) else "User"


def parse_issue_comment(payload: Any) -> CommentEvent:
    try:
        issue = _get(payload, "issue")
        comment = _get(payload, "comment")
        body = _get(comment, "body")
        if body is not None and not isinstance(body, str):
            raise _Malformed("comment.body is not a string")
        return CommentEvent(
            action=_str(payload, "action"),
            repo=_str(payload, "repository.full_name"),
            issue_number=_int(issue, "number"),
            is_pull_request=isinstance(issue.get("pull_request"), dict),
            comment_id=_int(comment, "id"),
            comment_body=body or "",
            commenter=_login(comment),
            author_association=_str(comment, "author_association"),
            issue_author=_login(issue),
            commenter_type=_user_type(comment),
        )
    except _Malformed as problem:
        raise UsageError(f"not an issue_comment event: {problem}") from None


def load_event(event_text: str, event_name: str) -> WorkflowRunEvent | CommentEvent:
    """The event from the text of $GITHUB_EVENT_PATH; event_name is $GITHUB_EVENT_NAME."""
    if event_name not in EVENT_NAMES:
        raise UsageError(f"unexpected event {event_name!r}",
                         hint=f"ci-triage handles {' and '.join(EVENT_NAMES)} events.")
    try:
        payload = json.loads(event_text)
    except (ValueError, RecursionError) as problem:
        raise UsageError(f"the {event_name} event is not JSON ({type(problem).__name__})") from None
    if not isinstance(payload, dict):
        raise UsageError(f"the {event_name} event is not a JSON object")
    return parse_workflow_run(payload) if event_name == "workflow_run" else parse_issue_comment(payload)


_COMMAND = re.compile(r"/rerun(?P<args>(?:[ \t]+\S+)*)[ \t]*", re.IGNORECASE)


def parse_rerun_command(body: str | None) -> RerunCommand | None:
    """`/rerun` or `/rerun --force` as the comment's first line, else None.

    Leading blank lines and a few spaces of indent are tolerated and CRLF is a newline; more lines may
    follow (an explanation). Text that shows a command rather than giving one is not a command: a quoted
    line (`> /rerun`, from a reply), an indented code block (4 or more spaces, or a tab, before it:
    CommonMark 0.31.2 section 4.4) and a fenced code block (``` or ~~~, section 4.5). Neither is
    `/rerunx`, `/rerun please` or a command in the middle of a comment. Case-insensitive, like the
    workflow's `startsWith()` filter.
    """
    if not body:
        return None
    raw = next((line for line in body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
                if line.strip()), "")
    indent = raw[: len(raw) - len(raw.lstrip(" \t"))]
    if "\t" in indent or len(indent) >= 4:  # an indented code block, shown in the comment as code
        return None
    first = raw.strip().lstrip("\ufeff")
    if len(first) > MAX_COMMAND_LINE or first.startswith((">", "```", "~~~")):
        return None
    match = _COMMAND.fullmatch(first)
    if not match:
        return None
    args = match.group("args").split()
    if any(arg.lower() != "--force" for arg in args):
        return None
    return RerunCommand(force=bool(args))
