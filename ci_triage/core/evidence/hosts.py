"""Which machines a job shared: its runner pool (its specific labels) and its host (from the runner name).

Pure and small: the one reading of labels and runner names that the correlation engine
(timeline_frame), the config, the Gantt chart and runner health all share.
"""

from __future__ import annotations

import re

from ci_triage.model import Job

# Labels every runner of a kind carries; they say nothing about which machines a job shares.
GENERIC_LABELS = frozenset(
    {"self-hosted", "linux", "windows", "macos", "x64", "arm64", "arm", "aarch64", "gpu", "npu"}
)
# Several runner processes on one machine are usually numbered: `node2-r0`, `node2-r1`, `host-3`.
_TRAILING_INDEX = re.compile(r"[-_.]r?\d+$")
HOST_ASSUMPTION = (
    "Runners whose names differ only by a trailing index (e.g. node2-r0, node2-r1) are taken to share "
    "a host; set host_pattern in the config file if your pool is laid out differently."
)


def pool_labels(job: Job) -> frozenset[str]:
    """The labels that name a job's pool: two jobs share a pool when they share one of these, or, when
    neither has any, when their whole label sets are equal."""
    return frozenset(label for label in job.labels if label.lower() not in GENERIC_LABELS)


def host_of(runner_name: str | None, host_pattern: re.Pattern[str] | None = None) -> str | None:
    if not runner_name:
        return None
    if host_pattern is not None:
        # The `host` group, else the only group, else the whole match (as the config file documents).
        found = host_pattern.search(runner_name)
        if not found:
            return runner_name
        if "host" in host_pattern.groupindex:
            return found.group("host") or runner_name
        if host_pattern.groups == 1:
            return found.group(1) or runner_name
        return found.group(0) or runner_name
    stripped = _TRAILING_INDEX.sub("", runner_name)
    return stripped or runner_name
