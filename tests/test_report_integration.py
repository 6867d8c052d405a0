"""The whole report through the real PyGithub/httpx clients against the local fake, in-process."""

from __future__ import annotations

import re

import pytest

from ci_triage.model import LogStatus, Verdict
from ci_triage.service import Triage
from ci_triage.store import Store
from tests.conftest import DEMO_REPO

EXPECTED = {
    66: ("vllm-example (eagle3)", "port_in_use", Verdict.INFRA_FLAKE, True, "36693"),
    67: ("vllm-example (eagle3)", "port_in_use", Verdict.INFRA_FLAKE, True, "35191"),
    68: ("vllm-example (dspark)", "port_in_use", Verdict.INFRA_FLAKE, True, "38527"),
    70: ("vllm-example (dflash)", "port_in_use", Verdict.INFRA_FLAKE, True, "39403"),
    71: ("cpu-unit-tests", "test_failure", Verdict.BROKEN_BASE, False, None),
    72: ("cpu-unit-tests", "test_failure", Verdict.PR_RELATED, False, None),
}


@pytest.mark.parametrize("pr", sorted(EXPECTED))
def test_demo_verdicts(pr, client, store):
    report = Triage(client, store).report(DEMO_REPO, pr)
    assert len(report.failed_jobs) == 1
    [verdict] = report.failed_jobs
    name, category, expected_verdict, rerun, port = EXPECTED[pr]
    assert verdict.facts.job.name == name
    assert verdict.facts.classification.category == category
    assert verdict.verdict is expected_verdict
    assert verdict.rerun_recommended is rerun
    assert verdict.facts.classification.captures.get("port") == port


def test_pr_67_evidence_matches_the_seed_argument(client, store):
    [verdict] = Triage(client, store).report(DEMO_REPO, 67).failed_jobs
    facts = verdict.facts
    # Fork PRs' runs carry no pull_requests; the neighbours are still named by PR number.
    assert set(facts.in_flight_prs) == {66, 68}
    same_host = [o for o in facts.overlapping_jobs if o.same_host]
    assert {o.pr for o in same_host} == {66}
    assert facts.baseline.samples >= 3 and 16 * 60 < facts.baseline.median_s < 18.5 * 60
    assert 11 * 60 < facts.job.duration_s < 13 * 60
    assert facts.later_jobs_passed
    kinds = [e.kind for e in verdict.evidence]
    assert kinds[:2] == ["root_cause", "relatedness"]
    assert {"contention", "queue_drained", "died_early"} <= set(kinds)
    assert verdict.related_changed_files == ("verl_speco/models/eagle/llama_eagle.py",)
    assert [f.path for f in facts.classification.frames if f.package is None] == [
        "examples/npu/vllm_rollout_example.py", "examples/npu/vllm_rollout_example.py",
        "verl_speco/rollout/vllm_rollout.py"]


def test_second_report_fetches_no_completed_run_job_or_log_again(fake, client, tmp_path):
    path = tmp_path / "store.sqlite3"
    with Store(path) as store:
        Triage(client, store).report(DEMO_REPO, 67)
    first = fake.served()
    first_jobs = [r for r in first if r.path.endswith("/jobs")]
    first_logs = [r for r in first if r.path.endswith("/logs")]
    assert first_jobs and first_logs
    fake.reset_log()
    with Store(path) as store:
        Triage(client, store).report(DEMO_REPO, 67)
    second = fake.served()
    assert [r.path for r in second if r.path.endswith("/jobs") or r.path.endswith("/logs")] == []
    assert fake.served("logs") == []
    # What may still change is asked again: the PR, the lists of runs (new runs, new attempts), and
    # the default branch's config and workflow files.
    changeable = (r"/repos/[^/]+/[^/]+$", r"/pulls/\d+$", r"/pulls$", r"/actions(/workflows/\d+)?/runs$",
                  r"/contents/")
    assert all(any(re.search(p, r.path) for p in changeable) for r in second), [r.path for r in second]
    assert len(second) < len(first) / 2


def test_the_token_never_reaches_the_log_host(fake, client, store):
    Triage(client, store).report(DEMO_REPO, 67)
    assert fake.served("logs")
    assert all(not r.authorization for r in fake.served("logs"))
    assert all(r.authorization for r in fake.served("api"))


def test_requests_follow_github_conventions(fake, client, store):
    Triage(client, store).report(DEMO_REPO, 68)
    listed = [r for r in fake.served() if r.path.endswith(("/runs", "/jobs", "/files", "/pulls"))]
    assert listed and all(r.query.get("per_page") == ["100"] for r in listed)


def test_expired_log_is_missing_evidence_and_blocks_the_rerun(fake, client, store):
    fake.inject("GET", r"/actions/jobs/\d+/logs$", 410, times=5)
    [verdict] = Triage(client, store).report(DEMO_REPO, 67).failed_jobs
    assert verdict.facts.log_status is LogStatus.EXPIRED
    assert verdict.verdict is Verdict.NEEDS_REVIEW and not verdict.rerun_recommended


def test_a_log_download_that_keeps_failing_is_not_cached(fake, client, store):
    fake.inject("GET", r"/actions/jobs/\d+/logs$", 503, times=2)
    [verdict] = Triage(client, store).report(DEMO_REPO, 67).failed_jobs
    assert verdict.facts.log_status is LogStatus.UNREADABLE and not verdict.rerun_recommended
    assert store.log(DEMO_REPO, verdict.facts.job.id) is None
    [again] = Triage(client, store).report(DEMO_REPO, 67).failed_jobs
    assert again.facts.log_status is LogStatus.AVAILABLE and again.rerun_recommended


def _case_with(demo_case, job_id: int, *, log: bool, annotation: str | None, conclusion: str | None = None):
    import copy

    from ci_triage.demo import payloads

    case = copy.deepcopy(demo_case)
    if not log:
        del case["logs"][str(job_id)]
    job = next(j for j in case["jobs"] if j["id"] == job_id)
    if conclusion:
        job["conclusion"] = conclusion
    if annotation:
        case["annotations"][str(job_id)] = [payloads.annotation(DEMO_REPO, job["head_sha"], annotation)]
    return case


def _failed_job_of_67(client, store):
    [verdict] = Triage(client, store).report(DEMO_REPO, 67).failed_jobs
    return verdict.facts.job.id


RUNNER_LOST = ("The self-hosted runner: linux-aarch64-a2-8-node2-r1 lost communication with the server. Verify the "
               "machine is running and has a healthy network connection.")


def test_runner_lost_without_a_log_is_read_from_the_annotations(demo_case, tmp_path, client, store):
    from ci_triage.demo.replay import FakeGitHub
    from ci_triage.github.client import Connection, GitHubClient

    job_id = _failed_job_of_67(client, store)
    with FakeGitHub(_case_with(demo_case, job_id, log=False, annotation=RUNNER_LOST)) as lost, \
            Store(tmp_path / "other.sqlite3") as other:
        github = GitHubClient(Connection(lost.base_url, "t", retries=0))
        [verdict] = Triage(github, other).report(DEMO_REPO, 67).failed_jobs
        assert any(r.path.endswith(f"/check-runs/{job_id}/annotations") for r in lost.served())
        github.close()
    c = verdict.facts.classification
    assert verdict.facts.log_status is LogStatus.MISSING
    assert (c.category, c.source, c.root_cause.text) == ("runner_lost", "annotations", RUNNER_LOST)
    assert verdict.verdict is Verdict.INFRA_FLAKE and verdict.rerun_recommended
    assert "missing" in [e.kind for e in verdict.evidence]


def test_timed_out_job_with_a_silent_log(demo_case, tmp_path, client, store):
    from ci_triage.demo.replay import FakeGitHub
    from ci_triage.github.client import Connection, GitHubClient

    job_id = _failed_job_of_67(client, store)
    case = _case_with(demo_case, job_id, log=True, annotation=None, conclusion="timed_out")
    case["logs"][str(job_id)] = "2026-05-12T13:06:02.0000000Z training step 1\n"
    with FakeGitHub(case) as fake_timeout, Store(tmp_path / "other.sqlite3") as other:
        github = GitHubClient(Connection(fake_timeout.base_url, "t", retries=0))
        [verdict] = Triage(github, other).report(DEMO_REPO, 67).failed_jobs
        github.close()
    assert verdict.facts.classification.category == "job_timeout"
    # A timeout may be the PR's own slowness: rerun only with contention evidence, which is there.
    assert verdict.verdict is Verdict.INFRA_FLAKE


def test_contract_check_of_the_head_is_reported(client, store):
    report = Triage(client, store).report(DEMO_REPO, 67)
    assert [(j.name, j.conclusion) for j in report.contract_checks] == [("d2t-contract", "success")]
    assert Triage(client, store).report(DEMO_REPO, 70).contract_checks == ()


def test_the_timeout_limit_is_read_from_the_workflow_as_it_ran(fake, client, store):
    facts = Triage(client, store).gather(DEMO_REPO, 67)
    [(run, job)] = [(r, j) for r in facts.runs for j in facts.jobs if j.run_id == r.id and j.failed]
    assert facts.timeout_limits == {job.id: 60.0}  # npu_vllm_examples.yml: timeout-minutes: 60
    reads = [r for r in fake.requests if r.path.endswith("/contents/" + run.workflow_path)]
    assert any(r.query.get("ref") == [run.head_sha] for r in reads)


def test_step_anchors_are_read_only_for_the_jobs_a_report_links(client, store):
    """The anchors cost a second pass over the log: sync and the neighbours' probes do not pay it."""
    triage = Triage(client, store)
    facts = triage.gather(DEMO_REPO, 67)
    [job] = [j for j in facts.jobs if j.failed]
    assert facts.logs[job.id].step_first_lines  # the PR's own failed job: linked to its line
    assert triage.classify_job(DEMO_REPO, job)[2] == ()
    assert triage.classify_job(DEMO_REPO, job, anchors=True)[2] == facts.logs[job.id].step_first_lines
