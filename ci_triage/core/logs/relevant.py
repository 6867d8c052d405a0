"""The lines of a log classification looks at, and the lines before them decoded on request.

The matcher (matcher.py) keeps only the lines some rule matches; the scorer and the traceback reader
want the lines above such a line as `parse_log` would give them (numbered, with their step), which are
decoded here from the log itself, one bounded block at a time.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

from ci_triage.core.logs.logparse import GROUP_RUN, LogBuffer, StepClock, last_stamp, split_line
from ci_triage.core.logs.rules import RuleSet
from ci_triage.core.logs.values import LogLine, RuleMatch

# classify looks this many lines back from the root cause for a traceback.
CONTEXT_LINES = 400


class RelevantLines(list):
    """The lines of a log classification looks at, in log order, with their rule matches.

    A subsequence of `parse_log`'s lines: every line a rule matches (up to KEEP_PER_RULE per rule)
    and the first KEEP_ERRORS `##[error]` lines. The lines before a match (for traceback frames)
    are decoded on request only (`context_before`), from the log, which must stay open until then.
    Valid only with the rule set it was made for.
    """

    def __init__(self, lines: Iterable[LogLine], rule_set: RuleSet, matches: list[RuleMatch], engine: str,
                 buffer: LogBuffer | None = None, chunk_lines: Sequence[tuple[int, int]] = (),
                 starts: dict[int, int] | None = None, last_line: LogLine | None = None,
                 clock: StepClock | None = None, groups: Sequence[tuple[int, str]] = ()) -> None:
        super().__init__(lines)
        self.rule_set = rule_set
        self.matches = matches
        self.engine = engine
        self._buffer = buffer
        self._chunk_lines = list(chunk_lines)  # (first line number, start offset) of each chunk
        self._starts = {} if starts is None else starts  # start offset of kept lines, where the scan saw the log itself
        self.last_line = last_line  # the log's last line (the scorer's anchor when nothing else is)
        # What a context line's step is made of, as parse_log makes it: the API's step times, and the
        # (line number, name) of every `##[group]Run ` header the scan passed.
        self._clock = StepClock(()) if clock is None else clock
        self._groups = list(groups)

    def context_before(self, line: LogLine, count: int = CONTEXT_LINES) -> list[str]:
        """Texts of the `count` lines (segments) that end with `line`, as `parse_log` gives them."""
        return [other.text for other in self._numbered_context(line, count)]

    def context_lines(self, line: LogLine, count: int = CONTEXT_LINES) -> list[LogLine]:
        """The `count` lines ending with `line` as LogLines, numbered and with the step `parse_log` gives
        them (the timestamp unknown): what the root-cause scorer reads around an anchor."""
        return self._numbered_context(line, count)

    def _numbered_context(self, line: LogLine, count: int) -> list[LogLine]:
        if self._buffer is None or not self._chunk_lines:
            index = _index_of(self, line)
            return [LogLine(other.number, other.text, other.step) for other in self[max(0, index - count + 1):index + 1]]
        buffer = self._buffer
        data = buffer.data
        start = self._starts.get(line.number)
        if start is None:
            at = bisect_right([number for number, _ in self._chunk_lines], line.number) - 1
            number, start = self._chunk_lines[at]
            while number < line.number:  # walk to the line's start (within one bounded chunk)
                start = data.find(b"\n", start) + 1
                number += 1
        end = buffer.line_end(start)
        first, physical = start, 1
        while physical <= count and first > buffer.start:
            first = max(data.rfind(b"\n", buffer.start, first - 1) + 1, buffer.start)
            physical += 1
        # The lines before `line` and its own, cleaned and split in one go: ANSI removal keeps the newlines.
        block, lo, hi = buffer.cleaned(first, end)
        texts: list[LogLine] = []
        own: list[str] = []
        first_number = line.number - physical + 1
        # The step in force above the block: the last group header before it and, with the API's step
        # times, the last stamp before it (from the raw bytes: the runner's stamp opens a line, before
        # any colour code).
        marked = bisect_right(self._groups, (first_number, "")) - 1
        group = self._groups[marked][1] if marked >= 0 else None
        stamp = last_stamp(buffer.data, buffer.start, first) if self._clock.names else None
        for back, raw in zip(range(physical - 1, -1, -1), block[lo:hi].split(b"\n")):
            own_stamp, own = split_line(raw, buffer.errors)
            stamp = own_stamp or stamp
            for text in own:
                if text.startswith(GROUP_RUN):
                    group = text[len("##[group]"):]
                texts.append(LogLine(line.number - back, text, self._clock.step_of(stamp, group)))
        # `line` is one of its physical line's segments: drop the segments after it.
        mine = next((i for i in range(len(own) - 1, -1, -1) if own[i] == line.text), len(own) - 1)
        if mine < len(own) - 1:
            del texts[mine - len(own) + 1:]
        return texts[-count:]


def _index_of(lines: Sequence[LogLine], line: LogLine) -> int:
    index = next((i for i in range(len(lines) - 1, -1, -1) if lines[i] is line), None)
    if index is None:
        index = next(i for i, other in enumerate(lines) if other == line)
    return index


def _list_context(lines: Sequence[LogLine], line: LogLine, count: int) -> list[str]:
    return [other.text for other in context_lines(lines, line, count)]


def context_windows(lines: Sequence[LogLine], anchors: Sequence[LogLine], count: int,
                    span: int) -> list[tuple[list[LogLine], int, int]]:
    """For each of `anchors` (lines of `lines`), `(block, lo, hi)` with `block[lo:hi] == context_lines(lines, anchor,
    count)`; anchors fewer than `span` lines apart share one block, read once, so a caller that reads every anchor's
    lines can work out what it needs of a line once per block (by its index in it), not once per anchor: many matches
    under a long line each read it otherwise."""
    order = sorted(range(len(anchors)), key=lambda k: anchors[k].number)
    found: list[tuple[list[LogLine], int, int] | None] = [None] * len(anchors)
    start = 0
    while start < len(order):
        first = anchors[order[start]].number
        end = start + 1
        while end < len(order) and anchors[order[end]].number - first < span:
            end += 1
        last = anchors[order[end - 1]]
        reach = last.number - first + count
        block = context_lines(lines, last, reach)
        places = _block_places(lines, block)
        for k in order[start:end]:
            anchor = anchors[k]
            at = places.get(id(anchor))
            if at is None or block[at] is not anchor:
                at = places.get((anchor.number, anchor.text))
            if at is not None and (at >= count - 1 or len(block) < reach):
                found[k] = (block, max(0, at - count + 1), at + 1)
            else:  # not in the block as its own read gives it (segments of a `\r` line): read it alone
                own = context_lines(lines, anchor, count)
                found[k] = (own, 0, len(own))
        start = end
    return [window for window in found if window is not None]


def _block_places(lines: Sequence[LogLine], block: Sequence[LogLine]) -> dict[object, int]:
    """Where each line of `block` is: by identity (a list's own lines), and for a log read anew (`RelevantLines`'
    buffer, which decodes new lines) by number and text, the last segment of that text, as its own read takes it."""
    places: dict[object, int] = {id(line): i for i, line in enumerate(block)}
    if isinstance(lines, RelevantLines) and lines._buffer is not None and lines._chunk_lines:
        places.update({(line.number, line.text): i for i, line in enumerate(block)})
    return places


def with_context(lines: Sequence[LogLine], anchors: Iterable[LogLine], count: int = CONTEXT_LINES) -> list[LogLine]:
    """`lines` plus the `count` lines before each anchor, in log order: the fast path keeps only matched
    lines, and the scorer reads the lines around the failure. `parse_log`'s full list is returned as it is."""
    if not isinstance(lines, RelevantLines):
        return list(lines)
    merged = {(line.number, line.text): line for line in lines}
    for anchor in anchors:
        for line in lines.context_lines(anchor, count):
            merged.setdefault((line.number, line.text), line)
    return [merged[key] for key in sorted(merged, key=lambda k: k[0])]


def context_before(lines: Sequence[LogLine], line: LogLine, count: int = CONTEXT_LINES) -> list[str]:
    """Texts of the `count` log lines ending with `line` (one of `lines`' matches): from the log for
    `relevant_lines`' selection, from the list itself for `parse_log`'s lines."""
    if isinstance(lines, RelevantLines):
        return lines.context_before(line, count)
    return _list_context(lines, line, count)


def context_lines(lines: Sequence[LogLine], line: LogLine, count: int = CONTEXT_LINES) -> list[LogLine]:
    """The `count` log lines ending with `line` (one of `lines`), as LogLines: decoded from the log for
    `relevant_lines`' selection, from the list itself for `parse_log`'s lines."""
    if isinstance(lines, RelevantLines):
        return lines.context_lines(line, count)
    index = _index_of(lines, line)
    return list(lines[max(0, index - count + 1):index + 1])
