"""Use cases: gather what GitHub knows about a PR's failures, hand it to the pure core, return a report.

fetch -> parse -> classify -> correlate -> relate -> decide. The store makes repeat work cheap:
jobs of a completed run attempt and the logs of completed jobs are fetched once, ever.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta

from ci_triage.core import timeline
from ci_triage.core.annotations import classify_annotations
from ci_triage.core.classify import classify, focus_on_test
from ci_triage.core.logparse import parse_log
from ci_triage.core.policy import Policy, decide
from ci_triage.core.rules import RuleSet, builtin_rules
from ci_triage.github.client import GitHubClient
from ci_triage.model import (
    BaseComparison,
    Classification,
    Job,
    JobFacts,
    LogStatus,
    PullReport,
    Run,
)
from ci_triage.store import Store

Progress = Callable[[str, int, int], None]  # (what, done, total)
# The job name of workflows/d2t-contract.yml; its result on the PR head is shown beside the triage.
CONTRACT_JOBS = frozenset({"d2t-contract"})


def _no_progress(what: str, done: int, total: int) -> None:
    pass


@dataclass(frozen=True)
class Window:
    """How far around a failed job to look for neighbours and for jobs after the queue drained."""

    before: timedelta = timedelta(hours=3)
    after: timedelta = timedelta(hours=2)
    later_passed: timedelta = timedelta(hours=2)
    baseline_runs: int = 10


class Triage:
    def __init__(
        self,
        client: GitHubClient,
        store: Store,
        rules: RuleSet | None = None,
        policy: Policy | None = None,
        window: Window | None = None,
        progress: Progress = _no_progress,
    ) -> None:
        self.client = client
        self.store = store
        self.rules = rules or builtin_rules()
        self.policy = policy or Policy()
        self.window = window or Window()
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
        classification = classify(list(parse_log(text or "", job.steps)), self.rules)
        if status is not LogStatus.AVAILABLE or classification.category == "unknown":
            # The log is missing or silent: GitHub's annotations on the job may still say why.
            from_annotations = classify_annotations(self.annotations_of(repo, job), job.conclusion, self.rules)
            if from_annotations is not None:
                classification = from_annotations
        return status, classification

    # --- the report ---------------------------------------------------------------------------
    def report(self, repo: str, number: int) -> PullReport:
        self.client.check_repository(repo)
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
        failed = [(run, job) for run, job in own_jobs if job.failed]

        notes: list[str] = []
        classified = {}
        for index, (run, job) in enumerate(failed):
            self.progress("logs of failed jobs", index, len(failed))
            classified[job.id] = self.classify_job(repo, job)

        neighbours, neighbour_runs = self._neighbours(repo, failed)
        pr_of_run = self._resolve_prs(repo, neighbour_runs.values())
        pr_of_run.update({run.id: number for run in runs})
        timeline_jobs = [job for job in neighbours]

        verdicts = []
        for run, job in failed:
            status, classification = classified[job.id]
            if status is LogStatus.AVAILABLE:
                self.store.save_failure(repo, job, number, classification)
            same_workflow = [j for j in neighbours if neighbour_runs[j.run_id].workflow_id == run.workflow_id]
            overlapping = timeline.overlapping_jobs(job, same_workflow, neighbour_runs, pr_of_run)
            later = timeline.later_jobs_passed(job, same_workflow, neighbour_runs,
                                               self.window.later_passed.total_seconds(), pr_of_run)
            baseline_jobs = [j for j in same_workflow if j.name == job.name]
            baseline = timeline.duration_baseline(job.name, baseline_jobs)
            if baseline is None or baseline.samples < 3:
                baseline = timeline.duration_baseline(job.name, baseline_jobs + self._successful_jobs(repo, run))
            in_flight = tuple(sorted({o.pr for o in overlapping if o.pr is not None and o.pr != number}))
            base = None
            if classification.category in ("test_failure", "import_error"):
                base = self._base_comparison(repo, pull.base_ref, run, job)
                new_failures = [t for t in classification.failed_tests if base and t not in base.failed_tests]
                if base and base.failed_tests and new_failures:
                    classification = focus_on_test(classification, new_failures[0])
            facts = JobFacts(job, run, status, classification, overlapping, in_flight, later, baseline, base)
            verdicts.append(decide(facts, tuple(changed), self.policy))

        if any(timeline.host_of(j.runner_name) != j.runner_name for _, j in failed):
            notes.append(timeline.HOST_ASSUMPTION)
        all_runs = {**neighbour_runs, **{r.id: r for r in runs}}
        contract_checks = tuple(job for _, job in own_jobs if job.name in CONTRACT_JOBS)
        return PullReport(repo=repo, pull=pull, changed_files=tuple(changed), runs=tuple(runs),
                          failed_jobs=tuple(verdicts), timeline_jobs=tuple(timeline_jobs),
                          runs_by_id=all_runs, notes=tuple(notes), contract_checks=contract_checks,
                          pr_of_run=pr_of_run)

    # --- correlation --------------------------------------------------------------------------
    def _neighbours(self, repo: str, failed: list[tuple[Run, Job]]) -> tuple[list[Job], dict[int, Run]]:
        """Jobs of every run of the failed jobs' workflows created in the window around them."""
        jobs: list[Job] = []
        runs: dict[int, Run] = {}
        by_workflow: dict[int, list[Job]] = {}
        for run, job in failed:
            by_workflow.setdefault(run.workflow_id, []).append(job)
        for workflow_id, failed_jobs in by_workflow.items():
            starts = [j.started_at or j.created_at for j in failed_jobs]
            ends = [j.completed_at or j.started_at or j.created_at for j in failed_jobs]
            low = min(starts) - self.window.before
            high = max(ends) + self.window.after
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

    def _successful_jobs(self, repo: str, run: Run) -> list[Job]:
        recent = self.client.runs(repo, workflow_id=run.workflow_id, status="success",
                                  limit=self.window.baseline_runs)
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
