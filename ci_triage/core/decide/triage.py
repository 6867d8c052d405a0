"""TriageFacts -> PullReport: correlate, relate and decide every failed job of a PR. Pure.

The selectors below (`failed_jobs`, `window_queries`, `unresolved_runs`, `needs_successful_jobs`,
`needs_base_twin`, `similar_candidates`) tell the shell what to gather; `judge` reads only what was
gathered. Both use the same functions, so the shell never fetches by a rule the decision does not use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.core.config.repo_config import matches_job, owned_paths
from ci_triage.core.decide.facts import TriageFacts
from ci_triage.core.decide.policy import decide
from ci_triage.core.evidence.hosts import HOST_ASSUMPTION, host_of
from ci_triage.core.evidence.neighbours import neighbour_hints
from ci_triage.core.evidence.relate import Relation, relate
from ci_triage.core.evidence.window import WindowEvidence, baselines, correlate_window
from ci_triage.core.logs.classify import focus_on_test
from ci_triage.core.logs.job_limits import apply_job_timeout
from ci_triage.model import (
    BaseComparison,
    Classification,
    Evidence,
    Job,
    JobFacts,
    JobVerdict,
    LogStatus,
    PullReport,
    Relatedness,
    Run,
    SimilarFailure,
)

# The job name of workflows/d2t-contract.yml; its result on the PR head is shown beside the triage.
CONTRACT_JOBS = frozenset({"d2t-contract"})
# Failed jobs of other runs in the window whose logs are read to find the same failure elsewhere.
MAX_SIMILAR_PROBES = 20
LATER_PASSED_WINDOW = timedelta(hours=2)
BASELINE_RUNS = 10  # recent successful runs read when the window has too few for a duration baseline
MIN_BASELINE_SAMPLES = 3
BASE_RUNS = 5  # newest completed base-branch runs searched for a twin of a failed job


# --- what to gather ---------------------------------------------------------------------------------
def latest_per_workflow(runs: Iterable[Run]) -> list[Run]:
    """The newest pull_request run per workflow and event: a PR's runs for an older push are superseded.
    Runs of forks carry no pull_requests, so the head SHA (the caller's query) is what ties them to the PR."""
    newest: dict[tuple[int, str], Run] = {}
    for run in runs:
        if not run.event.startswith("pull_request"):
            continue
        key = (run.workflow_id, run.event)
        if key not in newest or run.created_at > newest[key].created_at:
            newest[key] = run
    return sorted(newest.values(), key=lambda r: r.created_at)


def failed_jobs(facts: TriageFacts) -> list[tuple[Run, Job]]:
    """The PR's failed jobs that the repository's config lets ci-triage look at, in run order."""
    runs = {run.id: run for run in facts.runs}
    return [(runs[job.run_id], job) for job in facts.jobs
            if job.run_id in runs and job.failed and matches_job(facts.config, job.name)]


def window_queries(facts: TriageFacts) -> dict[int, str]:
    """Workflow id -> the `created` range (GitHub's search syntax) of runs around its failed jobs."""
    by_workflow: dict[int, list[Job]] = {}
    for run, job in failed_jobs(facts):
        by_workflow.setdefault(run.workflow_id, []).append(job)
    before = timedelta(hours=facts.config.window_before_hours)
    after = timedelta(hours=facts.config.window_after_hours)
    queries = {}
    for workflow_id, jobs in by_workflow.items():
        low = min(j.started_at or j.created_at for j in jobs) - before
        high = max(j.completed_at or j.started_at or j.created_at for j in jobs) + after
        queries[workflow_id] = f"{_search_time(low)}..{_search_time(high)}"
    return queries


def _search_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def unresolved_runs(runs: Iterable[Run]) -> list[Run]:
    """PR runs that name no PR (runs of forks): the shell lists recent PRs to match their head SHA."""
    return [run for run in runs if not run.pr_numbers and run.event.startswith("pull_request")]


def pr_of_runs(facts: TriageFacts) -> dict[int, int | None]:
    """The PR number of every run in the report; the PR's own runs are this PR's."""
    resolved: dict[int, int | None] = {}
    for run in facts.window_runs.values():
        if run.pr_numbers:
            resolved[run.id] = run.pr_numbers[0]
        elif run.event.startswith("pull_request"):
            resolved[run.id] = facts.pull_heads.get(run.head_sha)
        else:
            resolved[run.id] = None
    resolved.update({run.id: facts.number for run in facts.runs})
    return resolved


def _same_workflow(facts: TriageFacts, run: Run) -> list[Job]:
    return [j for j in facts.window_jobs
            if j.run_id in facts.window_runs and facts.window_runs[j.run_id].workflow_id == run.workflow_id]


def needs_successful_jobs(facts: TriageFacts) -> set[int]:
    """Workflows with a failed job whose window holds too few runs of it for a duration baseline."""
    failed = failed_jobs(facts)
    found = baselines([(run.workflow_id, job.name) for run, job in failed], facts.window_jobs, facts.window_runs)
    return {run.workflow_id for (run, _), baseline in zip(failed, found)
            if baseline is None or baseline.samples < MIN_BASELINE_SAMPLES}


def needs_base_twin(facts: TriageFacts) -> list[tuple[Run, Job]]:
    """Failed jobs whose failure is a test or build failure: only the base branch tells old from new."""
    return [(run, job) for run, job in failed_jobs(facts)
            if job.id in facts.logs and facts.logs[job.id].classification.category in NEVER_RETRYABLE]


def find_twin(jobs: Iterable[Job], job_name: str) -> Job | None:
    return next((j for j in jobs if j.name == job_name), None)


def _base_comparison(facts: TriageFacts, run: Run, job: Job) -> BaseComparison | None:
    twin = facts.base_twins.get((run.workflow_id, job.name))
    if twin is None:
        return None
    failed_tests: tuple[str, ...] = ()
    if twin.job.failed:
        if twin.log is None or twin.log.status is not LogStatus.AVAILABLE:
            return None  # a twin whose log was not read says nothing about which tests fail on the base
        failed_tests = twin.log.classification.failed_tests
    return BaseComparison(facts.pull.base_ref, twin.run.id, twin.job.id, twin.job.conclusion, failed_tests,
                          twin.job.html_url)


def _focused(facts: TriageFacts, run: Run, job: Job) -> tuple[Classification, BaseComparison | None]:
    """The job's classification, its root cause moved to the first test the base branch does not fail."""
    # A job that ran to its workflow's timeout-minutes was stopped by it, whatever its log says.
    classification = apply_job_timeout(facts.logs[job.id].classification, job.duration_s,
                                       facts.timeout_limits.get(job.id))
    if classification.category not in NEVER_RETRYABLE:
        return classification, None
    base = _base_comparison(facts, run, job)
    new_failures = [t for t in classification.failed_tests if base and t not in base.failed_tests]
    if base and base.failed_tests and new_failures:
        classification = focus_on_test(classification, new_failures[0])
    return classification, base


def similar_candidates(facts: TriageFacts, run: Run, job: Job) -> list[Job]:
    """Failed jobs of other runs of the workflow, nearest in time first, whose logs may show the same failure."""
    classification, _ = _focused(facts, run, job)
    if not classification.fingerprint:
        return []
    others = [j for j in _same_workflow(facts, run) if j.failed and j.run_id != job.run_id and j.completed_at]
    others.sort(key=lambda j: abs((j.completed_at - job.completed_at).total_seconds()) if job.completed_at else 0)
    return others[:MAX_SIMILAR_PROBES]


# --- the decision -----------------------------------------------------------------------------------
def _similar_failures(facts: TriageFacts, run: Run, job: Job, classification: Classification,
                      pr_of_run: dict[int, int | None]) -> tuple[SimilarFailure, ...]:
    found = []
    for other in similar_candidates(facts, run, job):
        theirs = facts.logs.get(other.id)
        if theirs is None or theirs.classification.fingerprint != classification.fingerprint:
            continue
        other_run = facts.window_runs[other.run_id]
        on_base = not other_run.event.startswith("pull_request") and other_run.head_branch == facts.pull.base_ref
        found.append(SimilarFailure(pr_of_run.get(other.run_id), other_run.head_branch, on_base, other.run_id,
                                    other.id, other.name, other.completed_at, other.html_url))
    return tuple(found)


def changed_files_incomplete(facts: TriageFacts) -> bool:
    count = facts.pull.changed_files_count
    return count is not None and count > len(facts.changed_files)


def correlate_failed(facts: TriageFacts, failed: list[tuple[Run, Job]],
                     pr_of_run: dict[int, int | None]) -> list[WindowEvidence]:
    """Each failed job against the jobs of its workflow's runs in the window, in one pass of the engine."""
    config = facts.config
    return correlate_window(failed, facts.window_jobs, facts.window_runs, pr_of_run,
                            later_window_s=LATER_PASSED_WINDOW.total_seconds(),
                            host_pattern=re.compile(config.host_pattern) if config.host_pattern else None,
                            min_baseline_samples=MIN_BASELINE_SAMPLES, more_baseline_jobs=facts.successful_jobs)


def judge_job(facts: TriageFacts, run: Run, job: Job, pr_of_run: dict[int, int | None],
              window: WindowEvidence) -> JobVerdict:
    """One failed job's verdict; `window` is its evidence from correlate_failed."""
    config = facts.config
    overlapping, in_flight, later, baseline = (window.overlapping, window.in_flight_prs, window.later_passed,
                                               window.baseline)
    log = facts.logs[job.id]
    classification, base = _focused(facts, run, job)
    similar = _similar_failures(facts, run, job, classification, pr_of_run)
    hints = neighbour_hints(classification.root_cause.text if classification.root_cause else None)
    job_facts = JobFacts(job, run, log.status, classification, overlapping, in_flight, later, baseline, base,
                         similar, hints, log.step_first_lines)
    relation = relate(job.name, classification.frames, classification.failed_tests, facts.changed_files,
                      owned_paths(config, job.name), facts.workflow_paths.get(run.workflow_id, ()))
    listed = len(facts.changed_files)
    unlisted = changed_files_incomplete(facts) and relation[0] is Relatedness.UNRELATED
    if unlisted:
        # The unlisted files may be exactly the ones this job runs: absence from a partial list proves nothing.
        relation = Relation(Relatedness.POSSIBLY_RELATED, ())
    verdict = decide(job_facts, relation, listed, config.policy, config.outage)
    return _note_unlisted_files(verdict, listed, facts.pull.changed_files_count or 0) if unlisted else verdict


def _note_unlisted_files(verdict: JobVerdict, listed: int, total: int) -> JobVerdict:
    """Replace the stock relatedness sentence (it speaks of listed files only) with what is known."""
    note = Evidence("relatedness", f"The PR changes {total} files but GitHub lists only {listed} of them, so this "
                                   "failure cannot be called unrelated to the change.")
    evidence = tuple(note if item.kind == "relatedness" else item for item in verdict.evidence)
    return replace(verdict, evidence=evidence if note in evidence else (*evidence, note))


def judge(facts: TriageFacts) -> PullReport:
    """The report: a verdict for every failed job the config covers, and what the reader should know."""
    failed = failed_jobs(facts)
    pr_of_run = pr_of_runs(facts)
    evidence = correlate_failed(facts, failed, pr_of_run)
    verdicts = tuple(judge_job(facts, run, job, pr_of_run, window) for (run, job), window in zip(failed, evidence))
    notes: list[str] = []
    if facts.config.host_pattern is None and any(host_of(j.runner_name) != j.runner_name for _, j in failed):
        notes.append(HOST_ASSUMPTION)
    all_runs = {**facts.window_runs, **{r.id: r for r in facts.runs}}
    contract_checks = tuple(job for job in facts.jobs if job.name in CONTRACT_JOBS)
    return PullReport(repo=facts.repo, pull=facts.pull, changed_files=facts.changed_files, runs=facts.runs,
                      failed_jobs=verdicts, timeline_jobs=facts.window_jobs, runs_by_id=all_runs,
                      notes=tuple(notes), host_pattern=facts.config.host_pattern, contract_checks=contract_checks,
                      pr_of_run=pr_of_run)

