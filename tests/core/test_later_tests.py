"""A network error or a crash in a later failing test's report is not the first cause (core/logs/later_tests.py), and
vitest's error thrown outside any test is named by its own line (core/logs/vitest_errors.py).

The lines are cut from real runs made on this machine on 2026-12-06 (sweep s13b): go 1.19.8, cargo test 1.95, minitest
5.17 on ruby 3.1, ctest 3.25.1 with googletest 1.12, vitest 4.1.12 on node 20. Before the change the network line of a
later test's own assertion (a quoted `503 Service Unavailable`, `Connection refused`) and a later package's panic or a
later ctest test's segfault outranked the first failing test."""

import pytest

from tests.core.both_paths import classify_both

GO_LATER_PANIC = [
    "--- FAIL: TestTotal (0.00s)",
    "    cart_test.go:8: Total() = 8, want 11",
    "FAIL",
    "FAIL\texample.com/shop/cart\t0.015s",
    "--- FAIL: TestDialRefused (0.00s)",
    '    client_test.go:15: expected fallback to cache, got "upstream returned 502 Bad Gateway" (dial tcp 10.0.0.7:443: connect: connection refused)',
    "FAIL",
    "FAIL\texample.com/shop/client\t0.004s",
    "--- FAIL: TestRunNil (0.00s)",
    "panic: runtime error: invalid memory address or nil pointer dereference [recovered]",
    "\tpanic: runtime error: invalid memory address or nil pointer dereference",
    "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4f51fb]",
    "",
    "goroutine 18 [running]:",
    "example.com/shop/worker.TestRunNil(0xc000096680)",
    "\t/work/shop/worker/worker_test.go:7 +0x1b",
    "FAIL\texample.com/shop/worker\t0.005s",
    "FAIL",
    "##[error]Process completed with exit code 1.",
]
GO_FIRST_REAL_DNS = [
    "--- FAIL: TestFetchSchema (0.00s)",
    '    fetch_test.go:9: fetching schema: Get "https://raw.githubusercontent.com/example/schema/main/schema.json": dial tcp: lookup raw.githubusercontent.com on 10.255.255.53:53: no such host',
    "--- FAIL: TestTotal (0.00s)",
    "    cart_test.go:8: Total() = 8, want 11",
    "FAIL",
    "FAIL\texample.com/shop/fetch\t0.005s",
]
LIBTEST_LATER_QUOTE = [
    "running 6 tests",
    "test tests::parses_decimal ... FAILED",
    "test tests::rates_fall_back_to_cache ... FAILED",
    "",
    "failures:",
    "",
    "---- tests::parses_decimal stdout ----",
    "",
    "thread 'tests::parses_decimal' (26353) panicked at src/lib.rs:20:57:",
    'called `Result::unwrap()` on an `Err` value: "bad amount \\"12.50\\": invalid digit found in string"',
    "",
    "---- tests::rates_fall_back_to_cache stdout ----",
    "",
    "thread 'tests::rates_fall_back_to_cache' (26355) panicked at src/lib.rs:25:9:",
    'expected cached rates, got Err("error sending request for url (https://rates.example.org/latest): error trying to connect: tcp connect error: Connection refused (os error 111)")',
    "",
    "test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.08s",
]
MINITEST_LATER_ERROR = [
    "  1) Failure:",
    "InvoiceTest#test_total [test/invoice_test.rb:7]:",
    "Expected: 25",
    "  Actual: 15",
    "",
    "  2) Error:",
    "WebhookTest#test_posts_to_hub:",
    "SocketError: Failed to open TCP connection to hooks.slack.com:443 (getaddrinfo: Name or service not known)",
    "    /usr/lib/ruby/3.1.0/socket.rb:227:in `getaddrinfo'",
    "",
    "2 runs, 1 assertions, 1 failures, 1 errors, 0 skips",
]
MINITEST_FIRST_ERROR = MINITEST_LATER_ERROR[5:10] + ["1 runs, 0 assertions, 0 failures, 1 errors, 0 skips"]
CTEST_LATER_SEGFAULT = [
    "Test project /work/geo/build",
    "    Start 1: geo_test",
    "1/3 Test #1: geo_test .........................***Failed    0.00 sec",
    "    Start 2: crash_test",
    "2/3 Test #2: crash_test .......................***Exception: SegFault  0.00 sec",
    "    Start 3: ok_test",
    "3/3 Test #3: ok_test ..........................   Passed    0.00 sec",
    "",
    "33% tests passed, 2 tests failed out of 3",
    "",
    "The following tests FAILED:",
    "\t  1 - geo_test (Failed)",
    "\t  2 - crash_test (SEGFAULT)",
    "Errors while running CTest",
]


NODE_TEST_LATER_QUOTE = [
    "✖ builds the url (1.94181ms)",
    "  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
    "      at TestContext.<anonymous> (/work/js/nt3.test.js:3:39)",
    "",
    "✖ maps errors (0.284481ms)",
    "  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
    "      at TestContext.<anonymous> (/work/js/nt3.test.js:4:36)",
    "    generatedMessage: true,",
    "    code: 'ERR_ASSERTION',",
    "    error: 'read ECONNRESET while draining the socket',",
    "  }",
    "ℹ fail 2",
]
VITEST_LATER_QUOTE = [
    " FAIL  vt2/api.test.mjs > api client > builds the url",
    "AssertionError: expected 'v1/users' to be 'v2/users' // Object.is equality",
    "",
    " FAIL  vt2/api.test.mjs > api client > maps errors",
    "Error: getaddrinfo EAI_AGAIN registry.npmjs.org",
    "",
    "      Tests  2 failed (2)",
]


@pytest.mark.parametrize("lines, category, root", [
    (NODE_TEST_LATER_QUOTE, "test_failure", "✖ builds the url (1.94181ms)"),
    (VITEST_LATER_QUOTE, "test_failure", " FAIL  vt2/api.test.mjs > api client > builds the url"),
    (GO_LATER_PANIC, "test_failure", "--- FAIL: TestTotal (0.00s)"),
    (LIBTEST_LATER_QUOTE, "test_failure", "test tests::parses_decimal ... FAILED"),
    (MINITEST_LATER_ERROR, "test_failure", "InvoiceTest#test_total [test/invoice_test.rb:7]:"),
    (CTEST_LATER_SEGFAULT, "test_failure", "1/3 Test #1: geo_test .........................***Failed    0.00 sec"),
])
def test_a_later_tests_network_error_or_crash_yields_to_the_first_failure(lines, category, root):
    result = classify_both("".join(line + "\n" for line in lines))
    assert result.category == category and result.root_cause.text == root


@pytest.mark.parametrize("lines, category, root", [
    (GO_FIRST_REAL_DNS, "network", GO_FIRST_REAL_DNS[1]),
    (MINITEST_FIRST_ERROR, "network", MINITEST_LATER_ERROR[7]),
    (GO_LATER_PANIC[8:], "crash", GO_LATER_PANIC[9]),
    (CTEST_LATER_SEGFAULT[3:5], "crash", CTEST_LATER_SEGFAULT[4]),
])
def test_the_first_failing_tests_own_network_error_or_crash_stays_the_cause(lines, category, root):
    result = classify_both("".join(line + "\n" for line in lines))
    assert result.category == category and result.root_cause.text == root


@pytest.mark.parametrize("line", [
    '    Which is: "503 Service Unavailable"',
    '  Actual: "503 Service Unavailable"',
    "Expected /getaddrinfo/ to not match \"getaddrinfo: Temporary failure in name resolution\".",
    "    Expected 'connect ETIMEDOUT 140.82.112.3:443' to equal 'cached'.",
    "+   status: 'ECONNRESET'",
    "    client_test.go:8: Status(503) should be retried transparently, got error: upstream returned 503 Service Unavailable",
    "+'HTTP/1.1 503 Service Unavailable'",
    "    actual: 'read ECONNRESET',",
    "      4|   it('maps errors', () => { expect('getaddrinfo EAI_AGAIN registry.npm…",
    "     > 4 |     const err = { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 10.1.2.3:5432' };",
])
def test_a_tests_own_comparison_quoting_a_network_error_is_no_network_fault(line):
    result = classify_both("--- FAIL: TestStatus (0.00s)\n" + line + "\nFAIL\n")
    assert result.category == "test_failure"


VITEST_UNHANDLED = [
    " ✓ vt/unh.test.mjs (2 tests) 53ms",
    "⎯⎯⎯⎯⎯⎯ Unhandled Errors ⎯⎯⎯⎯⎯⎯",
    "",
    "Vitest caught 1 unhandled error during the test run.",
    "This might cause false positive tests. Resolve unhandled errors to make sure your tests are not affected.",
    "",
    "⎯⎯⎯⎯⎯ Uncaught Exception ⎯⎯⎯⎯⎯",
    "Error: flush queue closed before drain",
    " ❯ Timeout._onTimeout vt/unh.test.mjs:3:28",
    "      3|   setTimeout(() => { throw new Error('flush queue closed before drain'); }, 1);",
    "       |                            ^",
    " ❯ listOnTimeout node:internal/timers:581:17",
    "",
    'This error originated in "vt/unh.test.mjs" test file. It doesn\'t mean the error was thrown inside the file itself, but while it was running.',
    "⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯",
    "",
    " Test Files  1 passed (1)",
    "      Tests  2 passed (2)",
    "     Errors  1 error",
]


def test_vitests_unhandled_error_is_named_by_its_own_line_not_the_summary():
    result = classify_both("".join(line + "\n" for line in VITEST_UNHANDLED))
    assert result.category == "test_failure" and result.rule_id == "vitest-unhandled-error"
    assert result.root_cause.text == "Error: flush queue closed before drain"
    # without its banner (a log cut above it) the note itself is the root
    cut = classify_both("".join(line + "\n" for line in VITEST_UNHANDLED[7:]))
    assert cut.root_cause.text.startswith("This error originated in")


def test_bats_diagnostic_quoting_curls_own_error_is_the_network_fault():
    # bats 1.8.2 prints a failed test's output behind "# " (TAP diagnostics); a comment's "# " is no such line
    log = ("1..1\nnot ok 1 mirror is reachable\n# (in test file net.bats, line 4)\n#   `[ \"$status\" -eq 0 ]' failed\n"
           "# curl: (6) Could not resolve host: deb.nodesource.com\n")
    result = classify_both(log)
    assert result.category == "network" and result.root_cause.text == "# curl: (6) Could not resolve host: deb.nodesource.com"


@pytest.mark.parametrize("title", [
    "  ✕ reports a friendly message on ENOSPC (5 ms)",
    "  ● api › retries on ECONNRESET",
    "     × retries on ECONNRESET 5ms",
    "✖ retries on ECONNRESET (1.2ms)",
    "not ok 1 - handles ECONNRESET",
])
def test_a_test_title_carrying_a_familys_words_is_the_tests_failure(title):
    # jest 30.5, vitest 4.1, node 20's test runner and TAP name the failing test on these lines; the title reports nothing
    result = classify_both(title + "\n")
    assert result.category == "test_failure" and result.root_cause.text == title


def test_a_received_value_quoting_enospc_is_no_full_disk():
    # jest 30.5's report of a failing toBe (real output made here, sweep s13b)
    lines = ["  ● reports a friendly message on ENOSPC", "", "    expect(received).toBe(expected) // Object.is equality", "",
             '    Expected: "The disk is full. Free some space and retry."', '    Received: "ENOSPC: no space left on device, write"',
             "", "      at Object.toBe (jt3/fs.test.js:3:15)"]
    result = classify_both("".join(line + "\n" for line in lines))
    assert result.category == "test_failure" and result.root_cause.text == lines[0]


def test_a_spinners_cross_without_a_duration_is_still_the_network_error():
    result = classify_both("✖ Failed to download Chromium: read ECONNRESET\n")
    assert result.category == "network"


def _classify_seconds(text):
    import time

    from ci_triage.core.logs.classify import classify
    from ci_triage.core.logs.matcher import relevant_lines
    from ci_triage.core.logs.rules import builtin_rules

    rules = builtin_rules()
    started = time.perf_counter()
    found = classify(relevant_lines(text, rules), rules)
    return time.perf_counter() - started, found


def test_many_crash_lines_under_a_long_line_are_read_in_linear_time():
    # each crash match read the 400 lines above it on its own, the long line among them: 160 panics under one 800 kB
    # line took 12 times as long as 40 under one of 200 kB
    def log(size):
        lines = ["--- FAIL: TestA (0.00s)", " " * (5000 * size), *(["    a_test.go:8: got 1"] * 100)]
        lines += [f"panic: runtime error: invalid memory address or nil pointer dereference {i}" for i in range(size)]
        return "".join(f"{line}\n" for line in lines)

    _classify_seconds(log(1))  # the rules compiled
    small, found = _classify_seconds(log(40))
    large, _ = _classify_seconds(log(160))
    assert (found.category, found.root_cause.line) == ("crash", 103)
    assert large < 7 * small + 0.5  # four times the log: sixteen times the work before (the long line read four times as often)


# mix test --max-cases 1 on ExUnit 1.14 (sweep s13b, run here 2026-12-06): the second test really failed to resolve its
# host, the first failed its own assertion. ExUnit's `1) test x (Module)` header is itself a failed test's line, so it
# counts as the cause above the second block (review r13b's rule that a numbered block is a later test's only when a
# cause lies above it had missed it, and the job read as a network failure to rerun).
EXUNIT_SECOND_REAL_NXDOMAIN = [
    "  1) test a formats version (MultiNetTest)",
    "     test/multi_net_test.exs:3",
    "     Assertion with == failed",
    '     code:  assert "v" <> "1.2" == "v1.2.0"',
    '     left:  "v1.2"',
    '     right: "v1.2.0"',
    "     stacktrace:",
    "       test/multi_net_test.exs:4: (test)",
    "",
    "  2) test b fetches hex index (MultiNetTest)",
    "     test/multi_net_test.exs:6",
    "     ** (MatchError) no match of right hand side value: {:error, {:failed_connect, [{:to_address, "
    "{'repo.hex.pm', 443}}, {:inet, [:inet], :nxdomain}]}}",
    "     stacktrace:",
    "       test/multi_net_test.exs:8: (test)",
    "",
    "2 tests, 2 failures",
]


def test_exunits_first_failed_test_header_counts_as_the_cause_above_a_later_tests_real_dns_failure():
    result = classify_both("".join(line + "\n" for line in EXUNIT_SECOND_REAL_NXDOMAIN))
    assert (result.category, result.retryable) == ("test_failure", False)
    assert result.root_cause.text == EXUNIT_SECOND_REAL_NXDOMAIN[0]
