"""The scorer: an unexplained log still names its likeliest causal line, so unlike failures differ."""

import pytest

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules
from ci_triage.core.logs.scorer import candidates

STAMP = "2024-01-01T00:00:00.0000000Z "
RULES = builtin_rules()


def _text(*lines: str) -> str:
    return "".join(STAMP + line + "\n" for line in lines)


def _classify(*lines: str):
    return classify(list(parse_log(_text(*lines))), RULES)


PYTHON_FAILURE = (
    "##[group]Run python tools/render.py", "##[endgroup]", "rendering 12 templates",
    "Traceback (most recent call last):", '  File "/home/runner/work/r/r/tools/render.py", line 40, in <module>',
    "    main()", '  File "/home/runner/work/r/r/tools/render.py", line 31, in main',
    "    raise KeyError(name)", "KeyError: 'footer'", "##[error]Process completed with exit code 1.",
)
GO_FAILURE = (
    "##[group]Run go run ./cmd/gen", "##[endgroup]", "generating",
    "panic: runtime error: index out of range [3] with length 3", "", "goroutine 1 [running]:",
    "main.main()", "\t/home/runner/work/r/r/cmd/gen/main.go:12 +0x1d", "exit status 2",
    "##[error]Process completed with exit code 1.",
)
NODE_FAILURE = (
    "##[group]Run node scripts/build.js", "##[endgroup]", "building",
    "/home/runner/work/r/r/scripts/build.js:3", "  throw new TypeError('config.entry must be a string');", "  ^",
    "TypeError: config.entry must be a string", "    at Object.<anonymous> (/home/runner/work/r/r/scripts/build.js:3:9)",
    "    at Module._compile (node:internal/modules/cjs/loader:1256:14)", "", "Node.js v18.20.4",
    "##[error]Process completed with exit code 1.",
)


@pytest.mark.parametrize("lines, expected", [
    (PYTHON_FAILURE, "KeyError: 'footer'"),
    (GO_FAILURE, "panic: runtime error: index out of range [3] with length 3"),
    (NODE_FAILURE, "TypeError: config.entry must be a string"),
])
def test_an_unexplained_failure_names_its_causal_line(lines, expected):
    result = _classify(*lines)
    assert result.category == "unknown" and result.rule_id is None
    assert result.root_cause.text == expected


def test_distinct_unexplained_failures_get_distinct_fingerprints():
    # On b3c93e9 all three had the same root cause, the exit-code line, and so one fingerprint.
    prints = {_classify(*lines).fingerprint for lines in (PYTHON_FAILURE, GO_FAILURE, NODE_FAILURE)}
    assert len(prints) == 3


def test_the_same_failure_on_another_run_keeps_its_fingerprint():
    other = tuple(line.replace("line 40", "line 41") for line in PYTHON_FAILURE)
    assert _classify(*PYTHON_FAILURE).fingerprint == _classify(*other).fingerprint


def test_the_traceback_frames_of_the_scorer_line_are_kept():
    result = _classify(*PYTHON_FAILURE)
    assert [(f.path, f.line) for f in result.frames] == [("tools/render.py", 40), ("tools/render.py", 31)]


def test_boilerplate_warnings_and_summaries_lose_to_the_error():
    result = _classify("npm WARN deprecated left-pad@1.0.0", "Error: Cannot find module './config.json'",
                       "npm ERR! code 1", "npm ERR! A complete log of this run can be found in: /x.log",
                       "##[error]Process completed with exit code 1.")
    assert result.root_cause.line == 2


def test_no_error_evidence_falls_back_to_the_first_error_line():
    result = _classify("doing things", "##[error]Process completed with exit code 2.")
    assert result.root_cause.line == 2 and result.category == "unknown"


@pytest.mark.parametrize("code, category, signal", [
    ("137", "host_oom", "Killed (SIGKILL)"), ("139", "crash", "Segmentation fault"),
    ("134", "crash", "Aborted"), ("143", "crash", "Terminated"),
])
def test_a_signal_exit_code_gives_the_category_when_nothing_better_is_found(code, category, signal):
    result = _classify("Installing build dependencies: started", f"Error: Process completed with exit code {code}.")
    assert result.category == category and result.retryable is True
    assert result.captures["signal"].startswith(signal)


def test_exit_code_one_means_nothing():
    assert _classify("##[error]Process completed with exit code 1.").category == "unknown"


def test_other_ci_systems_exit_lines_anchor_the_scorer():
    gitlab = _classify("$ make check", "ld: cannot find -lfoo", "ERROR: Job failed: exit code 1")
    assert gitlab.root_cause.text == "ld: cannot find -lfoo"


@pytest.mark.parametrize("engine", ["python", "hyperscan"])
def test_fast_path_and_full_path_pick_the_same_line(engine):
    pytest.importorskip("hyperscan") if engine == "hyperscan" else None
    noise = tuple(f"step {n}: ok" for n in range(900))
    text = _text(*noise, *PYTHON_FAILURE, *noise[:50])
    full = classify(list(parse_log(text)), RULES)
    fast = classify(relevant_lines(text, RULES, engine=engine), RULES)
    assert fast == full and full.root_cause.text == "KeyError: 'footer'"


def test_candidates_explain_their_scores():
    lines = list(parse_log(_text(*PYTHON_FAILURE)))
    result = classify(lines, RULES)
    best = candidates(lines, result.matches, {r.id for r in RULES.rules if r.boilerplate})[0]
    assert best.line.text == "KeyError: 'footer'"
    assert any("exception class" in reason for reason in best.reasons)
    assert any("ends a traceback" in reason for reason in best.reasons)
