import pytest

from ci_triage.core.logs.classify import classify, focus_on_test
from ci_triage.core.logs.frames import repo_relative
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.rules import builtin_rules, check_examples, parse_rules
from ci_triage.errors import ConfigError

STAMP = "2024-01-01T00:00:00.0000000Z "


def _log(*lines: str) -> list:
    return list(parse_log("".join(STAMP + line + "\n" for line in lines)))


def test_builtin_rules_pass_their_own_examples():
    assert check_examples(builtin_rules()) == []


def test_port_clash_beats_the_louder_downstream_errors():
    lines = _log(
        "Traceback (most recent call last):",
        '  File "/home/ci/actions-runner/_work/proj/proj/src/app/engine.py", line 12, in start',
        '  File "/usr/lib/python3.10/site-packages/torch/distributed/rendezvous.py", line 198, in _create_c10d_store',
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 35191, useIpv6: false, code: -98, name: [::]:35191, message: address already in use",
        "FAILED tests/test_engine.py::test_start - RuntimeError: engine died",
        "##[error]Process completed with exit code 1.",
    )
    result = classify(lines, builtin_rules())
    assert result.category == "port_in_use"
    assert result.retryable is True
    assert result.root_cause.line == 4
    assert result.captures == {"port": "35191", "errno": "-98", "exit_code": "1"}
    assert [(f.path, f.package) for f in result.frames] == [
        ("src/app/engine.py", None), ("torch/distributed/rendezvous.py", "torch")]
    assert result.failed_tests == ("tests/test_engine.py::test_start",)
    assert result.fingerprint.startswith("v1:")


def test_unexplained_failure_is_unknown_with_the_first_error_line_as_root_cause():
    result = classify(_log("doing things", "##[error]Process completed with exit code 2."), builtin_rules())
    assert result.category == "unknown"
    assert result.retryable is False
    assert result.root_cause.line == 2
    assert result.captures == {"exit_code": "2"}


def test_same_failure_on_other_ports_has_the_same_fingerprint():
    def fp(port: str) -> str:
        line = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
                f"address. port: {port}, useIpv6: false, code: -98, name: [::]:{port}, message: address already in use")
        return classify(_log(line), builtin_rules()).fingerprint

    assert fp("35191") == fp("38527")


def test_focus_on_test_moves_the_root_cause_to_that_failure():
    lines = _log("FAILED tests/a.py::test_old - E", "FAILED tests/b.py::test_new - AssertionError")
    result = focus_on_test(classify(lines, builtin_rules()), "tests/b.py::test_new")
    assert result.root_cause.line == 2


@pytest.mark.parametrize("path, expected", [
    ("/home/runner/work/repo/repo/pkg/mod.py", ("pkg/mod.py", None)),
    ("/__w/repo/repo/pkg/mod.py", ("pkg/mod.py", None)),
    ("/opt/py/lib/python3.11/site-packages/vllm/engine/llm_engine.py", ("vllm/engine/llm_engine.py", "vllm")),
    ("/somewhere/else.py", ("/somewhere/else.py", None)),
])
def test_repo_relative_paths(path, expected):
    assert repo_relative(path) == expected


@pytest.mark.parametrize("text, message", [
    ("[[rule]]\nid='x'\ncategory='nope'\npatterns=['a']\nexamples=['a']\nnear_misses=['b']", "unknown category"),
    ("[[rule]]\nid='x'\ncategory='network'\npatterns=['(']\nexamples=['a']\nnear_misses=['b']", "does not compile"),
    ("[[rule]]\nid='x'\ncategory='test_failure'\nretryable=true\npatterns=['a']\nexamples=['a']\nnear_misses=['b']",
     "never retryable"),
    ("[[rule]]\nid='x'\ncategory='network'\npatterns=['a']", "example"),
    ("not toml [", "not valid TOML"),
])
def test_broken_rule_files_name_the_rule_and_the_problem(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_rules(text, origin="my-rules.toml")


def test_rule_examples_that_do_not_match_are_reported():
    rules = parse_rules("[[rule]]\nid='x'\ncategory='network'\npatterns=['reset']\n"
                        "examples=['Connection refused']\nnear_misses=['reset']")
    problems = check_examples(rules)
    assert len(problems) == 2 and all("'x'" in p for p in problems)


def test_repository_rules_come_first_and_replace_builtins_of_the_same_id():
    from ci_triage.core.logs.rules import merge_rule_sets

    extra = parse_rules("[[rule]]\nid='our-flaky-fixture'\ncategory='network'\nretryable=true\n"
                        "patterns=['fixture server did not start']\nexamples=['fixture server did not start']\n"
                        "near_misses=['fixture server started']\n"
                        "[[rule]]\nid='pytest-failed-test'\ncategory='test_failure'\npatterns=['^FAIL: (?P<test>.+)']\n"
                        "examples=['FAIL: a']\nnear_misses=['PASS: a']\n")
    merged = merge_rule_sets(builtin_rules(), extra)
    assert [r.id for r in merged.rules[:2]] == ["our-flaky-fixture", "pytest-failed-test"]
    assert [r.priority for r in merged.rules] == list(range(len(merged.rules)))
    assert sum(r.id == "pytest-failed-test" for r in merged.rules) == 1
    assert classify(_log("fixture server did not start"), merged).category == "network"


# Families: the same failure as each ecosystem words it classifies alike (issue 10).
@pytest.mark.parametrize("line, category", [
    ("listen tcp 0.0.0.0:8080: bind: address already in use", "port_in_use"),
    ("thread 'main' panicked: Address already in use (os error 98)", "port_in_use"),
    ("Caused by: java.net.BindException: Address already in use", "port_in_use"),
    ("[PID: 2267203] 2025-11-21-11:38:29.575.404 Bind_Failed(EJ0003): Failed to bind the IP port. Reason: The IP "
     "address and port have been bound already.", "port_in_use"),
    ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.50 GiB.", "accelerator_oom"),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1024 bytes.",
     "accelerator_oom"),
    ("[rank0]: EZ9999: [PID: 77] 2025-09-24-20:59:48.119.066 Inner Error! The error from device(chipId:0)", "device_error"),
    ("EI0001: [PID: 1] 2025-06-01-10:00:00.000.000 Environment variable HCCL_CONNECT_TIMEOUT is invalid.", "unknown"),
    ("ERROR: Job failed: execution took longer than 1h0m0s seconds", "job_timeout"),
    ("Exited with status -1 (agent lost)", "runner_lost"),
    ("c++: fatal error: Killed signal terminated program cc1plus", "host_oom"),
    ("ERROR: No matching distribution found for torch==9.9", "dependency"),
    ("error[E0308]: mismatched types", "compile_error"),
    ("src/app/main.py:1:8: F401 [*] `os` imported but unused", "lint_failure"),
    ("--- FAIL: TestParse (0.00s)", "test_failure"),
    ("[  FAILED  ] ParserTest.HandlesEmptyInput (0 ms)", "test_failure"),
    ("FAILED tests/test_hub.py::test_load - huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many "
     "Requests for url: https://huggingface.co/api/models/gpt2", "network"),
])
def test_each_family_covers_its_ecosystem(line, category):
    assert classify(_log(line, "##[error]Process completed with exit code 1."), builtin_rules()).category == category


def test_a_dependency_failure_is_network_when_the_index_was_unreachable():
    unreachable = classify(_log(
        "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection "
        "broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to "
        "establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/torch/",
        "ERROR: Could not find a version that satisfies the requirement torch (from versions: none)",
        "ERROR: No matching distribution found for torch"), builtin_rules())
    assert (unreachable.category, unreachable.retryable) == ("network", True)
    pinned = classify(_log("ERROR: Could not find a version that satisfies the requirement torch==9.9 (from versions: "
                           "2.4.0)", "ERROR: No matching distribution found for torch==9.9"), builtin_rules())
    assert (pinned.category, pinned.retryable, pinned.root_cause.line) == ("dependency", False, 1)
