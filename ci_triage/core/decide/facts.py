"""Everything a triage decision reads, as one frozen value the shell fills in before anything is decided.

The shell (`service.Triage.gather`) fetches; `core.decide.triage.judge` turns a `TriageFacts` into the
report with no I/O. What the shell fetches beyond the PR's own runs and jobs is chosen by the pure
selectors of `core.decide.triage` (which jobs failed, which window to read, which base-branch twins and
which neighbours' logs are needed), so the same rules decide what to gather and what to conclude.

A key that is absent means "not gathered": the decision then treats the fact as unknown, never as
evidence (a neighbour's log that was not read is not a neighbour that failed differently).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ci_triage.core.config.repo_config import RepoConfig, default_repo_config
from ci_triage.model import ChangedFile, ClassifiedLog, Job, PullRequest, Run


@dataclass(frozen=True)
class BaseTwin:
    """The same job in the newest completed base-branch run of its workflow (push or schedule)."""

    run: Run
    job: Job
    log: ClassifiedLog | None = None  # gathered only when the twin failed


@dataclass(frozen=True)
class TriageFacts:
    repo: str
    pull: PullRequest
    changed_files: tuple[ChangedFile, ...]
    runs: tuple[Run, ...]  # the PR head's newest run per workflow and event
    jobs: tuple[Job, ...]  # every job of those runs
    config: RepoConfig = field(default_factory=default_repo_config)
    # Classified logs by job id: the PR's failed jobs, failed base twins, probed neighbours.
    logs: Mapping[int, ClassifiedLog] = field(default_factory=dict)
    window_runs: Mapping[int, Run] = field(default_factory=dict)  # runs of the failed jobs' workflows in the window
    window_jobs: tuple[Job, ...] = ()
    # Head SHA -> PR number of recent pull requests, to name the PR of a fork's run (which names none).
    pull_heads: Mapping[str, int] = field(default_factory=dict)
    workflow_paths: Mapping[int, tuple[str, ...]] = field(default_factory=dict)  # on.pull_request.paths
    # Jobs of recent successful runs per workflow id, for a duration baseline when the window has too few.
    successful_jobs: Mapping[int, tuple[Job, ...]] = field(default_factory=dict)
    # (workflow id, job name) -> the base-branch twin, or None when the base branch has none.
    base_twins: Mapping[tuple[int, str], BaseTwin | None] = field(default_factory=dict)
    # Failed job id -> `timeout-minutes` of its job in the workflow file as it ran (the run's head commit;
    # None when the value is an expression or the job is not found there).
    timeout_limits: Mapping[int, float | None] = field(default_factory=dict)

    @property
    def number(self) -> int:
        return self.pull.number
