"""The values log classification makes and reads: a job's steps, its log lines, their rule matches,
the root cause and stack found, the classification. Part of the shared model (ci_triage.model
re-exports them), kept here so that the classify path does not create every report dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime  # noqa: F401 (the annotations name it; get_type_hints resolves it here)


@dataclass(frozen=True)
class Step:
    number: int
    name: str
    status: str
    conclusion: str | None
    started_at: datetime | None
    completed_at: datetime | None


@dataclass(frozen=True)
class LogLine:
    number: int  # 1-based line number in the raw log as downloaded
    text: str  # without timestamp prefix, ANSI codes or trailing newline
    step: str | None  # the step section the line belongs to, when known
    timestamp: str | None = None  # as printed by the runner (ISO 8601, 7 fractional digits)


@dataclass(frozen=True)
class Frame:
    """One frame of a stack (any language's), with its path made comparable to the PR's files."""

    path: str  # repo-relative when inside the checkout, else as printed
    line: int  # 0 when the format names no source line (glibc's backtrace_symbols)
    function: str
    package: str | None = None  # code outside the checkout: site-packages top-level name, crate, module...
    stack: int = 0  # which stack of the excerpt (a chained exception, a sanitizer's second stack, ...)


@dataclass(frozen=True)
class RootCause:
    line: int
    text: str
    step: str | None


@dataclass(frozen=True)
class RuleMatch:
    rule_id: str
    category: str
    retryable: bool
    priority: int
    line: LogLine
    captures: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Classification:
    category: str
    retryable: bool
    rule_id: str | None
    root_cause: RootCause | None
    captures: dict[str, str]
    frames: tuple[Frame, ...]
    failed_tests: tuple[str, ...]
    fingerprint: str | None
    matches: tuple[RuleMatch, ...] = ()
    source: str = "log"  # "log", or "annotations" when the log was missing or silent
    # When no rule explains the log (`unknown`): the category whose rules' examples its root-cause line
    # resembles, and the words that say so (resemblance.py). A hint for the reader, never a category:
    # on held-out logs it is right about half the time.
    resembles: str | None = None
    resembling_words: tuple[str, ...] = ()
