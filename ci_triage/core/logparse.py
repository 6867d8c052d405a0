"""Raw GitHub Actions job log -> LogLines with step, timestamp and original line number.

Format (as downloaded from GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs): every line the
runner writes starts with an ISO 8601 timestamp with seven fractional digits and a space
(`2024-01-01T00:00:00.0000000Z text`); the file may start with a UTF-8 BOM; lines may carry ANSI
colour codes and `\\r`. The runner marks foldable sections with `##[group]`/`##[endgroup]` and
annotations with `##[error]`, `##[warning]`, `##[notice]`.

The log does not name the job's steps. Lines are mapped to steps by time: the jobs API gives each
step's start and end (to the second), and a line belongs to the last step that had started when the
line was written. Without step timings, the `##[group]Run ...` headers give a best-effort name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC

from ci_triage.model import LogLine, Step

_TIMESTAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) ?")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_BOM = "\ufeff"


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def _step_starts(steps: Iterable[Step]) -> list[tuple[str, str]]:
    """(start timestamp as comparable text, step name), in start order.

    Timestamps in the log and in the API are both UTC ISO 8601, so comparing their first 19
    characters as strings orders them correctly without parsing a datetime per line.
    """
    starts = []
    for step in steps:
        if step.started_at is None:
            continue
        stamp = step.started_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        starts.append((stamp, step.name))
    starts.sort()
    return starts


def iter_lines(raw: str) -> Iterator[tuple[int, str]]:
    """Physical lines with 1-based numbers; tolerates a BOM, CRLF and a missing final newline."""
    if raw.startswith(_BOM):
        raw = raw[1:]
    lines = raw.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start a new one
    for number, line in enumerate(lines, start=1):
        if line.endswith("\r"):
            line = line[:-1]
        yield number, line


def parse_log(raw: str, steps: Iterable[Step] = ()) -> Iterator[LogLine]:
    """Yield one LogLine per physical line of a job log, lazily, keeping original line numbers."""
    starts = _step_starts(steps)
    step_index = -1
    group_step: str | None = None
    current_stamp: str | None = None
    for number, line in iter_lines(raw):
        match = _TIMESTAMP.match(line)
        if match:
            current_stamp = match.group(1)
            text = line[match.end() :]
        else:
            text = line  # a continuation line carries no timestamp: it keeps the previous one
        text = strip_ansi(text).replace("\r", "")
        if current_stamp is not None and starts:
            second = current_stamp[:19]
            while step_index + 1 < len(starts) and starts[step_index + 1][0] <= second:
                step_index += 1
        if text.startswith("##[group]Run "):
            group_step = text[len("##[group]") :]
        if starts:
            step = starts[step_index][1] if step_index >= 0 else starts[0][1]
        else:
            step = group_step
        yield LogLine(number=number, text=text, step=step, timestamp=current_stamp)
