"""Raw GitHub Actions job log -> LogLines with step, timestamp and original line number.

Format (as downloaded from GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs): every line the
runner writes starts with an ISO 8601 timestamp with seven fractional digits and a space
(`2024-01-01T00:00:00.0000000Z text`); continuation lines of a multi-line message carry none and
keep the previous line's timestamp. The file may start with a UTF-8 BOM; lines may carry ANSI
colour codes and `\\r`. The runner marks foldable sections with `##[group]`/`##[endgroup]` and
annotations with `##[error]`, `##[warning]`, `##[notice]`; those markers stay in the line text.

The log does not name the job's steps. Lines are mapped to steps by time: the jobs API gives each
step's start and end (to the second), and a line belongs to the last step that had started when the
line was written. Without step timings, the `##[group]Run ...` headers give a best-effort name.

A log may be 100 MB or more, not valid UTF-8, or binary junk. `LogBuffer` keeps it as bytes and
decodes a line only when it is asked for (invalid UTF-8 becomes U+FFFD), so the fast path in
`ci_triage.core.logs.matcher` can build LogLines for the few lines that matter (`lines_at`) instead of
one object per line. `parse_log` is the straightforward path: one LogLine per physical line, lazily.
"""

from __future__ import annotations

import mmap
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC

import numpy as np

from ci_triage.model import LogLine, Step

# ASCII digits only: `\d` would also accept other scripts' digits, which the runner never writes.
_TIMESTAMP = re.compile(r"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z) ?")
_STAMP_BYTES = rb"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z"
_STAMPED_LINE = re.compile(rb"(?m)^" + _STAMP_BYTES)
_STAMP_HERE = re.compile(_STAMP_BYTES)
# ECMA-48 CSI sequences (colours, cursor moves). None of its bytes is `\n`, so removing them never
# changes where lines start.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
ANSI_BYTES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]")
_BOM = "\ufeff"
_BOM_BYTES = _BOM.encode()
GROUP_RUN = "##[group]Run "
_CHUNK = 1 << 20

RawLog = str | bytes | bytearray | mmap.mmap


def normalise(line: str) -> tuple[str | None, str]:
    """(timestamp or None, text) of one physical line without its `\\n`: the one definition of a
    line's text, shared by the straightforward and the fast path."""
    if line.endswith("\r"):
        line = line[:-1]
    stamp = None
    found = _TIMESTAMP.match(line)
    if found:
        stamp = found.group(1)
        line = line[found.end() :]
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        line = line.replace("\r", "")
    return stamp, line


class LogBuffer:
    """A job log held as bytes, however it arrived; lines are decoded one at a time on request.

    Bytes (and mmaps) are used as they are and decoded with errors="replace". A str is encoded once
    with "surrogatepass", which round-trips every str, so both inputs give the text `parse_log`
    gives for the same content.
    """

    def __init__(self, raw: RawLog) -> None:
        if isinstance(raw, str):
            self.data: bytes | bytearray | mmap.mmap = raw.encode("utf-8", "surrogatepass")
            self.errors = "surrogatepass"
        elif isinstance(raw, (bytes, bytearray, mmap.mmap)):
            self.data = raw
            self.errors = "replace"
        elif isinstance(raw, memoryview):
            self.data = raw.tobytes()
            self.errors = "replace"
        else:
            raise TypeError(f"a job log is str or bytes, not {type(raw).__name__}")
        self.size = len(self.data)
        self.start = len(_BOM_BYTES) if self.data[: len(_BOM_BYTES)] == _BOM_BYTES else 0

    def decode(self, lo: int, hi: int) -> str:
        return self.data[lo:hi].decode("utf-8", self.errors)

    def line_end(self, start: int) -> int:
        end = self.data.find(b"\n", start)
        return self.size if end < 0 else end

    def line_start(self, offset: int) -> int:
        """Start of the line that holds `offset`."""
        return max(self.data.rfind(b"\n", self.start, offset) + 1, self.start)

    def chunks(self, size: int = _CHUNK) -> Iterator[tuple[int, int]]:
        """(lo, hi) ranges covering the log, each ending just after a `\\n` (but the last)."""
        lo = self.start
        while lo < self.size:
            hi = min(lo + size, self.size)
            if hi < self.size:
                newline = self.data.rfind(b"\n", lo, hi)
                if newline < 0:  # one line longer than the chunk: it is the chunk
                    newline = self.data.find(b"\n", hi)
                hi = self.size if newline < 0 else newline + 1
            yield lo, hi
            lo = hi

    def count_newlines(self, lo: int, hi: int) -> int:
        total = 0
        for start in range(lo, hi, 8 * _CHUNK):  # bounded temporary arrays
            length = min(8 * _CHUNK, hi - start)
            total += int(np.count_nonzero(np.frombuffer(self.data, np.uint8, length, start) == 10))
        return total

    def lines(self) -> Iterator[str]:
        """Every physical line, decoded a chunk at a time; the final `\\n` ends the last line."""
        for lo, hi in self.chunks():
            parts = self.decode(lo, hi).split("\n")
            if parts[-1] == "":
                parts.pop()
            yield from parts


class StepClock:
    """Step of a line from its timestamp: the last step (in API order) started at or before it."""

    def __init__(self, steps: Iterable[Step]) -> None:
        starts = []
        for step in steps:
            if step.started_at is None:
                continue
            # Both are UTC ISO 8601, so their first 19 characters compare as text in time order.
            stamp = step.started_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
            starts.append((stamp, step.number, step.name))
        starts.sort()
        self.stamps = [stamp for stamp, _, _ in starts]
        self.names = [name for _, _, name in starts]

    def step_of(self, stamp: str | None, group_step: str | None) -> str | None:
        if not self.names:
            return group_step
        if stamp is None:
            return self.names[0]
        return self.names[max(bisect_right(self.stamps, stamp[:19]) - 1, 0)]


def iter_lines(raw: str) -> Iterator[tuple[int, str]]:
    """Physical lines of a str log with 1-based numbers (BOM dropped, `\\n` removed, `\\r` kept)."""
    if raw.startswith(_BOM):
        raw = raw[1:]
    lines = raw.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start a new one
    yield from enumerate(lines, start=1)


def parse_log(raw: RawLog | LogBuffer, steps: Iterable[Step] = ()) -> Iterator[LogLine]:
    """Yield one LogLine per physical line of a job log, lazily, keeping original line numbers."""
    clock = StepClock(steps)
    if isinstance(raw, str):
        physical: Iterable[tuple[int, str]] = iter_lines(raw)
    else:
        buffer = raw if isinstance(raw, LogBuffer) else LogBuffer(raw)
        physical = enumerate(buffer.lines(), start=1)
    group_step: str | None = None
    current: str | None = None
    for number, line in physical:
        stamp, text = normalise(line)
        if stamp is not None:
            current = stamp
        if text.startswith(GROUP_RUN):
            group_step = text[len("##[group]") :]
        yield LogLine(number=number, text=text, step=clock.step_of(current, group_step), timestamp=current)


def last_stamp_before(buffer: LogBuffer, line_start: int, floor: int) -> str | None:
    """Timestamp of the last stamped line starting in [floor, line_start), or None.

    Searches backwards in growing windows so a long run of continuation lines costs one C-speed
    regex pass, not a Python step per line.
    """
    window = 4096
    lo = line_start
    while lo > floor:
        lo = max(floor, lo - window)
        last = None
        for last in _STAMPED_LINE.finditer(buffer.data, lo, line_start):
            pass
        if last is None and lo == buffer.start and buffer.start > 0:
            # After a BOM the first line starts at offset 3, where `^` does not apply.
            if _STAMP_HERE.match(buffer.data, lo, line_start):
                return normalise(buffer.decode(lo, buffer.line_end(lo)))[0]
        if last is not None:
            start = last.start()
            return normalise(buffer.decode(start, buffer.line_end(start)))[0]
        window *= 4
    return None


def lines_at(buffer: LogBuffer, positions: Sequence[tuple[int, int]], steps: Iterable[Step] = (),
             keep: set[int] | None = None) -> list[LogLine]:
    """LogLines of the lines at `positions` ((line number, start offset), in log order).

    The result equals what `parse_log` yields for those lines, provided every `##[group]Run` header
    line before them is among `positions` (the matcher makes sure of that); `keep`, when given,
    limits the result to those line numbers.
    """
    clock = StepClock(steps)
    group_step: str | None = None
    current: str | None = None
    floor = buffer.start
    result = []
    for number, start in positions:
        end = buffer.line_end(start)
        stamp, text = normalise(buffer.decode(start, end))
        if stamp is not None:
            current = stamp
        else:
            carried = last_stamp_before(buffer, start, floor)
            if carried is not None:
                current = carried
        floor = start
        if text.startswith(GROUP_RUN):
            group_step = text[len("##[group]") :]
        if keep is None or number in keep:
            result.append(LogLine(number=number, text=text, step=clock.step_of(current, group_step), timestamp=current))
    return result


def preceding_lines(buffer: LogBuffer, number: int, start: int, count: int) -> list[tuple[int, int]]:
    """(number, start) of up to `count` lines before the line at (`number`, `start`), in log order."""
    found = []
    while count > 0 and start > buffer.start:
        start = buffer.line_start(start - 1)
        number -= 1
        found.append((number, start))
        count -= 1
    found.reverse()
    return found
