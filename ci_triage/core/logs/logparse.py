"""Raw GitHub Actions job log -> LogLines with step, timestamp and original line number.

Format (as downloaded from GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs): every line the
runner writes starts with an ISO 8601 timestamp with seven fractional digits and a space
(`2024-01-01T00:00:00.0000000Z text`); continuation lines of a multi-line message carry none and
keep the previous line's timestamp. The file may start with a UTF-8 BOM; lines may carry ANSI
colour codes and `\\r`. The runner marks foldable sections with `##[group]`/`##[endgroup]` and
annotations with `##[error]`, `##[warning]`, `##[notice]`; those markers stay in the line text.

The one definition of a line's text (`split_line`), shared by `parse_log` and the fast path in
`ci_triage.core.logs.matcher`: take the physical line's bytes (up to `\\n`), remove ANSI CSI
sequences, take the timestamp prefix off (and another CI system's framing: Buildkite's, Jenkins
timestamper's and Bamboo's), then cut at every `\\r`. Each non-empty `\\r`-separated
segment is a LogLine of its own, with the physical line's number: a terminal overwrites a segment
with the next one (tqdm progress bars print hundreds per physical line), so each is a message
of its own, and a CUDA OOM printed after a progress bar is a line, not the tail of one.
Segments are decoded UTF-8 with errors="replace" (a str log is encoded with "surrogatepass" first,
which round-trips any str).

The log does not name the job's steps. Lines are mapped to steps by time: the jobs API gives each
step's start and end (to the second), and a line belongs to the last step that had started when the
line was written. Without step timings, the `##[group]Run ...` headers give a best-effort name.

A log may be a gigabyte, not valid UTF-8, or binary junk. `LogBuffer` keeps it as bytes (or an
mmap of a file) and hands it out in bounded chunks, so nothing holds a copy of the whole log.
"""

from __future__ import annotations

import mmap
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from datetime import UTC

from ci_triage.core.logs.values import LogLine, Step

# ASCII digits only: `\d` would also accept other scripts' digits, which the runner never writes.
_STAMP_BYTES = rb"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z"
_STAMP_PREFIX = re.compile(rb"(" + _STAMP_BYTES + rb") ?")
_STAMPED_LINE = re.compile(rb"(?m)^" + _STAMP_BYTES)
# Other CI systems' framing at a line's start, cut off like the runner's timestamp (never a timestamp of
# the log: only the runner's stamps map lines to steps): Buildkite's and Jenkins timestamper's
# `[2024-01-01T00:00:00.000Z] `, Bamboo's build log `build\t18-Apr-2017 03:28:13\t` (its stream,
# build, error, simple or command, then the time), and TeamCity's downloaded build log
# `[10:00:01]W:\t [Step 1/2] ` (time, status flag: blank, i, W, E or F, a tab, the nesting's indent, the build
# step); Zuul's job-output.txt, whose callback (zuul/ansible/base/callback/zuul_stream.py) writes `{now} | {msg}`
# with Python's str(datetime) (microseconds, or none when they are 0: such a line is not cut, since an app's own
# `2024-01-02 03:04:05 | x | msg` log line has that shape) and a node's streamed line as
# `{host} | {line} ` (`host -> delegate` when delegated; the space it adds at the end goes too); Taskcluster's generic-worker `[taskcluster <ISO time>] `
# (its `[taskcluster:warn <ISO time>] ` too; workers/generic-worker/main.go) and the same shape from the task's
# own scripts (Gecko's run-task prints its command's output as `[task <ISO time>] `, and `[vcs ...] `, `[fetches ...] `);
# `tkn pipelinerun/taskrun logs` (Tekton's CLI) `[task : step] `; Google Cloud Build's step prefix (`Step #2 - "unit-tests": `,
# `Step #2: ` for a step without an id); and `kubectl logs --prefix`' `[pod/<pod>/<container>] `
# (staging/src/k8s.io/kubectl/pkg/cmd/logs): so a rule anchored at a tool's own output sees it.
_CI_PREFIX = re.compile(rb"\[[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z\] "
                        rb"|(?:build|error|simple|command)\t[0-9]{2}-[A-Z][a-z]{2}-[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\t"
                        rb"|\[[0-9]{2}:[0-9]{2}:[0-9]{2}\][ iWEF]:\t[ \t]*(?:\[Step [0-9]+/[0-9]+\] )?"
                        # (with its microseconds only: an app's own '%Y-%m-%d %H:%M:%S | name | msg' log line keeps its
                        # frame, so a `^`-anchored rule does not take its message, `Timed out!`; a Zuul line whose
                        # microseconds were 0, one in a million, keeps its stamp too, review r13b)
                        rb"|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} \| "
                        # (a host, never a logger's level: '2024-01-02 03:04:05 | ERROR | boom' keeps its level)
                        rb"(?P<zuul_host>(?!(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL) \|)"
                        rb"[\w.:@-]{1,64}(?: -> [\w.:@-]{1,64})? \| )?"
                        rb"|\[[a-z][\w:.-]{0,30} [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z\] "
                        rb"|\[[\w.-]{1,63} : [\w.-]{1,63}\] "
                        rb'|Step #[0-9]{1,4}(?: - "[^"\n]{1,200}")?: ?'
                        rb"|\[pod/[\w.-]{1,253}/[\w.-]{1,63}\] ")
# GitLab Runner's per-line metadata after its own timestamp (FF_TIMESTAMPS, runner >= 17): two hex digits of
# stream id, the stream (`O` stdout, `E` stderr) and a flag (`+` continues the line before, else a space), then
# the text: `2024-12-06T10:00:00.123456Z 00O Running with gitlab-runner`. Cut only after a timestamp.
_GITLAB_STREAM = re.compile(rb"[0-9a-f]{2}[OE][+ ] ?")
_STAMP_AT = re.compile(_STAMP_BYTES)
# ECMA-48 control sequences a terminal-minded tool prints: CSI (colours, cursor moves); OSC, ended by BEL or
# ST (`ESC \\`), such as the OSC 8 hyperlinks biome, cargo and ls print around a file's name (bounded, so an OSC
# never ended costs nothing more than a scan to the next ESC, BEL or newline), and the control strings ended
# the same way (APC, DCS, PM, SOS: the Buildkite agent starts each line of a raw job log with an APC timestamp,
# `ESC _bk;t=1733480000123 BEL`); a character-set designation; and
# the one-byte ESC functions (keypad modes, save/restore cursor, index, reset). None of their bytes is `\n`, so
# removing them never changes where lines start, or how many there are.
ANSI_BYTES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[\]_P^X][^\x07\x1b\n]{0,4096}(?:\x07|\x1b\\)"
                        rb"|\x1b[()*+][ -~]|\x1b[=>78DEHMc]")
_BOM_BYTES = "\ufeff".encode()
GROUP_RUN = "##[group]Run "
CHUNK = 4 << 20

RawLog = str | bytes | bytearray | memoryview | mmap.mmap


def split_line(line: bytes, errors: str = "replace") -> tuple[str | None, list[str]]:
    """(timestamp or None, segments) of one physical line without its `\\n`, ANSI already removed.

    A line with no text (or only `\\r`) is one empty segment, so every physical line has at least one.
    """
    stamp = None
    found = _STAMP_PREFIX.match(line)
    if found:
        stamp = found.group(1).decode("ascii")
        line = line[found.end():]
        stream = _GITLAB_STREAM.match(line)
        if stream:
            line = line[stream.end():]
    framing = _CI_PREFIX.match(line)
    if framing:
        line = line[framing.end():]
        # zuul_stream writes a node's line as `{host} | {line} `: the space it adds after the tool's text goes too
        if framing.group("zuul_host") and line.endswith(b" "):
            line = line[:-1]
    if b"\r" not in line:
        return stamp, [line.decode("utf-8", errors)]
    parts = [part.decode("utf-8", errors) for part in line.split(b"\r") if part]
    return stamp, parts or [""]


class LogBuffer:
    """A job log held as bytes (or an mmap), however it arrived, read a bounded chunk at a time."""

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

    def chunks(self, size: int = CHUNK) -> Iterator[tuple[int, int]]:
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

    def line_end(self, start: int) -> int:
        end = self.data.find(b"\n", start)
        return self.size if end < 0 else end

    def cleaned(self, lo: int, hi: int) -> tuple[bytes | bytearray | mmap.mmap, int, int]:
        """(data, lo', hi'): data[lo':hi'] is the log's [lo, hi) without ANSI sequences; the log
        itself (no copy) when that range holds none, else a cleaned copy of the range."""
        if self.data.find(b"\x1b", lo, hi) < 0:
            return self.data, lo, hi
        with memoryview(self.data) as whole, whole[lo:hi] as part:
            cleaned = ANSI_BYTES.sub(b"", part)
        return cleaned, 0, len(cleaned)

    def release(self, lo: int, hi: int) -> None:
        """Drop an mmap's pages of [lo, hi) from this process (they stay in the page cache), so
        resident memory stays bounded however large the file."""
        if isinstance(self.data, mmap.mmap) and hasattr(self.data, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
            first = lo - lo % mmap.PAGESIZE
            last = hi - hi % mmap.PAGESIZE
            if last > first:
                try:
                    self.data.madvise(mmap.MADV_DONTNEED, first, last - first)
                except OSError:  # advice only
                    pass

    def physical_lines(self) -> Iterator[bytes]:
        """Every physical line, ANSI removed, without `\\n`; the final `\\n` ends the last line."""
        for lo, hi in self.chunks():
            data, start, end = self.cleaned(lo, hi)
            parts = data[start:end].split(b"\n")
            if parts[-1] == b"":
                parts.pop()
            yield from parts
            self.release(lo, hi)


def last_stamp(data, lo: int, hi: int) -> str | None:
    """Timestamp of the last stamped line starting in [lo, hi) of cleaned bytes, or None (`lo` is
    a line start).

    Searches backwards in growing windows, so the usual case (the line before is stamped) costs
    one short C-speed regex pass, and a long run of continuation lines no Python step per line.
    """
    window = 4096
    bottom = hi
    while bottom > lo:
        bottom = max(lo, bottom - window)
        found = None
        for found in _STAMPED_LINE.finditer(data, bottom, hi):  # `^`: only after a `\n`, or at 0
            pass
        if found is not None:
            return bytes(data[found.start():found.end()]).decode("ascii")
        window *= 4
    # `lo` starts a line even where `^` does not see it (just after a BOM).
    found = _STAMP_AT.match(data, lo, hi)
    return bytes(data[found.start():found.end()]).decode("ascii") if found else None


def last_line(buffer: LogBuffer, after_last: int, step: str | None, stamp: str | None) -> tuple[LogLine | None, int]:
    """The log's last line as `parse_log` gives it (the last segment of the last physical line), and
    where it starts; None for an empty log. `after_last` is 1 + the log's newline count: the last line's
    number unless a newline ends the log. `step` and `stamp` are the step and timestamp current at the end."""
    data, end = buffer.data, buffer.size
    if end <= buffer.start:
        return None, buffer.start
    number = after_last
    if data[end - 1:end] == b"\n":
        end, number = end - 1, number - 1
    start = max(data.rfind(b"\n", buffer.start, end) + 1, buffer.start)
    block, lo, hi = buffer.cleaned(start, end)
    own_stamp, segments = split_line(bytes(block[lo:hi]), buffer.errors)
    return LogLine(number=number, text=segments[-1], step=step, timestamp=own_stamp or stamp), start


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


def parse_log(raw: RawLog | LogBuffer, steps: Iterable[Step] = ()) -> Iterator[LogLine]:
    """Yield one LogLine per line (`\\r`-separated segment) of a job log, lazily, keeping the
    original (physical) line numbers."""
    clock = StepClock(steps)
    buffer = raw if isinstance(raw, LogBuffer) else LogBuffer(raw)
    group_step: str | None = None
    current: str | None = None
    for number, line in enumerate(buffer.physical_lines(), start=1):
        stamp, segments = split_line(line, buffer.errors)
        if stamp is not None:
            current = stamp
        for text in segments:
            if text.startswith(GROUP_RUN):
                group_step = text[len("##[group]"):]
            yield LogLine(number=number, text=text, step=clock.step_of(current, group_step), timestamp=current)


# Past this line the log is not parsed again just for a link: the root cause then links the job page.
MAX_ANCHOR_LINE = 200_000


def step_first_lines(data: RawLog | LogBuffer, steps: tuple[Step, ...], upto: int) -> tuple[tuple[str, int], ...]:
    """(step, the first log line of its section) for every step that starts by line `upto`, as the
    parser maps lines to steps (by the jobs API's step times). GitHub's job page numbers a step's log
    lines from 1 at that first line."""
    if not steps or upto > MAX_ANCHOR_LINE:
        return ()
    found: dict[str, int] = {}
    for line in parse_log(data, steps):
        if line.number > upto:
            break
        if line.step is not None and line.step not in found:
            found[line.step] = line.number
    return tuple(found.items())
