"""Whether a refused `/rerun` gets an answer: at most one per user per cooldown.

Pure. Without a limit, anyone could make ci-triage post one comment per comment they post. The state is
the answers themselves: each refusal reply carries a hidden marker naming the user, and the comments the
shell already lists for the sticky comment say when the last one was posted. This needs no write of its
own (a refusal must not rewrite the sticky comment, which a triage may be writing at the same moment)
and works on a pull request that has no sticky comment yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from ci_triage.core.decide.comment_state import DEFAULT_BOT_LOGIN
from ci_triage.core.timefmt import parse_iso_aware

REFUSAL_COOLDOWN = timedelta(hours=1)
_MARKER = "<!-- ci-triage:refusal {login} -->"


def refusal_marker(login: str) -> str:
    # GitHub logins are [A-Za-z0-9-] (plus `[bot]`); anything else is dropped so it cannot end the comment.
    safe = "".join(c for c in login if c.isalnum() or c in "-[]").lower()
    return _MARKER.format(login=safe)


def refusal_reply(login: str, text: str) -> str:
    """A refusal's body: the text, then the marker `may_answer_refusal` looks for."""
    return f"{text}\n\n{refusal_marker(login)}"


def may_answer_refusal(comments: Iterable[Mapping[str, Any]], login: str, now: datetime,
                       cooldown: timedelta = REFUSAL_COOLDOWN,
                       bot_login: str | None = DEFAULT_BOT_LOGIN) -> bool:
    """False when `bot_login` (None: any author) already answered `login` a refusal within `cooldown`.

    Only our own comments count: anyone can paste the marker into a comment of theirs.
    """
    marker = refusal_marker(login)
    for comment in comments:
        author = (comment.get("user") or {}).get("login")
        if bot_login is not None and author != bot_login:
            continue
        body = comment.get("body")
        if not isinstance(body, str) or not body.rstrip().endswith(marker):
            continue
        at = parse_iso_aware(str(comment.get("created_at") or ""))
        if at is None or now < at + cooldown:  # an answer of unknown age counts as recent
            return False
    return True
