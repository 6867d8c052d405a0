"""Multi-literal scanning engines for the matcher's needles: all needles, one pass over bytes.

Hyperscan (`hyperscan` wheels bundle Intel Hyperscan on x86_64 and Vectorscan on aarch64 and
macOS) when it imports, else `bytes.find` per needle, which is slower with many rules but finds
the same lines. Both take (data, lo, hi) over bytes or an mmap and give (offset, needle index)
hits, the offset on the line that holds the needle (index ANY_NEEDLE: that line may hold any).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

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


class HyperscanScanner:
    """All needles in one pass (Hyperscan's multi-literal matchers)."""

    name = "hyperscan"

    def __init__(self, needles: Sequence[Needle]) -> None:
        import hyperscan

        self.database = None
        self.terminated = getattr(hyperscan, "ScanTerminated", hyperscan.error)
        self.takes_views = True
        if not needles:
            return
        expressions = [caseless_bytes_regex(text) if caseless else b"".join(b"\\x%02x" % b for b in text.encode())
                       for text, caseless in needles]
        flags = [hyperscan.HS_FLAG_CASELESS if caseless else 0 for _, caseless in needles]
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=expressions, ids=list(range(len(needles))), elements=len(needles), flags=flags)
        self.database = database

    def hits(self, data, lo: int, hi: int) -> list[tuple[int, int]]:
        if self.database is None or hi <= lo:
            return []
        found: list[tuple[int, int]] = []
        position = lo
        while position < hi:
            line_end = -1
            same_line = 0
            resume = None

            def on_match(index: int, _start: int, end: int, _flags: int, _context: object) -> bool | None:
                nonlocal line_end, same_line, resume
                offset = position + end - 1  # the needle's last byte: on the line that holds it
                found.append((offset, index))
                if offset < line_end:
                    same_line += 1
                    if same_line > _HITS_PER_LINE:  # a line full of needles: go on after it
                        found.append((offset, ANY_NEEDLE))
                        resume = line_end + 1
                        return True
                else:
                    line_end = data.find(b"\n", offset, hi)
                    line_end = hi if line_end < 0 else line_end
                    same_line = 0
                return None

            with memoryview(data) as whole, whole[position:hi] as part:
                try:
                    try:
                        self.database.scan(part if self.takes_views else bytes(part), match_event_handler=on_match)
                    except TypeError:
                        if not self.takes_views:
                            raise
                        self.takes_views = False  # hyperscan < 0.8 scans bytes only: copy the chunk
                        self.database.scan(bytes(part), match_event_handler=on_match)
                except self.terminated:  # raised when on_match stopped the scan
                    pass
            if resume is None:
                break
            position = resume
        return found


def make_scanner(needles: Sequence[Needle], engine: str = "auto"):
    if engine in ("auto", "hyperscan"):
        try:
            return HyperscanScanner(needles)
        except Exception:  # not installed for this platform, or no usable CPU: same lines, slower
            if engine == "hyperscan":
                raise
    return PythonScanner(needles)
