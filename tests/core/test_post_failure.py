"""What a CI system runs after the job's command failed is not its cause (core/logs/post_failure.py, sweep s13e).

Cut from logs composed here on 2026-12-06 around real output: pytest 9.2.0's failing run, then curl 7.88's failed
coverage upload (`curl: (6) Could not resolve host: codecov.io`, this machine reaches no such host)."""

import pytest

from tests.core.both_paths import classify_both

FAILURE = ["FAILED tests/test_parse.py::test_parse_quoted - assert {'a': '\"x y\"'} == {'a'...",
           "======== 1 failed, 15 passed, 2 skipped, 1 xfailed, 1 warning in 0.05s ========="]
UPLOAD = ["curl: (6) Could not resolve host: codecov.io"]

MARKS = {
    "gitlab": ["section_end:1765048890:step_script", "section_start:1765048890:after_script",
               "Running after script...", "$ curl -sSfL https://codecov.io/bash -o codecov.sh"],
    "buildkite": ["^^^ +++", "🚨 Error: The command exited with status 1", "~~~ Uploading coverage",
                  "$ curl -sSfL https://codecov.io/bash -o codecov.sh"],
    "jenkins": ["[Pipeline] }", "[Pipeline] // stage", "[Pipeline] stage", "[Pipeline] { (Declarative: Post Actions)",
                "[Pipeline] sh", "+ curl -sSfL https://codecov.io/bash -o codecov.sh"],
}
ENDS = {"gitlab": ["ERROR: Job failed: exit code 1"], "buildkite": ["user command error: exit status 1"],
        "jenkins": ["ERROR: script returned exit code 1", "Finished: FAILURE"]}


@pytest.mark.parametrize("ci", sorted(MARKS))
def test_an_upload_failing_after_the_mark_is_not_the_cause(ci):
    found = classify_both("\n".join(FAILURE + MARKS[ci] + UPLOAD + ENDS[ci]) + "\n")
    assert (found.category, found.root_cause.line) == ("test_failure", 1)
    assert not found.retryable


@pytest.mark.parametrize("ci", sorted(MARKS))
def test_with_nothing_before_the_mark_what_follows_stays(ci):
    found = classify_both("\n".join(["collecting ... done"] + MARKS[ci] + UPLOAD + ENDS[ci]) + "\n")
    assert found.category == "network"
