"""Failures of ML jobs that another failure's lines outrank: pip's installed-set notice before the job's own unrelated
failure (core/logs/pip_notice.py), and the SIGABRT of torch's collective watchdog after NCCL's own report
(core/logs/watchdog_takedown.py).

pip's and pytest's lines are cut from real runs made here on 2026-12-06 (sweep s13c: pip 23.2.1, pytest 9.2, CPython
3.11.7); the NCCL lines are written in the formats of NVIDIA/nccl's net_ib WARN and torch's ProcessGroupNCCL (no GPU
here), with torchrun's summary from a real torch 2.13 run whose worker aborted."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.rules import builtin_rules

RULES = builtin_rules()
NOTICE = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. "
          "This behaviour is the source of the following dependency conflicts.")


def _classify(*lines: str):
    return classify(list(parse_log("\n".join(lines) + "\n")), RULES)


def _install(*conflicts: str) -> tuple[str, ...]:
    return ("$ pip install 'idna==2.0' && python -m pytest -q test_api.py", "Collecting idna==2.0",
            "Installing collected packages: idna", NOTICE, *conflicts, "Successfully installed idna-2.0")


def test_a_test_that_fails_on_its_own_after_pips_notice_is_the_cause():
    found = _classify(
        *_install("requests 2.34.2 requires idna<4,>=2.5, but you have idna 2.0 which is incompatible."),
        ".F                                                                       [100%]",
        "=================================== FAILURES ===================================",
        "_______________________________ test_user_agent ________________________________",
        '>       assert ua.startswith("python-requests/3")',
        "E       AssertionError: assert False",
        "=========================== short test summary info ============================",
        "FAILED test_api.py::test_user_agent - AssertionError: assert False",
        "1 failed, 1 passed in 0.11s")
    assert (found.category, found.root_cause.text) == (
        "test_failure", "FAILED test_api.py::test_user_agent - AssertionError: assert False")
    assert not found.retryable


def test_a_missing_module_after_the_notice_is_the_cause():
    found = _classify(
        *_install("requests 2.34.2 requires urllib3<3,>=1.26, but you have urllib3 1.24.3 which is incompatible."),
        "Traceback (most recent call last):", '  File "<string>", line 1, in <module>',
        "ModuleNotFoundError: No module named 'yaml'")
    assert (found.category, found.root_cause.text) == ("import_error", "ModuleNotFoundError: No module named 'yaml'")


def test_a_failure_through_the_package_pip_left_at_the_wrong_version_keeps_the_conflict():
    conflict = "requests 2.31.0 requires urllib3<3,>=1.21.1, but you have urllib3 1.20 which is incompatible."
    found = _classify(
        *_install(conflict), "Traceback (most recent call last):",
        '  File "/tmp/venv/lib/python3.11/site-packages/urllib3/util/selectors.py", line 11, in <module>',
        "    from collections import namedtuple, Mapping",
        "ImportError: cannot import name 'Mapping' from 'collections' (/usr/lib/python3.11/collections/__init__.py)")
    assert (found.category, found.root_cause.text) == ("dependency", conflict)


def test_the_notice_alone_stays_the_cause():
    conflict = "requests 2.34.2 requires idna<4,>=2.5, but you have idna 2.0 which is incompatible."
    found = _classify(*_install(conflict), "ERROR: Job failed: exit code 1")
    assert found.category == "dependency"


IB_WARN = ("node-2:5776:5902 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.2.0.5<33092> "
           "with error 12, opcode 0, len 0, vendor err 129 (Recv)")
TAKEDOWN = (
    "[rank0]:[E1206 18:02:22.001482223 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group "
    "watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL "
    "version 2.20.5",
    "terminate called after throwing an instance of 'c10::DistBackendError'",
    "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with exception: NCCL "
    "error: remote process exited or there was a network error, NCCL version 2.20.5",
)
TORCHRUN_ABORT = (
    "E1206 19:36:48.152000 978 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -6) "
    "local_rank: 0 (pid: 998) of binary: /usr/bin/python3",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "  exitcode  : -6 (pid: 998)  (SIGABRT)",
    "  traceback : Signal 6 (SIGABRT) received by PID 998",
)


def test_ncclS_infiniband_report_wins_over_the_watchdogs_sigabrt_that_torchrun_reports():
    found = _classify("NCCL version 2.20.5+cuda12.4", IB_WARN, *TAKEDOWN, *TORCHRUN_ABORT)
    assert (found.category, found.rule_id, found.root_cause.text) == (
        "collective_timeout", "collective-peer-lost", IB_WARN)


def test_an_abort_without_the_watchdogs_takedown_stays_a_crash():
    found = _classify("[trainer] rank 0 starting epoch 0", IB_WARN, *TORCHRUN_ABORT)
    assert found.category == "crash"


# The lines below are cut from real runs made here on 2026-12-06 (sweep s13c): grpcio 1.85.4 and OpenJDK 17.0.15
# against names that do not resolve, and a torch 2.13 DataLoader whose worker segfaulted (core/logs/exception_heads.py,
# core/logs/local_ipc.py).
def test_grpcs_status_line_is_the_root_of_its_unavailable_report():
    found = _classify(
        "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:",
        "\tstatus = StatusCode.UNAVAILABLE",
        '\tdetails = "errors resolving inference.ml-platform.github.com:443: [field:hostname lookup error:address lookup '
        'failed for inference.ml-platform.github.com:443: Domain name not found]"',
        ">")
    assert (found.category, found.root_cause.line) == ("network", 2)


def test_a_local_servers_refusal_under_grpcs_status_is_still_not_the_network():
    found = _classify(
        "E   grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:",
        "E   \tstatus = StatusCode.UNAVAILABLE",
        'E   \tdetails = "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:50051: Failed to '
        'connect to remote host: Connection refused"')
    assert found.category != "network"


JAVA_TRACE = (
    "fetching model card metadata",
    'Exception in thread "main" java.net.ConnectException',
    "\tat java.net.http/jdk.internal.net.http.HttpClientImpl.send(HttpClientImpl.java:574)",
    "\tat ModelFetch.main(ModelFetch.java:8)",
    "Caused by: java.net.ConnectException",
    "\tat java.net.http/jdk.internal.net.http.common.Utils.toConnectException(Utils.java:1083)",
    "\t... 2 more",
    "Caused by: java.nio.channels.UnresolvedAddressException",
    "\tat java.base/sun.nio.ch.Net.checkAddress(Net.java:149)",
    "\t... 25 more",
)


def test_javas_bare_connect_exception_heads_the_unresolved_address_it_was_caused_by():
    found = _classify(*JAVA_TRACE)
    assert (found.category, found.root_cause.line) == ("network", 2)


def test_a_frameworks_wrapper_over_the_cause_leaves_the_cause_the_root():
    found = _classify("Exception in thread \"main\" org.acme.FetchFailed: model card", *JAVA_TRACE[2:])
    assert (found.category, found.root_cause.text) == ("network", "Caused by: java.nio.channels.UnresolvedAddressException")


def test_a_dataloader_workers_segfault_is_the_cause_not_the_reset_of_its_pipe():
    found = _classify(
        "batch 5 (4, 3, 8, 8)",
        "ERROR: Unexpected segmentation fault encountered in worker.",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/multiprocessing/connection.py", line 395, in _recv',
        "    chunk = read(handle, remaining)",
        "            ^^^^^^^^^^^^^^^^^^^^^^^",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "RuntimeError: DataLoader worker (pid 3370) is killed by signal: Segmentation fault. ")
    assert (found.category, found.root_cause.line) == ("crash", 2)


def test_a_reset_in_a_network_clients_frame_stays_the_network():
    found = _classify(
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/ssl.py", line 1134, in read',
        "    return self._sslobj.read(len, buffer)",
        "ConnectionResetError: [Errno 104] Connection reset by peer")
    assert found.category == "network"


def test_uvs_error_line_heads_the_cause_chain_a_network_rule_matches():
    found = _classify(
        "$ uv pip install https://github.com/Dao-AILab/flash-attention/releases/download/v2.7.4.post1/flash_attn-2.7.4.post1-cp311-cp311-linux_x86_64.whl",
        "Using Python 3.11.7 environment at: /tmp/venv",
        "error: Failed to download `flash-attn @ https://github.com/Dao-AILab/flash-attention/releases/download/v2.7.4.post1/flash_attn-2.7.4.post1-cp311-cp311-linux_x86_64.whl`",
        "  cause: Request failed after 3 retries in 7.4s",
        "  cause: Failed to fetch: https://github.com/Dao-AILab/flash-attention/releases/download/v2.7.4.post1/flash_attn-2.7.4.post1-cp311-cp311-linux_x86_64.whl",
        "  cause: error sending request for url (https://github.com/Dao-AILab/flash-attention/releases/download/v2.7.4.post1/flash_attn-2.7.4.post1-cp311-cp311-linux_x86_64.whl)",
        "  cause: client error (Connect)",
        "  cause: dns error",
        "  cause: failed to lookup address information: Name or service not known")
    assert (found.category, found.root_cause.line) == ("network", 3)


# Lines of real runs made here on 2026-12-06 (sweep s13c: huggingface_hub 2.4, transformers 5.25 under pytest 9.2),
# timestamps cut: the Hub switched off with an empty cache, and the Hub out of reach with it switched on.
OFFLINE_MISS = ("E   huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and "
                "outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set "
                "'local_files_only' to False.")
TRANSFORMERS_WRAPPER = ("E   OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't "
                        "find them in the cached files.")


def test_a_cache_miss_with_the_hub_switched_off_is_no_network_failure_and_no_rerun():
    # Nothing went over the network: a change naming a model the runner's cache lacks fails so on every rerun.
    found = _classify("    raise LocalEntryNotFoundError(", OFFLINE_MISS, "    raise OSError(", TRANSFORMERS_WRAPPER,
                      "FAILED tests/test_tokenizer.py::test_encode - OSError: We couldn't connect to "
                      "'https://huggingface.co' to load the files, and couldn't find them in the cached files.")
    assert (found.category, found.root_cause.text, found.retryable) == ("dependency", OFFLINE_MISS, False)


def test_the_hub_out_of_reach_with_the_hub_switched_on_stays_a_network_failure():
    found = _classify("httpx2.ConnectError: [Errno -2] Name or service not known",
                      "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the "
                      "file on the Hub and we cannot find the requested files in the local cache. Please check your "
                      "connection and try again or make sure your Internet connection is on.",
                      TRANSFORMERS_WRAPPER.removeprefix("E   "))
    assert (found.category, found.retryable) == ("network", True)


def test_many_aborts_under_a_long_line_are_read_in_linear_time():
    # each abort searched the 150 lines above it for torch's watchdog on its own, the long line among them: 120 aborts
    # under one 3.6 MB line took 16 times as long as 30 under 0.9 MB
    import time

    from ci_triage.core.logs.matcher import find_matches, relevant_lines
    from ci_triage.core.logs.watchdog_takedown import takedown_aborts

    def seconds(size):
        lines = ["terminate called after throwing an instance of 'c10::DistBackendError'", " " * (30000 * size)]
        lines += [f"line {i}: {1000 + i} Aborted (core dumped) ./run{i}" for i in range(size)]
        lines += ["curl: (6) Could not resolve host: x.example"]
        selected = relevant_lines("".join(f"{line}\n" for line in lines), RULES)
        matches = find_matches(selected, RULES)
        started = time.perf_counter()
        found = takedown_aborts(selected, matches)
        return time.perf_counter() - started, found

    small, found = seconds(30)
    large, _ = seconds(120)
    assert len(found) == 30
    assert large < 8 * small + 0.05  # four times the log: sixteen times the work before (the long line read four times as often)


def test_a_network_line_after_a_long_run_of_spaces_is_read_in_linear_time():
    # grpc's `details =` pattern split the spaces after pytest's `E` between its `E\s+` and its `\s*` every way: a line of
    # 10,000 spaces took 0.09 s, three times as long as 5,000
    import time

    from ci_triage.core.logs.matcher import relevant_lines

    def seconds(size):
        text = "E" + " " * size + "curl: (6) Could not resolve host: x.example\n"
        started = time.perf_counter()
        found = classify(relevant_lines(text, RULES), RULES)
        return time.perf_counter() - started, found

    seconds(1)  # the rules compiled
    small, found = seconds(20000)
    large, _ = seconds(80000)
    assert found.category == "network"
    assert large < 8 * small + 0.05  # four times the line: sixteen times the work before
