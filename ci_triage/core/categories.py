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
    "unknown",
)
# Failures of the code itself: a rule may not call them retryable, a repository config may not make
# them retryable, and the policy compares them with the base branch instead of the runner's state.
NEVER_RETRYABLE = frozenset({"test_failure", "import_error"})
# Symbolic names of errnos that captures report (Linux values; torch's c10d prints them negated).
ERRNO_NAMES = {"98": "EADDRINUSE", "-98": "EADDRINUSE", "99": "EADDRNOTAVAIL", "-99": "EADDRNOTAVAIL",
               "110": "ETIMEDOUT", "111": "ECONNREFUSED", "104": "ECONNRESET", "28": "ENOSPC"}


def describe_capture(name: str, value: str) -> str:
    if name == "errno" and value in ERRNO_NAMES:
        return f"{value} ({ERRNO_NAMES[value]})"
    return value
