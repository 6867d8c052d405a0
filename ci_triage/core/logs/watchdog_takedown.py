"""torch's collective watchdog taking its process down, and the launcher's report of that SIGABRT.

When a collective fails or times out, ProcessGroupNCCL's watchdog thread rethrows the error to end the process
(`terminate called after throwing an instance of 'c10::DistBackendError'`, its `what():` line naming the error: a
`Watchdog caught collective operation timeout`, an `ncclRemoteError` whose last error is NCCL's own InfiniBand
completion failure). libstdc++ aborts, and the launcher reports the worker's SIGABRT after the ranks' output: torchrun's
`failed (exitcode: -6)`, `exitcode  : -6 (pid: N)  (SIGABRT)`, `Signal 6 (SIGABRT) received by PID N`, or the shell's
`Aborted (core dumped)`. Those lines are `process-crash`'s (50-crash), which ranks above `collective-peer-lost` (a peer
that went away is usually the rank that crashed), so an InfiniBand link that dropped read as the process's own crash.

A rule sees one line, so the call is made here, over a log's matches: a launcher's or the shell's report of a SIGABRT
printed after the watchdog's `terminate called after throwing an instance of 'c10::DistBackendError'` is that takedown,
not a cause, when another rule names a cause in the log (the collective's error, NCCL's transport report). Any other
abort, and a takedown whose error no rule names, stays the crash.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.relevant import context_windows
from ci_triage.core.logs.shutdown_aborts import LAUNCHER_ABORT, SHELL_ABORT
from ci_triage.core.logs.values import LogLine, RuleMatch

_TAKEDOWN = re.compile(r"terminate called after throwing an instance of 'c10::DistBackendError'")
_REACH = 150  # lines between the takedown and the launcher's summary of the worker's exit (torchrun prints its own traceback)
_SPAN = _REACH  # aborts this near share one read of the lines above them (a block is at most twice one abort's lines)


def takedown_aborts(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The crash matches that report the SIGABRT of torch's watchdog taking its process down after a collective error."""
    aborts = [m for m in causes if m.category == "crash"
              and (LAUNCHER_ABORT.search(m.line.text) or SHELL_ABORT.search(m.line.text))]
    ids = {id(abort) for abort in aborts}
    if not aborts or all(id(m) in ids for m in causes):
        return []
    # Near aborts share one read of the lines above them, each line searched once per read (many aborts under a long
    # line read it each otherwise).
    searched: dict[tuple[int, int], bool] = {}

    def takedown(block: list[LogLine], i: int) -> bool:
        key = (id(block), i)
        if key not in searched:
            searched[key] = _TAKEDOWN.search(block[i].text) is not None
        return searched[key]

    windows = context_windows(lines, [m.line for m in aborts], _REACH, _SPAN)
    return [m for m, (block, lo, hi) in zip(aborts, windows) if any(takedown(block, i) for i in range(lo, hi - 1))]
