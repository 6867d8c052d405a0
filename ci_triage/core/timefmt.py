"""The one parser and formatter of the timestamps GitHub and our files carry.

GitHub writes ISO 8601 in UTC with a `Z` suffix (`2024-05-01T10:00:00Z`); Python before 3.11 did
not read `Z`, and we still normalise it so stored values compare as strings too.
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_iso(value: str | None) -> datetime | None:
    """`None` for `None` or an empty string; a timezone-aware datetime otherwise (ValueError if malformed)."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def parse_iso_aware(value: object) -> datetime | None:
    """Like `parse_iso`, for untrusted text: `None` for anything that is not an aware ISO timestamp."""
    if not isinstance(value, str):
        return None
    try:
        parsed = parse_iso(value)
    except ValueError:
        return None
    return parsed if parsed is not None and parsed.tzinfo is not None else None


def iso(value: datetime | None) -> str | None:
    """Full precision, `Z` for UTC: what the store keeps."""
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def iso_seconds(value: datetime) -> str:
    """GitHub's own form (`2024-05-01T10:00:00Z`), for payloads, search qualifiers and records."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
