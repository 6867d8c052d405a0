"""Who is at fault decides retryable within a category: a kernel's device-side assert and a sanitizer's
report are the code's (shown, never rerun); a rank's crash ranks above the collective wreckage and a
launcher's summary; the ordering ORDER.md describes."""

from __future__ import annotations

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.rules import builtin_rules

RULES = builtin_rules()


def _classify(*lines: str):
    return classify(list(parse_log("".join(line + "\n" for line in lines))), RULES)


def test_a_device_side_assert_is_a_device_error_the_code_caused():
    result = _classify(
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [3,0,0] "
        "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.",
        "RuntimeError: CUDA error: device-side assert triggered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
        "##[error]Process completed with exit code 1.")
    assert (result.category, result.rule_id, result.root_cause.line) == ("device_error", "accelerator-kernel-assert", 1)
    assert result.retryable is False


def test_a_machine_fault_stays_retryable():
    result = _classify("RuntimeError: CUDA error: uncorrectable ECC error encountered")
    assert result.category == "device_error" and result.retryable is True


def test_a_sanitizer_report_beats_the_abort_it_ends_with_and_is_never_rerun():
    result = _classify(
        "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at pc 0x0000004f5e9b",
        "SUMMARY: AddressSanitizer: heap-use-after-free src/list.c:42 in list_pop",
        "==4242==ABORTING",
        "Aborted (core dumped)")
    assert (result.category, result.rule_id, result.root_cause.line) == ("crash", "sanitizer-report", 1)
    assert result.retryable is False


def test_an_elastic_agent_summary_of_a_segfault_is_a_crash():
    result = _classify(
        "E0101 00:00:00.000000 4242 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -11) "
        "local_rank: 0 (pid: 4243) of binary: /usr/bin/python",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:")
    assert result.category == "crash" and result.root_cause.line == 1


def test_a_watchdog_timeout_still_beats_the_abort_it_causes():
    result = _classify(
        "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran "
        "for 600020 milliseconds before timing out.",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "E0101 00:00:00.000000 4242 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -6) "
        "local_rank: 1 (pid: 4243) of binary: /usr/bin/python")
    assert result.category == "collective_timeout" and result.root_cause.line == 1


def test_a_ctest_verdict_yields_to_the_tests_own_report_printed_below_it():
    # output of ctest 3.25 --output-on-failure (sweep s10c): the verdict comes first, the test's output after it
    result = _classify(
        "    Start 1: parse",
        "1/1 Test #1: parse ............................Subprocess aborted***Exception:   0.00 sec",
        "reading fixture data/sample.bin (12 bytes)",
        "test_parse: /src/assert.c:3: parse_header: Assertion `n >= 16 && \"header too short\"' failed.",
        "", "0% tests passed, 1 tests failed out of 1",
        "The following tests FAILED:", "\t  1 - parse (Subprocess aborted)", "Errors while running CTest")
    assert (result.category, result.rule_id, result.root_cause.line) == ("crash", "process-crash", 4)
    # a test that printed no reason: the verdict names it
    alone = _classify(
        "2/2 Test #2: decode ...........................***Exception: SegFault  0.01 sec",
        "loading config from default.ini", "", "The following tests FAILED:", "\t  2 - decode (SEGFAULT)")
    assert (alone.category, alone.rule_id, alone.root_cause.line) == ("crash", "ctest-crash-verdict", 1)
