"""Review r13b: lines a PR's own code or tests print that widened retryable rules took as infrastructure."""

from tests.core.both_paths import classify_both


def _gha(*lines: str) -> str:
    return "".join(f"2026-12-06T14:00:{i % 60:02d}.1234567Z {line}\n" for i, line in enumerate(lines, 1))


def test_a_go_tests_own_short_write_report_is_not_a_full_disk():
    log = _gha("=== RUN   TestWriter", "    writer_test.go:42: short write: Wrote only 3 of 10 bytes",
               "--- FAIL: TestWriter (0.00s)", "FAIL", "FAIL\texample.com/w\t0.012s",
               "##[error]Process completed with exit code 1.")
    found = classify_both(log)
    assert (found.category, found.retryable) == ("test_failure", False)


def test_tars_own_short_write_stays_a_full_disk():
    log = _gha("tar: /builds/acme/widgets/out/a.tar: Wrote only 4096 of 10240 bytes",
               "tar: Error is not recoverable: exiting now", "##[error]Process completed with exit code 2.")
    found = classify_both(log)
    assert (found.category, found.root_cause.line) == ("disk_full", 1)


def test_an_apps_retry_log_under_a_failing_test_is_not_the_network():
    log = _gha("tests/test_client.py F", "=" * 30 + " FAILURES " + "=" * 30, "_" * 20 + " test_retry_policy " + "_" * 20,
               "-" * 20 + " Captured stderr call " + "-" * 20,
               "Request failed after 3 retries: 500 Internal Server Error", "E       assert 3 == 5",
               "=" * 20 + " short test summary info " + "=" * 20,
               "FAILED tests/test_client.py::test_retry_policy - assert 3 == 5", "=" * 10 + " 1 failed in 0.12s " + "=" * 10,
               "##[error]Process completed with exit code 1.")
    found = classify_both(log)
    assert (found.category, found.retryable) == ("test_failure", False)


def test_uvs_own_retry_verdict_stays_the_network():
    log = _gha("error: Request failed after 3 retries in 10.6s", "##[error]Process completed with exit code 2.")
    found = classify_both(log)
    assert (found.category, found.root_cause.line) == ("network", 1)


def _exunit(reason_line: str) -> str:
    return _gha("Running ExUnit with seed: 1234, max_cases: 4", "", "  1) test GET /health answers 200 (MyAppWeb.HealthTest)",
                "     test/my_app_web/health_test.exs:12", reason_line,
                '     code: {:ok, resp} = Req.get("http://localhost:4002/health")', "     stacktrace:",
                "       test/my_app_web/health_test.exs:13: (test)", "", "Finished in 0.1 seconds (0.00s async, 0.1s sync)",
                "1 test, 1 failure", "##[error]Process completed with exit code 2.")


def test_an_exunit_request_whose_server_closed_the_connection_is_the_tests():
    found = classify_both(_exunit("     ** (MatchError) no match of right hand side value: "
                                  "{:error, %Mint.TransportError{reason: :closed}}"))
    assert (found.category, found.retryable) == ("test_failure", False)


def test_an_exunit_httpc_timeout_to_localhost_is_the_tests():
    found = classify_both(_exunit("     ** (MatchError) no match of right hand side value: {:error, {:failed_connect, "
                                  "[{:to_address, {'localhost', 4002}}, {:inet, [:inet], :timeout}]}}"))
    assert (found.category, found.retryable) == ("test_failure", False)


def test_an_exunit_dns_failure_stays_the_network():
    found = classify_both(_exunit("     ** (MatchError) no match of right hand side value: {:error, {:failed_connect, "
                                  "[{:to_address, {'repo.hex.pm', 443}}, {:inet, [:inet], :nxdomain}]}}"))
    assert (found.category, found.root_cause.line) == ("network", 5)


def test_a_go_programs_own_log_line_is_not_a_bare_infrastructure_notice():
    # Go's log package prefixes '2026/12/06 14:00:01 '; peeled, the app's 'Timed out!' was job-timeout's anchored line,
    # 'Out of memory!' host-oom-killer's, 'Address already in use' a port clash: each a rerun of a failing Go test.
    for message in ("Timed out!", "Out of memory!", "Address already in use", "Wait timeout", "No devices were found",
                    "Request failed after 3 retries"):
        log = _gha("=== RUN   TestFetch", f"2026/12/06 14:00:01 {message}", "    fetch_test.go:20: expected 200, got 0",
                   "--- FAIL: TestFetch (0.00s)", "FAIL", "FAIL\texample.com/f\t0.012s",
                   "##[error]Process completed with exit code 1.")
        found = classify_both(log)
        assert (found.category, found.retryable) == ("test_failure", False), message


def test_an_apps_time_level_log_line_under_a_failing_test_is_not_a_timeout():
    log = _gha("tests/test_poll.py F", "=" * 30 + " FAILURES " + "=" * 30, "_" * 20 + " test_poll " + "_" * 20,
               "-" * 20 + " Captured stdout call " + "-" * 20, "14:00:01 INFO - Timed out!",
               "E       assert 'timeout' == 'done'", "=" * 20 + " short test summary info " + "=" * 20,
               "FAILED tests/test_poll.py::test_poll - assert 'timeout' == 'done'",
               "=" * 10 + " 1 failed in 0.12s " + "=" * 10, "##[error]Process completed with exit code 1.")
    found = classify_both(log)
    assert (found.category, found.retryable) == ("test_failure", False)


_JEST_ASSERTION = ["FAIL src/math.test.js", "  ● math › adds", "", "    expect(received).toBe(expected) // Object.is equality",
                   "", "    Expected: 4", "    Received: 5", "", "      at Object.<anonymous> (src/math.test.js:4:17)", ""]
_JEST_LOAD_NETWORK = ["FAIL src/api.test.js", "  ● Test suite failed to run", "",
                      "    getaddrinfo ENOTFOUND registry.example.com", ""]
_JEST_END = ["Test Suites: 2 failed, 2 total", "Tests:       1 failed, 1 total", "##[error]Process completed with exit code 1."]


def test_a_later_jest_files_load_failure_on_the_network_is_not_the_first_cause():
    found = classify_both(_gha(*_JEST_ASSERTION, *_JEST_LOAD_NETWORK, *_JEST_END))
    assert (found.category, found.root_cause.line, found.retryable) == ("test_failure", 2, False)


def test_a_first_jest_files_load_failure_on_the_network_stays_the_cause():
    found = classify_both(_gha(*_JEST_LOAD_NETWORK, *_JEST_ASSERTION, *_JEST_END))
    assert (found.category, found.root_cause.line) == ("network", 4)


def test_a_controller_under_test_logging_its_pods_deletion_is_not_a_lost_runner():
    found = classify_both(_gha("=== RUN   TestReconcileDeletesPod",
                               'I1206 14:00:01.123456   4242 reconciler.go:88] pod "web-7d9f8" is being deleted, requeueing',
                               "    reconciler_test.go:41: expected phase Terminated, got Running",
                               "--- FAIL: TestReconcileDeletesPod (0.02s)", "FAIL", "FAIL\texample.com/op/controllers\t0.412s",
                               "##[error]Process completed with exit code 1."))
    assert (found.category, found.retryable) == ("test_failure", False)


def test_gitlabs_verdict_on_its_deleted_pod_stays_a_lost_runner():
    found = classify_both('$ make test\nERROR: Job failed: pod "gitlab-runner/runner-abc123-project-42-concurrent-0-xyz" '
                          'is deleted\n')
    assert (found.category, found.root_cause.line) == ("runner_lost", 2)


def test_an_apps_own_date_pipe_log_line_under_a_failing_test_is_not_a_timeout():
    # '%Y-%m-%d %H:%M:%S | name | msg' was cut like Zuul's job-output framing, leaving the app's 'Timed out!' bare
    log = _gha("tests/test_poll.py F", "=" * 30 + " FAILURES " + "=" * 30, "_" * 20 + " test_poll " + "_" * 20,
               "-" * 20 + " Captured stdout call " + "-" * 20, "2026-12-06 14:00:01 | poller | Timed out!",
               "E       assert 'timeout' == 'done'", "=" * 20 + " short test summary info " + "=" * 20,
               "FAILED tests/test_poll.py::test_poll - assert 'timeout' == 'done'",
               "=" * 10 + " 1 failed in 0.12s " + "=" * 10, "##[error]Process completed with exit code 1.")
    found = classify_both(log)
    assert (found.category, found.retryable) == ("test_failure", False)


def test_zuuls_timed_out_result_stays_a_timeout():
    found = classify_both("2026-12-06 14:00:01.123456 | ubuntu-noble | pytest running\n"
                          "2026-12-06 15:00:01.654321 | RUN END RESULT_TIMED_OUT: "
                          "[untrusted : opendev.org/acme/widgets/playbooks/unit.yaml@master]\n")
    assert (found.category, found.root_cause.line) == ("job_timeout", 2)


def test_a_setup_scripts_numbered_steps_are_not_test_reports():
    # '2) Downloading test fixtures' under '1) Installing system packages' had minitest's numbered shape: curl's failure
    # under it was set aside as a later test's, and an unreachable host read as no cause (no rerun)
    found = classify_both(_gha("##[group]Run ./ci/setup.sh", "./ci/setup.sh", "##[endgroup]",
                               "1) Installing system packages", "2) Downloading test fixtures",
                               "curl: (6) Could not resolve host: data.example.org",
                               "##[error]Process completed with exit code 6."))
    assert (found.category, found.root_cause.line, found.retryable) == ("network", 6, True)


def test_minitests_later_numbered_error_still_yields_to_the_first_failure():
    found = classify_both(_gha("  1) Failure:", "InvoiceTest#test_total [test/invoice_test.rb:7]:", "Expected: 25",
                               "  Actual: 15", "", "  2) Error:", "WebhookTest#test_posts_to_hub:",
                               "SocketError: Failed to open TCP connection to hooks.slack.com:443 (getaddrinfo: Name or "
                               "service not known)", "", "2 runs, 1 assertions, 1 failures, 1 errors, 0 skips",
                               "##[error]Process completed with exit code 1."))
    assert (found.category, found.retryable) == ("test_failure", False)
