"""A GitHub job that ran as long as its workflow allows was stopped by `timeout-minutes`, whatever
its log says: on a timeout the runner cancels the job and the log often ends with nothing but
`The operation was canceled.` or an exit code. Pure: the job's duration and the parsed workflow are
inputs; the caller (service) has them from the jobs API and the repository.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ci_triage.core.logs.values import Classification

GITHUB_DEFAULT_TIMEOUT_MINUTES = 360.0  # a job without timeout-minutes; also the hosted runners' cap
# The runner cancels within seconds of the limit; the jobs API rounds times to the second.
_SLACK_S = 60.0
# Built-in rules whose finding is only that the job was stopped, never why: GitHub's bare "The operation
# was canceled." (rules/builtin/80-weak.toml) and the runner's "received a shutdown signal" (10-runner.toml,
# which CI systems print also when they stop a job at its limit). A runner_lost from them, in a job that
# ran to its timeout-minutes, is the timeout: the cancellation is how the limit ends a job.
STOP_NOTICE_RULES = frozenset({"operation-canceled", "runner-shutdown"})


def _minutes(value: Any) -> float | None:
    # An expression (`${{ inputs.timeout }}`) cannot be evaluated here: unknown, not a default.
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def timeout_minutes(workflow: Any, job_name: str) -> float | None:
    """`timeout-minutes` of the job `job_name` (its key, its `name:`, or a matrix instance
    `name (3.11)`); the default when the job sets none; None when the job is not found or the value
    is an expression. `workflow` is the parsed YAML document (ci_triage.workflow_yaml.parse)."""
    jobs = workflow.get("jobs") if isinstance(workflow, dict) else None
    if not isinstance(jobs, dict):
        return None
    base = job_name.split(" (", 1)[0]
    for key, spec in jobs.items():
        if not isinstance(spec, dict):
            continue
        names = {str(key), str(spec.get("name", key))}
        if job_name in names or base in names or any(job_name.startswith(f"{n} (") for n in names):
            if "timeout-minutes" not in spec:
                return GITHUB_DEFAULT_TIMEOUT_MINUTES
            return _minutes(spec["timeout-minutes"])
    return None


def reached_timeout(duration_s: float | None, limit_minutes: float | None) -> bool:
    return duration_s is not None and limit_minutes is not None and duration_s >= limit_minutes * 60 - _SLACK_S


def apply_job_timeout(classification: Classification, duration_s: float | None,
                      limit_minutes: float | None) -> Classification:
    """`classification` as a job_timeout when the job ran to its limit and nothing better explains it.

    A rule's own finding (a port clash, an OOM) stays: the timeout may be its consequence. Only an
    unexplained log, one whose process was merely terminated (SIGTERM, exit 143), or one whose only
    finding is the stop notice itself (STOP_NOTICE_RULES) is re-read.
    """
    terminated = classification.captures.get("signal", "").startswith("Terminated")
    unexplained = classification.rule_id is None and (classification.category == "unknown" or terminated)
    if not (unexplained or classification.rule_id in STOP_NOTICE_RULES):
        return classification
    if not reached_timeout(duration_s, limit_minutes):
        return classification
    return replace(classification, category="job_timeout", retryable=True,
                   captures={**classification.captures, "limit": f"{limit_minutes:g} minutes",
                             "evidence": "the job's duration reached the workflow's timeout-minutes"})
