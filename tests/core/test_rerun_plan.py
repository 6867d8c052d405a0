from dataclasses import replace

from ci_triage.core.decide.rerun import plan_reruns
from ci_triage.model import JobVerdict, LogStatus, Relatedness, Verdict
from tests.core.test_timeline_relate_policy import _facts, _other, changed, judge, run


def verdict_for(job_id: int, verdict: Verdict, rerun: bool = True, log: LogStatus = LogStatus.AVAILABLE) -> JobVerdict:
    facts = _facts("port_in_use", True, overlapping=_other(66), log=log)
    facts = replace(facts, job=replace(facts.job, id=job_id, name=f"job {job_id}"))
    base = judge(facts, changed("docs/x.md"))
    return replace(base, verdict=verdict, rerun_recommended=rerun)


RUN = replace(run(10, (67,)), conclusion="failure")


def test_all_failed_jobs_infra_flake_reruns_failed_jobs():
    plan = plan_reruns(RUN, [verdict_for(1, Verdict.INFRA_FLAKE), verdict_for(2, Verdict.INFRA_FLAKE)], max_reruns=1)
    assert (plan.mode, plan.job_ids) == ("failed", (1, 2))


def test_only_the_infra_jobs_are_rerun_one_by_one():
    plan = plan_reruns(RUN, [verdict_for(1, Verdict.INFRA_FLAKE), verdict_for(2, Verdict.PR_RELATED, False)],
                       max_reruns=1)
    assert (plan.mode, plan.job_ids) == ("jobs", (1,))
    assert any("job 2: not rerun, verdict pr_related" in r for r in plan.reasons)


def test_no_rerun_past_the_attempt_cap_in_progress_or_cancelled():
    second = replace(RUN, attempt=2)
    plan = plan_reruns(second, [verdict_for(1, Verdict.INFRA_FLAKE)], max_reruns=1)
    assert plan.mode == "none" and "Attempt 2" in plan.reasons[0]
    assert plan_reruns(replace(RUN, status="in_progress", conclusion=None), [verdict_for(1, Verdict.INFRA_FLAKE)],
                       max_reruns=1).mode == "none"
    assert plan_reruns(replace(RUN, conclusion="cancelled"), [verdict_for(1, Verdict.INFRA_FLAKE)],
                       max_reruns=1).mode == "none"


def test_no_rerun_on_incomplete_evidence_even_when_forced():
    missing = verdict_for(1, Verdict.INFRA_FLAKE, log=LogStatus.UNREADABLE)
    plan = plan_reruns(RUN, [missing], max_reruns=1, force=True)
    assert plan.mode == "none" and plan.missing == ("job 1: log unreadable",)


def test_force_lifts_the_verdict_filter_only():
    plan = plan_reruns(RUN, [verdict_for(1, Verdict.PR_RELATED, False)], max_reruns=1, force=True)
    assert plan.mode == "failed"
    assert plan_reruns(replace(RUN, attempt=3), [verdict_for(1, Verdict.PR_RELATED)], max_reruns=1,
                       force=True).mode == "none"


def test_relatedness_is_kept_in_the_verdict():
    assert verdict_for(1, Verdict.INFRA_FLAKE).relatedness is Relatedness.UNRELATED
