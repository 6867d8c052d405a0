"""Find the log lines some rule can match without running every rule's regex on every line.

Each rule pattern is parsed (with `re`'s own parser) for literal text that every match of it must
contain: a "needle" (`ReadTimeoutError(` for `ReadTimeoutError\\(.*Read timed out`; one needle per
alternative of a branch). The log is read a 4 MiB chunk at a time
(an mmap is read in place and its pages released after each chunk); a chunk holding ANSI codes is
cleaned first (`LogBuffer.cleaned`). One multi-literal scan (scan.py) of each chunk finds the lines
holding any needle, and which needles each holds (with hyperscan, the few patterns whose needles are
common words are scanned as themselves instead: prefilter.py); a line's start and end are found from its first
hit, and newlines are counted (once each) only up to the lines kept, for their numbers. Only those
lines are split into `\\r` segments and decoded (`logparse.split_line`, the one line parser) and
given to the real regexes, in priority order, exactly as `Rule.match` would see them, but only the
patterns whose own needles the line holds (lines over WINDOW characters window by window). The
scan is a superset test, so the result is the straightforward per-line result (the tests check
both paths against each other). The 400 lines before the winning match are decoded only when
classify asks for them (`context_before`), as one block.

Why a needle is found whenever the normalised text holds it:
- the text is decoded UTF-8; a needle never holds U+FFFD or a surrogate, so its UTF-8 bytes are in
  the raw line;
- ANSI codes are removed before the scan, and `\\r` only cuts a line into segments, so a needle
  in a segment's text is in the scanned bytes;
- the text is a suffix of the line without its timestamp, so `^`-anchored patterns are unaffected;
- a case-insensitive needle is ASCII; `re.IGNORECASE` also folds `İ`/`ı` to i, `K` (Kelvin) to k
  and `ſ` to s, so the scan spells those letters as classes holding their UTF-8 forms too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from ci_triage.core.logs.long_lines import WINDOW, LongLine, _window_match, _windows_with_needles  # noqa: F401 (WINDOW, _windows_with_needles: tested here)
from ci_triage.core.logs.prefilter import gate_expression, prefiltered
from ci_triage.core.logs.logparse import (
    GROUP_RUN,
    LogBuffer,
    RawLog,
    StepClock,
    last_line,
    last_stamp,
    split_line,
)
from ci_triage.core.logs.relevant import CONTEXT_LINES, RelevantLines, context_before, context_lines, with_context  # noqa: F401
from ci_triage.core.logs.needles import _needle_regex, lacks_all, pattern_needles, pattern_required, rule_needles  # noqa: F401
from ci_triage.core.logs.rules import Rule, RuleSet
from ci_triage.core.logs.scan import (  # noqa: F401 (CASE_PARTNERS, caseless_bytes_regex: tested here)
    ANY_NEEDLE,
    CASE_PARTNERS,
    Needle,
    caseless_bytes_regex,
    make_scanner,
)
from ci_triage.core.logs.values import LogLine, RuleMatch, Step


# Lines classification needs besides rule matches: section headers name steps, the first
# `##[error]` is the root cause of an unexplained failure.
MARKERS: tuple[Needle, ...] = (("##[group]Run ", False), ("##[error]", False))
# Matches kept per rule, and `##[error]` lines kept: memory stays bounded without hiding any rule.
KEEP_PER_RULE = 1000
KEEP_ERRORS = 1000
# A candidate line's plan trying at most this many patterns is checked against their gates (bytes regexes,
# prefilter.gate_expression) before it is decoded; with more, the gates would cost what matching does.
GATED_PATTERNS = 4
# (required literals, gates) of each pattern a plan tries: see Matcher.ruled_out.
Check = tuple[tuple[tuple[bytes, ...], ...], tuple["re.Pattern[bytes] | None", ...]]
_CHUNK = 4 << 20


# --- the matcher ------------------------------------------------------------------------------

class _Keep:
    """Matches kept with bounded memory and no blind spot: the first KEEP_PER_RULE of each rule.

    The earliest match of every rule is always kept, so the highest-priority cause is found however
    many lower-priority matches come first; beyond the bound a rule's further matches are counted.
    """

    def __init__(self) -> None:
        self.matches: list[RuleMatch] = []
        self.per_rule: dict[str, int] = {}
        self.dropped = 0

    def wants(self, rule: Rule) -> bool:
        return self.per_rule.get(rule.id, 0) < KEEP_PER_RULE

    def add(self, rule: Rule, line: LogLine, captures: dict[str, str]) -> None:
        self.per_rule[rule.id] = self.per_rule.get(rule.id, 0) + 1
        self.matches.append(RuleMatch(rule.id, rule.category, rule.retryable, rule.priority, line, captures))


class Matcher:
    def __init__(self, rule_set: RuleSet, engine: str = "auto") -> None:
        self.rule_set = rule_set
        pattern_covers = [[pattern_needles(pattern) for pattern in rule.patterns] for rule in rule_set.rules]
        cover_of = [frozenset().union(*covers) if all(covers) else None for covers in pattern_covers]
        self.covers = cover_of
        # On a long line each pattern is tried only where its own needles are (a line full of one
        # rule's needles would otherwise cost every pattern of every rule, in every window).
        self.pattern_covers = pattern_covers
        self._window_regexes: dict[frozenset[Needle], re.Pattern[str]] = {}
        # A rule with no needle must be tried on every line: correct, but no faster than before.
        self.always = tuple(priority for priority, cover in enumerate(cover_of) if cover is None)
        self.exhaustive = bool(self.always)
        self._needle_regexes: list[re.Pattern[str] | None | bool] = [False] * len(rule_set.rules)
        self.all_rules = tuple(range(len(rule_set.rules)))
        # With hyperscan, the patterns whose needles are common text are scanned as themselves
        # (prefilter.py): a line reaches Python only if they can match it. The Python scanner takes needles.
        prefilters = () if engine == "python" else tuple(
            (priority, index, expression) for priority, cover in enumerate(cover_of) if cover is not None
            for index, pattern in enumerate(rule_set.rules[priority].patterns)
            if (expression := prefiltered(pattern, pattern_covers[priority][index])) is not None)
        self._index(prefilters)
        self.scanner = make_scanner(self.needles, engine, [expression for _, _, expression in prefilters])
        if prefilters and self.scanner.name == "python":  # no hyperscan, or it refused a prefilter: needles
            self._index(())
            self.scanner = make_scanner(self.needles, engine)
        self._plans: dict[frozenset[int], tuple[tuple[int, tuple[int, ...] | None], ...] | None] = {}
        # Each pattern's required literals (UTF-8): all of them are in the bytes of any line it can match.
        self.required: list[list[tuple[bytes, ...]]] = [
            [tuple(text.encode("utf-8", "surrogatepass") for text in pattern_required(pattern)) for pattern in rule.patterns]
            if cover is not None else [] for rule, cover in zip(rule_set.rules, cover_of)]
        self._checks: dict[tuple, Check | None] = {}
        self._gates: dict[tuple[int, int], re.Pattern[bytes] | None] = {}

    def _index(self, prefilters: tuple[tuple[int, int, bytes], ...]) -> None:
        """The scan's ids: each needle (but those only prefiltered patterns have), then each prefilter;
        for each id, the (priority, pattern index) of the patterns a line holding it may match."""
        skip = {(priority, index) for priority, index, _ in prefilters}
        covers = [cover for priority, covers in enumerate(self.pattern_covers) if self.covers[priority] is not None
                  for index, cover in enumerate(covers) if (priority, index) not in skip]
        self.needles: tuple[Needle, ...] = tuple(sorted(set(MARKERS).union(*covers)))
        self.prefilters = tuple(expression for _, _, expression in prefilters)
        self.scan_key = self.needles + self.prefilters  # what a serialized database was built for
        index_of = {needle: index for index, needle in enumerate(self.needles)}
        # A line's ids name the only patterns that can match it.
        self.patterns_of_needle: list[list[tuple[int, int]]] = [[] for _ in self.needles]
        for priority, cover in enumerate(self.covers):
            for pattern_index, pattern_cover in enumerate(self.pattern_covers[priority] if cover else ()):
                if (priority, pattern_index) not in skip:
                    for needle in pattern_cover:
                        self.patterns_of_needle[index_of[needle]].append((priority, pattern_index))
        self.patterns_of_needle.extend([(priority, index)] for priority, index, _ in prefilters)
        self.marker_ids = frozenset(index_of[marker] for marker in MARKERS)

    def _window_regex(self, needles: frozenset[Needle]) -> re.Pattern[str]:
        """The regex of the needles a long line holds of one rule's (few, so it scans fast)."""
        regex = self._window_regexes.get(needles)
        if regex is None:
            regex = self._window_regexes[needles] = _needle_regex(needles)
        return regex

    def check(self, priority: int) -> tuple[Rule, re.Pattern[str] | None]:
        """(rule, the regex of its needles or None), the regex compiled on first use."""
        needles = self._needle_regexes[priority]
        if needles is False:
            cover = self.covers[priority]
            needles = self._needle_regexes[priority] = _needle_regex(cover) if cover else None
        return self.rule_set.rules[priority], needles  # type: ignore[return-value]

    @property
    def checks(self) -> list[tuple[Rule, re.Pattern[str] | None]]:
        return [self.check(priority) for priority in self.all_rules]

    def first_match(self, text: str, priorities: Iterable[int], keep: _Keep) -> tuple[Rule, dict[str, str]] | None:
        """The highest-priority rule among `priorities` that matches `text`, as `Rule.match` decides;
        a line longer than WINDOW is matched window by window (WINDOW characters, overlapping by
        half), so a match of up to WINDOW / 2 characters is found anywhere in a line of any length."""
        short = len(text) <= WINDOW
        long_line: LongLine | None = None
        for priority in priorities:
            if short:
                rule, needles = self.check(priority)
                if needles is not None and needles.search(text) is None:
                    continue
                captures = rule.match(text)
            else:
                # The windows come from the needles this line holds; the rule's whole needle regex
                # (check) is not needed, nor compiled, here.
                rule, needles, captures = self.rule_set.rules[priority], None, None
                if long_line is None:
                    long_line = LongLine(text)
                cover = self.covers[priority]
                if cover is not None:
                    present = frozenset(needle for needle in cover if long_line.holds(needle))
                    if not present:
                        continue
                    needles = self._window_regex(present)
                patterns = [pattern for pattern, pattern_cover in zip(rule.patterns, self.pattern_covers[priority])
                            if not pattern_cover or any(long_line.holds(needle) for needle in pattern_cover)]
                for lo, hi in _windows_with_needles(text, needles):
                    captures = _window_match(rule, text, lo, hi, patterns)
                    if captures is not None:
                        break
            if captures is not None:
                # A rule past its bound still wins the line (a lower-priority rule must not take it).
                return (rule, captures) if keep.wants(rule) else None
        return None

    def match_lines(self, lines: Iterable[LogLine]) -> list[RuleMatch]:
        """For each line, the highest-priority rule that matches it (the first KEEP_PER_RULE of each
        rule are kept)."""
        keep = _Keep()
        for line in lines:
            found = self.first_match(line.text, self.all_rules, keep)
            if found is not None:
                keep.add(found[0], line, found[1])
        return keep.matches

    def _plan(self, needles: frozenset[int]) -> tuple[tuple[int, tuple[int, ...] | None], ...] | None:
        """For a line holding `needles`: (priority, the indices of the patterns that can match, or
        None for all) of each rule to try, in priority order; None when the scan stopped reporting
        the line's needles (every rule is tried, each behind its needle regex)."""
        if needles in self._plans:
            return self._plans[needles]
        plan: tuple[tuple[int, tuple[int, ...] | None], ...] | None = None
        if ANY_NEEDLE not in needles:
            allowed: dict[int, set[int]] = {}
            for needle in needles:
                for priority, pattern in self.patterns_of_needle[needle]:
                    allowed.setdefault(priority, set()).add(pattern)
            steps: dict[int, tuple[int, ...] | None] = {p: tuple(sorted(found)) for p, found in allowed.items()}
            steps.update({priority: None for priority in self.always})
            plan = tuple(sorted(steps.items()))
        self._plans[needles] = plan
        return plan

    def ruled_out(self, plan: tuple) -> Check | None:
        """For each pattern `plan` tries, its required literals and, when the plan tries few patterns, its
        gate (prefilter.gate_expression), for `lacks_all`; None when some pattern has neither."""
        if plan in self._checks:
            return self._checks[plan]
        tries = sum(len(patterns) if patterns is not None else GATED_PATTERNS + 1 for _, patterns in plan)
        required: tuple[tuple[bytes, ...], ...] = ()
        gates: tuple[re.Pattern[bytes] | None, ...] = ()
        check: Check | None = None
        for priority, patterns in plan:
            if patterns is None:
                break
            needs = tuple(self.required[priority][index] for index in patterns)
            guards = tuple(self.gate(priority, index) if tries <= GATED_PATTERNS else None for index in patterns)
            if not all(need or guard for need, guard in zip(needs, guards)):
                break
            required, gates = required + needs, gates + guards
        else:
            check = (required, gates if any(gates) else ())
        self._checks[plan] = check
        return check

    def gate(self, priority: int, index: int) -> re.Pattern[bytes] | None:
        """The pattern's gate compiled on first use (most patterns never need one)."""
        key = (priority, index)
        if key not in self._gates:
            expression = gate_expression(self.rule_set.rules[priority].patterns[index])
            self._gates[key] = None if expression is None else re.compile(expression)
        return self._gates[key]

    def planned_match(self, text: str, plan, keep: _Keep) -> tuple[Rule, dict[str, str]] | None:
        """`first_match` over a plan: the same answer, trying only the patterns the line's needles allow."""
        if plan is None:
            return self.first_match(text, self.all_rules, keep)
        if len(text) > WINDOW:
            return self.first_match(text, [priority for priority, _ in plan], keep)
        rules = self.rule_set.rules
        for priority, patterns in plan:
            rule = rules[priority]
            captures = rule.match(text) if patterns is None else rule.match_patterns(text, patterns)
            if captures is not None:
                # A rule past its bound still wins the line (a lower-priority rule must not take it).
                return (rule, captures) if keep.wants(rule) else None
        return None

    def candidates(self, data, lo: int, hi: int) -> Iterator[tuple[int, int, frozenset[int]]]:
        """(start, end, needles) of each line of data[lo:hi] holding a needle (every line when some
        rule has none), in order; `end` is the offset of its `\\n` (or `hi`)."""
        hits = self.scanner.hits(data, lo, hi)
        hits.sort()
        if self.always:
            yield from self._every_line(data, lo, hi, hits)
            return
        line_end = -1
        start = lo
        found: set[int] = set()
        for offset, needle in hits:
            if offset >= line_end:
                if found:
                    yield start, line_end, frozenset(found)
                    found = set()
                start = data.rfind(b"\n", lo, offset) + 1 or lo
                line_end = data.find(b"\n", offset, hi)
                if line_end < 0:
                    line_end = hi
            found.add(needle)
        if found:
            yield start, line_end, frozenset(found)

    @staticmethod
    def _every_line(data, lo: int, hi: int, hits: list[tuple[int, int]]) -> Iterator[tuple[int, int, frozenset[int]]]:
        position = 0
        start = lo
        while True:
            end = data.find(b"\n", start, hi)
            if end < 0:
                end = hi
            found = set()
            while position < len(hits) and hits[position][0] < end:
                found.add(hits[position][1])
                position += 1
            yield start, end, frozenset(found)
            if end >= hi - 1:
                return
            start = end + 1

    def relevant_lines(self, raw: RawLog, steps: Iterable[Step]) -> RelevantLines:
        buffer = raw if isinstance(raw, LogBuffer) else LogBuffer(raw)
        clock = StepClock(steps)
        keep = _Keep()
        kept: list[LogLine] = []
        errors = 0
        group_step: str | None = None
        current: str | None = None
        first_number = 1
        chunk_lines: list[tuple[int, int]] = []
        starts: dict[int, int] = {}
        groups: list[tuple[int, str]] = []
        for chunk_lo, chunk_hi in buffer.chunks(_CHUNK):
            chunk_lines.append((first_number, chunk_lo))
            # The chunk itself when it holds no ANSI code, else a cleaned copy (same lines).
            data, lo, hi = buffer.cleaned(chunk_lo, chunk_hi)
            in_place = data is buffer.data
            floor = lo
            # Line numbers are counted only up to the lines kept: each newline is counted once.
            counted, number = lo, first_number
            markers = self.marker_ids
            for start, end, needles in self.candidates(data, lo, hi):
                plan = self._plan(needles)
                raw_line = data[start:end]
                if plan and end - start <= WINDOW and markers.isdisjoint(needles):
                    # Every pattern the plan tries lacks one of its required literals in the line's bytes
                    # (long lines skip the check): none can match a segment, and it is no marker: not decoded.
                    check = self._checks[plan] if plan in self._checks else self.ruled_out(plan)
                    if check is not None and lacks_all(check[0], raw_line, check[1]):
                        continue
                stamp, segments = split_line(raw_line, buffer.errors)
                if stamp is None:
                    # The nearest stamped line above, back to the last candidate (whose stamp is current).
                    stamp = last_stamp(data, floor, start)
                current = stamp or current
                floor = end + 1
                line_number = 0
                for text in segments:
                    header = text.startswith(GROUP_RUN)
                    if header:
                        group_step = text[len("##[group]"):]
                    found = self.planned_match(text, plan, keep) if plan is None or plan else None
                    error = text.startswith("##[error]") and errors < KEEP_ERRORS
                    if found is not None or error or header:
                        if not line_number:
                            number += count_newlines(data, counted, start)
                            counted, line_number = start, number
                            if in_place:
                                starts[line_number] = start
                    if header:  # (few: one per step) so that context lines get their own step
                        groups.append((line_number, group_step))
                    if found is not None or error:
                        line = LogLine(number=line_number, text=text, step=clock.step_of(current, group_step),
                                       timestamp=current)
                        kept.append(line)
                        errors += error
                        if found is not None:
                            keep.add(found[0], line, found[1])
            # The lines after the last candidate may carry a later stamp, for the next chunk.
            current = last_stamp(data, floor, hi) or current
            first_number = number + count_newlines(data, counted, hi)
            del data
            buffer.release(chunk_lo, chunk_hi)
        last, last_start = last_line(buffer, first_number, clock.step_of(current, group_step), current)
        if last is not None:  # its start, so the scorer decodes the lines before it without a walk
            starts[last.number] = starts.get(last.number, last_start)
        return RelevantLines(kept, self.rule_set, keep.matches, "exhaustive" if self.always else self.scanner.name,
                             buffer, chunk_lines, starts, last, clock, groups)


def count_newlines(data, lo: int, hi: int) -> int:
    """`\\n` bytes in data[lo:hi]; an mmap (which has no `count`) is copied a bounded piece at a time."""
    if isinstance(data, (bytes, bytearray)):
        return data.count(b"\n", lo, hi)
    total = 0
    for at in range(lo, hi, _CHUNK):
        total += data[at:min(at + _CHUNK, hi)].count(b"\n")
    return total


@lru_cache(maxsize=16)
def _matcher(rule_set: RuleSet, engine: str) -> Matcher:
    return Matcher(rule_set, engine)


_last: list = [None, None, None]  # (rule set, engine, matcher) of the last call: hashing a rule set is not free


def matcher_for(rule_set: RuleSet, engine: str = "auto") -> Matcher:
    if _last[0] is not rule_set or _last[1] != engine:
        _last[:] = [rule_set, engine, _matcher(rule_set, engine)]
    return _last[2]


def relevant_lines(raw: RawLog, rule_set: RuleSet, steps: Iterable[Step] = (), engine: str = "auto") -> RelevantLines:
    """The lines of a job log `classify` needs, found without a LogLine per physical line.

    `classify(relevant_lines(raw, rules, steps), rules)` equals
    `classify(list(parse_log(raw, steps)), rules)`, in time that grows with the log's size only
    through C-speed scans, and memory bounded by the chunk size and the matches kept.
    """
    return matcher_for(rule_set, engine).relevant_lines(raw, tuple(steps))


def find_matches(lines: Iterable[LogLine], rule_set: RuleSet) -> list[RuleMatch]:
    """For every line, the highest-priority rule that matches it, with its captures, in log order
    (the first KEEP_PER_RULE matches of each rule).

    Lines from `relevant_lines` come with their matches already found by one scan of the whole
    log; any other lines go through the same per-line check.
    """
    if isinstance(lines, RelevantLines):
        if lines.rule_set is not rule_set and lines.rule_set != rule_set:
            raise ValueError("these lines were selected for another rule set")
        return list(lines.matches)
    return matcher_for(rule_set).match_lines(lines)
