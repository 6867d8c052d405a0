"""A socket error raised inside Python's multiprocessing, which talks to processes on the same machine.

multiprocessing's connections are Unix sockets or pipes between a parent and its children: a DataLoader's main process
fetching a tensor's file descriptor from a worker (resource_sharer's `Client(address)`, then `answer_challenge`), a
Queue's feeder, a Manager. When the worker dies (torch's `ERROR: Unexpected segmentation fault encountered in worker.`,
then `RuntimeError: DataLoader worker (pid N) is killed by signal: Segmentation fault.`), the parent's read fails with
`ConnectionResetError: [Errno 104] Connection reset by peer` or `BrokenPipeError`, whose line `network-unreachable`
(40-network) matches, above `process-crash`; so a worker's segfault read as the network's fault.

A rule sees one line, so the call is made here, over a log's matches: a network match on an exception line that ends
a Python traceback whose last frame is in multiprocessing's own modules (`/multiprocessing/connection.py`,
`resource_sharer.py`, `queues.py`, `managers.py`, `reduction.py`) is a local process gone, not the network, and is not
a cause; the worker's own crash, which a rule names, is. A traceback whose last frame is a network client's stays the
network's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.relevant import context_lines
from ci_triage.core.logs.scorer import bare
from ci_triage.core.logs.values import LogLine, RuleMatch

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+')
_LOCAL = re.compile(r"[/\\]multiprocessing[/\\](?:connection|resource_sharer|queues|managers|reduction|popen_\w+)\.py$")
_EXCEPTION = re.compile(r"^(?:ConnectionResetError|ConnectionAbortedError|BrokenPipeError|EOFError|ConnectionRefusedError)\b")
_BACK = 6  # lines between the exception and its traceback's last frame (source line, carets)


def local_ipc_errors(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The network matches that are a multiprocessing connection to a local process failing."""
    found = []
    for match in causes:
        if match.category != "network" or not _EXCEPTION.match(bare(match.line.text).strip()):
            continue
        above = context_lines(lines, match.line, _BACK + 1)[:-1]
        frame = next((m for m in (_FRAME.match(bare(line.text)) for line in reversed(above)) if m), None)
        if frame is not None and _LOCAL.search(frame["path"]):
            found.append(match)
    return found
