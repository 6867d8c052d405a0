"""The plain values runner-health analysis reads and returns.

A JobRecord is one execution of one job (one attempt), as the store keeps it after `sync`; the shell
fills `category` and `captures` from the classification of the job's log (None when it was not
classified: `sync --logs none`, a job that did not fail, a log that expired).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.model import FAILED_CONCLUSIONS

UNCLASSIFIED = "unclassified"  # the category of a failure whose log was never read (analysis.records_frame)
# Failures of a runner or its host rather than of the code: every category but the code's own,
# "unknown" and "unclassified" (an unexplained failure, or one nobody read, is no evidence against a
# runner; trends.py, which sees category None for the latter, reads it the same way).
NOT_INFRA = NEVER_RETRYABLE | {"unknown", UNCLASSIFIED}
# Categories whose failures say "something else on this host held what this job needed".
CONTENTION_CATEGORIES = ("port_in_use", "host_oom", "accelerator_oom", "collective_timeout")
# Conclusions that count as a job that ran to an end (cancelled and skipped jobs say nothing).
COUNTED_CONCLUSIONS = FAILED_CONCLUSIONS | {"success"}


def is_infra(category: str | None) -> bool:
    return category is not None and category not in NOT_INFRA


@dataclass(frozen=True)
class JobRecord:
    run_id: int
    attempt: int
    job_id: int
    workflow: str
    name: str
    pr: int | None
    branch: str | None
    head_sha: str
    runner_name: str | None
    runner_group: str | None
    labels: tuple[str, ...]
    started_at: datetime | None
    completed_at: datetime | None
    conclusion: str | None
    category: str | None = None
    captures: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.conclusion in FAILED_CONCLUSIONS

    @property
    def minutes(self) -> float:
        if self.started_at is None or self.completed_at is None:
            return 0.0
        return max(0.0, (self.completed_at - self.started_at).total_seconds() / 60.0)


@dataclass(frozen=True)
class RunnerHealth:
    """One runner's (or host's) figures against its pool."""

    key: str  # the runner name, or the host
    host: str | None
    labels: tuple[str, ...]
    pool: str
    jobs: int
    failures: int
    infra_failures: int
    infra_failure_rate: float
    pool_jobs: int
    pool_infra_failures: int
    pool_infra_failure_rate: float  # of the REST of the pool (the runner's own jobs left out)
    p_value: float
    q_value: float
    sick: bool
    categories: dict[str, int]
    runners: tuple[str, ...] = ()  # for a host: its runners


@dataclass(frozen=True)
class Hotspot:
    host: str
    jobs: tuple[str, str]  # "workflow / job name", sorted
    category: str
    count: int  # failed jobs of that category that overlapped the pair on the host
    prs: tuple[str, ...]  # "#67" or a branch name, of both sides
    ports: tuple[str, ...]  # ports and devices from the classifier's captures
    recommendation: str


@dataclass(frozen=True)
class RerunSummary:
    requested: int
    automatic: int
    manual: int
    rescued: int
    runner_minutes: float


@dataclass(frozen=True)
class FlakyJob:
    workflow: str
    name: str
    runs: int  # head SHAs the job ran on
    flaky_runs: int  # ... of which it failed, then passed on the same SHA
    rate: float


@dataclass(frozen=True)
class HealthReport:
    repo: str
    since: datetime | None
    until: datetime | None
    runners: tuple[RunnerHealth, ...]
    hosts: tuple[RunnerHealth, ...]
    hotspots: tuple[Hotspot, ...]
    reruns: RerunSummary
    flaky_jobs: tuple[FlakyJob, ...]
    alpha: float
    min_infra_failures: int
    notes: tuple[str, ...] = ()
