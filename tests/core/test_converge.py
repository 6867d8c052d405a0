"""Issue 12 item 5, the pure part: whose sticky comments are ours, which is kept, how states merge."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import permutations

from ci_triage.core.decide.comment_state import (
    MARKER,
    AttemptRecord,
    CommentState,
    RerunRecord,
    serialize_state,
)
from ci_triage.core.decide.converge import converge, foreign_state, holds, merge_states, ours

NOW = datetime(2026, 5, 12, 14, 0, tzinfo=UTC)
BOT = "github-actions[bot]"


def rerun(run_id: int, attempt: int = 1, at: str = "2026-05-12T13:00:00Z", by: str = "auto") -> RerunRecord:
    return RerunRecord(run_id, attempt, (), "failed", at, by, "runner lost")


def state_with(*records: RerunRecord, last: str | None = None) -> CommentState:
    state = CommentState(last_bot_rerun_at=last)
    for record in records:
        state = state.with_rerun(record)
    return state


def comment(comment_id: int, state: CommentState, login: str = BOT, created: str = "2026-05-12T13:00:00Z",
            user_type: str = "Bot", association: str = "NONE") -> dict:
    return {"id": comment_id, "body": f"{MARKER}\n{serialize_state(state)}\n## ci-triage", "created_at": created,
            "user": {"login": login, "type": user_type}, "author_association": association}


def test_ours_are_the_markers_by_our_identity_oldest_first():
    comments = [comment(3, CommentState(), created="2026-05-12T13:02:00Z"),
                comment(2, CommentState(), created="2026-05-12T13:01:00Z"),
                comment(1, CommentState(), login="mallory", user_type="User"),
                {"id": 4, "body": "no marker", "user": {"login": BOT}}, "junk"]
    assert [c["id"] for c in ours(comments, None)] == [2, 3]  # None: github-actions[bot]
    assert [c["id"] for c in ours(comments, "mallory")] == [1]
    assert ours(comments, "someone-else") == []


def test_the_merge_is_a_union_in_any_order():
    a = state_with(rerun(10), last="2026-05-12T13:00:00Z")
    b = state_with(rerun(11, at="2026-05-12T13:05:00Z"))
    c = state_with(rerun(10, at="2026-05-12T13:00:30Z"), last="2026-05-12T13:30:00Z")  # the same rerun, later
    c = replace(c, runs=(replace(c.runs[0], attempts=(AttemptRecord(1, "2026-05-12T12:59:00Z"),)),))  # seen by one
    merged = {serialize_state(merge_states(order)) for order in permutations([a, b, c])}
    assert len(merged) == 1
    result = merge_states([a, b, c])
    assert [len(r.reruns) for r in result.runs] == [1, 1]  # one rerun of run 10's attempt 1, recorded twice
    assert result.run(10).reruns[0].at == "2026-05-12T13:00:00Z"  # the earliest record stands
    assert result.run(10).attempts_seen == (1,)
    assert result.last_bot_rerun_at == "2026-05-12T13:30:00Z"
    assert merge_states([result, result]) == result
    assert holds(result, a) and holds(result, b) and not holds(a, b)


def test_a_writer_patches_the_oldest_until_it_holds_every_state_then_deletes_its_own():
    mine = state_with(rerun(11))
    older = comment(1, state_with(rerun(10)))
    duplicate = comment(2, mine, created="2026-05-12T13:00:01Z")
    other_writers = comment(3, state_with(rerun(12)), created="2026-05-12T13:00:02Z")
    now = datetime(2026, 5, 12, 13, 1, tzinfo=UTC)  # every writer may still be running
    plan = converge([older, duplicate, other_writers], None, mine, created=[2], now=now)
    assert plan.keep["id"] == 1 and plan.patch and plan.delete == ()
    assert [r.run_id for r in plan.state.runs] == [10, 11, 12]
    patched = comment(1, plan.state)
    plan = converge([patched, duplicate, other_writers], None, mine, created=[2], now=now)
    assert not plan.patch and plan.delete == (2,)  # only our own duplicate: comment 3's writer deletes its own


def test_a_duplicate_left_by_a_writer_that_died_is_deleted_once_stale():
    kept = comment(1, state_with(rerun(10), rerun(11)))
    left = comment(2, state_with(rerun(11)), created="2026-05-12T13:00:01Z")
    assert converge([kept, left], None, CommentState(), created=[], now=NOW).delete == (2,)
    fresh = datetime(2026, 5, 12, 13, 5, tzinfo=UTC)  # its writer may still be running
    assert converge([kept, left], None, CommentState(), created=[], now=fresh).delete == ()


def test_another_identitys_comment_is_read_never_kept_or_deleted():
    theirs = comment(1, state_with(rerun(10), last="2026-05-12T13:50:00Z"))
    mine = comment(2, state_with(rerun(11)), login="maintainer-mia", user_type="User", association="COLLABORATOR")
    plan = converge([theirs, mine], "maintainer-mia", state_with(rerun(11)), created=[2], now=NOW)
    assert plan.keep["id"] == 2 and not plan.patch and plan.delete == ()
    read = foreign_state([theirs, mine], "maintainer-mia", NOW)
    assert read.last_bot_rerun_at == "2026-05-12T13:50:00Z" and read.run(10) is not None
    # ... and the other way round: the bot reads the personal token's comment of a collaborator.
    assert foreign_state([theirs, mine], None, NOW).run(11) is not None


def test_a_drive_by_marker_and_a_future_cooldown_are_not_believed():
    forged = comment(1, state_with(last="2026-05-12T13:59:00Z"), login="mallory", user_type="User",
                     association="CONTRIBUTOR")
    assert foreign_state([forged], None, NOW) == CommentState()
    future = comment(2, state_with(last="2027-01-01T00:00:00Z"), login="other-app[bot]")
    assert foreign_state([future], None, NOW).last_bot_rerun_at is None
    recent = comment(3, state_with(last="2026-05-12T13:59:00Z"), login="other-app[bot]")
    assert foreign_state([recent], None, NOW).last_bot_rerun_at == "2026-05-12T13:59:00Z"


def test_when_ours_is_gone_the_writer_writes_it_again():
    plan = converge([], None, state_with(rerun(10)), created=[5], now=NOW)
    assert plan.keep is None and plan.state.run(10) is not None
