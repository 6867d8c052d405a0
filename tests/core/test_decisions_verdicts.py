"""The pure triage decision, table-driven: TriageFacts (model values only) -> verdicts. No server.

Each row builds the facts of one PR with one failed job and states the verdict, whether a rerun is
recommended, and an evidence kind that must be there. The builders are shared by the other
test_decisions* modules.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from ci_triage.core.config.repo_config import RepoConfig
from ci_triage.core.decide.facts import BaseTwin, TriageFacts
from ci_triage.core.decide.policy import OutageGuard
from ci_triage.core.decide.triage import (
    failed_jobs,
    judge,
    needs_base_twin,
    needs_successful_jobs,
    pr_of_runs,
    similar_candidates,
    window_queries,
)
from ci_triage.model import (
    ChangedFile,
    Classification,
    ClassifiedLog,
    Frame,
    Job,
    LogStatus,
    PullRequest,
    Relatedness,
    RootCause,
    Run,
    Verdict,
)

T0 = datetime(2026, 5, 12, 13, 0, tzinfo=UTC)
REPO = "o/r"
NUMBER = 67
POOL = ("linux-aarch64-a2-8",)


def make_run(run_id: int, prs: tuple[int, ...] = (NUMBER,), *, attempt: int = 1, event: str = "pull_request",
             branch: str = "feature", status: str = "completed", conclusion: str | None = "failure",
             workflow_id: int = 1, head_sha: str = "head") -> Run:
    return Run(run_id, attempt, workflow_id, "NPU", ".github/workflows/npu.yml", event, status, conclusion, head_sha,
               branch, REPO, prs, T0, T0, f"https://example/run/{run_id}")


def make_job(job_id: int, run_id: int, start_min: float = 0, end_min: float = 12, *, conclusion: str = "failure",
             runner: str = "pool-node2-r0", name: str = "unit (core)", attempt: int = 1) -> Job:
    return Job(job_id, run_id, attempt, "NPU", name, "completed", conclusion, T0, T0 + timedelta(minutes=start_min),
               T0 + timedelta(minutes=end_min), runner, "Default", POOL, "head", "feature",
               f"https://example/job/{job_id}")


def classified(category: str, retryable: bool, *, fingerprint: str | None = None, failed_tests: tuple[str, ...] = (),
               frames: tuple[Frame, ...] = (), status: LogStatus = LogStatus.AVAILABLE,
               source: str = "log") -> ClassifiedLog:
    root = RootCause(40, f"{category}: the line that says so", "Run tests") if category != "unknown" else None
    return ClassifiedLog(status, Classification(category, retryable, f"rule.{category}" if root else None, root, {},
                                                frames, failed_tests, fingerprint, (), source))


def make_pull(number: int = NUMBER, changed_files_count: int | None = None) -> PullRequest:
    return PullRequest(number, "A change", "open", "author-ann", "head", "feature", "fork/r", REPO, "main", "base",
                       f"https://example/pull/{number}", changed_files_count)


def changed(*names: str) -> tuple[ChangedFile, ...]:
    return tuple(ChangedFile(n, "modified", 1, 1) for n in names)


OWN_RUN = make_run(10)
OWN_JOB = make_job(100, 10)


def make_facts(log: ClassifiedLog, *, files: tuple[ChangedFile, ...] = changed("docs/readme.md"),
               neighbours: tuple[tuple[Run, tuple[Job, ...]], ...] = (), more_logs: dict[int, ClassifiedLog] | None = None,
               base_twin: BaseTwin | None = None, pull: PullRequest | None = None,
               config: RepoConfig = RepoConfig(), run: Run = OWN_RUN, job: Job = OWN_JOB) -> TriageFacts:
    window_runs = {run.id: run, **{r.id: r for r, _ in neighbours}}
    window_jobs = (job, *(j for _, jobs in neighbours for j in jobs))
    twins = {(run.workflow_id, job.name): base_twin} if base_twin else {}
    return TriageFacts(REPO, pull or make_pull(), files, (run,), (job,), config, {job.id: log, **(more_logs or {})},
                       window_runs, window_jobs, {}, {}, {}, twins)


def contending_pr(pr: int = 66, run_id: int = 20, job_id: int = 200) -> tuple[Run, tuple[Job, ...]]:
    """Another PR's job on the same host while ours ran: the contention the policy asks for."""
    return make_run(run_id, (pr,), conclusion="success"), (make_job(job_id, run_id, 2, 14, conclusion="success",
                                                                    runner="pool-node2-r1", name="e2e (other)"),)


def same_failure_on(prs: range, fingerprint: str) -> tuple[tuple[tuple[Run, tuple[Job, ...]], ...], dict]:
    neighbours, logs = [], {}
    for index, pr in enumerate(prs):
        run_id, job_id = 30 + index, 300 + index
        neighbours.append((make_run(run_id, (pr,)), (make_job(job_id, run_id, 1, 11, runner="pool-node3-r0"),)))
        logs[job_id] = classified("network", True, fingerprint=fingerprint)
    return tuple(neighbours), logs


def the_verdict(facts: TriageFacts):
    [verdict] = judge(facts).failed_jobs
    return verdict


TEST_FAILURE = classified("test_failure", False, failed_tests=("tests/test_core.py::test_add",),
                          frames=(Frame("src/core.py", 10, "add"),), fingerprint="fp-test")
OUTAGE_NEIGHBOURS, OUTAGE_LOGS = same_failure_on(range(80, 85), "fp-net")

VERDICT_CASES = {
    # name: (facts, verdict, rerun recommended, an evidence kind that must be present)
    "infra_flake: retryable cause, unrelated change, a competing PR on the host":
        (make_facts(classified("port_in_use", True), neighbours=(contending_pr(),)), Verdict.INFRA_FLAKE, True,
         "contention"),
    "infra_flake: a lost runner's annotation stands in for the missing log":
        (make_facts(classified("runner_lost", True, status=LogStatus.MISSING, source="annotations")),
         Verdict.INFRA_FLAKE, True, "missing"),
    "pr_related: the failing stack passes through a changed file":
        (make_facts(TEST_FAILURE, files=changed("src/core.py")), Verdict.PR_RELATED, False, "relatedness"),
    "pr_related: a retryable-looking failure inside changed code":
        (make_facts(classified("network", True, frames=(Frame("src/net.py", 3, "connect"),)),
                    files=changed("src/net.py")), Verdict.PR_RELATED, False, "relatedness"),
    "pr_related: the same job passes on the base branch":
        (make_facts(TEST_FAILURE, base_twin=BaseTwin(make_run(90, (), event="push", branch="main",
                                                              conclusion="success"),
                                                     make_job(900, 90, conclusion="success"))),
         Verdict.PR_RELATED, False, "base_branch"),
    "broken_base: the same tests fail on the base branch":
        (make_facts(TEST_FAILURE, base_twin=BaseTwin(make_run(90, (), event="push", branch="main"),
                                                     make_job(900, 90), TEST_FAILURE)),
         Verdict.BROKEN_BASE, False, "base_branch"),
    "broken_base: an unexplained failure with the same fingerprint on the base branch":
        (make_facts(classified("unknown", False, fingerprint="fp-odd"),
                    neighbours=((make_run(40, (), event="push", branch="main"), (make_job(400, 40, 1, 11),)),),
                    more_logs={400: classified("unknown", False, fingerprint="fp-odd")}),
         Verdict.BROKEN_BASE, False, "base_branch"),
    "needs_review: no rule explains it":
        (make_facts(classified("unknown", False)), Verdict.NEEDS_REVIEW, False, "unclassified"),
    "needs_review: the log expired":
        (make_facts(classified("unknown", False, status=LogStatus.EXPIRED)), Verdict.NEEDS_REVIEW, False, "missing"),
    "needs_review: the log could not be read":
        (make_facts(classified("port_in_use", True, status=LogStatus.UNREADABLE)), Verdict.NEEDS_REVIEW, False,
         "missing"),
    "needs_review: an accelerator OOM with nothing competing for the device":
        (make_facts(classified("accelerator_oom", True)), Verdict.NEEDS_REVIEW, False, "no_contention"),
    "needs_review: a test failure of an unrelated change with no base run to compare":
        (make_facts(classified("test_failure", False, failed_tests=("tests/test_x.py::t",))), Verdict.NEEDS_REVIEW,
         False, "relatedness"),
    "infra_flake without a rerun: the outage guard (5 other PRs failed the same way at once)":
        (make_facts(classified("network", True, fingerprint="fp-net"), neighbours=OUTAGE_NEIGHBOURS,
                    more_logs=OUTAGE_LOGS), Verdict.INFRA_FLAKE, False, "outage"),
}


@pytest.mark.parametrize("facts,expected,rerun,evidence_kind", VERDICT_CASES.values(), ids=VERDICT_CASES.keys())
def test_verdicts(facts: TriageFacts, expected: Verdict, rerun: bool, evidence_kind: str) -> None:
    verdict = the_verdict(facts)
    assert (verdict.verdict, verdict.rerun_recommended) == (expected, rerun)
    assert evidence_kind in {e.kind for e in verdict.evidence}


def test_outage_needs_enough_prs_below_the_guard_it_reruns():
    few_neighbours, few_logs = same_failure_on(range(80, 82), "fp-net")
    facts = make_facts(classified("network", True, fingerprint="fp-net"), neighbours=few_neighbours,
                       more_logs=few_logs)
    assert the_verdict(facts).rerun_recommended
    strict = replace(facts, config=RepoConfig(outage=OutageGuard(max_failed_jobs=3, max_prs=3)))
    assert not the_verdict(strict).rerun_recommended


def test_an_incomplete_file_list_is_never_unrelated_and_the_evidence_says_so():
    listed = changed("docs/readme.md")
    complete = make_facts(classified("port_in_use", True), files=listed, pull=make_pull(changed_files_count=1))
    assert the_verdict(complete).relatedness is Relatedness.UNRELATED
    truncated = replace(complete, pull=make_pull(changed_files_count=3500))
    verdict = the_verdict(truncated)
    assert verdict.relatedness is not Relatedness.UNRELATED
    [sentence] = [e.text for e in verdict.evidence if e.kind == "relatedness"]
    assert "3500 files but GitHub lists only 1" in sentence and "cannot be called unrelated" in sentence
    assert verdict.confidence < the_verdict(complete).confidence  # "unrelated" no longer adds confidence


def test_a_test_failure_of_an_incomplete_file_list_is_not_waved_through_as_needs_review():
    facts = make_facts(classified("test_failure", False, failed_tests=("tests/test_x.py::t",)),
                       pull=make_pull(changed_files_count=4000))
    assert the_verdict(facts).verdict is Verdict.PR_RELATED


def test_a_neighbours_log_that_was_not_gathered_is_not_evidence():
    neighbours, _ = same_failure_on(range(80, 85), "fp-net")
    facts = make_facts(classified("network", True, fingerprint="fp-net"), neighbours=neighbours)  # no logs of theirs
    assert the_verdict(facts).facts.similar_failures == ()


# --- the selectors that tell the shell what to gather -----------------------------------------------

def test_selectors_ask_for_exactly_what_the_decision_reads():
    facts = make_facts(TEST_FAILURE, neighbours=(contending_pr(),))
    assert failed_jobs(facts) == [(OWN_RUN, OWN_JOB)]
    assert window_queries(facts) == {1: "2026-05-12T10:00:00Z..2026-05-12T15:12:00Z"}  # 3 h before, 2 h after
    assert needs_base_twin(facts) == [(OWN_RUN, OWN_JOB)]  # a test failure: compare with the base branch
    assert needs_successful_jobs(facts) == {1}  # one sample of the job in the window is no baseline
    assert needs_base_twin(make_facts(classified("port_in_use", True))) == []


def test_excluded_jobs_are_not_gathered_or_judged():
    facts = make_facts(classified("port_in_use", True), config=RepoConfig(exclude_jobs=("unit *",)))
    assert failed_jobs(facts) == [] and judge(facts).failed_jobs == ()


def test_similar_candidates_are_the_nearest_failed_jobs_of_other_runs_and_need_a_fingerprint():
    neighbours, _ = same_failure_on(range(80, 83), "fp-net")
    with_fp = make_facts(classified("network", True, fingerprint="fp-net"), neighbours=neighbours)
    assert [j.id for j in similar_candidates(with_fp, OWN_RUN, OWN_JOB)] == [300, 301, 302]
    without = make_facts(classified("network", True), neighbours=neighbours)
    assert similar_candidates(without, OWN_RUN, OWN_JOB) == []


def test_fork_runs_get_their_pr_from_the_head_sha_and_the_prs_own_runs_are_its_own():
    fork_run = make_run(50, (), head_sha="fork-head")
    facts = replace(make_facts(classified("port_in_use", True), neighbours=((fork_run, ()),)),
                    pull_heads={"fork-head": 71})
    assert pr_of_runs(facts) == {10: NUMBER, 50: 71}


def test_a_job_that_ran_to_its_workflows_timeout_minutes_is_a_job_timeout_whatever_its_log_says():
    ran_30_min = make_job(100, 10, 0, 30.2)
    silent = classified("unknown", False)
    at_limit = replace(make_facts(silent, job=ran_30_min), timeout_limits={100: 30.0})
    verdict = the_verdict(at_limit)
    assert verdict.facts.classification.category == "job_timeout"
    assert verdict.facts.classification.captures["limit"] == "30 minutes"
    # The limit the job ran with was longer (or unknown): the silent log stays unexplained.
    for limits in ({100: 60.0}, {100: None}, {}):
        assert the_verdict(replace(at_limit, timeout_limits=limits)).facts.classification.category == "unknown"
    # A rule's own finding is kept: the timeout may be its consequence.
    found = replace(make_facts(classified("port_in_use", True), job=ran_30_min), timeout_limits={100: 30.0})
    assert the_verdict(found).facts.classification.category == "port_in_use"


def test_a_resemblance_is_a_hint_in_the_evidence_never_a_reason_to_rerun():
    # No rule explains the log; its root-cause line resembles the network rules' examples.
    log = classified("unknown", False)
    hinted = replace(log, classification=replace(
        log.classification, root_cause=RootCause(40, "download of model weights stalled: socket read timeout", "Run"),
        resembles="network", resembling_words=("read", "socket")))
    verdict = the_verdict(make_facts(hinted))
    assert (verdict.verdict, verdict.rerun_recommended) == (Verdict.NEEDS_REVIEW, False)
    said = {e.kind: e.text for e in verdict.evidence}
    assert "resembles a network failure: read, socket; a hint, not evidence" in said["unclassified"]
    assert said["root_cause"].startswith("Root cause (unknown; resembles network) at line 40")
