"""Versioned normalisation of error text into a stable cluster key.

Masks what changes between two occurrences of the same failure (timestamps, UUIDs, hex ids,
addresses, ports, PIDs, temp paths, other numbers) so they hash alike, and keeps what it masked:
the port of a clash is evidence even though it must not split a cluster. Changing the masks re-keys
every cluster, hence the version inside the key.
"""

from __future__ import annotations

import hashlib
import re

NORMALISER_VERSION = 1

# Order matters: specific shapes first, so a UUID is not eaten as hex nor an address as numbers.
_MASKS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("timestamp", re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?|\d\d:\d\d:\d\d(?:\.\d+)?"), "<ts>"),
    ("uuid", re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    ("tmp_path", re.compile(r"/(?:tmp|var/tmp|private/var/folders)/[^\s'\":,)]+"), "<tmp>"),
    ("address", re.compile(r"\[[0-9a-f:]*\]:\d+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", re.I), "<addr>"),
    ("port", re.compile(r"(?i)(?<=\bport)(?:[:= ]+)(\d+)"), " <port>"),
    ("pid", re.compile(r"(?i)(?<=\bpid)(?:[:= ]+)(\d+)"), " <pid>"),
    ("hex", re.compile(r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.I), "<hex>"),
    ("number", re.compile(r"\b\d+\b"), "<n>"),
)


def normalise_with_values(text: str) -> tuple[str, dict[str, list[str]]]:
    """The masked text and, per mask, the values it replaced (in order of appearance)."""
    masked: dict[str, list[str]] = {}
    for name, pattern, token in _MASKS:
        def keep(found: re.Match[str], name: str = name, token: str = token) -> str:
            value = found.group(1) if found.groups() else found.group(0)
            masked.setdefault(name, []).append(value)
            return token
        text = pattern.sub(keep, text)
    return " ".join(text.split()), masked


def normalise(text: str) -> str:
    return normalise_with_values(text)[0]


# A cause is told by its start: a root-cause line can be megabytes long (one physical line of progress
# output), and masking all of it costs a list entry per number for nothing. Lines shorter than this
# (all real ones seen) keep the key they had.
FINGERPRINT_CHARS = 2048


def fingerprint(category: str, text: str) -> str:
    digest = hashlib.sha1(f"{category}\n{normalise(text[:FINGERPRINT_CHARS])}".encode()).hexdigest()[:16]
    return f"v{NORMALISER_VERSION}:{digest}"
