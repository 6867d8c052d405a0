"""Versioned normalisation of error text into a stable cluster key.

Masks what changes between two occurrences of the same failure (timestamps, hex ids, addresses,
ports, PIDs, temp paths, numbers) so they hash alike. Changing the masks re-keys every cluster,
hence the version inside the key.
"""

from __future__ import annotations

import hashlib
import re

NORMALISER_VERSION = 1

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z?"), "<ts>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"0x[0-9a-f]+", re.I), "<hex>"),
    (re.compile(r"\b[0-9a-f]{12,}\b", re.I), "<hex>"),
    (re.compile(r"\[::\]:\d+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?"), "<addr>"),
    (re.compile(r"(?i)\bport[:= ]+\d+"), "port <port>"),
    (re.compile(r"(?i)\bpid[:= ]+\d+"), "pid <pid>"),
    (re.compile(r"/tmp/\S+"), "<tmp>"),
    (re.compile(r"\d+"), "<n>"),
)


def normalise(text: str) -> str:
    for pattern, token in _MASKS:
        text = pattern.sub(token, text)
    return " ".join(text.split())


def fingerprint(category: str, text: str) -> str:
    digest = hashlib.sha1(f"{category}\n{normalise(text)}".encode()).hexdigest()[:16]
    return f"v{NORMALISER_VERSION}:{digest}"
