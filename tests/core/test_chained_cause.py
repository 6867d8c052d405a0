"""A network wrapper ending a chain of Python tracebacks: the socket error that began the chain is the root cause."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules

STAMP = "2026-12-06T10:20:00.0000000Z "
SITE = "/opt/hostedtoolcache/Python/3.11.7/x64/lib/python3.11/site-packages"
# output of requests 2.34.2 / urllib3 2.8.0 (CPython 3.11.7) refused by a stub server, run 2026-12-06 (sweep s10f; the
# stub's loopback address rewritten to a remote name, frames trimmed)
CHAIN = [
    "##[group]Run python scripts/publish_docs.py",
    "python scripts/publish_docs.py",
    "##[endgroup]",
    "Uploading docs bundle to https://docs-upload.acme.dev/v1/bundle",
    "Traceback (most recent call last):",
    f'  File "{SITE}/urllib3/util/connection.py", line 73, in create_connection',
    "    sock.connect(sa)",
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    f'  File "{SITE}/urllib3/connection.py", line 254, in _new_conn',
    "    raise NewConnectionError(",
    "urllib3.exceptions.NewConnectionError: HTTPConnection(host='docs-upload.acme.dev', port=443): Failed to establish"
    " a new connection: [Errno 111] Connection refused",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    f'  File "{SITE}/urllib3/util/retry.py", line 555, in increment',
    "    raise MaxRetryError(_pool, url, reason) from reason  # type: ignore[arg-type]",
    "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "urllib3.exceptions.MaxRetryError: HTTPConnectionPool(host='docs-upload.acme.dev', port=443): Max retries exceeded"
    " with url: /v1/bundle (Caused by NewConnectionError(\"HTTPConnection(host='docs-upload.acme.dev', port=443): Failed"
    " to establish a new connection: [Errno 111] Connection refused\"))",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/home/runner/work/app/app/scripts/publish_docs.py", line 9, in <module>',
    "    resp = requests.put(url, data=b\"x\" * 64, timeout=5)",
    "requests.exceptions.ConnectionError: HTTPConnectionPool(host='docs-upload.acme.dev', port=443): Max retries"
    " exceeded with url: /v1/bundle (Caused by NewConnectionError(\"HTTPConnection(host='docs-upload.acme.dev',"
    " port=443): Failed to establish a new connection: [Errno 111] Connection refused\"))",
    "##[error]Process completed with exit code 1.",
]


def _raw(lines: list[str]) -> str:
    return "".join(STAMP + line + "\n" for line in lines)


def test_the_socket_error_that_began_the_chain_is_the_root_cause():
    rules = builtin_rules()
    for result in (classify(list(parse_log(_raw(CHAIN))), rules),
                   classify(relevant_lines(_raw(CHAIN).encode(), rules), rules)):
        assert result.category == "network"
        assert result.root_cause.line == 8
        assert result.root_cause.text == "ConnectionRefusedError: [Errno 111] Connection refused"


def test_an_unrelated_error_above_the_chain_stops_the_walk():
    # a KeyError the script handled before its request failed is not the request's cause
    lines = CHAIN[:7] + ["KeyError: 'DOCS_TOKEN'"] + CHAIN[8:]
    result = classify(list(parse_log(_raw(lines))), builtin_rules())
    assert result.category == "network"
    assert result.root_cause.text.startswith("urllib3.exceptions.NewConnectionError: ")


def test_a_wrapper_printed_alone_stays_the_root_cause():
    lines = CHAIN[:4] + CHAIN[-2:]
    result = classify(list(parse_log(_raw(lines))), builtin_rules())
    assert result.category == "network"
    assert result.root_cause.line == 5
