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


def _classify(text):
    return classify(list(parse_log(text)), builtin_rules())


def _unknown():
    return _classify("##[error]Process completed with exit code 1.\n")


def _canceled():
    # GitHub's bare cancellation notice: a lost runner on its own (rules/builtin/80-weak.toml)
    return _classify("Run pytest -x\n##[error]The operation was canceled.\n")


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
    disk = _classify("OSError: [Errno 28] No space left on device\n")
    assert apply_job_timeout(disk, duration_s=3600, limit_minutes=30).category == "disk_full"
    lost = _classify("The self-hosted runner: r1 lost communication with the server.\n")
    assert apply_job_timeout(lost, duration_s=3600, limit_minutes=30).category == "runner_lost"


def test_a_cancellation_at_the_limit_is_the_timeout_not_a_lost_runner():
    canceled = _canceled()
    assert (canceled.category, canceled.rule_id) == ("runner_lost", "operation-canceled")
    assert apply_job_timeout(canceled, duration_s=12 * 60, limit_minutes=30).category == "runner_lost"
    result = apply_job_timeout(canceled, duration_s=30 * 60 + 4, limit_minutes=30)
    assert (result.category, result.retryable, result.captures["limit"]) == ("job_timeout", True, "30 minutes")
    assert result.root_cause == canceled.root_cause
    shutdown = _classify("##[error]The runner has received a shutdown signal.\n##[error]The operation was canceled.\n")
    assert shutdown.rule_id == "runner-shutdown"
    assert apply_job_timeout(shutdown, duration_s=360 * 60, limit_minutes=360).category == "job_timeout"
