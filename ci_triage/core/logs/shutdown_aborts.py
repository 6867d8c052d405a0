"""A C++ runtime's abort while a Python program exits on an uncaught exception, and the shell's report of that abort.

A Python program that dies of an uncaught exception (a `ModuleNotFoundError` at start-up, a `ValueError`) still exits
through the interpreter's shutdown, which runs the C++ static destructors of the native libraries it loaded. A
`std::thread` still joinable then (a prefetcher's or a logger's background thread) calls std::terminate: libstdc++
prints `terminate called without an active exception`, the process aborts, and the shell reports `Aborted (core
dumped)` (exit 134); a launcher reports the worker's SIGABRT instead (torchrun's `failed (exitcode: -6)`,
`exitcode  : -6 (pid: N)  (SIGABRT)`, `Signal 6 (SIGABRT) received by PID N`). Those lines match `process-crash` (50-crash), which ranks above the import rules and every failure
the change's own code reports, so a missing module read as a crash, and a crash is retried.

A rule sees one line, so the call is made here, over a log's matches: libstdc++'s `terminate called without an active
exception` printed within a few lines after a line that ends a Python traceback (an exception line with the traceback's
frames above it), or after a failure of the change's own code that a rule names (pytest's collection error, printed
with pytest's summary before pytest exits), is that shutdown's abort, not a cause; nor is the shell's report of the abort right after it, nor a
launcher's report of a SIGABRT later in the log (torchrun prints the ranks' output, then its summary). The
exception is then the cause: a rule's when one names it (an import error), the scorer's otherwise. `terminate called
after throwing an instance of` names its own exception and stays a cause, as does any terminate with no traceback above.

The same shutdown can crash instead of aborting: a native library's destructor or a Rust runtime's thread touching freed
state makes the interpreter segfault after it printed the traceback, and the shell reports `Segmentation fault (core
dumped)` (exit 139; py-rattler 0.28 after a `SolverError`, sweep s13g). The shell's segfault report is no cause either
when the last lines above it end a Python traceback (the exception line, then at most a multi-line message's indented or
tree-drawn continuation: a solver's `└─ x would require` lines) or a code failure a rule names; a segfault with anything
else above it (faulthandler's `Fatal Python error: Segmentation fault` and its frames, a program's own output) stays the crash.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.core.logs.matcher import context_before
from ci_triage.core.logs.scorer import bare
from ci_triage.core.logs.values import LogLine, RuleMatch

_IDLE_TERMINATE = re.compile(r"^terminate called without an active exception\s*$")
# Python's exception line that ends a traceback: a dotted class name, then its message or nothing.
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Warning)(?::|\s*$)")
# The shell's report of the SIGABRT that follows: bash's `Aborted (core dumped)`, with a script's `line 1: 2244
# Aborted ...` in front of it in a CI step.
SHELL_ABORT = re.compile(r"(?:^|\s)Aborted(?:\s+\(core dumped\))?(?:\s|$)")
# A launcher's report of a worker's SIGABRT (torchrun's summary and its agent's log line, mp.spawn's).
LAUNCHER_ABORT = re.compile(r"\(exitcode: -6\)|\bexitcode\s*: -6 \(pid|\bSignal 6 \(SIGABRT\)|terminated with signal SIGABRT")
_WITHIN = 3  # lines between the exception and the terminate, and between the terminate and the shell's report
# The shell's report of a SIGSEGV: bash's `Segmentation fault (core dumped)`, a script's `line 1: 1619 Segmentation fault ...`.
SHELL_SEGV = re.compile(r"(?:^|\s)Segmentation fault(?:\s+\(core dumped\))?(?:\s|$)")
# A multi-line exception message's continuation below its exception line: indented, tree-drawn, or blank.
_MESSAGE_LINE = re.compile(r"^(?:\s|[\u2500-\u257f]|$)")
_MESSAGE_REACH = 12  # continuation lines between the exception line and the shell's segfault report
_LAUNCHER_REACH = 120  # lines between the terminate and a launcher's summary of the worker's exit
_TRACEBACK_LOOKBACK = 40
# A code failure a rule names is the process's own error only when the terminate follows it closely, in the same step,
# with nothing but the code failure itself or the test runner's closing line (`1 error in 0.13s`, `== 1 failed, 3 passed
# in 1.20s ==`, pytest's `!!! Interrupted: `, unittest's `FAILED (errors=1)`) right before the terminate: any code failure earlier in the log is no sign that this abort is a shutdown's.
_CODE_REACH = 40
_PYTEST_END = re.compile(r"^=*\s*\d+ \w+(?:, \d+ \w+)* in [0-9.]+s\b|^!+ Interrupted: |^FAILED \((?:failures|errors)=")


def _ends_traceback(texts: Sequence[str]) -> bool:
    """Whether the last of `texts` is an exception line closing a Python traceback (frames above, no blank between)."""
    if not _EXCEPTION_LINE.match(texts[-1]):
        return False
    for text in reversed(texts[:-1]):
        if not text.strip():
            return False
        if text.startswith("Traceback (most recent call last):") or text.lstrip().startswith('File "'):
            return True
    return False


def _after_code_failure(lines: Sequence[LogLine], terminate: LogLine, code: Sequence[LogLine]) -> bool:
    near = [line for line in code if line.step == terminate.step and 0 < terminate.number - line.number <= _CODE_REACH]
    if not near:
        return False
    texts = [bare(text).strip() for text in context_before(lines, terminate, _WITHIN + 1)][:-1]
    last = next((text for text in reversed(texts) if text), None)
    return last is not None and (any(bare(line.text).strip() == last for line in near)
                                 or _PYTEST_END.match(last) is not None)


def _after_traceback(lines: Sequence[LogLine], terminate: LogLine) -> bool:
    texts = [bare(text) for text in context_before(lines, terminate, _TRACEBACK_LOOKBACK + _WITHIN + 1)][:-1]
    for back in range(len(texts) - 1, max(-1, len(texts) - 1 - _WITHIN), -1):
        if texts[back].strip():
            return _ends_traceback(texts[max(0, back - _TRACEBACK_LOOKBACK):back + 1])
    return False


def _after_exception_message(lines: Sequence[LogLine], report: LogLine) -> bool:
    texts = [bare(text) for text in context_before(lines, report, _TRACEBACK_LOOKBACK + _MESSAGE_REACH + 1)][:-1]
    for back in range(len(texts) - 1, max(-1, len(texts) - 1 - _MESSAGE_REACH), -1):
        if _EXCEPTION_LINE.match(texts[back]):
            return _ends_traceback(texts[max(0, back - _TRACEBACK_LOOKBACK):back + 1])
        if not _MESSAGE_LINE.match(texts[back]):
            return False
    return False


def shutdown_aborts(lines: Sequence[LogLine], matches: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches that are an idle thread's terminate right after a Python traceback (or after a code failure a rule
    names), and the shell's or a launcher's report of that abort; and the shell's report of a segfault right after a
    Python traceback's exception (or a code failure a rule names), the interpreter's shutdown crashing."""
    code = [m.line for m in matches if m.category in NEVER_RETRYABLE]
    segfaults = [m for m in matches if m.category == "crash" and SHELL_SEGV.search(bare(m.line.text))
                 and (_after_code_failure(lines, m.line, code) or _after_exception_message(lines, m.line))]
    terminates = [m for m in matches if _IDLE_TERMINATE.match(bare(m.line.text))
                  and (_after_code_failure(lines, m.line, code) or _after_traceback(lines, m.line))]
    if not terminates:
        return segfaults
    numbers = [m.line.number for m in terminates]
    reports = [m for m in matches if m.category == "crash" and not _IDLE_TERMINATE.match(bare(m.line.text))
               and ((SHELL_ABORT.search(m.line.text) and any(0 < m.line.number - n <= _WITHIN for n in numbers))
                    or (LAUNCHER_ABORT.search(m.line.text) and any(0 < m.line.number - n <= _LAUNCHER_REACH
                                                                     for n in numbers)))]
    return terminates + reports + [m for m in segfaults if m not in reports]
