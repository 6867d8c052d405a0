"""In a GitLab CI job, a script command followed by the next one's echo succeeded.

gitlab-runner runs a job's `script:` as one shell script that stops at the first command that fails (its shells
write `set -eo pipefail`, or check `$?` after each command in PowerShell) and echoes each command before running it
(`$ pip install -r requirements.txt`, in green). So a command whose output is followed by the next command's `$ ` line
went on: a network fault it printed (an optional download's DNS error behind `|| echo ...`, a retried fetch) did not
stop the job. When the command the job failed of reports an explained failure of its own, that earlier fault is not
its cause (as a passed GitHub Actions step's, passed_steps.passed_step_faults); beside a failure a network fault leads
to (a resolver's, FAULT_CONSEQUENCES) it stays one. The log is known to be GitLab's by the runner's closing line
(`ERROR: Job failed: exit code 1`, gitlab-runner's `Job failed: ` message); Travis CI, which also echoes `$ ` lines,
runs every script command whatever the previous one did, and is not read this way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.matcher import context_before
from ci_triage.core.logs.passed_steps import FAULT_CONSEQUENCES, PASSED_STEP_FAULTS
from ci_triage.core.logs.values import LogLine, RuleMatch

_JOB_FAILED = re.compile(r"^ERROR: Job failed(?: \(system failure\))?: ")
_ECHO = re.compile(r"^\$ \S")
# gitlab-runner's header of the `after_script:` commands, which it runs after the script whatever its outcome (the
# script may have stopped at the fault's command): an echo and a failure past it do not show the fault's command went on.
_AFTER_SCRIPT = re.compile(r"^(?:Running after script\.\.\.|section_start:\d+:after_script)")
_REACH = 5000


def gitlab_passed_commands(lines: Sequence[LogLine], matches: Sequence[RuleMatch],
                           causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The network faults among `causes` printed by a GitLab script command that a later command's echo shows went
    on, when a later cause (the failed command's) is an explained failure of another kind."""
    faults = [m for m in causes if m.category in PASSED_STEP_FAULTS]
    if not faults or not any(_JOB_FAILED.match(m.line.text) for m in matches):
        return []
    # Each fault's failure (the first later cause of another kind) and how far above it the fault is; the lines
    # above each failure are read once for all its faults (read once per fault, many faults made it quadratic).
    pending: dict[int, tuple[LogLine, list[tuple[RuleMatch, int]]]] = {}
    for fault in faults:
        later = [m for m in causes if m.line.number > fault.line.number
                 and m.category not in PASSED_STEP_FAULTS and m.category not in FAULT_CONSEQUENCES]
        if not later:
            continue
        failure = min(later, key=lambda m: m.line.number).line
        reach = failure.number - fault.line.number + 1
        if reach > _REACH:
            continue
        pending.setdefault(failure.number, (failure, []))[1].append((fault, reach))
    found: list[RuleMatch] = []
    for failure, group in pending.values():
        texts = context_before(lines, failure, max(reach for _, reach in group))
        # echo_below[i] / after_below[i]: an echo / an after_script header among texts[i:-1]
        echo_below, after_below = [False] * (len(texts) + 1), [False] * (len(texts) + 1)
        for i in range(len(texts) - 2, -1, -1):
            echo_below[i] = echo_below[i + 1] or bool(_ECHO.match(texts[i]))
            after_below[i] = after_below[i + 1] or bool(_AFTER_SCRIPT.match(texts[i]))
        for fault, reach in group:
            start = max(len(texts) - reach, 0) + 1  # the lines strictly between the fault and the failure
            if echo_below[start] and not after_below[start]:
                found.append(fault)
    return sorted(found, key=lambda m: m.line.number)
