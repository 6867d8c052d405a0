"""Which needles a line longer than the matcher's window holds, each found once.

A rule's needle regex (an alternation of its literals) crawls through a megabyte line at a few MB/s;
a substring search per needle runs at memchr speed, and a line full of one rule's needles then costs
the other rules nothing (core/logs/matcher.py, `Matcher.first_match`).
"""

from __future__ import annotations

from ci_triage.core.logs.scan import CASE_PARTNERS, Needle


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

    def holds(self, needle: Needle) -> bool:
        held = self._held.get(needle)
        if held is None:
            literal, caseless = needle
            if not caseless:
                held = literal in self.text
            elif self._partnered or not literal.isascii():
                held = True
            else:
                if self._lowered is None:
                    self._lowered = self.text.lower()
                held = literal.lower() in self._lowered
            self._held[needle] = held
        return held
