"""The most likely causal line of a log no rule explains, from general evidence.

Without a scorer every unexplained log had the same root cause (`##[error]Process completed with
exit code 1.`) and so the same fingerprint: `clusters` lumped unrelated failures together. The
scorer reads the lines before the places a step ended in failure (the exit-code and `##[error]`
lines, and the other CI systems' equivalents, which the built-in rules mark as boilerplate) and
scores each on its shape:

- what error lines look like in most ecosystems: an exception class with its message (Python, Java,
  JavaScript), `error:`/`error[E0308]:` (compilers, Rust, git), `FATAL`/`fatal:`, Go's `panic:`,
  `ERROR`, `npm ERR!`, a shell's own error (`script.sh: line 3: X: unbound variable`), git's `CONFLICT (content):`
  and rejected ref; and words of failure (`failed`, `cannot`, `not found`, `timed out`, ...);
- an action's own `##[error]` message (`Input required and not supplied: token`): unlike the step's exit-code line,
  which stays boilerplate, it says what failed;
- where it sits: the last line of a Python traceback, pytest's `E   ` detail, and closeness to the
  end of the failing step (causes sit just above the exit line more often than far from it);
- what it is not: boilerplate (the exit-code lines themselves), warnings, deprecation notices,
  traceback frames, make/npm/yarn/git summaries that only repeat that a command failed, npm's suggestions under its
  error, a GitLab `$ command` echo and its artifact upload after a failed script.

Pure, and identical on the full line list and on `matcher.relevant_lines`: only lines within
CONTEXT_LINES before a rule match or before the log's end (which classify decodes for it) and
`##[error]` lines are candidates.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ci_triage.core.logs.framing import unframed
from ci_triage.core.logs.passed_steps import continued_steps, failure_marks
from ci_triage.core.logs.values import LogLine, RuleMatch

CONTEXT_LINES = 400  # as matcher.CONTEXT_LINES: the lines kept before every rule match
MIN_SCORE = 3.0  # below this a line has no error evidence of its own: the boilerplate line stands in
_TRACEBACK_LOOKBACK = 40
SHAPE_CHARS = 4096  # as matcher.WINDOW
STACK_FRAME = "a stack frame"
BOILERPLATE = "boilerplate"
WRAPPER = "a launcher's"
OTHER_STEP = "in a step that"
TRACEBACK_END = "ends a traceback"


def is_stack_frame(scored: "Scored") -> bool:
    """Whether the scorer read the line as a stack frame: never a cause, whatever words it shares with a family."""
    return any(reason.startswith(STACK_FRAME) for reason in scored.reasons)


def is_boilerplate(scored: "Scored") -> bool:
    """Whether the line is a boilerplate rule's (an exit-code line, a launcher's summary): never the cause."""
    return any(reason.startswith(BOILERPLATE) for reason in scored.reasons)


def is_other_step(scored: "Scored") -> bool:
    """Whether the line is in a step that passed, or in one run after the failed step (passed_steps.py): not where
    the job failed, whatever words it shares with a family."""
    return any(reason.startswith(OTHER_STEP) for reason in scored.reasons)


def is_wrapper(scored: "Scored") -> bool:
    """Whether the scorer read the line as a launcher's wrapper of an error printed under it, or as a launcher's notice
    that it is stopping the other workers: never the cause, whatever words it shares with a family."""
    return any(reason.startswith(WRAPPER) for reason in scored.reasons)


def bare(text: str) -> str:
    """The line's text without a launcher's or logger's framing (`[rank1]: `, `[default0]:`, `(Worker pid=7) `,
    `ERROR 12-06 03:10:41 [core.py:718] `): a rank's traceback reads as one when several ranks' output interleaves."""
    peeled = unframed(text)
    return peeled[-1] if peeled else text


@dataclass(frozen=True)
class Scored:
    line: LogLine
    score: float
    reasons: tuple[str, ...]


def _shape(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# (pattern, points, reason): evidence that a line states an error. All bounded and anchored or literal.
_EVIDENCE: tuple[tuple[re.Pattern[str], float, str], ...] = (
    # (a module's exception class named plain `Error` counts too: `locale.Error: unsupported locale setting`; and Node's
    # form with the error's code: `RequestError [HttpError]: Resource not accessible by integration`)
    (_shape(r"^(?:E\s+)?(?:(?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception|Exit|Interrupt|Failure|Fault)"
            r"|(?:[A-Za-z_][\w$]*\.)+Error)\b(?: \[[\w.$]{1,60}\])?(?::|$|\s*\()"), 5, "an exception class with its message"),
    (_shape(r"(?i)^(?:\S+?:\d+(?::\d+)?:\s*)?(?:fatal )?error(?:\[[A-Z]?\d+\])?:"), 5, "an `error:` line"),
    # (Java's default handler prints the class after `Exception in thread "main" `, Ruby's after the message:
    # "app.rb:3:in `f': stack level too deep (SystemStackError)"; Rust's panic header names the thread)
    (_shape(r'^Exception in thread "[^"]{0,200}" (?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception)\b'
            r"|^\S+:\d+:in [`'][^`']{1,200}': .{0,1000} \((?:[A-Z]\w*::)*[A-Z]\w*\)$"), 5,
     "an exception class with its message"),
    (_shape(r"^panic: |^fatal error: |^FATAL\b|\bF\d{4} \d\d:|\bfatal: |^thread '[^']{0,200}'(?: \(\d+\))? panicked at "),
     5, "a fatal error or panic"),
    # (git's own report of what stopped a merge, rebase or push; its summaries below it are noise)
    (_shape(r"^CONFLICT \([\w/ -]{1,40}\): |^! \[(?:remote )?rejected\] "), 5, "git's conflict or rejected ref"),
    # (a shell's own error, which names no class: bash's `script.sh: line 3: X: unbound variable`, dash's
    # `script.sh: 2: flake8: not found`, zsh's `zsh:1: no matches found: ...`, `bash: ./x.sh: ...`, GitLab's
    # `/bin/sh: eval: line 9: ...`, env's `/usr/bin/env: 'python': ...`, and make's own word on a recipe's command,
    # not its `***` summary nor its directory and up-to-date notices; not a shell's warning, such as bash's
    # `bash: warning: setlocale: LC_ALL: cannot change locale`, printed in many jobs that then fail for another reason)
    (_shape(r"^(?:\S*/)?(?:[\w.-]+\.(?:sh|bash|zsh|ksh)(?:: line \d+|: \d+)|-?(?:ba|da|z|k|a)?sh(?:: line \d+|: \d+|:\d+)?"
            r"|(?<=/)env|g?make(?:\[\d+\])?(?=: (?!\*\*\*|Entering directory|Leaving directory|Nothing to be done|'[^']*' is up to date)))"
            r": (?!warning: )\S"), 3, "a shell's own error"),
    (_shape(r"\bERROR\b|\[ERROR\]|\bE\d{4} \d\d:|\bERR!|^npm error "), 3, "an ERROR line"),
    (_shape(r"^E\s{2,}\S"), 1, "pytest's detail of a failing test (`E   `)"),
)
_FAILURE_WORDS = re.compile(r"(?i)\b(?:failed|failure|cannot|can't|could not|unable to|not found|no such|denied|"
                            r"refused|timed out|timeout|invalid|unexpected|missing|undefined|unsatisfiable)\b")
# (pattern, points, reason): what is printed around failures but is not their cause.
_NOISE: tuple[tuple[re.Pattern[str], float, str], ...] = (
    (_shape(r"(?i)\bwarn(?:ing)?\b|deprecat"), -3, "a warning"),
    # (Python, Java, JavaScript (also `at async f (...)` and a bare `at node:internal/...:1:2`), gdb, Rust's backtrace
    # (`   5: core::ops::function::FnOnce::call_once`, `at ./src/main.rs:8:55`), and Go's `\t/path/file.go:12 +0x1d`)
    (_shape(r'^\s*(?:File "|at [\w$.<>]+\(|at (?:async )?[\w$.<>\[\] ]+ \(|at (?:node:|file://)\S+$|#\d+ 0x|\d+: 0x)'
            r'|^\s*\S+\.go:\d+(?: \+0x[0-9a-f]+)?$|^\s*\d+: (?:[\w<>{}\[\]]+::)+[\w<>{}\[\]]+|^\s*at \.{0,2}/\S+:\d+:\d+$'), -4, STACK_FRAME),
    (_shape(r"^Traceback \(most recent call last\):|^During handling of the above exception"), -3,
     "a traceback header"),
    # (and 'exited with non-zero status: 1', Cloud Build's step)
    (_shape(r"(?i)\bexit(?:ed)? (?:with )?(?:non-?zero )?(?:code|status)\b|exited with \d+|returned exit code|"
            r"Command failed with exit code|recipe for target|^make(?:\[\d+\])?: \*\*\*|npm (?:ERR!|error) (?:code|errno) \d|"
            r"A complete log of this run|error Command failed|ELIFECYCLE|"
            # (git's summaries under the conflict or rejected ref that stopped it)
            r"^Automatic merge failed; fix conflicts|^error: failed to push some refs to|^(?:error: c|C)ould not apply [0-9a-f]{7,}\.\.\.|"
            # (gitlab-runner's artifact upload after a failed script)
            r"^Uploading artifacts for failed job|^ERROR: No files to upload\b"), -4,
     "repeats that a command failed, not why"),
    (_shape(r"For debugging consider passing|might be asynchronously reported|Compile with `TORCH_USE_|"
            r"^note: run with `RUST_BACKTRACE=|^note: Some details are omitted, run with `RUST_BACKTRACE=full`"), -4,
     "advice printed under every error of its kind"),
    # (npm's suggestions and usage under its own error: `npm error Did you mean this?`, `npm error   npm link # ...`)
    (_shape(r"^npm (?:ERR!|error) (?:Did you mean (?:this|one of these)\?|To see a list of scripts|  )"), -5,
     "npm's help printed under its error"),
    # (a launcher's wrapper printed above the worker's error it quotes: torch.multiprocessing.spawn's exception and its
    # `-- Process N terminated with the following error:`, Ray's RayTaskError and an actor's failed constructor, the
    # logger headers vLLM's engine and workers print above a traceback; those printed after the cause are boilerplate rules)
    (_shape(r"ProcessRaisedException:\s*$|^-- Process \d+ terminated with the following error:|\bRayTaskError\(\w+\): |"
            r"ActorDiedError: The actor died because of an error raised in its creation task|"
            r"\b(?:EngineCore|WorkerProc) (?:failed to start|encountered a fatal error|hit an exception)\.$"), -4,
     "a launcher's wrapper of the worker's error printed under it"),
    # (a launcher stopping the other workers once one failed: torch elastic's agent, torch.multiprocessing.spawn, DeepSpeed's)
    (_shape(r"Sending process \d+ closing signal SIG[A-Z]+$|Terminating process \d+ via signal SIG[A-Z]+$|"
            r"\] Killing subprocess \d+$"), -4, "a launcher's notice that it stops the other workers"),
    (_shape(r"^(?:##\[(?:group|endgroup|command|debug|notice)\]|\+ |\$ )"), -5, "a runner or shell echo line"),
    (_shape(r"\b0 errors?\b|\berrors?: 0\b|\bno errors?\b|error_count|errors=0"), -5, "reports no error"),
    # (a run's summary counting no failure: libtest's `test result: ok. 2 passed; 0 failed`, `Failures: 0`)
    (_shape(r"(?i)\b0 (?:failed|failures?)\b|\bfailures?: 0\b|^test result: ok\."), -5, "reports no failure"),
    # (a test skipped or expected to fail, whose reason may name a failure: pytest's `SKIPPED [1] f.py:3: flaky:
    # connection refused`, `XFAIL f.py::t - times out`, its -v progress `SKIPPED (reason)`, libtest's `... ignored, reason`)
    (_shape(r"^(?:SKIPPED|XFAIL|XPASS) |\bSKIPPED \(|\bXFAIL \(|\.\.\. ignored\b"), -4, "a skipped test's reason"),
    # (`git describe` finding no tag, which setuptools-scm, versioneer and `git describe --always` fallbacks run in
    # every build of a shallow clone: the version tool falls back to a dev version; weighed so that it still names a
    # failure when it is the failing command's own last word - a release script's `git describe --tags` exiting 128)
    (_shape(r"^fatal: No (?:names|tags) found, cannot describe anything\.|^fatal: No tags can describe "), -4,
     "git describe without a tag (a version tool falls back)"),
    # (torch_npu's error-code header, appended under the exception whose message it ends: `[ERROR] 2024-08-18-22:15:47
    # (PID:23232, Device:0, RankID:0) ERR02002 DIST invalid type`; its `[ERROR]` would outscore the exception above it,
    # which names the failure; the rules take the headers that name a device-side failure themselves)
    (_shape(r"\(PID:\d+, Device:-?\d+, RankID:-?\d+\) ERR\d{5} [A-Z]+ "), -8,
     "torch_npu's error-code header under the exception it annotates"),
    # (glog-style warnings, as torch's c10 prints them: `[W socket.cpp:663] ...`, `W1205 10:02:11.512000 2211 f.py:793] `)
    (_shape(r"^\[W[\d ][^\]]{0,120}\]|^W\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] "), -3, "a warning"),
)


# An action's own failure message (`core.setFailed`: `##[error]Input required and not supplied: token`, `##[error]Unable
# to resolve action ...`): the annotation rule marks every `##[error]` as boilerplate, an anchor, but unlike the step's
# exit-code line this one says what failed, and often nothing else in the log does.
_ACTION_MESSAGE = re.compile(r"^##\[error\](?!Process completed with exit code \d|The process '[^']*' failed with exit code \d)\S")


def is_action_message(text: str) -> bool:
    """Whether the line is an action's own `##[error]` message (not the step's exit-code line): a candidate cause."""
    return bool(_ACTION_MESSAGE.match(text))


def _traceback_end(lines: Sequence[LogLine], index: int) -> bool:
    """Whether lines[index] closes a Python traceback: frames above, no blank line between."""
    for back in range(index - 1, max(-1, index - _TRACEBACK_LOOKBACK), -1):
        text = bare(lines[back].text)
        if not text.strip():
            return False
        if text.startswith("Traceback (most recent call last):") or text.lstrip().startswith('File "'):
            return True
    return False


def _frame_source(lines: Sequence[LogLine], index: int) -> bool:
    """Whether lines[index] is the source line Python prints under a traceback's `File "...", line N` (the
    `raise ValueError(...)` of the frame): indented deeper than `File` behind the same framing. The exception
    line that ends a traceback whose last frame has no source is not indented, so it is never taken for one."""
    if index == 0:
        return False
    above, text = lines[index - 1].text, lines[index].text
    at = above.find('File "')
    return (at > 0 and len(text) > at + 1 and text[at] == " " and not text[at + 1:].startswith('File "')
            and above[:at].strip(" ") == text[:at].strip(" "))


def score_line(lines: Sequence[LogLine], index: int, distance: int, boilerplate: bool) -> Scored:
    line = lines[index]
    # A line's shape is read from its head: bounded work per line (a 10 MB line took the shape regexes
    # seconds); the rules, not the scorer, read a line of any length to its end. Each shape is tried on the line
    # as it is and without a launcher's or logger's framing (`[rank1]: ValueError: ...`).
    framed = line.text[:SHAPE_CHARS]
    text = bare(framed).strip()
    framed = framed.strip()
    texts = (text,) if text == framed else (text, framed)
    points, reasons = 0.0, []
    if boilerplate:
        points -= 4
        reasons.append(f"{BOILERPLATE}: says that something failed, never what (-4)")
    elif is_action_message(line.text):
        points += 3
        reasons.append("an action's own failure message (`##[error]`) (+3)")
    if _frame_source(lines, index):
        points -= 4
        reasons.append(f"{STACK_FRAME}'s source line (-4)")
    for pattern, value, reason in _EVIDENCE:
        if any(pattern.search(candidate) for candidate in texts):
            points += value
            reasons.append(f"{reason} (+{value:g})")
            break  # one shape of error per line: an `ERROR: FooError:` line is not twice as wrong
    words = len(_FAILURE_WORDS.findall(text[:400]))
    if words:
        points += min(words, 2)
        reasons.append(f"words of failure (+{min(words, 2)})")
    if points > 0 and _traceback_end(lines, index):
        points += 3
        reasons.append(f"{TRACEBACK_END} (+3)")
    for pattern, value, reason in _NOISE:
        if any(pattern.search(candidate) for candidate in texts):
            points += value
            reasons.append(f"{reason} ({value:g})")
    if points > 0:
        nearness = round(2 * (1 - min(distance, CONTEXT_LINES) / CONTEXT_LINES), 2)
        points += nearness
        reasons.append(f"{distance} lines above where the step failed (+{nearness:g})")
    return Scored(line, round(points, 2), tuple(reasons))


def _position(lines: Sequence[LogLine], number: int) -> int:
    return bisect.bisect_left(lines, number, key=lambda line: line.number)


# What a line printed by a step that passed loses: its step did not fail, a later one did.
PASSED_STEP_PENALTY = 4


def candidates(lines: Sequence[LogLine], matches: Iterable[RuleMatch], boilerplate_ids: set[str],
               end: LogLine | None = None, succeeded: frozenset[str] = frozenset(),
               far: Iterable[LogLine] = ()) -> list[Scored]:
    """Every candidate line scored, best first (ties: the line nearer the failure, then the later one).

    `far` are lines above the window that are scored too: the header of a JVM trace deeper than it (deep_traces.py).

    `end`, the log's last line, is the anchor of a log that says nowhere that a step failed (another CI
    system's log, a pasted excerpt): a log stops where its failure stopped it."""
    matches = list(matches)
    anchors = sorted({m.line.number for m in matches if m.rule_id in boilerplate_ids}
                     | {line.number for line in lines if line.text.startswith("##[error]")}
                     | ({end.number} if end else set()))
    boilerplate_lines = {m.line.number for m in matches
                         if m.rule_id in boilerplate_ids and not is_action_message(m.line.text)}
    wanted: set[int] = set()
    for match in matches:
        wanted.update(range(max(1, match.line.number - CONTEXT_LINES), match.line.number + 1))
    if end is not None:
        wanted.update(range(max(1, end.number - CONTEXT_LINES), end.number + 1))
    wanted.update(line.number for line in lines if line.text.startswith("##[error]"))
    wanted.update(line.number for line in far)
    # A GitHub Actions job stops at its first failed step, which closes with an `##[error]` line: a line of an
    # earlier step (steps known) with no `##[error]` line passed, and a line of a step run after the first failed
    # one (`if: always()`) came after the failure; neither is where the failure is (passed_steps.py).
    # (A step the jobs API says succeeded ran with `continue-on-error`: its `##[error]` lines mark no failure; without
    # the API's steps, a step that failed and went on before the step the job failed of is found from the log.)
    errors = failure_marks(lines, succeeded)
    first_exit, continued = continued_steps(lines, [m for m in matches if m.rule_id not in boilerplate_ids], succeeded)
    failed_steps = {line.step for line in errors} - continued
    last_error = errors[-1].number if errors else 0
    scored = []
    for number in sorted(wanted):
        index = _position(lines, number)
        if index >= len(lines) or lines[index].number != number or not lines[index].text.strip():
            continue
        after = bisect.bisect_left(anchors, number)
        distance = anchors[after] - number if after < len(anchors) else 0
        found = score_line(lines, index, distance, number in boilerplate_lines)
        step = lines[index].step
        if step is not None and failed_steps and step not in failed_steps and number < last_error:
            how = "failed and went on (continue-on-error)" if step in continued else "passed"
            found = Scored(found.line, found.score - PASSED_STEP_PENALTY,
                           found.reasons + (f"{OTHER_STEP} {how} (-{PASSED_STEP_PENALTY})",))
        elif step is not None and first_exit is not None and step != first_exit.step and number > first_exit.number:
            found = Scored(found.line, found.score - PASSED_STEP_PENALTY,
                           found.reasons + (f"{OTHER_STEP} ran after the failed one (-{PASSED_STEP_PENALTY})",))
        scored.append(found)
    scored.sort(key=lambda s: (-s.score, -s.line.number))
    return scored


def best_of(ranked: Sequence[Scored]) -> Scored | None:
    """The most likely causal line of `candidates`' ranking, or None when no line has error evidence of its own."""
    return ranked[0] if ranked and ranked[0].score >= MIN_SCORE else None


def first_printing(best: Scored | None, ranked: Sequence[Scored]) -> Scored | None:
    """The first printing of the best line's exception when the log prints it again, ending another traceback: a
    process pool's `_RemoteTraceback` quotes the worker's exception and the parent re-raises it below (`The above
    exception was the direct cause of the following exception:`), and every child a spawn-started pool starts prints
    the same error; the earliest is the line that said why first."""
    if best is None or not any(r.startswith(TRACEBACK_END) for r in best.reasons):
        return best
    text = bare(best.line.text).strip()
    # (a copy in another step is another process's: a step that printed it and passed, `|| true`, did not fail of it)
    copies = [s for s in ranked if s.line.number < best.line.number and s.line.step == best.line.step
              and bare(s.line.text).strip() == text and any(r.startswith(TRACEBACK_END) for r in s.reasons)]
    return min(copies, key=lambda s: s.line.number, default=best)
