"""The pure rerun decision, table-driven: a report, the sticky comment's state and GitHub's run state ->
a rerun plan, with the reason for every refusal. No server."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ci_triage.core.decide.actions import (
    BOT_EXTRA_RERUNS,
    plan_command,
    plan_run,
    plan_run_event,
    pr_of_run,
    rerun_overtaken,
)
from ci_triage.core.decide.comment_state import CommentState, RerunRecord
from ci_triage.core.decide.triage import judge
from ci_triage.core.github.convert import run_from_payload
from ci_triage.model import LogStatus, PullReport
from tests.core.test_decisions_verdicts import (
    NUMBER,
    OUTAGE_LOGS,
    OUTAGE_NEIGHBOURS,
    OWN_JOB,
    OWN_RUN,
    TEST_FAILURE,
    changed,
    classified,
    contending_pr,
    make_facts,
    make_job,
    make_run,
)

FLAKE = classified("port_in_use", True)


def report_of(log=FLAKE, *, run=OWN_RUN, extra_failed: dict | None = None, **facts_options) -> PullReport:
    """A report of one run; `extra_failed` adds more failed jobs of that run (job id -> log)."""
    facts = make_facts(log, run=run, job=replace(OWN_JOB, run_id=run.id), **facts_options)
    if extra_failed:
        jobs = tuple(make_job(job_id, run.id, name=f"unit ({job_id})") for job_id in extra_failed)
        facts = replace(facts, jobs=facts.jobs + jobs, window_jobs=facts.window_jobs + jobs,
                        logs={**facts.logs, **extra_failed})
    return judge(facts)


def rerun_by(attempt: int, by: str = "auto") -> CommentState:
    return CommentState().with_rerun(RerunRecord(OWN_RUN.id, attempt, (OWN_JOB.id,), "failed",
                                                 "2026-05-12T14:00:00+00:00", by, "port_in_use"))


CONTENDED = {"neighbours": (contending_pr(),)}
PLAN_CASES = {
    # name: (report, run as GitHub shows it, state, mode, job ids, a phrase of the reason)
    "every failed job is an infra flake: rerun-failed-jobs":
        (report_of(**CONTENDED), OWN_RUN, CommentState(), "failed", (100,), "rerun, verdict infra_flake"),
    "mixed jobs: only the infra flake, alone":
        (report_of(extra_failed={101: classified("unknown", False)}, **CONTENDED), OWN_RUN, CommentState(), "jobs",
         (100,), "unit (101): not rerun, verdict needs_review"),
    "attempt cap: attempt 2 after one automatic rerun":
        (report_of(run=replace(OWN_RUN, attempt=2)), replace(OWN_RUN, attempt=2), CommentState(), "none", (),
         "allows 1 automatic rerun(s)"),
    "missing log: no rerun on incomplete evidence":
        (report_of(classified("port_in_use", True, status=LogStatus.UNREADABLE)), OWN_RUN, CommentState(), "none", (),
         "incomplete evidence"),
    "expired log":
        (report_of(classified("unknown", False, status=LogStatus.EXPIRED)), OWN_RUN, CommentState(), "none", (),
         "log is expired"),
    "outage guard: an infra flake not recommended for a rerun":
        (report_of(classified("network", True, fingerprint="fp-net"), neighbours=OUTAGE_NEIGHBOURS,
                   more_logs=OUTAGE_LOGS), OWN_RUN, CommentState(), "none", (), "rerun not recommended"),
    "not retryable: a test failure":
        (report_of(TEST_FAILURE, files=changed("src/core.py")), OWN_RUN, CommentState(), "none", (),
         "verdict pr_related"),
    "already rerun: the sticky comment records attempt 1 as rerun":
        (report_of(), OWN_RUN, rerun_by(1), "none", (), "already rerun"),
    "still running":
        (report_of(), replace(OWN_RUN, status="in_progress", conclusion=None), CommentState(), "none", (),
         "still in_progress"),
    "cancelled":
        (report_of(), replace(OWN_RUN, conclusion="cancelled"), CommentState(), "none", (), "cancelled"),
    "succeeded":
        (report_of(), replace(OWN_RUN, conclusion="success"), CommentState(), "none", (), "succeeded"),
}


@pytest.mark.parametrize("report,run,state,mode,job_ids,reason", PLAN_CASES.values(), ids=PLAN_CASES.keys())
def test_automatic_rerun_plans(report, run, state, mode, job_ids, reason):
    plan = plan_run_event(report, run, state, max_auto_reruns=1)
    assert (plan.mode, plan.job_ids) == (mode, job_ids)
    assert any(reason in r for r in plan.reasons), plan.reasons


def test_missing_evidence_is_named():
    plan = plan_run_event(report_of(classified("port_in_use", True, status=LogStatus.EXPIRED)), OWN_RUN,
                          CommentState(), 1)
    assert plan.missing == ("unit (core): log expired",)


def test_a_rerun_by_another_invocation_of_a_later_attempt_also_counts():
    assert plan_run(OWN_RUN, [], rerun_by(3), 5).mode == "none"  # a record at or past this attempt
    assert plan_run_event(report_of(**CONTENDED), replace(OWN_RUN, attempt=2), rerun_by(1), 2).mode == "failed"


def test_force_lifts_the_verdict_filter_but_never_the_state_or_evidence_checks():
    related = report_of(TEST_FAILURE, files=changed("src/core.py"))
    assert plan_run(OWN_RUN, related.failed_jobs, CommentState(), 3, force=True).mode == "failed"
    assert plan_run(OWN_RUN, related.failed_jobs, rerun_by(1), 3, force=True).mode == "none"
    assert plan_run(replace(OWN_RUN, conclusion="cancelled"), related.failed_jobs, CommentState(), 3,
                    force=True).mode == "none"
    missing = report_of(classified("port_in_use", True, status=LogStatus.MISSING))
    assert plan_run(OWN_RUN, missing.failed_jobs, CommentState(), 3, force=True).mode == "none"


def test_a_rerun_command_goes_further_than_the_automatic_cap_and_skips_green_runs():
    third = replace(OWN_RUN, attempt=1 + 1 + BOT_EXTRA_RERUNS - 1)  # the last attempt /rerun may still rerun
    report = report_of(run=third, **CONTENDED)
    [plan] = plan_command(report, CommentState(), max_auto_reruns=1, force=False)
    assert plan.mode == "failed" and plan_run_event(report, third, CommentState(), 1).mode == "none"
    past = replace(OWN_RUN, attempt=third.attempt + 1)
    [refused] = plan_command(report_of(run=past), CommentState(), 1, force=False)
    assert refused.mode == "none" and "/rerun rerun(s)" in refused.reasons[0]
    green = replace(report, runs=(replace(third, conclusion="success"),), failed_jobs=())
    assert plan_command(green, CommentState(), 1, force=False) == []  # nothing to rerun


def test_a_rerun_overtaken_by_someone_else_is_not_repeated():
    assert rerun_overtaken(OWN_RUN, OWN_RUN) is None
    assert "rerun meanwhile" in rerun_overtaken(OWN_RUN, replace(OWN_RUN, attempt=2))
    assert "rerun meanwhile" in rerun_overtaken(OWN_RUN, replace(OWN_RUN, status="queued", conclusion=None))


def test_the_pr_of_a_fork_run_is_found_by_head_sha():
    fork = make_run(11, (), head_sha="abc")
    assert pr_of_run(fork, [{"number": 5, "head": {"sha": "zzz"}}, {"number": 71, "head": {"sha": "abc"}}]) == 71
    assert pr_of_run(fork, []) is None
    assert pr_of_run(OWN_RUN, [{"number": 71, "head": {"sha": "head"}}]) == NUMBER


# A run's REST `pull_requests` entry as GitHub's OpenAPI examples write it (@octokit/openapi 23.0.2,
# components/examples/check-run, pull_requests[0]): a PR into repository id 526 (github/hello-world).
FOREIGN_PR = {"url": "https://api.github.com/repos/github/hello-world/pulls/1", "id": 1934, "number": 3956,
              "head": {"ref": "say-hello", "sha": "3dca65fa3e8d4b3da3f3d056c59aee1c50f41390",
                       "repo": {"id": 526, "url": "https://api.github.com/repos/github/hello-world",
                                "name": "hello-world"}},
              "base": {"ref": "master", "sha": "e7fdf7640066d71ad16a86fbcbb9c6a10a18af4f",
                       "repo": {"id": 526, "url": "https://api.github.com/repos/github/hello-world",
                                "name": "hello-world"}}}


def _run_payload(pull_requests: list[dict]) -> dict:
    own = {"id": 1296269, "url": "https://api.github.com/repos/octocat/Hello-World", "name": "Hello-World"}
    return {"id": 30433642, "run_attempt": 1, "workflow_id": 159038, "name": "Build", "path": ".github/workflows/b.yml",
            "event": "pull_request", "status": "completed", "conclusion": "failure", "head_sha": "acb5820",
            "head_branch": "feature", "head_repository": None, "created_at": "2020-01-22T19:33:08Z",
            "updated_at": "2020-01-22T19:33:08Z", "html_url": "https://github.com/octocat/Hello-World/actions/runs/1",
            "repository": {**own, "full_name": "octocat/Hello-World"}, "pull_requests": pull_requests,
            "_own": own}


def test_a_runs_prs_of_other_repositories_are_dropped_before_the_pr_is_chosen():
    payload = _run_payload([])
    own_pr = {**FOREIGN_PR, "number": 67, "base": {**FOREIGN_PR["base"], "repo": payload.pop("_own")}}
    payload["pull_requests"] = [FOREIGN_PR, own_pr]  # GitHub's order: the foreign one first
    run = run_from_payload(payload)
    assert run.pr_numbers == (67,)
    assert pr_of_run(run) == 67
    only_foreign = {**payload, "pull_requests": [FOREIGN_PR]}
    assert run_from_payload(only_foreign).pr_numbers == ()  # then the head SHA decides, as for a fork
