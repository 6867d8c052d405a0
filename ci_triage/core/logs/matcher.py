"""Find the log lines some rule can match without running every rule's regex on every line.

Each rule pattern is parsed (with `re`'s own parser) for literal text that every match of it must
contain: a "needle" (`ReadTimeoutError(` for `ReadTimeoutError\\(.*Read timed out`; one needle per
alternative of a branch). One multi-literal scan over the raw bytes of the whole log finds the
lines holding any needle; only those lines are decoded, normalised (timestamp, ANSI, `\\r`) and
given to the real regexes, in priority order, exactly as `Rule.match` would see them. The scan is a
superset test, so the result is the straightforward per-line result (the tests check both paths
against each other).

Engines for the scan: Hyperscan (`hyperscan` wheels bundle Intel Hyperscan on x86_64 and
Vectorscan on aarch64 and macOS) when it imports, else `bytes.find` per needle, which is slower
with many rules but gives the same lines.

Why a needle is found whenever the normalised text holds it:
- the text is decoded UTF-8; a needle never holds U+FFFD or a surrogate, so its UTF-8 bytes are in
  the raw line;
- ANSI codes and `\\r` are removed from the text; lines holding either are also scanned after the
  same removal, so a needle split by a colour code is still found;
- the text is a suffix of the line without its timestamp, so `^`-anchored patterns are unaffected;
- a case-insensitive needle is ASCII; `re.IGNORECASE` also folds `İ`/`ı` to i, `K` (Kelvin) to k
  and `ſ` to s, so the scan spells those letters as classes holding their UTF-8 forms too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from re import (
    _constants as sre,  # the parser's node types; part of re since Python 3.11
)
from re import _parser as sre_parse

import numpy as np

from ci_triage.core.logs.logparse import (
    ANSI_BYTES,
    GROUP_RUN,
    LogBuffer,
    RawLog,
    StepClock,
    last_stamp_before,
    lines_at,
    normalise,
    parse_log,
    preceding_lines,
)
from ci_triage.core.logs.rules import Rule, RuleSet
from ci_triage.model import LogLine, RuleMatch, Step

Needle = tuple[str, bool]  # (literal text, case-insensitive)

# Lines classification needs besides rule matches: section headers name steps, the first
# `##[error]` is the root cause of an unexplained failure.
MARKERS: tuple[Needle, ...] = (("##[group]Run ", False), ("##[error]", False))
# classify._frames_before looks this many lines back from the root cause for a traceback.
CONTEXT_LINES = 400
_MIN_NEEDLE = 3  # shorter literals hit nearly every line; such a rule is checked on every line
_CHUNK = 4 << 20
_HITS_PER_LINE = 16  # beyond this, a line's further needle hits are skipped (it is a candidate already)
# ASCII letters that `re.IGNORECASE` (str patterns) also matches with non-ASCII characters; the
# test suite re-derives this table from every code point.
CASE_PARTNERS = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT))


# --- needles ---------------------------------------------------------------------------------

def _usable(char: str, caseless: bool) -> bool:
    if char in "\n\ufffd" or "\ud800" <= char <= "\udfff":
        return False
    return not caseless or char.isascii()


def _literal_cover(text: str, caseless: bool) -> frozenset[Needle]:
    """The longest usable piece of a literal run, as a one-needle cover (or an empty one)."""
    pieces, piece = [], []
    for char in text:
        if _usable(char, caseless):
            piece.append(char)
        else:
            pieces.append("".join(piece))
            piece = []
    pieces.append("".join(piece))
    best = max(pieces, key=len)
    return frozenset({(best, caseless)}) if best else frozenset()


def _score(cover: frozenset[Needle]) -> tuple[int, int]:
    return min(len(text) for text, _ in cover), -len(cover)


def _cover(items: Iterable[tuple], caseless: bool) -> frozenset[Needle] | None:
    """Needles at least one of which every match of this parsed sequence contains, or None."""
    candidates: list[frozenset[Needle]] = []
    run: list[str] = []

    def end_run() -> None:
        if run:
            candidates.append(_literal_cover("".join(run), caseless))
            run.clear()

    for op, av in items:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        end_run()
        found: frozenset[Needle] | None = None
        if op is sre.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            inner = (caseless or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE
            found = _cover(sub, inner)
        elif op in _REPEATS:
            low, _high, sub = av
            if low >= 1:
                found = _cover(sub, caseless)
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            found = _cover(av, caseless)
        elif op is sre.BRANCH:
            alternatives = [_cover(branch, caseless) for branch in av[1]]
            if all(alternatives):
                found = frozenset().union(*alternatives)
        if found:
            candidates.append(found)
    end_run()
    candidates = [c for c in candidates if c]
    return max(candidates, key=_score) if candidates else None


def pattern_needles(pattern: re.Pattern[str]) -> frozenset[Needle] | None:
    """Needles one of which is in every text `pattern` finds a match in; None if none is known."""
    try:
        tree = sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # the parser is internal; a pattern it cannot take is checked on every line
        return None
    cover = _cover(tree, bool(tree.state.flags & re.IGNORECASE))
    if not cover or _score(cover)[0] < _MIN_NEEDLE:
        return None
    return cover


def rule_needles(rule: Rule) -> frozenset[Needle] | None:
    covers = [pattern_needles(pattern) for pattern in rule.patterns]
    if not all(covers):
        return None
    return frozenset().union(*covers)


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


def _needle_regex(needles: Iterable[Needle]) -> re.Pattern[str]:
    alternatives = sorted(f"(?i:{re.escape(text)})" if caseless else re.escape(text) for text, caseless in needles)
    return re.compile("|".join(alternatives))


# --- scanning engines -------------------------------------------------------------------------

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


# --- the matcher ------------------------------------------------------------------------------

class RelevantLines(list):
    """The lines of a log classification looks at, in log order, with their rule matches.

    A subsequence of `parse_log`'s lines: every line a rule matches, the 400 lines before each
    (for traceback frames), every `##[error]` line. Valid only with the rule set it was made for.
    """

    def __init__(self, lines: Iterable[LogLine], rule_set: RuleSet, matches: list[RuleMatch], engine: str) -> None:
        super().__init__(lines)
        self.rule_set = rule_set
        self.matches = matches
        self.engine = engine


class Matcher:
    def __init__(self, rule_set: RuleSet, engine: str = "auto") -> None:
        self.rule_set = rule_set
        self.checks: list[tuple[Rule, re.Pattern[str] | None]] = []
        cover_of = [rule_needles(rule) for rule in rule_set.rules]
        # A rule with no needle must be tried on every line: correct, but no faster than before.
        self.exhaustive = any(cover is None for cover in cover_of)
        self.needles: tuple[Needle, ...] = tuple(sorted(set(MARKERS).union(*(c for c in cover_of if c))))
        index_of = {needle: index for index, needle in enumerate(self.needles)}
        self.rules_of_needle: list[list[int]] = [[] for _ in self.needles]
        for priority, (rule, cover) in enumerate(zip(rule_set.rules, cover_of)):
            self.checks.append((rule, _needle_regex(cover) if cover else None))
            for needle in cover or ():
                self.rules_of_needle[index_of[needle]].append(priority)
        self.scanner = make_scanner(self.needles, engine)

    def _first_match(self, text: str, priorities: Iterable[int]) -> tuple[Rule, dict[str, str]] | None:
        for priority in priorities:
            rule = self.checks[priority][0]
            captures = rule.match(text)
            if captures is not None:
                return rule, captures
        return None

    def match_lines(self, lines: Iterable[LogLine], max_line: int, max_matches: int) -> list[RuleMatch]:
        """For each line, the highest-priority rule that matches it (as `Rule.match` decides)."""
        matches: list[RuleMatch] = []
        for line in lines:
            text = line.text[:max_line]
            for rule, needles in self.checks:
                if needles is not None and needles.search(text) is None:
                    continue
                captures = rule.match(text)
                if captures is not None:
                    matches.append(RuleMatch(rule.id, rule.category, rule.retryable, rule.priority, line, captures))
                    if len(matches) >= max_matches:
                        return matches
                    break
        return matches

    def candidate_lines(self, buffer: LogBuffer) -> list[tuple[int, int, tuple[int, ...]]]:
        """(line number, start offset, priorities of the rules to try) of every line holding a
        needle, in log order."""
        found: list[tuple[int, int, tuple[int, ...]]] = []
        first_number = 1  # number of the chunk's first line
        data = buffer.data
        for lo, hi in buffer.chunks(_CHUNK):
            needles_at: dict[int, set[int]] = {}
            for offset, needle in self.scanner.hits(data, lo, hi):
                needles_at.setdefault(buffer.line_start(offset), set()).add(needle)
            for start, needles in self._hits_in_dirty_lines(buffer, lo, hi):
                needles_at.setdefault(start, set()).update(needles)
            number, counted = first_number, lo
            for start in sorted(needles_at):
                number += buffer.count_newlines(counted, start)
                counted = start
                found.append((number, start, self._priorities(needles_at[start])))
            first_number += buffer.count_newlines(lo, hi)
        return found

    def _priorities(self, needles: Iterable[int]) -> tuple[int, ...]:
        return tuple(sorted({p for needle in needles for p in self.rules_of_needle[needle]}))

    def _hits_in_dirty_lines(self, buffer: LogBuffer, lo: int, hi: int) -> list[tuple[int, set[int]]]:
        """Needles that only appear once a line's ANSI codes and `\r` are removed, by line start.

        Only lines holding ESC, or `\r` anywhere but at the end, can have such needles; they are
        gathered, cleaned together and scanned again.
        """
        data = buffer.data
        dirty: dict[int, int] = {}  # start -> end
        markers = [b"\x1b"]
        carriage_returns = data.count(b"\r", lo, hi) if isinstance(data, (bytes, bytearray)) else None
        if carriage_returns is None or carriage_returns:
            markers.append(b"\r")
        for marker in markers:
            at = data.find(marker, lo, hi)
            while at >= 0:
                end = data.find(b"\n", at, hi)
                end = hi if end < 0 else end
                if marker == b"\r" and at + 1 == end and data.find(b"\r", data.rfind(b"\n", lo, at) + 1, at) < 0:
                    pass  # only a line-ending `\r`: it cannot split a needle
                else:
                    start = max(data.rfind(b"\n", lo, at) + 1, lo, buffer.start)
                    dirty[start] = end
                at = data.find(marker, end, hi)
        if not dirty:
            return []
        starts = sorted(dirty)
        cleaned = ANSI_BYTES.sub(b"", b"\n".join(data[start:dirty[start]] for start in starts)).replace(b"\r", b"")
        hits = self.scanner.hits(cleaned, 0, len(cleaned))
        if not hits:
            return []
        breaks = np.flatnonzero(np.frombuffer(cleaned, np.uint8) == 10)
        pieces = np.searchsorted(breaks, np.asarray([offset for offset, _ in hits]), side="left")
        needles_at: dict[int, set[int]] = {}
        for piece, (_, needle) in zip(pieces.tolist(), hits):
            needles_at.setdefault(starts[piece], set()).add(needle)
        return list(needles_at.items())

    def relevant_lines(self, raw: RawLog, steps: Iterable[Step], max_line: int, max_matches: int) -> RelevantLines:
        buffer = LogBuffer(raw)
        steps = tuple(steps)
        if self.exhaustive:
            lines = list(parse_log(buffer, steps))
            return RelevantLines(lines, self.rule_set, self.match_lines(lines, max_line, max_matches), "exhaustive")
        clock = StepClock(steps)
        kept: dict[int, LogLine] = {}
        starts: dict[int, int] = {}
        matches: list[RuleMatch] = []
        headers: list[tuple[int, int]] = []
        group_step: str | None = None
        current: str | None = None
        floor = buffer.start
        # One pass over the candidates: most hold a needle but match nothing, so they cost a
        # decode and the regexes of the rules whose needles they hold, and no LogLine.
        for number, start, priorities in self.candidate_lines(buffer):
            stamp, text = normalise(buffer.decode(start, buffer.line_end(start)))
            if stamp is None:
                stamp = last_stamp_before(buffer, start, floor)
            current = stamp or current
            floor = start
            if text.startswith(GROUP_RUN):
                group_step = text[len("##[group]") :]
                headers.append((number, start))
            found = self._first_match(text[:max_line], priorities) if len(matches) < max_matches else None
            if found is not None or text.startswith("##[error]"):
                line = LogLine(number=number, text=text, step=clock.step_of(current, group_step), timestamp=current)
                kept[number] = line
                starts[number] = start
                if found is not None:
                    rule, captures = found
                    matches.append(RuleMatch(rule.id, rule.category, rule.retryable, rule.priority, line, captures))
        # classify looks back from the root cause for a traceback: keep the lines before each match.
        context: dict[int, int] = {}
        for match in matches:
            number = match.line.number
            for before_number, before_start in preceding_lines(buffer, number, starts[number], CONTEXT_LINES):
                if before_number not in kept:
                    context[before_number] = before_start
        if context:
            positions = sorted({**dict(headers), **context}.items())
            for line in lines_at(buffer, positions, steps, keep=set(context)):
                kept[line.number] = line
        lines = [kept[number] for number in sorted(kept)]
        return RelevantLines(lines, self.rule_set, matches, self.scanner.name)


@lru_cache(maxsize=16)
def matcher_for(rule_set: RuleSet, engine: str = "auto") -> Matcher:
    return Matcher(rule_set, engine)


def relevant_lines(raw: RawLog, rule_set: RuleSet, steps: Iterable[Step] = (), engine: str = "auto") -> RelevantLines:
    """The lines of a job log `classify` needs, found without a LogLine per physical line.

    `classify(relevant_lines(raw, rules, steps), rules)` equals
    `classify(list(parse_log(raw, steps)), rules)`, in time and memory that grow with the log's
    size only through C-speed scans.
    """
    from ci_triage.core.logs.classify import (  # classify imports this module
        _MAX_LINE,
        _MAX_MATCHES,
    )

    return matcher_for(rule_set, engine).relevant_lines(raw, steps, _MAX_LINE, _MAX_MATCHES)
