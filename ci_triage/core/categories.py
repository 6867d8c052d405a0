"""The failure categories, and the one list of those no rerun can fix.

Fields of the JSON contract carry these names: categories are added, never renamed.
"""

from __future__ import annotations

CATEGORIES = (
    "port_in_use",
    "network",
    "runner_lost",
    "job_timeout",
    "disk_full",
    "container",
    "device_error",
    "collective_timeout",
    "accelerator_oom",
    "crash",
    "import_error",
    "test_failure",
    # Added by issue 10 (appended before "unknown": the contract grows, nothing is renamed).
    "host_oom",
    "dependency",
    "compile_error",
    "lint_failure",
    "unknown",
)
# Failures of the code itself: a rule may not call them retryable, a repository config may not make
# them retryable, and the policy compares them with the base branch instead of the runner's state.
# `dependency` is here too: a resolver conflict, a pin that matches no distribution or a yanked wheel
# is the change's (or the ecosystem's) doing and a rerun resolves the same way. When the package
# index was unreachable, the log's network lines (DNS, reset, 5xx, read timeout) match the `network`
# rules, which rank above the dependency rules in the built-in rules: that failure is classified `network`
# (retryable), so the evidence decides through the category, and this set stays one list.
NEVER_RETRYABLE = frozenset({"test_failure", "import_error", "dependency", "compile_error", "lint_failure"})
# Symbolic names of errnos that captures report (Linux values; torch's c10d prints them negated).
ERRNO_NAMES = {"98": "EADDRINUSE", "-98": "EADDRINUSE", "99": "EADDRNOTAVAIL", "-99": "EADDRNOTAVAIL",
               "110": "ETIMEDOUT", "111": "ECONNREFUSED", "104": "ECONNRESET", "28": "ENOSPC"}


def describe_capture(name: str, value: str) -> str:
    if name == "errno" and value in ERRNO_NAMES:
        return f"{value} ({ERRNO_NAMES[value]})"
    return value
