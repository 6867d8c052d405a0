"""The native regular-expression engines, kept out of the pure core and registered into it.

Hyperscan (multi-literal needle scanning for the matcher) and RE2 (linear-time matching for rule files
we did not write) are C/C++ libraries with platform wheels that may be missing; the core names them
through `core.logs.scan.register_scanner` and `core.logs.regex_guard.register_linear_engine`, and
falls back to its pure-Python paths (same results, slower) when they are absent. The package's
`__init__` imports this module so the registration happens before any core module is used; neither
library is imported until first use (`ci-triage --help` does not pay for them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from ci_triage.core.logs.regex_guard import register_linear_engine
from ci_triage.core.logs.scan import (
    _HITS_PER_LINE,
    ANY_NEEDLE,
    CASE_PARTNERS,
    Needle,
    caseless_bytes_regex,
    register_scanner,
)


# Serialized databases an earlier process built (the shell's rule cache, ci_triage/rules_cache.py, puts the
# built-in rules' here): needles and prefilters (Matcher.scan_key) -> (kind, hyperscan.dumpb bytes). Used
# once each, then dropped.
_PREBUILT: dict[tuple, tuple[str, bytes]] = {}


def prebuilt_database(key: Sequence, kind: str, serialized: bytes) -> None:
    _PREBUILT[tuple(key)] = (kind, serialized)


def hyperscan_version() -> str | None:
    """The installed hyperscan binding's version, or None when it does not import."""
    try:
        import hyperscan
    except Exception:
        return None
    return str(getattr(hyperscan, "__version__", "unknown"))


class HyperscanScanner:
    """All needles in one pass (Hyperscan's multi-literal matchers)."""

    name = "hyperscan"

    def __init__(self, needles: Sequence[Needle], prefilters: Sequence[bytes] = ()) -> None:
        import hyperscan

        self.database = None
        self.terminated = getattr(hyperscan, "ScanTerminated", hyperscan.error)
        self.takes_views = True
        self.count = len(needles) + len(prefilters)  # ids past these are the literal database's partners
        self.kind = "none"
        # (needle index, text) of the caseless needles spelling i, k or s; their regexes on first need.
        self._partner_texts: list[tuple[int, str]] = []
        self._partnered: list[tuple[int, re.Pattern[bytes]]] | None = None
        if not needles and not prefilters:
            return
        partnered = [(index, text) for index, (text, caseless) in enumerate(needles)
                     if caseless and any(char in CASE_PARTNERS for char in text.lower())]
        prebuilt = _PREBUILT.pop(tuple(needles) + tuple(prefilters), None)
        if prebuilt is not None:
            database = self._loaded(hyperscan, *prebuilt)
            if database is not None:
                self.database, self.kind = database, prebuilt[0]
                self._partner_texts = partnered if self.kind == "literal" else []
                return
        flags = [hyperscan.HS_FLAG_CASELESS if caseless else 0 for _, caseless in needles]
        database = None
        if not prefilters:  # literals only
            # Hyperscan's literal compiler (5.2+) builds the database in a quarter of the time. It folds
            # ASCII case only, so the UTF-8 forms of the letters `re.IGNORECASE` also folds to i, k, s are
            # literals too (ids past the needles'): a chunk holding one is searched for the caseless
            # needles spelling that letter with `caseless_bytes_regex`, as a regex database would match.
            partners = [char.encode() for forms in CASE_PARTNERS.values() for char in forms]
            try:
                database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                database.compile(expressions=[text.encode() for text, _ in needles] + partners,
                                 ids=list(range(len(needles) + len(partners))), elements=len(needles) + len(partners),
                                 flags=flags + [0] * len(partners), literal=True)
                self._partner_texts, self.kind = partnered, "literal"
            except (TypeError, hyperscan.error):  # no literal compiler
                database = None
        if database is None:  # every needle as a regex, and the prefilters
            expressions = [caseless_bytes_regex(text) if caseless else b"".join(b"\\x%02x" % b for b in text.encode())
                           for text, caseless in needles] + list(prefilters)
            # HS_FLAG_PREFILTER: hyperscan may widen a prefilter it cannot compile exactly (never narrow it).
            flags += [hyperscan.HS_FLAG_PREFILTER] * len(prefilters)
            database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            database.compile(expressions=expressions, ids=list(range(len(expressions))), elements=len(expressions),
                             flags=flags)
            self._partner_texts, self.kind = [], "regex"
        self.database = database

    @staticmethod
    def _loaded(hyperscan: Any, kind: str, serialized: bytes) -> Any | None:
        """A serialized database, if it loads and scans on this machine; None sends the caller to
        compiling one. (Hyperscan checks the blob's version, platform and checksum itself; the cache
        file's own SHA-256 and key were checked before it got here.)"""
        if kind not in ("literal", "regex"):
            return None
        try:
            database = hyperscan.loadb(serialized, hyperscan.HS_MODE_BLOCK)
            database.scratch = hyperscan.Scratch(database)  # loadb gives none; scan refuses without
            database.scan(b"\n", match_event_handler=lambda *_: None)  # a CPU it was not built for fails here
        except Exception:  # another CPU, a damaged blob, another library build
            return None
        return database

    def serialized(self) -> tuple[str, bytes] | None:
        """(kind, bytes) that `prebuilt_database` takes back in another process, or None."""
        if self.database is None:
            return None
        import hyperscan

        return self.kind, bytes(hyperscan.dumpb(self.database))

    @property
    def partnered(self) -> list[tuple[int, re.Pattern[bytes]]]:
        if self._partnered is None:
            # A bytes pattern folds ASCII case only; caseless_bytes_regex adds the non-ASCII partners.
            self._partnered = [(index, re.compile(caseless_bytes_regex(text), re.IGNORECASE))
                               for index, text in self._partner_texts]
        return self._partnered

    def hits(self, data, lo: int, hi: int) -> list[tuple[int, int]]:
        if self.database is None or hi <= lo:
            return []
        found: list[tuple[int, int]] = []
        position = lo
        partner_seen = False
        while position < hi:
            line_end = -1
            same_line = 0
            resume = None

            def on_match(index: int, _start: int, end: int, _flags: int, _context: object) -> bool | None:
                nonlocal line_end, same_line, resume, partner_seen
                if index >= self.count:  # a non-ASCII letter that folds to i, k or s: see __init__
                    partner_seen = True
                    return None
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
        if partner_seen:
            for index, pattern in self.partnered:
                found.extend((hit.start(), index) for hit in pattern.finditer(data, lo, hi))
        return found


@cache
def _re2() -> tuple[Any, Any] | None:
    try:
        import re2  # google-re2
    except ImportError:
        return None
    options = re2.Options()
    options.log_errors = False  # RE2 writes refusals to stderr; a refusal here is an answer, not an error
    return re2, options


def _re2_compile(source: str) -> Any:
    re2, options = _re2()
    return re2.compile(source, options)


def re2_available() -> bool:
    return _re2() is not None


register_scanner("hyperscan", HyperscanScanner)
register_linear_engine("re2", re2_available, _re2_compile)
