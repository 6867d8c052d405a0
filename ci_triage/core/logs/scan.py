"""Multi-literal scanning engines for the matcher's needles: all needles, one pass over bytes.

Hyperscan (`ci_triage.engines`, registered here; `hyperscan` wheels bundle Intel Hyperscan on
x86_64 and Vectorscan on aarch64 and macOS) when it imports, else `bytes.find` per needle on the
lowered chunk, which is slower with many rules (~6 MB/s with the built-in ones, against hundreds
for hyperscan) but finds the same lines. Both take (data, lo, hi) over bytes or an mmap and give
(offset, needle index) hits, the offset on the line that holds the needle (index ANY_NEEDLE: that
line may hold any). Hits may over-approximate (a needle named on a line that holds only a shorter
one inside it, or the same letters in another case): the matcher's regexes decide, so the result
is the same; they never miss a needle a line holds.
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


_PARTNER_BYTES = tuple(char.encode() for partners in CASE_PARTNERS.values() for char in partners)


class PythonScanner:
    """`bytes.find` per needle on the chunk with its ASCII letters lowered: C speed per needle, one
    pass per needle that holds no other (a needle holding a shorter one is reported wherever that
    one is found: a line may then be named for a needle it does not hold, never the reverse).

    Lowering makes every needle caseless, so the hits are a superset of the exact needles' lines;
    the candidate lines' regexes decide. The non-ASCII letters `re.IGNORECASE` folds to i, k, s are
    searched with `caseless_bytes_regex` in the chunks that hold one of them.
    """

    name = "python"

    def __init__(self, needles: Sequence[Needle]) -> None:
        lowered: dict[bytes, list[int]] = {}
        for index, (text, _caseless) in enumerate(needles):
            lowered.setdefault(text.encode().lower(), []).append(index)  # bytes.lower: ASCII only
        self.searches: list[tuple[bytes, list[int]]] = []
        for text in sorted(lowered, key=lambda t: (len(t), t)):
            home = next((entry for entry in self.searches if entry[0] in text), None)
            if home is None:
                self.searches.append((text, list(lowered[text])))
            else:
                home[1].extend(lowered[text])
        self.partnered = [(index, text) for index, (text, caseless) in enumerate(needles)
                          if caseless and any(char in CASE_PARTNERS for char in text.lower())]
        self._partner_regexes: list[tuple[int, re.Pattern[bytes]]] | None = None

    def hits(self, data, lo: int, hi: int) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        if hi <= lo:
            return found
        chunk = data[lo:hi]
        lowered = chunk.lower()
        # A needle with a byte the chunk lacks is absent without a scan (a chunk of few distinct bytes, a
        # progress bar or one word repeated, lacks most needles; a scan of megabytes costs a millisecond).
        present = frozenset(lowered)
        for needle, indices in self.searches:
            if not present.issuperset(needle):
                continue
            at = lowered.find(needle)
            while at >= 0:
                found.extend((lo + at, index) for index in indices)
                newline = lowered.find(b"\n", at)  # one hit per line and needle is enough
                if newline < 0:
                    break
                at = lowered.find(needle, newline + 1)
        if self.partnered and any(partner in chunk for partner in _PARTNER_BYTES):
            if self._partner_regexes is None:
                # A bytes pattern folds ASCII case only; caseless_bytes_regex adds the non-ASCII partners.
                self._partner_regexes = [(index, re.compile(caseless_bytes_regex(text), re.IGNORECASE))
                                         for index, text in self.partnered]
            for index, pattern in self._partner_regexes:
                found.extend((lo + hit.start(), index) for hit in pattern.finditer(chunk))
        return found


# Native engines are libraries outside the core: the shell's `ci_triage.engines` (loaded by the
# package's __init__, so before any core module runs) registers them here by name, and the core
# names an engine without importing it. A factory raises when its library is missing or unusable.
_NATIVE: dict[str, Callable[[Sequence[Needle]], Any]] = {}


def register_scanner(name: str, factory: Callable[[Sequence[Needle]], Any]) -> None:
    _NATIVE[name] = factory


def make_scanner(needles: Sequence[Needle], engine: str = "auto", prefilters: Sequence[bytes] = ()):
    """A scanner of `needles` (ids 0...) and, natively, of `prefilters` (bytes regexes, ids after the
    needles'; core/logs/prefilter.py). The Python scanner takes no prefilters: the caller then asks
    again with every pattern's needles."""
    if engine in ("auto", "hyperscan"):
        try:
            factory = _NATIVE["hyperscan"]
            return factory(needles, prefilters)
        except Exception:  # not installed for this platform, or no usable CPU: same lines, slower
            if engine == "hyperscan":
                raise
    return PythonScanner(needles)
