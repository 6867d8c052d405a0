"""A launcher that kills its own process tree when a child fails, and the shell's `Killed` that follows.

SGLang's parent process, told by a failed child (`Received sigquit from a child process. It usually means the child
failed.`, entrypoints/engine.py), kills its whole process tree, itself included, with SIGKILL; the shell that ran it then
prints `Killed`. That bare line matches `host-oom-killer` (20-host), the shell's report of the kernel's OOM killer,
which ranks above every cause the child printed (a CUDA OOM, a ValueError in the scheduler's traceback), so every SGLang
failure read as the host out of memory.

A rule sees one line, so the call is made here, over a log's matches: the shell's bare `Killed` printed within a few
lines after such a notice is the launcher's own kill, not a cause. Any other `Killed`, and every kill the kernel names
(`Out of memory: Killed process`), stays the cause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.values import RuleMatch

# (the notice of a launcher about to SIGKILL its own process tree)
_SELF_KILL_NOTICES = (
    re.compile(r"Received sigquit from a child process\. It usually means the child failed\."),  # SGLang
)
_BARE_KILLED = re.compile(r"(?:^|\s)Killed\s*$")
_WITHIN = 3  # lines after the notice


def own_kills(matches: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches that are a shell's bare `Killed` right after a launcher's notice that it kills its own tree."""
    notices = [m.line.number for m in matches if any(n.search(m.line.text) for n in _SELF_KILL_NOTICES)]
    if not notices:
        return []
    return [m for m in matches if m.category == "host_oom" and _BARE_KILLED.search(m.line.text)
            and len(m.line.text.strip()) <= len("Killed") + 2
            and any(0 < m.line.number - notice <= _WITHIN for notice in notices)]
