"""Log lines + rules -> Classification: the root-cause line, its category, captures and stack.

"unknown" is a value, not an exception: a log no rule explains still gets a root-cause line (the
scorer's choice from general evidence, else the first `##[error]`) and a fingerprint, so it can be
clustered with others like it and apart from unlike ones. Its category comes from the exit code when
that names a signal; the family of rules whose examples its root-cause line resembles (resemblance.py)
is named beside it as a hint (`resembles`), never as its category.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from ci_triage.core.logs.buildkit_steps import other_build_steps
from ci_triage.core.logs.chained_cause import chained_cause
from ci_triage.core.logs.deep_traces import trace_header
from ci_triage.core.logs.diagnostic_header import (HEADER_RULES, diagnostic_header, python_location_header,
                                                   python_warning_locations)
from ci_triage.core.logs.exception_heads import report_head
from ci_triage.core.logs.fingerprint import fingerprint
from ci_triage.core.logs.frames import frames_in
from ci_triage.core.logs.gitlab_commands import gitlab_passed_commands
from ci_triage.core.logs.go_test_passes import passing_test_logs
from ci_triage.core.logs.heading_reason import HEADING_RULES, heading_reason
from ci_triage.core.logs.later_tests import later_test_reports
from ci_triage.core.logs.launcher_kills import own_kills
from ci_triage.core.logs.local_ipc import local_ipc_errors
from ci_triage.core.logs.matcher import RelevantLines, context_before, context_lines, find_matches, with_context
from ci_triage.core.logs.passed_steps import (after_failed_step, continued_step_failures, passed_step_failures,
                                              passed_step_faults, succeeded_steps)
from ci_triage.core.logs.passed_tests import test_output
from ci_triage.core.logs.peer_lost import PEER_LOST_RULES, code_failures, own_exception
from ci_triage.core.logs.pip_notice import unrelated_notices
from ci_triage.core.logs.post_failure import after_failure_mark
from ci_triage.core.logs.precommit_hooks import first_failed_hook
from ci_triage.core.logs.resemblance import family_model, most_resembling
from ci_triage.core.logs.retry_notices import outlived_notices, passed_step_notices, went_on_faults
from ci_triage.core.logs.rules import RuleSet
from ci_triage.core.logs.scorer import (CONTEXT_LINES, Scored, best_of, candidates, is_boilerplate, is_other_step,
                                        first_printing, is_stack_frame, is_wrapper)
from ci_triage.core.logs.shutdown_aborts import shutdown_aborts
from ci_triage.core.logs.values import Classification, Frame, LogLine, RootCause, RuleMatch, Step
from ci_triage.core.logs.vitest_errors import UNHANDLED_RULES, unhandled_error_line
from ci_triage.core.logs.watchdog_takedown import takedown_aborts


def _first_error_line(lines: Sequence[LogLine], boilerplate_matches: Sequence[RuleMatch]) -> LogLine | None:
    """The stand-in root cause when no rule explains a log: the earliest `##[error]` annotation or
    boilerplate match (an exit-code line as the web UI shows it, `Error: Process completed ...`)."""
    annotation = next((line for line in lines if line.text.startswith("##[error]")), None)
    candidates = [m.line for m in boilerplate_matches] + ([annotation] if annotation else [])
    return min(candidates, key=lambda line: line.number, default=None)


# GitHub's notice that a concurrency group cancelled the job for a newer run (80-weak).
SUPERSEDED_RULE = "superseded-run-canceled"


def after_superseded_cancel(causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches among `causes` printed after a concurrency group's cancel notice: the runner then signals the job's
    processes (SIGINT, SIGTERM, at last SIGKILL), and what they print as they die (`Killed`, `signal: killed`, a
    daemon's `context canceled`) is the cancel's doing, not an OOM kill or a lost container to rerun for. A failure
    printed before the notice (the job failed first) stays a cause."""
    notice = min((m.line.number for m in causes if m.rule_id == SUPERSEDED_RULE), default=None)
    if notice is None:
        return []
    return [m for m in causes if m.line.number > notice]


# A test run's bare verdict (`FAIL\tpkg\t3.78s`, a `N failed` count), and the notices that say the job was stopped from
# outside: a cancel (a person's, GitHub's bare stop notice), Jenkins interrupting the step, or coreutils timeout(1)'s exit
# status 124.
RUN_SUMMARY_RULE = "test-run-failed"
STOP_RULES = frozenset({"operation-canceled", "job-canceled-by-user", "timeout-exit-status", "jenkins-step-interrupted",
                        SUPERSEDED_RULE})


def interrupted_run_summaries(causes: Sequence[RuleMatch], exits: Sequence[RuleMatch] = ()) -> list[RuleMatch]:
    """A test run's verdict when nothing else in the log names a failure and the job was stopped from outside: the
    runner's SIGINT on a cancel, or timeout(1)'s signal at the limit the job gave the command, ends `go test` with a bare
    `FAIL\tpkg\t3.78s` (no `--- FAIL` line, no panic), printed just before the cancel notice or the 124 exit. The verdict
    is the stop's doing; a run that named a failing test, or any other cause, keeps it (sweep s13h).

    `exits`, the boilerplate matches (a step's exit line): a verdict with a step's exit line between it and every stop
    notice had failed its step before the stop (`FAIL\tpkg` of a TestMain's log.Fatal, `Process completed with exit code
    1.`, then a cancel while a later step ran) and keeps it (review r13b)."""
    stops = sorted(m.line.number for m in causes if m.rule_id in STOP_RULES)
    if not stops:
        return []
    rest = [m for m in causes if m.rule_id not in STOP_RULES]
    if not rest or any(m.rule_id != RUN_SUMMARY_RULE or "test" in m.captures for m in rest):
        return []
    exit_lines = sorted(m.line.number for m in exits)

    def clear(low: int, high: int) -> bool:  # no step exit line strictly between the two lines
        return bisect_left(exit_lines, high) == bisect_right(exit_lines, low)

    def stopped(verdict: int) -> bool:
        # An exit line between a verdict and its nearest stop on one side lies between it and every farther stop on
        # that side too, so the nearest stop on each side decides (the logs' caps allow a thousand of each).
        at = bisect_left(stops, verdict)
        after = at < len(stops) and clear(verdict, stops[at])
        before = at > 0 and clear(stops[at - 1], verdict)
        return after or before

    return [m for m in rest if stopped(m.line.number)]


def classify(lines: Sequence[LogLine], rule_set: RuleSet, steps: Iterable[Step] = ()) -> Classification:
    """`steps`, the jobs API's steps of the job when known: a step it says succeeded that printed a failed
    step's `##[error]` line ran with `continue-on-error` (passed_steps.py)."""
    succeeded = succeeded_steps(steps)
    matches = find_matches(lines, rule_set)
    boilerplate = {rule.id for rule in rule_set.rules if rule.boilerplate}
    causes = [m for m in matches if m.rule_id not in boilerplate]
    # Matches that are not causes, whatever their rule: each call below says why.
    not_causes = {id(notice) for notice in outlived_notices(causes)}  # the job went on to fail on its own after them
    step_failures = [m for m in matches if m.rule_id in boilerplate and m.line.step not in succeeded]
    not_causes |= {id(notice) for notice in passed_step_notices(causes, step_failures)}  # their step succeeded
    not_causes |= {id(m) for m in passed_step_failures(lines, causes, succeeded)}  # printed by a step that passed
    not_causes |= {id(m) for m in after_failed_step(lines, causes, succeeded)}  # printed by a step run after the failed one
    not_causes |= {id(m) for m in continued_step_failures(lines, causes, succeeded)}  # a continue-on-error step's, the job went on
    not_causes |= {id(m) for m in passed_step_faults(lines, causes, succeeded)}  # a network fault its step went on past
    not_causes |= {id(kill) for kill in own_kills(matches)}  # a launcher killing its own tree, not the OOM killer
    not_causes |= {id(m) for m in passing_test_logs(lines, causes)}  # a passing Go test's t.Log line
    not_causes |= {id(m) for m in test_output(lines, causes)}  # a test's own output: jest's console, an ok test's panic
    not_causes |= {id(m) for m in later_test_reports(lines, causes)}  # a later failing test's report, not the first cause
    not_causes |= {id(m) for m in other_build_steps(matches, causes)}  # another docker build step's, not the failed one's
    not_causes |= {id(m) for m in gitlab_passed_commands(lines, matches, causes)}  # a GitLab command that went on
    not_causes |= {id(m) for m in went_on_faults(lines, causes)}  # a network fault its client says it finished past
    not_causes |= {id(m) for m in after_failure_mark(lines, causes)}  # run after the CI system saw the command fail
    not_causes |= {id(m) for m in after_superseded_cancel(causes)}  # the cancelled job's processes dying of the cancel
    exits = [m for m in matches if m.rule_id in boilerplate]
    not_causes |= {id(m) for m in interrupted_run_summaries(causes, exits)}  # a bare test-run verdict of a cancelled or timed-out job
    not_causes |= {id(m) for m in python_warning_locations(lines, causes)}  # a type checker's warning (ty's), no failure
    not_causes |= {id(m) for m in unrelated_notices(lines, causes)}  # pip's installed-set notice, an unrelated failure after it
    not_causes |= {id(m) for m in takedown_aborts(lines, causes)}  # the SIGABRT of torch's watchdog ending its process
    not_causes |= {id(m) for m in local_ipc_errors(lines, causes)}  # multiprocessing's pipe to a dead local worker
    causes = [m for m in causes if id(m) not in not_causes]
    aborts = shutdown_aborts(lines, causes)  # an idle thread's abort as Python exits on an error: never the cause
    causes = [m for m in causes if all(m is not abort for abort in aborts)]
    captures: dict[str, str] = {}
    for match in matches:
        if match.rule_id in boilerplate:
            captures.update(match.captures)
    failed_tests = tuple(dict.fromkeys(m.captures["test"] for m in matches if "test" in m.captures))

    if causes:
        # Highest priority wins; among equals, the earliest line: downstream errors come later.
        winner = min(causes, key=lambda m: (m.priority, m.line.number))
        if winner.rule_id in PEER_LOST_RULES:
            # A rank reporting its peer gone yields to that peer's own failure when the log holds it (peer_lost.py).
            own_code = code_failures(causes)
            if own_code:
                winner = min(own_code, key=lambda m: (m.priority, m.line.number))
            elif not any(m.rule_id not in PEER_LOST_RULES for m in causes):
                quiet = boilerplate | PEER_LOST_RULES
                if own_exception(unexplained_view(lines, matches, quiet, succeeded).ranked, causes) is not None:
                    return _unexplained(lines, matches, quiet, captures, failed_tests, rule_set, succeeded)
        captures.update({k: v for k, v in winner.captures.items() if k != "test"})
        root_line = winner.line
        if winner.rule_id in HEADER_RULES:
            # The rule matched a note under the finding; its header above says why (diagnostic_header.py).
            root_line = diagnostic_header(lines, winner.line) or winner.line
        elif winner.rule_id in UNHANDLED_RULES:
            # vitest's note under an error thrown outside any test: the error line under its banner (vitest_errors.py).
            root_line = unhandled_error_line(lines, winner.line) or winner.line
        elif winner.rule_id in HEADING_RULES:
            # CMake's and webpack's heading says where, the line under it why; javac's -Werror verdict, its first
            # warning (heading_reason.py).
            root_line = heading_reason(lines, winner.line, matches) or winner.line
        elif winner.category == "network":
            # A wrapper ending a chain of Python tracebacks: the socket error that began it is the root (chained_cause.py).
            # grpc's status above its details, a Java trace's I/O exception above its cause (exception_heads.py).
            root_line = chained_cause(lines, winner.line) or report_head(lines, winner.line) or winner.line
        elif winner.category == "lint_failure":
            # A later pre-commit hook's finding: the first failed hook's own output is the root (precommit_hooks.py);
            # a Python location line under ty's `error[...]` header: the header says why (diagnostic_header.py).
            root_line = first_failed_hook(lines, causes, winner) or python_location_header(lines, winner.line) or winner.line
        root = RootCause(root_line.number, root_line.text, root_line.step)
        return Classification(
            category=winner.category,
            retryable=winner.retryable,
            rule_id=winner.rule_id,
            root_cause=root,
            captures=captures,
            frames=frames_in(context_before(lines, winner.line)),
            failed_tests=failed_tests,
            fingerprint=fingerprint(winner.category, root_line.text),
            matches=tuple(matches),
        )

    if aborts:
        # The exit code (134) is that abort's: the process's own error, which the scorer finds, is the cause.
        quiet = boilerplate | {m.rule_id for m in aborts}
        return _unexplained(lines, matches, quiet, captures, failed_tests, rule_set, succeeded, signal_known=False)
    return _unexplained(lines, matches, boilerplate, captures, failed_tests, rule_set, succeeded)


# When no rule explains a log, the exit code still says how the process ended (128 + the signal).
EXIT_MEANINGS = {
    "137": ("host_oom", "Killed (SIGKILL), as the kernel's OOM killer does"),
    "139": ("crash", "Segmentation fault (SIGSEGV)"),
    "134": ("crash", "Aborted (SIGABRT)"),
    "143": ("crash", "Terminated (SIGTERM)"),
    # The other signals a crashing process dies of: an instruction the host's CPU lacks (a binary built for
    # newer hardware than the runner's), a debugger trap or a failed __builtin_trap, a bus error, an
    # arithmetic fault. A shell or `docker run` may print nothing but the status.
    "132": ("crash", "Illegal instruction (SIGILL)"),
    "133": ("crash", "Trace/breakpoint trap (SIGTRAP)"),
    "135": ("crash", "Bus error (SIGBUS)"),
    "136": ("crash", "Floating point exception (SIGFPE)"),
}


# How many anchors' preceding lines the scorer reads when no rule explains a log.
MAX_SCORED_ANCHORS = 8
# Among how many of the scorer's best lines the one most like a known family is looked for: the scorer
# ranks by shape and place, and a line shaped like an error just above the real cause (a wrapper's
# `Error: Command failed`, a traceback's last frame) often outranks it by a point or two.
RESEMBLANCE_CANDIDATES = 5


def last_line(lines: Sequence[LogLine]) -> LogLine | None:
    """The log's last line: kept by `relevant_lines` for the scorer, or the last of `parse_log`'s."""
    if isinstance(lines, RelevantLines):
        return lines.last_line
    return lines[-1] if lines else None


@dataclass(frozen=True)
class Unexplained:
    """What the scorer saw in a log no rule explains: its candidates, best first, and the lines they are in."""

    lines: list[LogLine]
    ranked: list[Scored]
    end: LogLine | None  # the log's last line when it is the anchor


def unexplained_view(lines: Sequence[LogLine], matches: Sequence[RuleMatch], boilerplate: set[str],
                     succeeded: frozenset[str] = frozenset()) -> Unexplained:
    """The scorer's candidates. The fast path keeps only matched lines; the scorer reads the lines before
    the anchors (the boilerplate matches: here every match is one). Bounded: the first and the last few
    anchors. A log with no anchor at all (no exit-code line, no `##[error]`) is anchored at its end."""
    anchors = [m.line for m in matches]
    end = None
    if not anchors and not any(line.text.startswith("##[error]") for line in lines):
        end = last_line(lines)
        anchors = [end] if end is not None else []
    kept = anchors[:1] + anchors[-MAX_SCORED_ANCHORS:]
    # A JVM trace deeper than the window: its header, found above the frames the window opens in (deep_traces.py).
    headers = [h for h in (trace_header(partial(context_lines, lines), a, CONTEXT_LINES) for a in kept) if h]
    lines = with_context(lines, kept)
    if headers:
        known = {line.number for line in lines}
        lines = sorted(lines + [h for h in headers if h.number not in known], key=lambda line: line.number)
    return Unexplained(lines, candidates(lines, matches, boilerplate, end, succeeded, headers), end)


def _unexplained(lines: Sequence[LogLine], matches: Sequence[RuleMatch], boilerplate: set[str],
                 captures: dict[str, str], failed_tests: tuple[str, ...], rule_set: RuleSet,
                 succeeded: frozenset[str] = frozenset(), signal_known: bool = True) -> Classification:
    """No rule names the cause: the scorer picks the likeliest line (so distinct failures get distinct
    fingerprints); the exit code gives the category when it names a signal. Of the scorer's best lines, the
    one most like a family of rules' examples is preferred, and that family is named as a hint."""
    view = unexplained_view(lines, matches, boilerplate, succeeded)
    lines = view.lines
    best = best_of(view.ranked)
    category, retryable = "unknown", False
    meaning = EXIT_MEANINGS.get(captures.get("exit_code", "")) if signal_known else None
    if meaning:
        category, captures["signal"] = meaning[0], meaning[1]
        retryable = True  # resource exhaustion or a crash: the policy still wants contention evidence
    resemblance = None
    # The line most like a known family's wording is the likelier cause (the scorer ranks by shape and
    # place only): it becomes the root cause, and its family a hint. When the exit code has named the
    # category, only a line of that family is (an `Installing ...` line does not explain a SIGKILL).
    # A line the scorer read as noise (a stack frame, advice printed under every error of its kind, a warning) is
    # never the cause, whatever words it shares with a family (`cmd/crash/main.go:18`, `node:internal/modules/esm/loader`,
    # `note: run with RUST_BACKTRACE=1 ...`), and so is a boilerplate line (an exit-code line, a launcher's summary such as
    # `subprocess.CalledProcessError: Command '[...]' returned non-zero exit status 1.`) and a launcher's wrapper of the
    # error printed under it (`ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task`).
    # When the scorer has found an error line, only a line with error evidence of its own may take its place (not a
    # launcher's `[INFO] ... cmd = python -u -m deepspeed.launcher.launch ...` over a rank's `KeyError`).
    found = most_resembling(family_model(rule_set),
                            [s for s in view.ranked[:RESEMBLANCE_CANDIDATES]
                             if (s.score > 0 if best else s.score >= 0)
                             and not is_stack_frame(s) and not is_boilerplate(s) and not is_wrapper(s)
                             and not is_other_step(s)],
                            category if meaning else None)
    if found is not None:
        best, resemblance = found
    best = first_printing(best, view.ranked)  # a re-raised or repeated exception: the line that said it first
    error_line = best.line if best else _first_error_line(lines, [m for m in matches if m.rule_id in boilerplate])
    root = RootCause(error_line.number, error_line.text, error_line.step) if error_line else None
    frames: tuple[Frame, ...] = ()
    # Only the lines the matcher keeps for certain (those before the next match, or the log's end) may be
    # read, so the fast path and the full line list agree.
    ends = [m.line.number for m in matches] + ([view.end.number] if view.end else [])
    next_match = min((number for number in ends if best and number >= best.line.number), default=None)
    if best is not None and next_match is not None:
        window = [line for line in lines if next_match - CONTEXT_LINES <= line.number <= best.line.number]
        frames = frames_in([line.text for line in window])
    return Classification(
        category=category,
        retryable=retryable,
        rule_id=None,
        root_cause=root,
        captures=captures,
        frames=frames,
        failed_tests=failed_tests,
        fingerprint=fingerprint(category, error_line.text) if error_line else None,
        matches=tuple(matches),
        resembles=resemblance.category if resemblance and category == "unknown" else None,
        resembling_words=resemblance.words if resemblance and category == "unknown" else (),
    )


def focus_on_test(classification: Classification, test: str) -> Classification:
    """The same classification with the root cause moved to the line that reports `test` failing.

    Used when the base branch already fails some tests: the interesting line is the first failure
    the PR brought, not the first failure in the log.
    """
    match = next((m for m in classification.matches if m.captures.get("test") == test), None)
    if match is None:
        return classification
    return replace(
        classification,
        category=match.category,
        retryable=match.retryable,
        rule_id=match.rule_id,
        root_cause=RootCause(match.line.number, match.line.text, match.line.step),
        fingerprint=fingerprint(match.category, match.line.text),
    )
