"""Small text helpers every renderer and the comment state share."""

from __future__ import annotations


def clip(text: str, limit: int) -> str:
    """At most `limit` characters; a cut is shown with an ellipsis, never silent."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
