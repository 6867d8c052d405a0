"""A code failure printed by a step that passed is not the job's failure (core/logs/passed_steps.py)."""

import pytest

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.rules import builtin_rules
from tests.core.both_paths import classify_both

RULES = builtin_rules()


def _gha(*lines: str) -> str:
    return "".join(f"2026-12-05T10:00:{i % 60:02d}.1234567Z {line}\n" for i, line in enumerate(lines, 1))


def _step(command: str) -> list[str]:
    return [f"##[group]Run {command}", command, "shell: /usr/bin/bash -e {0}", "##[endgroup]"]


# go test -v of Go 1.19, run here (s7a false-positive sweep): t.Log lines of passing tests
GO_PASS = ["=== RUN   TestPortInUse", "    main_test.go:5: address already in use, trying next port",
           "--- PASS: TestPortInUse (0.00s)", "PASS", "ok  \texample.com/svc\t0.003s"]


def _both(log: str):
    return classify_both(log)


def test_a_passing_steps_test_log_line_leaves_a_later_lint_finding_as_the_cause():
    log = _gha(*_step("go test -v ./..."), *GO_PASS, *_step("ruff check src"),
               "src/app/bad.py:1:8: F401 [*] `os` imported but unused", "Found 1 error.",
               "##[error]Process completed with exit code 1.")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("lint_failure", 14)


def test_a_passing_steps_test_log_line_is_not_an_unexplained_failures_cause():
    log = _gha(*_step("go test -v ./..."), *GO_PASS, *_step("./scripts/check-version.sh"),
               "Error: version mismatch between pyproject.toml (1.2.0) and tag (v1.2.1)",
               "##[error]Process completed with exit code 1.")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("unknown", 14)


def test_a_silent_step_after_noisy_passing_steps_falls_back_to_its_exit_line():
    log = _gha(*_step("go test -v ./..."), *GO_PASS, *_step("test -f dist/*.whl"),
               "##[error]Process completed with exit code 1.")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("unknown", 14)


def test_a_step_that_failed_and_went_on_keeps_its_failure():
    # continue-on-error: the test step failed (its own ##[error] line), a later step failed too
    log = _gha(*_step("go test ./..."), "--- FAIL: TestPort (0.00s)", "    main_test.go:9: got 8003, want 8080",
               "FAIL", "##[error]Process completed with exit code 1.",
               *_step("./scripts/check-version.sh"), "Error: version mismatch", "##[error]Process completed with exit code 1.")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("test_failure", 5)


@pytest.mark.parametrize("earlier", [
    "OSError: [Errno 98] Address already in use",  # a server started in the background: the later step's cause
])
def test_a_cause_that_is_not_the_code_stays_the_cause_from_a_passing_step(earlier):
    log = _gha(*_step("python -m http.server 8000 &"), earlier, *_step("pytest -q"),
               "FAILED tests/test_api.py::test_get - requests.exceptions.ConnectionError: refused",
               "##[error]Process completed with exit code 1.")
    found = _both(log)
    assert found.category == "port_in_use"


def test_without_steps_nothing_is_set_aside():
    # the test's verdict is not in the log (a paste cut after its log line), so nothing says the test passed
    # (a verdict of PASS sets the line aside whatever the steps: go_test_passes.py, sweep s10a)
    cut = [line for line in GO_PASS if not line.startswith("--- PASS")]
    found = classify(list(parse_log("\n".join(cut + ["src/app/bad.py:1:8: F401 [*] `os` imported but unused"]))),
                     RULES)
    assert found.category == "test_failure"


@pytest.mark.parametrize("always_step, noise", [
    ("docker rm -f svc-db-1 || true", "Error response from daemon: No such container: svc-db-1"),
    ("docker compose logs --no-color db",
     "db-1  | 2026-12-05 10:04:58.913 UTC [1] LOG:  could not receive data from client: Connection reset by peer"),
])
def test_a_step_run_after_the_failed_one_is_not_its_cause(always_step, noise):
    # `if: always()` steps after the failing test step (s7a false-positive sweep)
    log = _gha(*_step("pytest -q"), "FAILED tests/test_core.py::test_mode_specific - AssertionError: sum is off",
               "##[error]Process completed with exit code 1.", *_step(always_step), noise)
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("test_failure", 5)


def test_an_unexplained_failure_is_not_taken_from_a_step_run_after_it():
    log = _gha(*_step("./scripts/check-version.sh"), "Error: version mismatch between pyproject.toml and tag",
               "##[error]Process completed with exit code 1.", *_step("docker rm -f svc-db-1 || true"),
               "Error response from daemon: No such container: svc-db-1")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("unknown", 5)


def test_a_passed_steps_line_is_not_preferred_for_its_resemblance():
    # pip's post-install conflict report (real, pip 24 exit 0) in an install step that passed; a later step fails
    log = _gha(*_step("pip install -r requirements-dev.txt"),
               "ERROR: pip's dependency resolver does not currently take into account all the packages that are "
               "installed. This behaviour is the source of the following dependency conflicts.",
               "requests 2.31.0 requires urllib3<3,>=1.21.1, but you have urllib3 1.20 which is incompatible.",
               "Successfully installed urllib3-1.20",
               *_step("./scripts/check-version.sh"), "pyproject version: 1.2.0",
               "Error: version mismatch between pyproject.toml (1.2.0) and tag (v1.2.1)",
               "##[error]Process completed with exit code 1.")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("unknown", 13)


def _api_steps(*steps: tuple[str, str, int, int]):
    """Steps as the jobs API gives them: (name, conclusion, first second, last second) of `_gha`'s clock."""
    from datetime import datetime, timezone

    from ci_triage.core.logs.values import Step

    def at(second: int) -> datetime:
        return datetime(2026, 12, 5, 10, 0, second, tzinfo=timezone.utc)

    return tuple(Step(number, name, "completed", conclusion, at(first), at(last))
                 for number, (name, conclusion, first, last) in enumerate(steps, 1))


def _both_with(log: str, steps):
    return classify_both(log, steps)


# A continue-on-error step that failed: the runner records its result as succeeded (actions/runner,
# ExecutionContext.ApplyContinueOnError), which is the step's `conclusion` in the jobs API.
CONTINUED = [*_step("go test ./..."), "--- FAIL: TestPort (0.00s)", "    main_test.go:9: got 8003, want 8080",
             "FAIL", "##[error]Process completed with exit code 1."]  # lines 1-8


def test_a_continue_on_error_steps_failure_yields_to_the_step_that_failed_the_job():
    log = _gha(*CONTINUED, *_step("ruff check src"), "src/app/bad.py:1:8: F401 [*] `os` imported but unused",
               "Found 1 error.", "##[error]Process completed with exit code 1.")
    steps = _api_steps(("Run go test ./...", "success", 1, 8), ("Run ruff check src", "failure", 9, 15))
    found = _both_with(log, steps)
    assert (found.category, found.root_cause.line) == ("lint_failure", 13)
    # the log alone says it too: a later `run:` step exited of a failure of its own (failed_step_exit)
    assert _both(log).category == "lint_failure"


def test_an_unexplained_failure_after_a_continue_on_error_step_is_found_in_the_failed_step():
    log = _gha(*CONTINUED, *_step("./scripts/check-version.sh"),
               "Error: version mismatch between pyproject.toml (1.2.0) and tag (v1.2.1)",
               "##[error]Process completed with exit code 1.")
    steps = _api_steps(("Run go test ./...", "success", 1, 8), ("Run ./scripts/check-version.sh", "failure", 9, 14))
    found = _both_with(log, steps)
    assert (found.category, found.root_cause.line) == ("unknown", 13)


def test_steps_of_one_name_that_did_not_all_succeed_still_mark_a_failure():
    from ci_triage.core.logs.passed_steps import succeeded_steps

    steps = _api_steps(("Run make", "success", 1, 8), ("Run make", "failure", 9, 15), ("Set up job", "success", 0, 0),
                       ("Post job cleanup", None, 16, 16))
    from ci_triage.core.logs.passed_steps import API_KNOWN

    assert succeeded_steps(steps) == frozenset({"Set up job", API_KNOWN})
    assert succeeded_steps(()) == frozenset()


def test_the_report_passes_the_jobs_steps_to_the_classifier():
    from ci_triage.core.logs.budget import classify_within

    log = _gha(*CONTINUED, *_step("ruff check src"), "src/app/bad.py:1:8: F401 [*] `os` imported but unused",
               "Found 1 error.", "##[error]Process completed with exit code 1.")
    steps = _api_steps(("Run go test ./...", "success", 1, 8), ("Run ruff check src", "failure", 9, 15))
    found = classify_within(log.encode(), RULES, steps, seconds=None, clock=None)
    assert found.category == "lint_failure"


# ruff 0.17's findings and curl's DNS error, run here (s9d noisy whole-job sweep), printed by steps that failed under
# `continue-on-error: true`: the runner prints the same exit line for them and goes on with the job's next steps
ADVISORY = {
    "lint": (["ruff check src", "F401 [*] `os` imported but unused", " --> src/acme/util.py:1:8", "Found 1 error."], 1),
    "network": (["curl -fsSL https://downloads.example.invalid/tool.tar.gz -o /tmp/t.tgz",
                 "curl: (6) Could not resolve host: downloads.example.invalid"], 6),
}


def _advisory(kind: str) -> list[str]:
    (command, *output), code = ADVISORY[kind]
    return [*_step(command), *output, f"##[error]Process completed with exit code {code}."]


@pytest.mark.parametrize("kind", sorted(ADVISORY))
def test_a_continue_on_error_steps_failure_is_not_a_later_failed_steps_cause(kind):
    log = _gha(*_advisory(kind), *_step("pip install -e ."), "Successfully installed acme-0.1",
               *_step("pytest -ra tests"), "FAILED tests/test_core.py::test_total - assert 0.30000000000000004 == 0.3",
               "1 failed, 11 passed in 0.17s", "##[error]Process completed with exit code 1.")
    found = _both(log)
    failed = next(i for i, line in enumerate(log.splitlines(), 1) if "FAILED tests/" in line)
    assert (found.category, found.root_cause.line) == ("test_failure", failed)


def test_a_runner_lost_under_a_step_after_a_continue_on_error_step_is_the_cause():
    # message strings of actions/runner (src/Runner.Worker/JobRunner.cs)
    log = _gha(*_advisory("lint"), *_step("pytest -v tests/e2e"), "tests/e2e/test_api.py::test_get PASSED",
               "##[error]The runner has received a shutdown signal. This can happen when the runner service is stopped, "
               "or a manually started runner is canceled.", "##[error]The operation was canceled.")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("runner_lost", len(log.splitlines()) - 1)


def test_a_later_steps_upload_failure_leaves_the_failed_step_as_the_cause():
    # an `if: always()` upload after the failing test step failed of the network: a cleanup's failure, not the job's
    log = _gha(*_step("pytest -ra tests"), "FAILED tests/test_core.py::test_total - assert 1 == 2",
               "##[error]Process completed with exit code 1.", *_advisory("network"))
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("test_failure", 5)


# curl 7.88's errors before its `--retry` worked (run here, s9d sweep), and a handled error logged with its traceback
RETRIED = {
    "curl": ["curl -fsSL --retry 3 --retry-all-errors -o vendor/six.whl https://artifacts.example.com/six.whl",
             "curl: (52) Empty reply from server", "curl: (52) Empty reply from server"],
    "handled": ["python scripts/fetch_fixtures.py",
                "2026-12-06 10:03:12,418 ERROR acme.sync: fetch of fixtures.tar.gz failed, retrying (1/3)",
                "Traceback (most recent call last):", '  File "scripts/fetch_fixtures.py", line 6, in <module>',
                '    raise ConnectionResetError(104, "Connection reset by peer")',
                "ConnectionResetError: [Errno 104] Connection reset by peer",
                "2026-12-06 10:03:12,418 INFO acme.sync: fetch of fixtures.tar.gz succeeded on retry 2"],
}


@pytest.mark.parametrize("kind", sorted(RETRIED))
def test_a_network_fault_a_passing_step_went_on_past_is_not_a_later_failures_cause(kind):
    command, *output = RETRIED[kind]
    log = _gha(*_step(command), *output, *_step("python -c 'from acme import parse_config'"),
               "Traceback (most recent call last):", '  File "<string>", line 1, in <module>',
               "ImportError: cannot import name 'parse_config' from 'acme' (/home/runner/work/acme/acme/src/acme/__init__.py)",
               "##[error]Process completed with exit code 1.")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("import_error", len(log.splitlines()) - 1)


def test_a_network_fault_of_a_passing_step_stays_the_cause_of_an_unexplained_failure():
    # the download was given up on quietly (`|| true`): the later step fails for the missing file, in words no rule knows
    command, *output = RETRIED["curl"]
    log = _gha(*_step(command + " || true"), *output, *_step("./scripts/install-vendor.sh"),
               "install-vendor: vendor/six.whl is missing", "##[error]Process completed with exit code 1.")
    found = _both(log)
    assert found.category == "network"


def test_a_test_report_action_after_the_failed_test_step_leaves_it_the_cause():
    # an `if: always()` action that reports the tests' results fails with its own annotation (no exit line)
    log = _gha(*_step("pytest -ra tests"), "FAILED tests/test_core.py::test_total - assert 1 == 2",
               "##[error]Process completed with exit code 1.", "##[group]Run acme/test-report-action@v1", "with:",
               "  path: junit.xml", "##[endgroup]", "##[error]FAILED tests/test_core.py::test_total - assert 1 == 2")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("test_failure", 5)


def test_a_network_fault_in_a_passed_step_stays_the_cause_of_what_a_missing_download_leads_to():
    # apt-get 2.6 run here (sweep s9e): the update step warns and passes, the install step cannot find the packages
    log = _gha(*_step("sudo apt-get update"), "Err:1 http://deb.acme.invalid/debian bookworm InRelease",
               "  Could not resolve 'deb.acme.invalid'",
               "W: Some index files failed to download. They have been ignored, or old ones used instead.",
               *_step("sudo apt-get install -y libgdal-dev"), "Reading package lists...",
               "E: Unable to locate package libgdal-dev", "##[error]Process completed with exit code 100.")
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("network", 6)


# An `if: failure()` debugging action after the failed test step (mxschmitt/action-tmate waits for a connection) under
# which the job ran out of time: the test step's failure is the job's, not a continue-on-error step's (no rerun).
TMATE = _gha(*_step("python -m pytest tests"),
             "FAILED tests/test_api.py::test_create_user - AssertionError: assert 500 == 201",
             "1 failed, 41 passed in 3.21s", "##[error]Process completed with exit code 1.",
             "##[group]Run mxschmitt/action-tmate@v3", "with:", "  limit-access-to-actor: true", "##[endgroup]",
             "SSH: ssh abc@nyc1.tmate.io",
             "##[error]The job running on runner GitHub Actions 12 has exceeded the maximum execution time of 360 minutes.",
             "##[error]The operation was canceled.")


def test_a_job_timeout_under_a_debugging_action_after_the_failed_step_leaves_the_test_failure_the_cause():
    found = _both(TMATE)
    assert (found.category, found.retryable, found.root_cause.line) == ("test_failure", False, 5)


def test_with_the_jobs_api_a_failed_step_is_never_taken_for_a_continue_on_error_one():
    # the API says the test step failed (a continue-on-error step's conclusion is success): whatever a later step
    # failed of, the job failed of the test step
    steps = _api_steps(("Run python -m pytest tests", "failure", 1, 7), ("Run mxschmitt/action-tmate@v3", "cancelled", 8, 14))
    found = _both_with(TMATE, steps)
    assert (found.category, found.retryable, found.root_cause.line) == ("test_failure", False, 5)


# pip 24's timeout for a wheel in an install the step went on past (`|| echo`), then the tests cannot import that package
PIP_TIMED_OUT = [*_step("pip install -r requirements-extra.txt || echo 'extras not installed'"), "Collecting onnxruntime==1.17.1",
                 "ERROR: Could not install packages due to an OSError: HTTPSConnectionPool(host='files.pythonhosted.org', "
                 "port=443): Max retries exceeded with url: /packages/onnxruntime-1.17.1.whl (Caused by ReadTimeoutError("
                 "\"HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read timed out. (read timeout=15)\"))",
                 "extras not installed"]


def _missing(module: str) -> list[str]:
    return [*_step("python -m pytest tests"), "_____________________ ERROR collecting tests/test_export.py _____________________",
            "ImportError while importing test module '/home/runner/work/acme/acme/tests/test_export.py'.",
            "tests/test_export.py:3: in <module>", f"    import {module}",
            f"E   ModuleNotFoundError: No module named '{module}'", "1 error in 0.31s",
            "##[error]Process completed with exit code 2."]


def test_a_module_a_passed_steps_network_fault_left_uninstalled_keeps_the_fault_the_cause():
    found = _both(_gha(*PIP_TIMED_OUT, *_missing("onnxruntime")))
    assert (found.category, found.retryable) == ("network", True)


def test_a_missing_module_the_fault_does_not_name_is_the_failed_steps_own():
    found = _both(_gha(*PIP_TIMED_OUT, *_missing("acme_plugins")))
    assert found.category == "import_error"


def test_a_later_steps_disk_full_does_not_set_the_failed_tests_aside_without_the_jobs_api():
    # an `if: always()` step archiving the logs filled the disk: without the API's conclusions it may as well be the
    # job's step after a continue-on-error one, and only a code failure there may set the test failure aside
    log = _gha(*_step("python -m pytest tests"), "FAILED tests/test_api.py::test_create_user - AssertionError: assert 500 == 201",
               "1 failed, 41 passed in 3.21s", "##[error]Process completed with exit code 1.",
               *_step("tar czf /tmp/test-logs.tgz build/logs"), "tar: /tmp/test-logs.tgz: Wrote only 4096 of 10240 bytes",
               "tar: Error is not recoverable: exiting now", "gzip: stdout: No space left on device",
               "##[error]Process completed with exit code 2.")
    found = _both(log)
    assert (found.category, found.retryable, found.root_cause.line) == ("test_failure", False, 5)
