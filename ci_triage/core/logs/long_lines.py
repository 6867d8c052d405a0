"""Which needles a line longer than the matcher's window holds, each found once.

A rule's needle regex (an alternation of its literals) crawls through a megabyte line at a few MB/s;
a substring search per needle runs at memchr speed, and a line full of one rule's needles then costs
the other rules nothing (core/logs/matcher.py, `Matcher.first_match`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ci_triage.core.logs.framing import unframed
from ci_triage.core.logs.rules import Rule
from ci_triage.core.logs.scan import CASE_PARTNERS, Needle

# Lines longer than this are matched in overlapping windows of this many characters.
WINDOW = 4096


class LongLine:
    """Which needles a line longer than WINDOW holds, each found once by a C-speed substring search
    (a regex alternation of a rule's needles crawls through megabytes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._lowered: str | None = None
        # Non-ASCII letters that re.IGNORECASE folds to i, k or s: where they are, a lowered copy
        # would miss a caseless needle, so such needles count as present and the regex decides.
        self._partnered = any(char in text for partners in CASE_PARTNERS.values() for char in partners)
        self._held: dict[Needle, bool] = {}
        # The characters the line (and its lowered copy) holds: a needle with a character the line lacks
        # is absent without a scan of the line. Each scan of a megabyte line costs a millisecond or so, and
        # a line of few distinct characters (a progress bar, one word repeated) lacks most of the rules'
        # two thousand needles.
        self._chars: frozenset[str] | None = None
        self._lowered_chars: frozenset[str] | None = None

    def holds(self, needle: Needle) -> bool:
        held = self._held.get(needle)
        if held is None:
            literal, caseless = needle
            if not caseless:
                if self._chars is None:
                    self._chars = frozenset(self.text)
                held = self._chars.issuperset(literal) and literal in self.text
            elif self._partnered or not literal.isascii():
                held = True
            else:
                if self._lowered is None:
                    self._lowered = self.text.lower()
                    self._lowered_chars = frozenset(self._lowered)
                lowered = literal.lower()
                held = self._lowered_chars.issuperset(lowered) and lowered in self._lowered
            self._held[needle] = held
        return held


def _window_match(rule: Rule, text: str, lo: int, hi: int,
                  patterns: Sequence[re.Pattern[str]] | None = None) -> dict[str, str] | None:
    """`Rule.match` on text[lo:hi], seeing the real text around it (`^` only at the line's start);
    `patterns`, when given, are the only ones of the rule's patterns that can match this line. The
    first window is also tried without the line's framing (framing.py), as `Rule.match` does."""
    bare = unframed(text[:hi]) if lo == 0 else ()
    for pattern in rule.patterns if patterns is None else patterns:
        found = pattern.search(text, lo, hi)
        if found is None and bare:
            found = next((f for f in map(pattern.search, bare) if f), None)
        if found:
            if any(excluded.search(text, lo, hi) or any(excluded.search(b) for b in bare) for excluded in rule.exclude):
                return None
            return {name: value for name, value in found.groupdict().items() if value is not None}
    return None


def _windows_with_needles(text: str, needles: re.Pattern[str] | None) -> Iterator[tuple[int, int]]:
    """The (lo, hi) windows of a long line, in order, that hold one of the rule's needles (all of
    them when it has none). Found by jumping from needle to needle, so a rule whose needles are
    absent costs one scan of the line, not one per window (a 10 MB line has ~5,000 windows)."""
    step = WINDOW // 2
    count = len(range(0, max(len(text) - step, 1), step))
    if needles is None:
        for index in range(count):
            yield index * step, min(index * step + WINDOW, len(text))
        return
    done = -1
    position = 0
    while position < len(text):
        hit = needles.search(text, position)
        if hit is None:
            return
        home = min(hit.start() // step, count - 1)
        # A needle starting in window `home`'s first half also lies in the window before it.
        for index in (home - 1, home):
            if index > done and index >= 0:
                lo, hi = index * step, min(index * step + WINDOW, len(text))
                if needles.search(text, lo, hi) is not None:  # the needle lies wholly inside
                    yield lo, hi
                done = index
        if home >= count - 1:
            return
        position = (home + 1) * step
