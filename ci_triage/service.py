"""Use cases: gather what GitHub knows about a PR's failures, hand it to the pure core, return a report.

fetch -> parse -> classify -> correlate -> relate -> decide. The store makes repeat work cheap:
jobs of a completed run attempt, the logs and annotations of completed jobs are fetched once, ever.
The repository's config file is read from its default branch, never from the PR's head: a PR must
not be able to change how its own failures are judged.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.core.config.repo_config import (
    RepoConfig,
    default_repo_config,
    matches_job,
    owned_paths,
    parse_repo_config,
)
from ci_triage.core.config.workflows import pull_request_paths
from ci_triage.core.decide.policy import decide
from ci_triage.core.evidence import timeline
from ci_triage.core.evidence.neighbours import neighbour_hints
from ci_triage.core.evidence.relate import relate
from ci_triage.core.logs.annotations import classify_annotations
from ci_triage.core.logs.budget import DEFAULT_BUDGET_S, classify_within
from ci_triage.core.logs.classify import focus_on_test
from ci_triage.core.logs.rules import (
    RuleSet,
    builtin_rules,
    merge_rule_sets,
    parse_rules,
)
from ci_triage.errors import ConfigError
from ci_triage.github.client import GitHubClient
from ci_triage.model import (
    BaseComparison,
    ChangedFile,
    Classification,
    Job,
    JobFacts,
    JobVerdict,
    LogStatus,
    PullReport,
    Run,
    SimilarFailure,
)
from ci_triage.store import Store

Progress = Callable[[str, int, int], None]  # (what, done, total)
CONFIG_PATH = ".github/ci-triage.toml"
# The job name of workflows/d2t-contract.yml; its result on the PR head is shown beside the triage.
CONTRACT_JOBS = frozenset({"d2t-contract"})
# Failed jobs of other runs in the window whose logs are read to find the same failure elsewhere.
MAX_SIMILAR_PROBES = 20
LATER_PASSED_WINDOW = timedelta(hours=2)
BASELINE_RUNS = 10


def _no_progress(what: str, done: int, total: int) -> None:
    pass


@dataclass(frozen=True)
class Context:
    """What every failed job of one report is judged against."""

    repo: str
    number: int
    base_ref: str
    changed: tuple[ChangedFile, ...]
    neighbours: list[Job]
    runs: dict[int, Run]
    pr_of_run: dict[int, int | None]
    workflow_paths: dict[int, tuple[str, ...]]


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

    def log_of(self, repo: str, job: Job) -> tuple[LogStatus, str | None]:
        cached = self.store.log(repo, job.id)
        if cached is not None:
            return cached
        status, text = self.client.log(repo, job.id)
        # A completed job's log never changes, and an expired one never comes back; a failed
        # download is not stored so the next report tries again.
        if job.is_completed and status in (LogStatus.AVAILABLE, LogStatus.EXPIRED):
            self.store.save_log(repo, job.id, status, text)
        return status, text

    def annotations_of(self, repo: str, job: Job) -> list[dict]:
        cached = self.store.annotations(repo, job.id)
        if cached is not None:
            return cached
        annotations = self.client.annotations(repo, job.id)
        if job.is_completed:
            self.store.save_annotations(repo, job.id, annotations)
        return annotations

    def classify_job(self, repo: str, job: Job) -> tuple[LogStatus, Classification]:
        status, text = self.log_of(repo, job)
        # Only the lines a rule could match (and the context classify reads) become objects: a
        # 100 MB log costs a scan, not a million LogLines.
        classification = classify_within(text or "", self.rules, job.steps, seconds=DEFAULT_BUDGET_S,
                                         clock=time.monotonic)
        if status is not LogStatus.AVAILABLE or classification.category == "unknown":
            # The log is missing or silent: GitHub's annotations on the job may still say why.
            from_annotations = classify_annotations(self.annotations_of(repo, job), job.conclusion, self.rules)
            if from_annotations is not None:
                classification = from_annotations
        return status, classification

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

    # --- the report ---------------------------------------------------------------------------
    def report(self, repo: str, number: int) -> PullReport:
        repository = self.client.check_repository(repo)
        default_branch = repository.get("default_branch") or "main"
        self.config = self.repo_config(repo, default_branch)
        self.rules = self._rules_for(repo, default_branch)
        pull = self.client.pull(repo, number)
        changed = self.store.pr_files(repo, number, pull.head_sha)
        if changed is None:
            changed = self.client.pull_files(repo, number)
            self.store.save_pr_files(repo, number, pull.head_sha, changed)

        # Runs of forks carry no pull_requests: the head SHA is what ties a run to this PR.
        runs = [r for r in self.client.runs(repo, head_sha=pull.head_sha) if r.event.startswith("pull_request")]
        runs = _latest_per_workflow(runs)
        own_jobs: list[tuple[Run, Job]] = []
        for index, run in enumerate(runs):
            self.progress("runs of the PR", index, len(runs))
            own_jobs.extend((run, job) for job in self.jobs_of(repo, run))
        failed = [(run, job) for run, job in own_jobs if job.failed and matches_job(self.config, job.name)]

        classified = {}
        for index, (run, job) in enumerate(failed):
            self.progress("logs of failed jobs", index, len(failed))
            classified[job.id] = self.classify_job(repo, job)

        neighbours, neighbour_runs = self._neighbours(repo, failed)
        pr_of_run = self._resolve_prs(repo, neighbour_runs.values())
        pr_of_run.update({run.id: number for run in runs})
        context = Context(repo, number, pull.base_ref, tuple(changed), neighbours, neighbour_runs, pr_of_run,
                          self._workflow_paths(repo, {run.workflow_path for run, _ in failed}, runs))

        verdicts = []
        for run, job in failed:
            status, classification = classified[job.id]
            if status is LogStatus.AVAILABLE or classification.source == "annotations":
                self.store.save_failure(repo, job, number, classification)
            verdicts.append(self._judge(context, run, job, status, classification))

        notes: list[str] = []
        if self.config.host_pattern is None and any(timeline.host_of(j.runner_name) != j.runner_name
                                                    for _, j in failed):
            notes.append(timeline.HOST_ASSUMPTION)
        all_runs = {**neighbour_runs, **{r.id: r for r in runs}}
        contract_checks = tuple(job for _, job in own_jobs if job.name in CONTRACT_JOBS)
        return PullReport(repo=repo, pull=pull, changed_files=tuple(changed), runs=tuple(runs),
                          failed_jobs=tuple(verdicts), timeline_jobs=tuple(neighbours),
                          runs_by_id=all_runs, notes=tuple(notes), contract_checks=contract_checks,
                          pr_of_run=pr_of_run)

    def _judge(self, ctx: Context, run: Run, job: Job, status: LogStatus,
               classification: Classification) -> JobVerdict:
        host_pattern = re.compile(self.config.host_pattern) if self.config.host_pattern else None
        same_workflow = [j for j in ctx.neighbours if ctx.runs[j.run_id].workflow_id == run.workflow_id]
        overlapping = timeline.overlapping_jobs(job, same_workflow, ctx.runs, ctx.pr_of_run, host_pattern)
        later = timeline.later_jobs_passed(job, same_workflow, ctx.runs, LATER_PASSED_WINDOW.total_seconds(),
                                           ctx.pr_of_run)
        baseline_jobs = [j for j in same_workflow if j.name == job.name]
        baseline = timeline.duration_baseline(job.name, baseline_jobs)
        if baseline is None or baseline.samples < 3:
            baseline = timeline.duration_baseline(job.name, baseline_jobs + self._successful_jobs(ctx.repo, run))
        in_flight = tuple(sorted({o.pr for o in overlapping if o.pr is not None and o.pr != ctx.number}))
        base = None
        if classification.category in NEVER_RETRYABLE:
            base = self._base_comparison(ctx.repo, ctx.base_ref, run, job)
            new_failures = [t for t in classification.failed_tests if base and t not in base.failed_tests]
            if base and base.failed_tests and new_failures:
                classification = focus_on_test(classification, new_failures[0])
        similar = self._similar_failures(ctx, job, classification, same_workflow)
        hints = neighbour_hints(classification.root_cause.text if classification.root_cause else None)
        facts = JobFacts(job, run, status, classification, overlapping, in_flight, later, baseline, base,
                         similar, hints)
        relation = relate(job.name, classification.frames, classification.failed_tests, ctx.changed,
                          owned_paths(self.config, job.name), ctx.workflow_paths.get(run.workflow_id, ()))
        return decide(facts, relation, len(ctx.changed), self.config.policy, self.config.outage)

    # --- correlation --------------------------------------------------------------------------
    def _neighbours(self, repo: str, failed: list[tuple[Run, Job]]) -> tuple[list[Job], dict[int, Run]]:
        """Jobs of every run of the failed jobs' workflows created in the window around them."""
        jobs: list[Job] = []
        runs: dict[int, Run] = {}
        by_workflow: dict[int, list[Job]] = {}
        for run, job in failed:
            by_workflow.setdefault(run.workflow_id, []).append(job)
        before = timedelta(hours=self.config.window_before_hours)
        after = timedelta(hours=self.config.window_after_hours)
        for workflow_id, failed_jobs in by_workflow.items():
            starts = [j.started_at or j.created_at for j in failed_jobs]
            ends = [j.completed_at or j.started_at or j.created_at for j in failed_jobs]
            low, high = min(starts) - before, max(ends) + after
            created = f"{low.strftime('%Y-%m-%dT%H:%M:%SZ')}..{high.strftime('%Y-%m-%dT%H:%M:%SZ')}"
            window_runs = self.client.runs(repo, workflow_id=workflow_id, created=created)
            for index, run in enumerate(window_runs):
                self.progress("runs in the window", index, len(window_runs))
                runs[run.id] = run
                jobs.extend(self.jobs_of(repo, run))
        return jobs, runs

    def _resolve_prs(self, repo: str, runs: Iterable[Run]) -> dict[int, int | None]:
        """PR number of each PR run; fork runs are matched by head SHA against recent pull requests."""
        resolved: dict[int, int | None] = {}
        unresolved = []
        for run in runs:
            if run.pr_numbers:
                resolved[run.id] = run.pr_numbers[0]
            elif run.event.startswith("pull_request"):
                unresolved.append(run)
            else:
                resolved[run.id] = None
        if unresolved:
            by_sha = {p["head"]["sha"]: p["number"] for p in self.client.pulls(repo)}
            for run in unresolved:
                resolved[run.id] = by_sha.get(run.head_sha)
        return resolved

    def _similar_failures(self, ctx: Context, job: Job, classification: Classification,
                          same_workflow: list[Job]) -> tuple[SimilarFailure, ...]:
        """Other failed jobs in the window with the same fingerprint (their logs are read, once)."""
        if not classification.fingerprint:
            return ()
        others = [j for j in same_workflow if j.failed and j.run_id != job.run_id and j.completed_at]
        others.sort(key=lambda j: abs((j.completed_at - job.completed_at).total_seconds()) if job.completed_at else 0)
        found = []
        for other in others[:MAX_SIMILAR_PROBES]:
            status, theirs = self.classify_job(ctx.repo, other)
            if theirs.fingerprint != classification.fingerprint:
                continue
            run = ctx.runs[other.run_id]
            on_base = not run.event.startswith("pull_request") and run.head_branch == ctx.base_ref
            found.append(SimilarFailure(ctx.pr_of_run.get(other.run_id), run.head_branch, on_base, other.run_id,
                                        other.id, other.name, other.completed_at, other.html_url))
        return tuple(found)

    def _workflow_paths(self, repo: str, workflow_paths: set[str], runs: list[Run]) -> dict[int, tuple[str, ...]]:
        """`on.pull_request.paths` of the failed jobs' workflows, read from the default branch."""
        ids = {run.workflow_path: run.workflow_id for run in runs}
        found = {}
        for path in sorted(p for p in workflow_paths if p):
            text = self.client.file_text(repo, path)
            if text is not None and path in ids:
                found[ids[path]] = pull_request_paths(text)
        return found

    def _successful_jobs(self, repo: str, run: Run) -> list[Job]:
        recent = self.client.runs(repo, workflow_id=run.workflow_id, status="success", limit=BASELINE_RUNS)
        return [job for r in recent for job in self.jobs_of(repo, r)]

    def _base_comparison(self, repo: str, base_ref: str, run: Run, job: Job) -> BaseComparison | None:
        """The same job in the newest completed run of the same workflow on the base branch."""
        for base_run in self.client.runs(repo, workflow_id=run.workflow_id, branch=base_ref, status="completed",
                                         limit=5):
            if base_run.event.startswith("pull_request"):
                continue
            twin = next((j for j in self.jobs_of(repo, base_run) if j.name == job.name), None)
            if twin is None:
                continue
            failed_tests: tuple[str, ...] = ()
            if twin.failed:
                status, classification = self.classify_job(repo, twin)
                if status is not LogStatus.AVAILABLE:
                    return None
                failed_tests = classification.failed_tests
            return BaseComparison(base_ref, base_run.id, twin.id, twin.conclusion, failed_tests, twin.html_url)
        return None


def _latest_per_workflow(runs: list[Run]) -> list[Run]:
    """The newest run per workflow and event (a PR's runs for an older push are superseded)."""
    newest: dict[tuple[int, str], Run] = {}
    for run in runs:
        key = (run.workflow_id, run.event)
        if key not in newest or run.created_at > newest[key].created_at:
            newest[key] = run
    return sorted(newest.values(), key=lambda r: r.created_at)

