"""Framing robustness: a tool's message classifies the same behind the framing CI systems and launchers add."""

from __future__ import annotations

import pytest

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.framing import unframed
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules


@pytest.mark.parametrize(("text", "expected"), [
    ("[rank0]: FAILED tests/a.py::t", ("FAILED tests/a.py::t",)),
    ("(RayWorker pid=123) ERROR: boom", ("ERROR: boom", "boom")),
    ("(VllmWorker rank=1 pid=77) x", ("x",)),
    ("[1,0]<stderr>:--- FAIL: TestX (0.01s)", ("--- FAIL: TestX (0.01s)",)),
    ("[default3]:x", ("x",)),
    ("##[error]x", ("x",)),
    ("#8 12.34 error[E0308]: mismatched types", ("error[E0308]: mismatched types",)),
    ("#98  55.71 --- FAIL: TestCheckSuite/TestHealthChange (0.17s)",  # siderolabs/talos#1018, gap widened
     ("--- FAIL: TestCheckSuite/TestHealthChange (0.17s)",)),
    ("#12 0.412     --- FAIL: TestX/sub (0.00s)", ("--- FAIL: TestX/sub (0.00s)",)),
    ("    --- FAIL: TestX", ("--- FAIL: TestX",)),
    ("[linux-build] [ERROR] Tests run: 3", ("[ERROR] Tests run: 3", "Tests run: 3")),
    ("ERROR:root:boom", ("boom",)),
    ("1234\tfoo", ("foo",)),
    ("> `x y`", ("x y",)),
    ('"ERROR: x"', ("ERROR: x",)),
    ("2024-05-01 12:34:56,789 - root - ERROR - boom", ("- root - ERROR - boom", "boom")),
    ("ERROR 05-01 12:34:56 [engine.py:123] boom", ("boom",)),
    ("E0501 12:34:56.789012 12345 engine.cc:12] boom", ("boom",)),
    ("[2024-05-01 12:34:56] boom", ("boom",)),
    ("web-1  | boom", ("boom",)),
    ("[gw3] boom", ("boom",)),
    # a Jenkins parallel branch before a tool's indented line (cmake's message body)
    ("[linux-build]   Cannot find source file:", ("Cannot find source file:",)),
    # Nix's build log under -L (progress-bar.cc: '<name>> ', '<name> (post)> ')
    ("python3.11-widgets> FAILED tests/a.py::t", ("FAILED tests/a.py::t",)),
    ("widgets (post)> boom", ("boom",)),
    ("a -> b", ()),
    # Taskcluster generic-worker's error level (workers/generic-worker/main.go)
    ("[taskcluster:error] Aborting task...", ("Aborting task...",)),
    # mozharness (Taskcluster's Gecko tasks): INFO lines carry a command's output, ERROR is a level, WARNING stays
    ("03:04:05     INFO -  TEST-UNEXPECTED-FAIL | a.html | x", ("TEST-UNEXPECTED-FAIL | a.html | x",)),
    ("03:04:05    ERROR - boom", ("boom",)),
    ("03:04:05  WARNING - boom", ("WARNING - boom",)),
    # the journal's short format (a self-hosted runner's service); Go's log package timestamp is not peeled (the program
    # under test's own log line: 'Timed out!' behind it is not a job timeout, review r13b)
    ("Dec 06 14:10:00 ci-runner-4 runsvc.sh[1187]: FAILED tests/a.py::t", ("FAILED tests/a.py::t",)),
    ("Dec  6 14:10:00 ci-runner-4 kernel: x", ("x",)),
    ("2024/05/01 12:34:56.789012 boom", ()),
    ("2024/05-01 12:34:56 mixed separators", ()),
    ("December 6 is not a journal line", ()),
    # Jenkins timestamper's time of day (a copied console), and its elapsed form with milliseconds
    ("10:00:09  FAILED tests/a.py::t - assert 2 == 0", ("FAILED tests/a.py::t - assert 2 == 0",)),
    ("00:28:47.123 FATAL: boom", ("FATAL: boom", "boom")),
    # the tool's own indentation after the timestamper's two spaces, or after a quote's '> ' (jest's ✕ line)
    ("10:00:10    ✕ adds 1 + 2 (3 ms)", ("✕ adds 1 + 2 (3 ms)",)),
    (">   ✕ adds 1 + 2 (3 ms)", ("✕ adds 1 + 2 (3 ms)",)),
    # not framing: plain text, counts, pytest's E line, warnings
    ("plain", ()),
    ("12 failed, 3 passed", ()),
    ("E   ImportError: x", ()),
    ("[WARNING] x", ()),
    ("##[warning]x", ()),
    ("", ()),
    ("   ", ()),
])
def test_unframed(text: str, expected: tuple[str, ...]) -> None:
    assert unframed(text) == expected


MESSAGES = [
    ("ImportError while importing test module '/home/runner/work/app/app/tests/test_io.py'.", "import_error"),
    ("--- FAIL: TestParse (0.01s)", "test_failure"),
    ("error[E0308]: mismatched types", "compile_error"),
    ("Error: Process completed with exit code 137.", "host_oom"),
]
FRAMINGS = ["{}", "##[error]{}", "2024-05-01T12:34:56.1234567Z ##[error]{}", "ERROR: {}", "[ERROR] {}",
            "ERROR:root:{}", "[rank0]: {}", "(RayWorker pid=1234) {}", "[1,0]<stderr>:{}", "#8 12.34 {}",
            "[linux-build] {}", "    {}", "\t{}", "> {}", "`{}`", '"{}"', "12\t{}", "\x1b[31m{}\x1b[0m",
            " 45%|####5     | 45/100\r{}", "2024-05-01 12:34:56,789 - root - ERROR - {}",
            "ERROR 05-01 12:34:56 [engine.py:123] {}", "E0501 12:34:56.789012 12345 engine.cc:12] {}",
            "[2024-05-01 12:34:56] {}", "web-1  | {}", "[gw3] {}", "10:00:09  {}",
            # Zuul's job-output (a node's line ends with a space), Taskcluster's run-task and worker, tkn logs
            "2024-05-01 12:34:56.789012 | ubuntu-noble | {} ", "2024-05-01 12:34:56.789012 | {}",
            "[task 2024-05-01T12:34:56.789Z] {}", "[taskcluster:error] {}", "[unit-tests : pytest] {}",
            # Cloud Build, kubectl logs --prefix, the journal
            'Step #2 - "unit-tests": {}', "[pod/e2e-7c9f/app] {}", "Dec 06 14:10:00 ci-runner-4 runsvc.sh[1187]: {}",
            # mozharness inside Taskcluster's run-task
            "[task 2024-05-01T12:34:56.789Z] 12:34:56     INFO -  {}", "[task 2024-05-01T12:34:56.789Z] 12:34:56    ERROR -  {}",
            # Nix's build log under -L
            "python3.11-widgets> {}"]


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize(("message", "category"), MESSAGES)
def test_message_survives_framing(message: str, category: str, framing: str) -> None:
    rules = builtin_rules()
    log = f"noise before\n{framing.format(message)}\nnoise after\n"
    fast = classify(relevant_lines(log, rules), rules)
    assert fast.category == category
    assert fast.root_cause is not None and fast.root_cause.line == 2
    assert classify(list(parse_log(log)), rules).category == category


@pytest.mark.parametrize("line", [
    "pytest prints ImportError while importing test module 'x' when a test module cannot be imported",
    "    raise ImportError(\"ImportError while importing test module 'x'\")",
    "[WARNING] ImportError while importing test module '/src/tests/test_io.py'",
    "##[warning]--- FAIL: TestParse (0.01s)",
    "    # --- FAIL: TestParse is what go test prints",
])
def test_prose_code_and_warnings_stay_unmatched(line: str) -> None:
    rules = builtin_rules()
    result = classify(relevant_lines(f"{line}\n", rules), rules)
    assert result.rule_id is None


def test_a_long_framed_line_matches_in_its_first_window() -> None:
    rules = builtin_rules()
    line = "[rank0]: ImportError while importing test module '/src/tests/test_io.py'. " + "x" * 10_000
    log = f"noise\n{line}\n"
    fast = classify(relevant_lines(log, rules), rules)
    assert (fast.category, fast.root_cause.line if fast.root_cause else None) == ("import_error", 2)
    assert classify(list(parse_log(log)), rules).category == "import_error"


@pytest.mark.parametrize("prefix", ["", "10:00:10  ", "> ", "    "])
def test_an_indented_test_line_keeps_its_rank_behind_a_prefix(prefix: str) -> None:
    # jest names the failing test on an indented `✕` line under the file's verdict; behind a copied Jenkins console's
    # time of day or a quote, the verdict (`FAIL ./sum.test.js`) must not win for want of the indented line.
    rules = builtin_rules()
    body = ["FAIL ./sum.test.js", "  ✕ adds 1 + 2 to equal 3 (3 ms)", "  ✓ adds zero", "",
            "Tests:       1 failed, 1 passed, 2 total"]
    log = "".join(prefix + line + "\n" for line in body)
    fast = classify(relevant_lines(log, rules), rules)
    assert (fast.category, fast.root_cause.line if fast.root_cause else None) == ("test_failure", 2)


def test_a_test_failure_behind_jenkins_time_prefix_outranks_the_interrupt() -> None:
    # A copied Jenkins console (timestamper's time of day before each line): the pytest failure printed before the
    # build's interrupt is the cause, not the weak "Sending interrupt signal to process" that follows it.
    rules = builtin_rules()
    log = ("10:00:01  + pytest -q\n10:00:09  F.......\n"
           "10:00:09  FAILED tests/test_cli.py::test_help - assert 2 == 0\n"
           "10:30:00  Sending interrupt signal to process\n10:30:02  Terminated\n")
    fast = classify(relevant_lines(log, rules), rules)
    assert (fast.category, fast.root_cause.line if fast.root_cause else None) == ("test_failure", 3)
    assert classify(list(parse_log(log)), rules).category == "test_failure"


@pytest.mark.parametrize("exit_line", [
    'ERROR: failed to solve: process "/bin/sh -c python validate.py" did not complete successfully: exit code: 1',
    "##[error]Bash exited with code '1'.",
    "[10:00:02]E:\t [Step 1/2] Process exited with code 1",
    "nox > Command python validate.py failed with exit code 1",
    'ERROR: build step 1 "python:3.11" failed: step exited with non-zero status: 1',
    'task validate has failed: "step-validate" exited with code 1',
    "[taskcluster 2024-01-02T03:04:05.678Z]    Exit Code: 1",
    "[Container] 2024/01/02 03:04:05.678901 Command did not exit successfully python validate.py exit status 1",
    "[task 2024-01-02T03:04:05.678Z] 03:04:05    ERROR - Return code: 1",
    "##[error]Exit code 1 returned from process: file name '/usr/bin/docker', arguments 'exec -i b1c2 sh -c \"python validate.py\"'.",
    'The command "python validate.py" failed and exited with 1 during .',
])
def test_other_ci_systems_exit_lines_are_boilerplate_for_the_scorer(exit_line: str) -> None:
    # A failure no rule names: the scorer looks above the CI system's exit line, which is not the cause itself.
    rules = builtin_rules()
    log = f"validating config.yaml\nconfig validation failed: missing key region\n{exit_line}\n"
    fast = classify(relevant_lines(log, rules), rules)
    assert fast.root_cause is not None and fast.root_cause.line == 2
    assert fast.captures.get("exit_code") == "1"


def test_an_unpadded_time_level_line_is_not_mozharness():
    # mozharness pads its level to 8 ('03:04:05     INFO - '); an app's own 'HH:MM:SS INFO - ' log line keeps its framing,
    # so a `^`-anchored rule does not take the app's message (its 'Timed out!' was job-timeout's, review r13b)
    assert "Timed out!" not in unframed("14:00:01 INFO - Timed out!")
    assert "Timed out!" not in unframed("14:00:01 ERROR - Timed out!")
    assert unframed("03:04:05     INFO - Timed out!") == ("Timed out!",)
