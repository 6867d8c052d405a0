"""One sticky comment however many triages write at once: whose comments are ours, which one to keep,
how the states of several merge.

Pure. GitHub offers no conditional write on a comment, so two triages of one pull request (two watched
workflows failing together, a redelivered event, a triage beside a `/rerun`) can each create one. The
shell (`act.Actor`) writes, then re-lists the comments and asks `converge` what to do:

- *ours* are the comments that start with the marker and are written by the token's own identity
  (`GET /user` for a personal token; the login of a comment it created or a reaction it added for an
  installation token, whose `GET /user` is 403); until that is known, `github-actions[bot]`;
- the *kept* one is the oldest of ours (creation time, then id: ids only grow, so every writer that
  lists after its own write picks the same one);
- its state must hold the merge of every state of ours (`merge_states`: a union, so the merge of
  merges is the same whoever computes it); when it does not, the shell PATCHes it and lists again;
- only then does a writer delete its duplicates: the ones it created itself, and ones of ours older
  than `STALE_AFTER` (their writer has ended; the workflow's job times out sooner);
- comments with the marker by another identity (the Actions bot before a personal token was set, or
  the other way round) are never edited or deleted, but their state is *read* (`foreign_state`), so
  the `/rerun` cooldown holds across identities. Only authors a drive-by user cannot be are read: bots
  (only an App installed on the repository can comment as one) and the repository's owners, members
  and collaborators (`author_association`); a time in the future is not believed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from ci_triage.core.decide.comment_state import (
    DEFAULT_BOT_LOGIN,
    AttemptRecord,
    CommentState,
    RerunRecord,
    RunState,
    is_sticky,
    parse_comment,
    serialize_state,
)
from ci_triage.core.github.events import is_bot
from ci_triage.core.timefmt import parse_iso_aware

STALE_AFTER = timedelta(minutes=20)  # the triage job's timeout is 15 minutes
CLOCK_SKEW = timedelta(minutes=5)  # a foreign time this far ahead of ours is not believed
TRUSTED_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")


def login_of(comment: Mapping[str, Any]) -> str | None:
    user = comment.get("user")
    login = user.get("login") if isinstance(user, Mapping) else None
    return login if isinstance(login, str) else None


def _body(comment: Mapping[str, Any]) -> str | None:
    body = comment.get("body")
    return body if isinstance(body, str) else None


def _order(comment: Mapping[str, Any]) -> tuple[str, int]:
    comment_id = comment.get("id")
    return str(comment.get("created_at") or ""), comment_id if isinstance(comment_id, int) else 0


def ours(comments: Iterable[Any], identity: str | None) -> list[dict]:
    """The sticky comments written by `identity` (None: `github-actions[bot]`), oldest first."""
    me = (identity or DEFAULT_BOT_LOGIN).lower()
    found = [dict(c) for c in comments if isinstance(c, Mapping) and is_sticky(_body(c))
             and (login_of(c) or "").lower() == me]
    return sorted(found, key=_order)


def trusted_author(comment: Mapping[str, Any]) -> bool:
    """An author a drive-by user cannot pose as: a bot, or someone with a standing in the repository."""
    user = comment.get("user")
    login = login_of(comment)
    if login is None or not isinstance(user, Mapping):
        return False
    return is_bot(login, user.get("type")) or comment.get("author_association") in TRUSTED_ASSOCIATIONS


def credible(state: CommentState, now: datetime) -> CommentState:
    """The state without a cooldown time in the future (a forged one would block `/rerun` for good)."""
    last = parse_iso_aware(state.last_bot_rerun_at) if state.last_bot_rerun_at else None
    if last is not None and last > now + CLOCK_SKEW:
        return replace(state, last_bot_rerun_at=None)
    return state


def foreign_state(comments: Iterable[Any], identity: str | None, now: datetime) -> CommentState:
    """The merged state of sticky comments by other trusted identities: read, never written."""
    me = (identity or DEFAULT_BOT_LOGIN).lower()
    states = []
    for comment in comments:
        if not isinstance(comment, Mapping) or (login_of(comment) or "").lower() == me or not trusted_author(comment):
            continue
        state = parse_comment(_body(comment))
        if state is not None:
            states.append(credible(state, now))
    return merge_states(states)


# --- merging ------------------------------------------------------------------------------------------
def _pick(a: str | None, b: str | None, pick) -> str | None:
    """`pick` (min or max) of two ISO times by the instant they name (the text breaks ties and stands
    in for a time that does not parse); None yields to the other."""
    if a is None or b is None:
        return a or b
    pa, pb = parse_iso_aware(a), parse_iso_aware(b)
    if pa is None or pb is None:
        return pick(a, b)
    return pick((pa, a), (pb, b))[1]


def _earliest(a: str | None, b: str | None) -> str | None:
    return _pick(a, b, min)


def _latest(a: str | None, b: str | None) -> str | None:
    return _pick(a, b, max)


def _attempt_key(record: AttemptRecord) -> tuple:
    # The first sighting wins; between two of the same time, the one that knows more jobs, then any fixed order.
    return (parse_iso_aware(record.seen_at) or datetime.max, -len(record.failed_jobs), repr(record))


def _rerun_key(record: RerunRecord) -> tuple:
    return record.attempt, record.mode, record.job_ids


def _merge_run(a: RunState, b: RunState) -> RunState:
    attempts: dict[int, AttemptRecord] = {}
    for record in (*a.attempts, *b.attempts):
        held = attempts.get(record.attempt)
        attempts[record.attempt] = record if held is None or _attempt_key(record) < _attempt_key(held) else held
    reruns: dict[tuple, RerunRecord] = {}
    for record in (*a.reruns, *b.reruns):
        # One rerun of one attempt, recorded by two writers, is one rerun: the earliest record stands.
        held = reruns.get(_rerun_key(record))
        if held is None or (parse_iso_aware(record.at), record.at, record.by) < (parse_iso_aware(held.at), held.at,
                                                                                 held.by):
            reruns[_rerun_key(record)] = record
    ordered = sorted(reruns.values(), key=lambda r: (r.attempt, parse_iso_aware(r.at), r.mode, r.job_ids))
    return RunState(a.run_id, tuple(sorted(attempts.values(), key=lambda r: r.attempt)), tuple(ordered))


def merge_states(states: Iterable[CommentState]) -> CommentState:
    """The union of states: every attempt seen (first sighting kept), every rerun record (one per rerun),
    the latest `/rerun` time. Commutative and idempotent, so writers that merge in any order agree."""
    runs: dict[int, RunState] = {}
    last: str | None = None
    for state in states:
        last = _latest(last, state.last_bot_rerun_at)
        for run in state.runs:
            runs[run.run_id] = _merge_run(runs[run.run_id], run) if run.run_id in runs else run
    return CommentState(runs=tuple(runs[k] for k in sorted(runs)), last_bot_rerun_at=last).compacted()


def holds(kept: CommentState, wanted: CommentState) -> bool:
    """Whether `kept` already has everything of `wanted` (merging adds nothing)."""
    return serialize_state(merge_states([kept, wanted])) == serialize_state(merge_states([kept]))


# --- what to do after a write ---------------------------------------------------------------------
@dataclass(frozen=True)
class Convergence:
    keep: dict | None  # the oldest of ours; None when none is left (ours was deleted by someone)
    state: CommentState  # what the kept comment must hold: our state merged with every one of ours
    patch: bool  # the kept comment lacks some of `state`
    delete: tuple[int, ...]  # duplicates to delete now (only once the kept one holds every state)


def converge(comments: Sequence[Any], identity: str | None, state: CommentState, created: Iterable[int],
             now: datetime, stale_after: timedelta = STALE_AFTER) -> Convergence:
    """What a writer does after its write, from a fresh listing of the PR's comments.

    `state` is what this writer wants kept, `created` the ids of sticky comments it created itself.
    """
    mine = ours(comments, identity)
    merged = merge_states([state, *(parse_comment(c["body"]) or CommentState() for c in mine)])
    if not mine:
        return Convergence(None, merged, False, ())
    keep = mine[0]
    kept_state = parse_comment(keep["body"]) or CommentState()
    if not holds(kept_state, merged):
        return Convergence(keep, merged, True, ())
    own = set(created)
    delete = []
    for comment in mine[1:]:
        at = parse_iso_aware(str(comment.get("created_at") or ""))
        if comment.get("id") in own or (at is not None and at + stale_after < now):
            delete.append(comment["id"])
    return Convergence(keep, merged, False, tuple(delete))
