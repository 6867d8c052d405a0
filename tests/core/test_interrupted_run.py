"""A bare test-run verdict printed as the job was stopped from outside is the stop's doing (classify.py,
interrupted_run_summaries); a run that named a failing test keeps its failure."""
from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.rules import builtin_rules


def _log(*lines: str) -> list:
    return list(parse_log("".join(line + "\n" for line in lines)))


# generated on this machine by `timeout -s INT 4 go test -v ./...` (a test blocked on a mutex), go 1.19.8
GO_INTERRUPTED = ("=== RUN   TestSet", "--- PASS: TestSet (0.00s)", "=== RUN   TestRefresh", "FAIL\texample.com/cachesvc\t3.781s")


def test_go_verdict_before_a_cancel_is_not_a_test_failure():
    result = classify(_log("$ go test -v ./...", *GO_INTERRUPTED, "ERROR: Job failed: canceled"), builtin_rules())
    assert (result.category, result.rule_id, result.root_cause.line) == ("unknown", "job-canceled-by-user", 6)


def test_go_verdict_before_timeouts_exit_status_is_the_timeout():
    result = classify(_log("$ timeout -s INT 25m go test -v ./...", *GO_INTERRUPTED,
                           "🚨 Error: The command exited with status 124"), builtin_rules())
    assert (result.category, result.rule_id) == ("job_timeout", "timeout-exit-status")


def test_a_named_failing_test_stays_the_cause_before_a_cancel():
    result = classify(_log("$ go test ./...", "--- FAIL: TestRefresh (0.00s)", "    cache_test.go:17: got 2, want 1",
                           "FAIL", "FAIL\texample.com/cachesvc\t0.012s", "ERROR: Job failed: canceled"), builtin_rules())
    assert result.category == "test_failure"
    assert result.root_cause.line == 2


def test_the_verdict_without_a_stop_notice_stays_a_test_failure():
    result = classify(_log("$ go test -v ./...", *GO_INTERRUPTED, "ERROR: Job failed: exit code 1"), builtin_rules())
    assert result.category == "test_failure"


def test_go_verdict_after_jenkins_interrupt_is_the_interrupt():
    result = classify(_log("+ go test -v ./...", "=== RUN   TestRefresh", "Sending interrupt signal to process",
                           "FAIL\texample.com/cachesvc\t3.781s", "script returned exit code 1", "Finished: FAILURE"),
                      builtin_rules())
    assert (result.category, result.rule_id, result.root_cause.line) == ("job_timeout", "jenkins-step-interrupted", 3)


def test_a_verdict_whose_step_failed_before_a_later_cancel_stays_the_cause():
    # a package failing on its own (TestMain's log.Fatal: a bare verdict), its step's exit line, then a cancel while a
    # later step ran: the verdict was not the stop's doing, and the log no rerun (review r13b)
    log = list(parse_log("".join(f"2026-12-06T14:00:0{i}.0000000Z {line}\n" for i, line in enumerate((
        '2026/12/06 14:00:01 config: missing key "region"', "FAIL\texample.com/svc\t0.004s", "ok  \texample.com/util\t0.002s",
        "FAIL", "##[error]Process completed with exit code 1.", "##[error]The operation was canceled."), 1))))
    result = classify(log, builtin_rules())
    assert (result.category, result.retryable, result.root_cause.line) == ("test_failure", False, 2)


def test_a_verdict_right_before_a_cancel_is_still_the_cancels():
    log = list(parse_log("".join(f"2026-12-06T14:00:0{i}.0000000Z {line}\n" for i, line in enumerate((
        *GO_INTERRUPTED, "##[error]The operation was canceled."), 1))))
    result = classify(log, builtin_rules())
    assert result.rule_id == "operation-canceled"


def test_many_verdicts_stops_and_exits_are_weighed_in_near_linear_time():
    # each verdict was checked against every stop notice, and each pair against every exit line: with the per-rule cap
    # of a thousand each, a hostile log asked for a billion comparisons (400 of each took 1.7 s, 200 of each 0.33 s)
    import time

    def seconds(count):
        body = [line for i in range(count) for line in (
            f"FAIL\texample.com/p{i}\t0.01s", "##[error]The operation was canceled.",
            "##[error]Process completed with exit code 1.")]
        lines = _log(*body)
        started = time.perf_counter()
        classify(lines, builtin_rules())
        return time.perf_counter() - started

    seconds(50)  # rules compiled, caches warm
    assert seconds(800) < 8 * seconds(200) + 0.5
