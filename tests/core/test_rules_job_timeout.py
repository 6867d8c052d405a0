"""A job whose duration reached its workflow's timeout-minutes is a job_timeout (pure inputs)."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.job_limits import apply_job_timeout, timeout_minutes
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.rules import builtin_rules
from ci_triage.workflow_yaml import parse

WORKFLOW = """
on: pull_request
jobs:
  test:
    name: unit tests
    timeout-minutes: 30
    runs-on: ubuntu-latest
  lint:
    runs-on: ubuntu-latest
  dyn:
    timeout-minutes: ${{ inputs.t }}
"""


def _unknown():
    return classify(list(parse_log("##[error]The operation was canceled.\n")), builtin_rules())


def test_timeout_minutes_by_key_name_and_matrix_instance():
    assert timeout_minutes(parse(WORKFLOW), "unit tests") == 30
    assert timeout_minutes(parse(WORKFLOW), "unit tests (3.11, ubuntu)") == 30
    assert timeout_minutes(parse(WORKFLOW), "lint") == 360  # GitHub's default
    assert timeout_minutes(parse(WORKFLOW), "dyn") is None  # an expression: not known here
    assert timeout_minutes(parse(WORKFLOW), "missing") is None


def test_a_job_that_ran_to_its_limit_is_a_job_timeout():
    result = apply_job_timeout(_unknown(), duration_s=30 * 60 + 4, limit_minutes=30)
    assert (result.category, result.retryable, result.captures["limit"]) == ("job_timeout", True, "30 minutes")


def test_a_shorter_job_or_a_rule_finding_is_left_alone():
    assert apply_job_timeout(_unknown(), duration_s=12 * 60, limit_minutes=30).category == "unknown"
    disk = classify(list(parse_log("OSError: [Errno 28] No space left on device\n")), builtin_rules())
    assert apply_job_timeout(disk, duration_s=3600, limit_minutes=30).category == "disk_full"
