"""A passing Go test's t.Log line is not a failure (core/logs/go_test_passes.py, sweep s10a)."""

import pytest

from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.go_test_passes import passing_test_logs
from ci_triage.core.logs.matcher import find_matches
from ci_triage.core.logs.rules import builtin_rules
from tests.core.both_paths import classify_both

RULES = builtin_rules()

# output of `go test -v ./...` (go 1.2x), run here 2026-12-06: a passing test that logs, then another package
PASSING = ["=== RUN   TestHandler", "    api_test.go:3: serving", "--- PASS: TestHandler (0.00s)", "PASS",
           "ok  \texample.com/svc/api\t0.009s", "=== RUN   TestReplicate"]


def _both(text: str):
    return classify_both(text)


def test_a_passing_tests_log_line_leaves_a_later_timeout_panic_as_the_cause():
    # go test's own -timeout panic (testing.go), the test's failure
    found = _both("\n".join(PASSING + ["panic: test timed out after 10m0s", "\trunning tests:", "\t\tTestReplicate (10m0s)",
                                       "FAIL\texample.com/svc/store\t600.012s", "FAIL"]))
    assert (found.category, found.root_cause.line) == ("test_failure", 7)


def test_a_passing_tests_log_line_leaves_a_lost_runner_alone():
    found = _both("\n".join(PASSING[:3] + ["worker ci-worker-5 disappeared while trying to reach it", "errored"]))
    assert (found.category, found.root_cause.line) == ("runner_lost", 4)


def _set_aside(lines: list[str]) -> list[int]:
    parsed = list(parse_log("\n".join(lines)))
    return [m.line.number for m in passing_test_logs(parsed, find_matches(parsed, RULES))]


@pytest.mark.parametrize("verdict", ["--- FAIL: TestHandler (0.00s)", None])
def test_a_failing_or_unfinished_tests_log_line_stays_a_cause(verdict):
    lines = ["=== RUN   TestHandler", "    api_test.go:3: got 404, want 200"] + ([verdict] if verdict else [])
    assert _set_aside(lines + ["FAIL\texample.com/svc/api\t0.009s"]) == []
    if verdict is None:  # nothing else names the test: its log line is the failure
        found = _both("\n".join(lines + ["FAIL\texample.com/svc/api\t0.009s"]))
        assert (found.category, found.root_cause.line) == ("test_failure", 2)


def test_a_subtests_log_line_is_judged_by_the_subtests_verdict():
    failing = ["=== RUN   TestAPI", "=== RUN   TestAPI/get", "        api_test.go:9: got 404, want 200",
               "--- FAIL: TestAPI (0.00s)", "    --- FAIL: TestAPI/get (0.00s)", "FAIL"]
    assert _set_aside(failing) == []
    passing = ["=== RUN   TestAPI", "=== RUN   TestAPI/get", "        api_test.go:9: fetched /get",
               "    api_test.go:12: teardown failed", "--- FAIL: TestAPI (0.00s)", "    --- PASS: TestAPI/get (0.00s)", "FAIL"]
    assert _set_aside(passing) == [3]


def test_a_framed_passing_log_line_is_set_aside():
    # a Tekton step's prefix (tkn logs) in front of go test's output
    lines = ["[build : step-go-test] " + line for line in PASSING[:3]]
    found = _both("\n".join(lines + ['"step-go-test" exited because the step exceeded the specified timeout limit']))
    assert (found.category, found.root_cause.line) == ("job_timeout", 4)


def test_a_long_run_of_spaces_in_a_tab_indented_go_log_line_is_read_in_linear_time():
    # the rule takes a tab-indented `x_test.go:N: ` line; the shape's lazy frame then tried `(?: {4})+` at every
    # space of a long run, each across the rest of it: 40,000 spaces took 17 s, 60,000 about 40
    import time

    from ci_triage.core.logs.values import LogLine
    line = LogLine(2, "\tx_test.go:1: got" + " " * 60_000 + "z", None)
    match = next(m for m in find_matches([line], RULES) if m.rule_id == "test-assertion-failed")
    started = time.perf_counter()
    assert passing_test_logs([LogLine(1, "=== RUN   TestA", None), line], [match]) == []
    assert time.perf_counter() - started < 1


def test_a_passing_tests_log_line_of_any_rule_is_set_aside():
    # go test -v (go 1.2x) run here 2026-12-06 (sweep s13e): a passing test logs the port clash it tests for
    lines = ["=== RUN   TestListenFallback",
             "    svc_test.go:12: second listen: listen tcp 127.0.0.1:39693: bind: address already in use (expected), using ephemeral port",
             "--- PASS: TestListenFallback (0.00s)", "=== RUN   TestNormalize",
             '    svc_test.go:21: Normalize("  Foo ") = "foo", want "foo "', "--- FAIL: TestNormalize (0.00s)", "FAIL",
             "FAIL\texample.com/svc\t0.004s"]
    found = _both("\n".join(lines))
    assert found.category == "test_failure"
    assert found.root_cause.line in (5, 6)
    assert not found.retryable
