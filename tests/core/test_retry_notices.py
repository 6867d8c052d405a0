"""pip's retry notice is the cause only while nothing shows a retry worked (core/logs/retry_notices.py)."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.retry_notices import retries_left
from ci_triage.core.logs.rules import builtin_rules

RULES = builtin_rules()


def _notice(left: int, package: str = "six") -> str:
    # format of pip 23.2's urllib3 retry warning (seen here, r5b sweep of 2026-12-06, through a failing proxy)
    return (f"WARNING: Retrying (Retry(total={left}, connect=None, read=None, redirect=None, status=None)) after "
            f"connection broken by 'ProxyError('Cannot connect to proxy.', RemoteDisconnected('Remote end closed "
            f"connection without response'))': /simple/{package}/")


def _classify(*lines: str):
    return classify(list(parse_log("\n".join(lines))), RULES)


def test_a_retry_that_worked_leaves_the_failing_test_as_the_cause():
    found = _classify("pip install six pytest", _notice(2), "Collecting six", "Successfully installed six-1.16.0",
                      "============ short test summary info ============",
                      "FAILED tests/test_six.py::test_version - AssertionError: assert '1.16.0' == '1.17.0'")
    assert (found.category, found.retryable, found.root_cause.line) == ("test_failure", False, 6)


def test_a_retry_that_worked_leaves_a_missing_package_as_the_cause():
    found = _classify("pip install sixx", _notice(2, "sixx"),
                      "ERROR: Could not find a version that satisfies the requirement sixx (from versions: none)",
                      "ERROR: No matching distribution found for sixx")
    assert (found.category, found.retryable) == ("dependency", False)


def test_retries_that_ran_out_stay_the_cause_of_what_follows():
    found = _classify("pip install six || true", _notice(2), _notice(1), _notice(0),
                      "ERROR: Could not find a version that satisfies the requirement six (from versions: none)",
                      "E   ModuleNotFoundError: No module named 'six'",
                      "FAILED tests/test_six.py::test_version - ModuleNotFoundError: No module named 'six'")
    assert (found.category, found.retryable, found.root_cause.line) == ("network", True, 2)


def test_a_notice_after_the_code_failure_is_still_the_cause():
    # a hook that failed because the stubs it installs could not be downloaded: its `Failed` line comes first
    found = _classify("mypy.....................................................................Failed",
                      "- hook id: mypy", _notice(4), _notice(3))
    assert (found.category, found.root_cause.line) == ("network", 3)


def test_retries_left_reads_pips_notice_and_nothing_else():
    assert retries_left(_notice(3)) == 3
    assert retries_left("warning: spurious network error (1 tries remaining): [28] Timeout was reached") is None
    assert retries_left("Retrying in 1s [Retry 1/5].") is None


def _gha(*lines: str) -> str:
    return "\n".join(f"2026-12-05T10:00:{i:02d}.1234567Z {line}" for i, line in enumerate(lines, 1))


def test_notices_of_a_step_that_went_on_leave_a_later_steps_failure_as_the_cause():
    # pip gave up on a dead --extra-index-url (total=0) and installed from the main index; a later step's test failed
    # (the notices' format as pip printed them here, s7a false-positive sweep)
    log = _gha("##[group]Run pip install -e .[test]", "pip install -e .[test]", "##[endgroup]",
               _notice(1), _notice(0), "Processing ./six-1.17.0-py2.py3-none-any.whl",
               "Successfully installed six-1.17.0",
               "##[group]Run pytest", "pytest", "##[endgroup]",
               "FAILED tests/test_six.py::test_version - AssertionError: assert '1.16.0' == '1.17.0'",
               "##[error]Process completed with exit code 1.")
    found = classify(list(parse_log(log)), RULES)
    assert (found.category, found.retryable, found.root_cause.line) == ("test_failure", False, 11)


def test_notices_that_ran_out_in_the_failing_step_stay_the_cause():
    log = _gha("##[group]Run pip install six && pytest", "pip install six && pytest", "##[endgroup]",
               _notice(1), _notice(0),
               "ERROR: Could not find a version that satisfies the requirement six (from versions: none)",
               "##[error]Process completed with exit code 1.")
    found = classify(list(parse_log(log)), RULES)
    assert (found.category, found.root_cause.line) == ("network", 4)


def test_a_weak_retry_notice_of_a_step_that_succeeded_is_not_an_unexplained_failures_cause():
    # yarn classic's notice in an install step that went on; a later step exits without a rule's explanation
    log = _gha("##[group]Run yarn install --frozen-lockfile", "yarn install --frozen-lockfile", "##[endgroup]",
               "info There appears to be trouble with your network connection. Retrying...",
               "success Saved lockfile.",
               "##[group]Run ./scripts/check-version.sh", "./scripts/check-version.sh", "##[endgroup]",
               "Error: version mismatch between pyproject.toml (1.2.0) and tag (v1.2.1)",
               "##[error]Process completed with exit code 1.")
    found = classify(list(parse_log(log)), RULES)
    assert (found.category, found.root_cause.line) == ("unknown", 9)


def test_a_weak_retry_notice_in_the_failing_step_stays_the_cause():
    log = _gha("##[group]Run yarn install --frozen-lockfile", "yarn install --frozen-lockfile", "##[endgroup]",
               "info There appears to be trouble with your network connection. Retrying...",
               "##[error]Process completed with exit code 1.")
    found = classify(list(parse_log(log)), RULES)
    assert (found.category, found.root_cause.line) == ("network", 4)


# pip 24 and apt 2.6 run here 2026-12-06 (sweep s13e): a dead --extra-index-url / PPA each client went past, then the
# job's own failure, in a log whose steps are not known (Jenkins' `+ cmd` echo).
_PIP = ["+ pip install --extra-index-url https://download.pytorch.org/whl/cpu --retries 2 pytest",
        "WARNING: Retrying (Retry(total=1, connect=None, read=None, redirect=None, status=None)) after connection broken by "
        "'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f3c>: Failed to establish a new "
        "connection: [Errno -2] Name or service not known')': /whl/cpu/pytest/",
        "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by "
        "'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f3d>: Failed to establish a new "
        "connection: [Errno -2] Name or service not known')': /whl/cpu/pytest/",
        "Collecting pytest", "Successfully installed pytest-9.2.0"]
_APT = ["+ apt-get update", "Err:1 https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu jammy InRelease",
        "  Could not resolve 'ppa.launchpadcontent.net'",
        "W: Failed to fetch https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu/dists/jammy/InRelease  Could not resolve 'ppa.launchpadcontent.net'",
        "W: Some index files failed to download. They have been ignored, or old ones used instead."]
_GCC = ["+ gcc -c ring.c", "ring.c:8:13: error: expected ';' before '}' token", "ERROR: script returned exit code 1"]


def test_faults_a_client_says_it_went_past_are_not_the_cause():
    from tests.core.both_paths import classify_both
    for before in (_PIP, _APT, _APT + _PIP):
        found = classify_both("\n".join(before + _GCC) + "\n")
        assert found.category == "compile_error", before[0]
        assert found.root_cause.line == len(before) + 2
        assert not found.retryable


def test_a_dependency_failure_after_the_went_on_line_keeps_the_fault():
    from tests.core.both_paths import classify_both
    found = classify_both("\n".join(_APT + ["+ apt-get install -y python3.12",
                                             "E: Unable to locate package python3.12"]) + "\n")
    assert found.category == "network"


def test_without_the_went_on_line_the_fault_stays():
    from tests.core.both_paths import classify_both
    found = classify_both("\n".join(_APT[:3] + _GCC) + "\n")
    assert found.category == "network"


def test_many_faults_before_many_failures_are_read_in_linear_time():
    # each network fault read every cause after it for a failure its client went on to: 720 faults before 960 failures
    # took 16 times as long as 180 before 240
    import time

    from ci_triage.core.logs.matcher import find_matches, relevant_lines
    from ci_triage.core.logs.retry_notices import went_on_faults
    from ci_triage.core.logs.rules import builtin_rules

    rules = builtin_rules()
    faults = ["curl: (6) Could not resolve host: h{i}.example", "dial tcp: lookup h{i}.example: no such host",
              "ssh: connect to host h{i}.example port 22: Connection refused"]
    failures = ["FAILED tests/a.py::t{i} - assert 1", "src/m{i}.c:1:1: error: x undeclared", "--- FAIL: TestX{i} (0.00s)",
                "ModuleNotFoundError: No module named 'm{i}'"]

    def seconds(size):
        lines = [line.format(i=i) for i in range(size) for line in faults]
        lines += [line.format(i=i) for i in range(size) for line in failures]
        selected = relevant_lines("".join(f"{line}\n" for line in lines), rules)
        matches = find_matches(selected, rules)
        started = time.perf_counter()
        found = went_on_faults(selected, matches)
        return time.perf_counter() - started, found

    small, found = seconds(60)
    large, _ = seconds(240)
    assert found == []  # nothing says the clients went on
    assert large < 6 * small + 0.02  # four times the log: sixteen times the work before
