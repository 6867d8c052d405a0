"""What a test printed while it ran is not the runner's verdict (core/logs/passed_tests.py): jest's console blocks, the
panic of a libtest test whose result is `ok` (`cargo test -- --nocapture`). Both fail before the change: the network
line a passing test logged, and the expected panic of a `#[should_panic]` test, outranked the failing test.

The lines are cut from real runs made here on 2026-12-06 (sweep s10d): jest 29.7 on node 20, cargo test 1.95; the
service's host name is not a loopback address."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules
from tests.core.both_paths import classify_both

RULES = builtin_rules()

JEST = [
    "PASS src/api.test.js",
    "  ● Console",
    "",
    "    console.error",
    "      request to https://api.acme.internal/users/1 failed, reason: socket hang up (ECONNRESET); retrying",
    "",
    "       2 | describe('api', () => {",
    "       3 |   test('retries on ECONNRESET', async () => {",
    "    >  4 |     console.error('request to https://api.acme.internal/users/1 failed, reason: socket hang up (ECONNRESET); retrying');",
    "         |             ^",
    "",
    "      at Object.error (src/api.test.js:4:13)",
    "",
    "FAIL src/cart.test.js",
    "  ● cart total includes tax",
    "",
    "    expect(received).toBe(expected) // Object.is equality",
    "",
    "    Expected: 24",
    "    Received: 22",
    "",
    "      at Object.toBe (src/cart.test.js:2:89)",
    "",
    "Test Suites: 1 failed, 1 passed, 2 total",
    "Tests:       1 failed, 22 passed, 23 total",
]

CARGO = [
    "running 4 tests",
    "test tests::rejects_zero - should panic ... ",
    "thread 'tests::rejects_zero' (1002) panicked at src/lib.rs:13:101:",
    "attempt to divide by zero",
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    "ok",
    "test tests::retries_connection ... ",
    "thread 'tests::retries_connection' (1003) panicked at src/lib.rs:14:77:",
    "connection refused (os error 111)",
    "ok",
    "test tests::slow_roundtrip ... ignored",
    "test tests::weighted_mean ... ",
    "thread 'tests::weighted_mean' (1025) panicked at src/lib.rs:11:34:",
    "assertion `left == right` failed",
    "  left: 1.3333333333333333",
    " right: 2.0",
    "FAILED",
    "",
    "failures:",
    "",
    "failures:",
    "    tests::weighted_mean",
    "",
    "test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.09s",
    "",
    "error: test failed, to rerun pass `--lib`",
]


def _both(lines):
    return classify_both("\n".join(lines) + "\n")


def test_a_passing_suites_console_error_is_not_the_failure():
    found = _both(JEST)
    assert found.category == "test_failure"
    assert found.root_cause.text == "  ● cart total includes tax"
    assert not found.retryable


def test_behind_buildkits_step_prefix_too():
    found = _both([f"#12 {3 + i / 100:.3f} {line}" if line else f"#12 {3 + i / 100:.3f}" for i, line in enumerate(JEST)])
    assert found.category == "test_failure"
    assert found.root_cause.text.endswith("● cart total includes tax")


def test_a_console_error_of_the_failing_test_is_not_its_cause_either():
    lines = ["FAIL src/api.test.js"] + JEST[3:12] + JEST[14:]
    found = _both(lines)
    assert (found.category, found.root_cause.text) == ("test_failure", "  ● cart total includes tax")


def test_a_network_error_a_test_throws_stays_a_cause():
    found = _both(["FAIL src/api.test.js", "  ● api › fetches the user", "",
                   "    FetchError: request to https://api.acme.internal/users/1 failed, reason: socket hang up",
                   "", "      at ClientRequest.<anonymous> (node_modules/node-fetch/lib/index.js:1505:11)"])
    assert found.category in ("network", "test_failure")
    assert found.root_cause.line in (2, 4)


def test_the_expected_panic_of_a_passing_libtest_test_is_not_the_failure():
    found = _both(CARGO)
    assert found.category == "test_failure"
    assert found.root_cause.text == "thread 'tests::weighted_mean' (1025) panicked at src/lib.rs:11:34:"


def test_a_panic_whose_test_failed_stays_the_cause():
    found = _both(CARGO[:2] + CARGO[2:5] + ["FAILED"] + CARGO[17:])
    assert found.root_cause.text == "thread 'tests::rejects_zero' (1002) panicked at src/lib.rs:13:101:"


def test_a_machine_fault_inside_a_console_block_stays_a_cause():
    lines = JEST[:5] + ["      Killed: out of memory, see dmesg", "      ENOSPC: no space left on device, write"] + JEST[5:]
    found = _both(lines)
    assert found.category == "disk_full"


# A tolerated fault in another docker build step (core/logs/buildkit_steps.py) or an earlier GitLab script command
# (core/logs/gitlab_commands.py): curl 7.88's DNS failure, run here, on an optional download behind `|| echo ...`.
CURL = ["curl: (6) Could not resolve host: downloads.acme-artifacts.example",
        "optional font bundle not downloaded, continuing"]
PYTEST_FAIL = ["tests/test_config.py::test_lookup_timeout FAILED                         [ 99%]",
               "E       KeyError: 'timeout'",
               "FAILED tests/test_config.py::test_lookup_timeout - KeyError: 'timeout'",
               "= 1 failed, 104 passed in 0.22s ="]


def test_another_docker_build_steps_network_fault_is_not_the_failed_steps_cause():
    found = _both(["#7 [app 3/6] RUN curl -fsSL https://downloads.acme-artifacts.example/fonts.tar.gz || echo optional",
                   *(f"#7 0.{i + 2}00 {t}" for i, t in enumerate(CURL)), "#7 DONE 2.6s", "",
                   "#10 [app 6/6] RUN python -m pytest -v", *(f"#10 1.{i}00 {t}" for i, t in enumerate(PYTEST_FAIL)),
                   '#10 ERROR: process "/bin/sh -c python -m pytest -v" did not complete successfully: exit code: 1'])
    assert (found.category, found.root_cause.line) == ("test_failure", 7)


def test_a_network_fault_in_the_failed_build_step_stays_the_cause():
    found = _both(["#7 [app 3/6] RUN pip install -r requirements.txt",
                   "#7 0.500 WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after "
                   "connection broken by 'NewConnectionError('<HTTPSConnection object at 0x7f>: Failed to establish a new "
                   "connection: [Errno -2] Name or service not known')': /simple/flask/",
                   "#7 0.900 ERROR: Could not find a version that satisfies the requirement flask (from versions: none)",
                   '#7 ERROR: process "/bin/sh -c pip install -r requirements.txt" did not complete successfully: exit code: 1'])
    assert found.category == "network"


def test_a_gitlab_command_that_went_on_did_not_cause_the_later_failure():
    log = ["Running with gitlab-runner 17.6.0 (374d34fd)",
           "$ curl -fsSL https://downloads.acme-artifacts.example/fonts.tar.gz -o f.tgz || echo \"optional\"", *CURL,
           "$ python -m pytest -v", *PYTEST_FAIL, "ERROR: Job failed: exit code 1"]
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("test_failure", 6)
    # without the runner's closing line (Travis CI runs every command whatever the last one did) the fault stays
    assert _both(log[:-1]).category == "network"


def test_a_gitlab_after_script_failure_does_not_set_aside_the_fault_the_script_stopped_at():
    # gitlab-runner runs after_script whatever the script did: its echo does not show the fault's command went on, and
    # what it prints (a report script without the packages the failed download would have brought) is not the cause
    log = ["Running with gitlab-runner 17.6.0 (374d34fd)",
           "$ curl -fsSL https://downloads.acme-artifacts.example/install.sh -o install.sh", CURL[0],
           "section_end:1733480000:step_script", "section_start:1733480000:after_script", "Running after script...",
           "$ python scripts/report_status.py", "Traceback (most recent call last):",
           '  File "/builds/acme/app/scripts/report_status.py", line 1, in <module>', "    import requests",
           "ModuleNotFoundError: No module named 'requests'", "ERROR: Job failed: exit code 6"]
    found = _both(log)
    assert (found.category, found.root_cause.line) == ("network", 3)


def test_many_gitlab_commands_faults_are_read_in_linear_time():
    # each fault read the lines up to the failure on its own: 2,400 tolerated DNS failures took 20 s
    import time

    log = ["Running with gitlab-runner 17.6.0 (374d34fd)"]
    for i in range(2400):
        log += [f"$ curl -fsSL https://h{i}.example/x || true", f"curl: (6) Could not resolve host: h{i}.example"]
    log += ["$ python -m pytest -v", *PYTEST_FAIL, "ERROR: Job failed: exit code 1"]
    text = "".join(f"{line}\n" for line in log)
    started = time.perf_counter()
    found = classify(relevant_lines(text, RULES), RULES)
    assert time.perf_counter() - started < 5
    assert (found.category, found.root_cause.line) == ("test_failure", 4803)


# pytest 9.2.0 run here 2026-12-06 (sweep s13e): `pytest -rA` of a suite whose passing tests print scary words, one
# failing test. The PASSES section and the verdicts of tests that did not fail are not the failure.
PYTEST_RA = [
    "tests/test_noise.py::test_errno_names[28-ENOSPC] PASSED                  [ 84%]",
    "tests/test_noise.py::test_download_from_mirror SKIPPED (flaky: ECONN...) [ 57%]",
    "tests/test_parse.py::test_parse_quoted FAILED                            [100%]",
    "",
    "=================================== FAILURES ===================================",
    "______________________________ test_parse_quoted _______________________________",
    "tests/test_parse.py:14: AssertionError",
    "==================================== PASSES ====================================",
    "_____________________ test_no_space_left_on_device_message _____________________",
    "----------------------------- Captured stdout call -----------------------------",
    "OSError: [Errno 28] No space left on device (expected in this test)",
    "_______________ test_bind_falls_back_when_address_already_in_use _______________",
    "----------------------------- Captured stdout call -----------------------------",
    "port 46493: [Errno 98] Address already in use; falling back to an ephemeral port",
    "=========================== short test summary info ============================",
    "PASSED tests/test_noise.py::test_errno_names[104-ECONNRESET]",
    "SKIPPED [1] tests/test_noise.py:48: flaky: ECONNRESET from upstream mirror (#412)",
    "XFAIL tests/test_noise.py::test_libfoo_segfault_known - known issue: Segmentation fault in libfoo < 2.1",
    "FAILED tests/test_parse.py::test_parse_quoted - assert {'a': '\"x y\"'} == {'a'...",
    "======== 1 failed, 15 passed, 2 skipped, 1 xfailed, 1 warning in 0.05s =========",
]


def test_pytest_passes_section_and_passing_verdicts_are_not_the_failure():
    found = _both(PYTEST_RA)
    assert found.category == "test_failure"
    assert not found.retryable
    assert found.root_cause.text.startswith("tests/test_parse.py::test_parse_quoted FAILED")


def test_a_fault_outside_the_passes_section_stays_a_cause():
    # the same line printed by the failing test (in FAILURES, not PASSES) is the cause
    lines = PYTEST_RA[:6] + ["OSError: [Errno 28] No space left on device"] + PYTEST_RA[6:]
    found = _both(lines)
    assert (found.category, found.root_cause.line) == ("disk_full", 7)


def test_a_runner_notice_inside_the_passes_section_stays_a_cause():
    lines = PYTEST_RA[:10] + ["##[error]The runner has received a shutdown signal."] + PYTEST_RA[10:]
    assert _both(lines).category == "runner_lost"


def test_a_long_line_is_read_against_pytests_verdicts_in_linear_time():
    # the verdict pattern tried each `::` of a long first word with the rest of the line, its `\s*` twice over trailing
    # spaces and its `\(.*\)` after each verdict word: a network line after 10,000 colons took 0.39 s, four times as
    # long as after 5,000
    import time

    def seconds(size):
        started = time.perf_counter()
        for text in (":" * size + " curl: (6) Could not resolve host: x.example",
                     "a::b PASSED" + " " * size + "curl: (6) Could not resolve host: x.example",
                     "a::b" + " PASSED (" * (size // 10) + " curl: (6) Could not resolve host: x.example"):
            found = classify(relevant_lines(text + "\n", RULES), RULES)
            assert found.category == "network"
        return time.perf_counter() - started

    seconds(1)  # the rules compiled
    small = seconds(10000)
    large = seconds(40000)
    assert large < 8 * small + 0.05  # four times the lines: sixteen times the work before
