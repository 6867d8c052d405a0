"""A job a concurrency group cancelled for a newer run is neither lost nor timed out (80-weak, sweep s10a)."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.job_limits import apply_job_timeout
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules

RULES = builtin_rules()


def _gha(*lines: str) -> str:
    return "".join(f"2026-12-05T10:00:{i % 60:02d}.1234567Z {line}\n" for i, line in enumerate(lines, 1))


CANCELLED = _gha("##[group]Run python -m pytest tests", "python -m pytest tests", "##[endgroup]",
                 "tests/test_mod1.py ....                                                  [ 16%]",
                 "##[error]Canceling since a higher priority waiting request for 'ci-refs/pull/412/merge' exists",
                 "##[error]The operation was canceled.")


def test_a_concurrency_cancel_is_not_a_lost_runner():
    for found in (classify(list(parse_log(CANCELLED)), RULES), classify(relevant_lines(CANCELLED, RULES), RULES)):
        assert (found.category, found.retryable, found.root_cause.line) == ("unknown", False, 5)
        assert found.rule_id == "superseded-run-canceled"


def test_a_concurrency_cancel_at_the_jobs_limit_is_not_read_as_a_timeout():
    found = classify(list(parse_log(CANCELLED)), RULES)
    assert apply_job_timeout(found, duration_s=3600.0, limit_minutes=60.0).category == "unknown"


def test_a_failure_before_the_cancel_stays_the_cause():
    log = _gha("FAILED tests/test_api.py::test_get - AssertionError: assert 404 == 200",
               "##[error]Canceling since a higher priority waiting request for 'ci-main' exists",
               "##[error]The operation was canceled.")
    assert classify(list(parse_log(log)), RULES).category == "test_failure"


def test_what_the_cancelled_processes_print_after_the_notice_is_not_an_oom_kill_to_rerun():
    # the runner signals the job's processes after the notice: a shell's `Killed`, go's `signal: killed`, a docker
    # daemon's `context canceled` are the cancel's doing, not the host out of memory or a lost container
    for dying in (["Killed"], ["signal: killed", "FAIL\texample.com/svc\t41.002s"],
                  ["Error response from daemon: context canceled"]):
        log = _gha("##[group]Run make test", "make test", "##[endgroup]",
                   "##[error]Canceling since a higher priority waiting request for 'ci-refs/pull/412/merge' exists",
                   *dying, "##[error]The operation was canceled.")
        for found in (classify(list(parse_log(log)), RULES), classify(relevant_lines(log, RULES), RULES)):
            assert (found.category, found.retryable, found.root_cause.line) == ("unknown", False, 4)
