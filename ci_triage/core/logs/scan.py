"""Multi-literal scanning engines for the matcher's needles: all needles, one pass over bytes.

Hyperscan (`ci_triage.engines`, registered here; `hyperscan` wheels bundle Intel Hyperscan on
x86_64 and Vectorscan on aarch64 and macOS) when it imports, else `bytes.find` per needle, which is slower with many rules but finds
the same lines. Both take (data, lo, hi) over bytes or an mmap and give (offset, needle index)
hits, the offset on the line that holds the needle (index ANY_NEEDLE: that line may hold any).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

Needle = tuple[str, bool]  # (literal text, case-insensitive)

_HITS_PER_LINE = 16  # beyond this, a line's further needle hits are skipped (it is a candidate already)
# The needle index of a hit that stands for "this line's needles were not all reported": the line
# is checked against every rule, since the skipped hits may have been any needle.
ANY_NEEDLE = -1
# ASCII letters that `re.IGNORECASE` (str patterns) also matches with non-ASCII characters; the
# test suite re-derives this table from every code point.
CASE_PARTNERS = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}


def caseless_bytes_regex(text: str) -> bytes:
    """A bytes regex (for an ASCII-case-insensitive engine) matching what `(?i)text` matches in
    UTF-8 text."""
    parts = []
    for char in text:
        partners = CASE_PARTNERS.get(char.lower())
        escaped = b"\\x%02x" % ord(char)
        if partners:
            forms = [escaped] + [b"".join(b"\\x%02x" % b for b in p.encode()) for p in partners]
            parts.append(b"(?:" + b"|".join(forms) + b")")
        else:
            parts.append(escaped)
    return b"".join(parts)


class PythonScanner:
    """`bytes.find` per needle: C speed per needle, one pass per needle."""

    name = "python"

    def __init__(self, needles: Sequence[Needle]) -> None:
        self.exact = [(index, text.encode()) for index, (text, caseless) in enumerate(needles) if not caseless]
        # A bytes pattern folds ASCII case only; caseless_bytes_regex adds the non-ASCII partners.
        self.caseless = [(index, re.compile(caseless_bytes_regex(text), re.IGNORECASE))
                         for index, (text, caseless) in enumerate(needles) if caseless]

    def hits(self, data, lo: int, hi: int) -> list[tuple[int, int]]:
        found = []
        for index, needle in self.exact:
            at = data.find(needle, lo, hi)
            while at >= 0:
                found.append((at, index))
                newline = data.find(b"\n", at, hi)  # one hit per line and needle is enough
                if newline < 0:
                    break
                at = data.find(needle, newline + 1, hi)
        for index, pattern in self.caseless:
            found.extend((hit.start(), index) for hit in pattern.finditer(data, lo, hi))
        return found


# Native engines are libraries outside the core: the shell's `ci_triage.engines` (loaded by the
# package's __init__, so before any core module runs) registers them here by name, and the core
# names an engine without importing it. A factory raises when its library is missing or unusable.
_NATIVE: dict[str, Callable[[Sequence[Needle]], Any]] = {}


def register_scanner(name: str, factory: Callable[[Sequence[Needle]], Any]) -> None:
    _NATIVE[name] = factory


def make_scanner(needles: Sequence[Needle], engine: str = "auto"):
    if engine in ("auto", "hyperscan"):
        try:
            factory = _NATIVE["hyperscan"]
            return factory(needles)
        except Exception:  # not installed for this platform, or no usable CPU: same lines, slower
            if engine == "hyperscan":
                raise
    return PythonScanner(needles)
