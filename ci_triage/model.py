"""Plain values shared by every layer.

The shell turns GitHub's payloads into these at once; the pure core only ever sees these.
All datetimes are timezone-aware UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

# The values log classification makes live in the core, so `ci-triage classify` imports these six
# dataclasses and not the report's twenty (each costs ~1 ms to create); they are part of the model.
from ci_triage.core.logs.values import Classification, Frame, LogLine, RootCause, RuleMatch, Step  # noqa: F401


class Verdict(StrEnum):
    INFRA_FLAKE = "infra_flake"
    PR_RELATED = "pr_related"
    BROKEN_BASE = "broken_base"
    NEEDS_REVIEW = "needs_review"


class Relatedness(StrEnum):
    RELATED = "related"  # the failing stack passes through changed code
    POSSIBLY_RELATED = "possibly_related"  # the job exercises changed paths, the stack does not show it
    UNRELATED = "unrelated"


class LogStatus(StrEnum):
    """Whether a failed job's log could be read. Anything but AVAILABLE is missing evidence."""

    AVAILABLE = "available"
    EXPIRED = "expired"  # GitHub keeps logs for a limited time (404/410 after that)
    MISSING = "missing"  # e.g. the runner was lost before it uploaded anything
    UNREADABLE = "unreadable"  # the download failed after retries


# Job conclusions that mean "this job failed"; cancelled and skipped jobs are not failures to triage.
FAILED_CONCLUSIONS = frozenset({"failure", "timed_out", "startup_failure"})


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str
    state: str
    author: str
    head_sha: str
    head_ref: str
    head_repo: str | None  # full name; None when the fork was deleted
    base_repo: str
    base_ref: str
    base_sha: str
    html_url: str
    # The PR payload's own count of changed files; GET .../pulls/{n}/files lists at most 3,000 of them
    # (docs.github.com "List pull requests files"), so a larger count means the list is incomplete.
    changed_files_count: int | None = None

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.base_repo


@dataclass(frozen=True)
class ChangedFile:
    filename: str
    status: str  # added, removed, modified, renamed, copied, changed, unchanged
    additions: int
    deletions: int
    previous_filename: str | None = None


@dataclass(frozen=True)
class Run:
    id: int
    attempt: int
    workflow_id: int
    workflow_name: str
    workflow_path: str
    event: str
    status: str  # queued, in_progress, completed, ...
    conclusion: str | None
    head_sha: str
    head_branch: str | None
    head_repo: str | None
    pr_numbers: tuple[int, ...]  # empty for runs from forks: match those by head SHA
    created_at: datetime
    updated_at: datetime
    html_url: str

    @property
    def is_completed(self) -> bool:
        return self.status == "completed"


@dataclass(frozen=True)
class Job:
    id: int
    run_id: int
    run_attempt: int
    workflow_name: str
    name: str
    status: str
    conclusion: str | None
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    runner_name: str | None
    runner_group_name: str | None
    labels: tuple[str, ...]
    head_sha: str
    head_branch: str | None
    html_url: str
    steps: tuple[Step, ...] = ()

    @property
    def is_completed(self) -> bool:
        return self.status == "completed"

    @property
    def failed(self) -> bool:
        return self.conclusion in FAILED_CONCLUSIONS

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.completed_at is None:
            return None
        return (self.completed_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class ClassifiedLog:
    """A job's log as a decision sees it: whether it could be read, and what it (or GitHub's annotations) says."""

    status: LogStatus
    classification: Classification
    # (step name, the log line that step's section starts at): turns a log line into GitHub's
    # `#step:N:L` anchor, L counted within the step. Only steps starting before the root cause are known.
    step_first_lines: tuple[tuple[str, int], ...] = ()

    @property
    def is_evidence(self) -> bool:
        """A log that could not be read is no evidence, unless GitHub's annotation on the job said why."""
        return self.status is LogStatus.AVAILABLE or self.classification.source == "annotations"


class Access(StrEnum):
    """What GET /repos/{owner}/{repo}/collaborators/{username}/permission answered."""

    KNOWN = "known"  # 200: `permission` says the base level of access
    NOT_COLLABORATOR = "not_collaborator"  # 404: the user is not a collaborator (or does not exist)
    UNKNOWN = "unknown"  # 403 and the like: the token may not read permissions, so nobody can tell


@dataclass(frozen=True)
class CollaboratorPermission:
    """A user's access to a repository. `permission` is GitHub's base level (admin, write, read, none;
    `maintain` shows as write); `role_name` names the role, custom ones included, and only informs."""

    access: Access
    permission: str | None = None
    role_name: str | None = None
    detail: str | None = None  # why it is unknown, for the refusal

    @property
    def can_write(self) -> bool:
        return self.access is Access.KNOWN and self.permission in ("admin", "maintain", "write")


@dataclass(frozen=True)
class OverlappingJob:
    pr: int | None  # None when the other run is not a PR run (a push to main, a schedule)
    branch: str | None
    run_id: int
    job_id: int
    name: str
    runner_name: str | None
    overlap_s: float
    conclusion: str | None
    same_host: bool
    html_url: str


@dataclass(frozen=True)
class DurationBaseline:
    job_name: str
    samples: int
    median_s: float
    spread_s: float  # median absolute deviation


@dataclass(frozen=True)
class BaseComparison:
    """The same job on the base branch, for telling pre-existing failures from new ones."""

    base_ref: str
    run_id: int
    job_id: int
    conclusion: str | None
    failed_tests: tuple[str, ...]
    html_url: str


@dataclass(frozen=True)
class Evidence:
    kind: str  # root_cause, contention, died_early, relatedness, base_branch, missing, ...
    text: str  # a sentence a maintainer can check
    url: str | None = None
    supports: Verdict | None = None


@dataclass(frozen=True)
class SimilarFailure:
    """Another job in the window that failed with the same fingerprint."""

    pr: int | None
    branch: str | None
    on_base: bool  # a run of the base branch itself (push, schedule), not of a PR
    run_id: int
    job_id: int
    name: str
    completed_at: datetime | None
    html_url: str


@dataclass(frozen=True)
class JobFacts:
    """Everything gathered about one failed job, before a verdict is taken."""

    job: Job
    run: Run
    log_status: LogStatus
    classification: Classification
    overlapping_jobs: tuple[OverlappingJob, ...]
    in_flight_prs: tuple[int, ...]  # other PRs with jobs on the pool while this one ran
    later_jobs_passed: tuple[OverlappingJob, ...]  # same pool, started after this one ended, passed
    baseline: DurationBaseline | None
    base_comparison: BaseComparison | None
    similar_failures: tuple[SimilarFailure, ...] = ()
    neighbour_hints: tuple[str, ...] = ()  # what the log itself says about other processes on the device
    step_first_lines: tuple[tuple[str, int], ...] = ()  # as ClassifiedLog.step_first_lines

    def line_in_step(self, line: int, step: str | None) -> int | None:
        """A log line counted from the start of its step's section (the step's first line is 1)."""
        first = dict(self.step_first_lines).get(step) if step else None
        return line - first + 1 if first is not None and line >= first else None


@dataclass(frozen=True)
class JobVerdict:
    facts: JobFacts
    relatedness: Relatedness
    related_changed_files: tuple[str, ...]
    verdict: Verdict
    confidence: float
    rerun_recommended: bool
    evidence: tuple[Evidence, ...]
    related_by: str | None = None  # the frame or test file that made the failure `related`


@dataclass(frozen=True)
class StoredFailure:
    """A classified failed job as the store keeps it, for clustering across reports."""

    repo: str
    job_id: int
    run_id: int
    pr: int | None
    job_name: str
    workflow: str
    category: str
    rule_id: str | None
    fingerprint: str | None
    root_cause: str | None
    failed_at: str | None
    html_url: str


@dataclass(frozen=True)
class Cluster:
    fingerprint: str
    category: str
    count: int
    prs: tuple[int, ...]
    job_names: tuple[str, ...]
    first_seen: str | None
    last_seen: str | None
    sample: str | None
    example_url: str


@dataclass(frozen=True)
class PullReport:
    repo: str
    pull: PullRequest
    changed_files: tuple[ChangedFile, ...]
    runs: tuple[Run, ...]
    failed_jobs: tuple[JobVerdict, ...]
    timeline_jobs: tuple[Job, ...]  # jobs in the correlation window, for the timeline picture
    runs_by_id: dict[int, Run] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # assumptions and gaps the reader should know about
    contract_checks: tuple[Job, ...] = ()  # the d2t contract suite's job on the head, when the repo has one
    pr_of_run: dict[int, int | None] = field(default_factory=dict)  # fork runs resolved by head SHA
    host_pattern: str | None = None  # the configured runners.host_pattern: the chart groups hosts as the verdict does
