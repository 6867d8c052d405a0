"""Gathering: fetch what GitHub knows about a PR's failures into one `TriageFacts`, then let the pure
core judge it (`core.decide.triage.judge`). Nothing here decides a verdict or a rerun.

Which facts to fetch beyond the PR's own runs (the failed jobs' logs, the window around them, base-branch
twins of test failures, neighbours' logs) is chosen by the core's own selectors. Logs are classified as
they arrive (a pure step, `classify_job`), so a 100 MB log is scanned once and the facts hold its
classification, not its bytes. The store makes repeat work cheap:
jobs of a completed run attempt, the logs and annotations of completed jobs are fetched once, ever.
The repository's config file is read from its default branch, never from the PR's head: a PR must
not be able to change how its own failures are judged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from ci_triage import workflow_yaml
from ci_triage.core.config.repo_config import (
    RepoConfig,
    default_repo_config,
    parse_repo_config,
)
from ci_triage.core.config.workflows import pull_request_paths
from ci_triage.core.decide.facts import BaseTwin, TriageFacts
from ci_triage.core.decide.triage import (
    BASE_RUNS,
    BASELINE_RUNS,
    failed_jobs,
    find_twin,
    judge,
    latest_per_workflow,
    needs_base_twin,
    needs_successful_jobs,
    similar_candidates,
    unresolved_runs,
    window_queries,
)
from ci_triage.core.logs.annotations import classify_annotations
from ci_triage.core.logs.budget import DEFAULT_BUDGET_S, classify_within
from ci_triage.core.logs.job_limits import timeout_minutes
from ci_triage.core.logs.logparse import step_first_lines
from ci_triage.core.logs.rules import (
    RuleSet,
    builtin_rules,
    merge_rule_sets,
    parse_rules,
)
from ci_triage.errors import ConfigError
from ci_triage.github.client import GitHubClient
from ci_triage.model import (
    Classification,
    ClassifiedLog,
    Job,
    LogStatus,
    PullReport,
    Run,
    Step,
)
from ci_triage.store import LogData, Store

Progress = Callable[[str, int, int], None]  # (what, done, total)
CONFIG_PATH = ".github/ci-triage.toml"


def _no_progress(what: str, done: int, total: int) -> None:
    pass


class Triage:
    def __init__(
        self,
        client: GitHubClient,
        store: Store,
        rules: RuleSet | None = None,
        config: RepoConfig | None = None,
        progress: Progress = _no_progress,
    ) -> None:
        self.client = client
        self.store = store
        self._base_rules = rules or builtin_rules()
        self.rules = self._base_rules
        self._fixed_config = config
        self.config = config or default_repo_config()
        self.progress = progress

    # --- cached fetches -----------------------------------------------------------------------
    def jobs_of(self, repo: str, run: Run) -> list[Job]:
        cached = self.store.jobs_of(repo, run.id, run.attempt) if run.is_completed else None
        if cached is not None:
            return cached
        jobs = self.client.jobs(repo, run.id, run.attempt)
        if run.is_completed:
            self.store.save_run(repo, run)
        self.store.save_jobs(repo, run, jobs)
        return jobs

    def log_of(self, repo: str, job: Job) -> tuple[LogStatus, LogData | None]:
        cached = self.store.log(repo, job.id)
        if cached is not None:
            return cached
        status, data = self.client.log(repo, job.id)
        # A completed job's log never changes, and an expired one never comes back; a failed
        # download is not stored so the next report tries again.
        if job.is_completed and status in (LogStatus.AVAILABLE, LogStatus.EXPIRED):
            self.store.save_log(repo, job.id, status, data)
        return status, data

    def annotations_of(self, repo: str, job: Job) -> list[dict]:
        cached = self.store.annotations(repo, job.id)
        if cached is not None:
            return cached
        annotations = self.client.annotations(repo, job.id)
        if job.is_completed:
            self.store.save_annotations(repo, job.id, annotations)
        return annotations

    def classify_job(self, repo: str, job: Job, anchors: bool = False
                     ) -> tuple[LogStatus, Classification, tuple[tuple[str, int], ...]]:
        """The job's log status and classification, and with `anchors` the first log line of each step up
        to the root cause (a second pass over the log, paid only for the jobs a report links to)."""
        status, data = self.log_of(repo, job)
        # The log stays bytes (a map of a temporary file when large) and only the lines a rule
        # could match become objects: a 1 GB log costs a scan in bounded memory.
        classification = classify_within(data or b"", self.rules, job.steps, seconds=DEFAULT_BUDGET_S,
                                         clock=time.monotonic)
        root = classification.root_cause
        first_lines = step_first_lines(data, job.steps, root.line) if anchors and data and root else ()
        if hasattr(data, "close"):  # a large log's map: its temporary file goes with it
            data.close()
        if status is not LogStatus.AVAILABLE or classification.category == "unknown":
            # The log is missing or silent: GitHub's annotations on the job may still say why.
            from_annotations = classify_annotations(self.annotations_of(repo, job), job.conclusion, self.rules)
            if from_annotations is not None:
                classification = from_annotations
                first_lines = ()
        return status, classification, first_lines

    def _rules_for(self, repo: str, default_branch: str) -> RuleSet:
        """The built-in rules, with the repository's own rule file (from its default branch) on top."""
        if self.config.rules_file is None:
            return self._base_rules
        text = self.client.file_text(repo, self.config.rules_file, default_branch)
        if text is None:
            raise ConfigError(f"{repo}:{CONFIG_PATH} names rules file {self.config.rules_file}, which does not exist "
                              f"on {default_branch}")
        return merge_rule_sets(self._base_rules, parse_rules(text, origin=f"{repo}:{self.config.rules_file}"))

    def repo_config(self, repo: str, default_branch: str) -> RepoConfig:
        if self._fixed_config is not None:
            return self._fixed_config
        text = self.client.file_text(repo, CONFIG_PATH, default_branch)
        return parse_repo_config(text, origin=f"{repo}:{CONFIG_PATH}") if text is not None else default_repo_config()

    # --- gathering ----------------------------------------------------------------------------
    def report(self, repo: str, number: int) -> PullReport:
        """Gather, then decide: every fact first, then the pure judgment. The store keeps each failure
        as the report names it: its root cause and fingerprint after the base-branch focus (the first
        test main does not fail), not the log's first failure, which a broken base shares with every PR."""
        facts = self.gather(repo, number)
        report = judge(facts)
        for verdict in report.failed_jobs:
            job = verdict.facts.job
            if facts.logs[job.id].is_evidence:
                self.store.save_failure(repo, job, number, verdict.facts.classification)
        return report

    def gather(self, repo: str, number: int) -> TriageFacts:
        """Everything the decision about PR `number` reads; what to fetch beyond the PR's own runs is
        chosen by the decision's own selectors, in the order their answers depend on each other."""
        repository = self.client.check_repository(repo)
        default_branch = repository.get("default_branch") or "main"
        self.config = self.repo_config(repo, default_branch)
        self.rules = self._rules_for(repo, default_branch)
        pull = self.client.pull(repo, number)
        changed = self.store.pr_files(repo, number, pull.head_sha)
        if changed is None:
            changed = self.client.pull_files(repo, number)
            self.store.save_pr_files(repo, number, pull.head_sha, changed)

        runs = latest_per_workflow(self.client.runs(repo, head_sha=pull.head_sha))
        jobs: list[Job] = []
        for index, run in enumerate(runs):
            self.progress("runs of the PR", index, len(runs))
            jobs.extend(self.jobs_of(repo, run))
        facts = TriageFacts(repo, pull, tuple(changed), tuple(runs), tuple(jobs), self.config)

        failed = failed_jobs(facts)
        logs: dict[int, ClassifiedLog] = {}
        for index, (_, job) in enumerate(failed):
            self.progress("logs of failed jobs", index, len(failed))
            logs[job.id] = self.classified_log(repo, job, anchors=True)

        window_runs, window_jobs = self._window(repo, window_queries(facts))
        unresolved = unresolved_runs(window_runs.values())
        pull_heads = {p["head"]["sha"]: p["number"] for p in self.client.pulls(repo)} if unresolved else {}
        facts = replace(facts, logs=logs, window_runs=window_runs, window_jobs=tuple(window_jobs),
                        pull_heads=pull_heads,
                        workflow_paths=self._workflow_paths(repo, {run.workflow_path for run, _ in failed}, runs),
                        timeout_limits=self._timeout_limits(repo, failed))
        facts = replace(facts, successful_jobs={workflow_id: tuple(self._successful_jobs(repo, workflow_id))
                                                for workflow_id in sorted(needs_successful_jobs(facts))})

        base_twins: dict[tuple[int, str], BaseTwin | None] = {}
        for run, job in needs_base_twin(facts):
            key = (run.workflow_id, job.name)
            if key not in base_twins:
                base_twins[key] = self._base_twin(repo, pull.base_ref, run, job)
        facts = replace(facts, base_twins=base_twins)

        probed = dict(logs)
        for run, job in failed:
            for other in similar_candidates(facts, run, job):
                if other.id not in probed:
                    probed[other.id] = self.classified_log(repo, other)
        return replace(facts, logs=probed)

    def classified_log(self, repo: str, job: Job, anchors: bool = False) -> ClassifiedLog:
        return ClassifiedLog(*self.classify_job(repo, job, anchors))

    def _window(self, repo: str, queries: dict[int, str]) -> tuple[dict[int, Run], list[Job]]:
        """Runs of each failed job's workflow created in the window around it, and their jobs."""
        jobs: list[Job] = []
        runs: dict[int, Run] = {}
        for workflow_id, created in queries.items():
            window_runs = self.client.runs(repo, workflow_id=workflow_id, created=created)
            for index, run in enumerate(window_runs):
                self.progress("runs in the window", index, len(window_runs))
                runs[run.id] = run
                jobs.extend(self.jobs_of(repo, run))
        return runs, jobs

    def _workflow_paths(self, repo: str, workflow_paths: set[str], runs: list[Run]) -> dict[int, tuple[str, ...]]:
        """`on.pull_request.paths` of the failed jobs' workflows, read from the default branch."""
        ids = {run.workflow_path: run.workflow_id for run in runs}
        found = {}
        for path in sorted(p for p in workflow_paths if p):
            text = self.client.file_text(repo, path)
            if text is not None and path in ids:
                found[ids[path]] = pull_request_paths(workflow_yaml.parse(text))
        return found

    def _timeout_limits(self, repo: str, failed: list[tuple[Run, Job]]) -> dict[int, float | None]:
        """`timeout-minutes` of each failed job, read from its workflow file at the run's head commit:
        the limit that applied is the one the PR ran with, not the default branch's."""
        documents: dict[tuple[str, str], object] = {}
        limits: dict[int, float | None] = {}
        for run, job in failed:
            if not run.workflow_path:
                continue
            key = (run.workflow_path, run.head_sha)
            if key not in documents:
                text = self.client.file_text(repo, run.workflow_path, run.head_sha)
                documents[key] = workflow_yaml.parse(text) if text is not None else None
            if documents[key] is not None:
                limits[job.id] = timeout_minutes(documents[key], job.name)
        return limits

    def _successful_jobs(self, repo: str, workflow_id: int) -> list[Job]:
        recent = self.client.runs(repo, workflow_id=workflow_id, status="success", limit=BASELINE_RUNS)
        return [job for r in recent for job in self.jobs_of(repo, r)]

    def _base_twin(self, repo: str, base_ref: str, run: Run, job: Job) -> BaseTwin | None:
        """The same job in the newest completed run of the same workflow on the base branch."""
        for base_run in self.client.runs(repo, workflow_id=run.workflow_id, branch=base_ref, status="completed",
                                         limit=BASE_RUNS):
            if base_run.event.startswith("pull_request"):
                continue
            twin = find_twin(self.jobs_of(repo, base_run), job.name)
            if twin is not None:
                return BaseTwin(base_run, twin, self.classified_log(repo, twin) if twin.failed else None)
        return None
