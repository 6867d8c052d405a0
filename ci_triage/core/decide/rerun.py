"""Which failed jobs of a run to rerun, and why (not): pure policy over verdicts and GitHub's run state.

Blanket retry tools rerun everything, loop on their own reruns and burn scarce accelerator hours.
Here a run is rerun only when it is completed, was not cancelled, has not used up its automatic
reruns (GitHub's own `run_attempt` says how many happened, so this holds without any local disk),
and only for jobs whose verdict is `infra_flake` with complete evidence. When every failed job
qualifies, one `rerun-failed-jobs` call does it; otherwise each qualifying job is rerun alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ci_triage.model import JobVerdict, LogStatus, Run, Verdict


@dataclass(frozen=True)
class RerunPlan:
    run_id: int
    attempt: int
    mode: str  # "none", "jobs" (POST .../jobs/{id}/rerun each) or "failed" (POST .../rerun-failed-jobs)
    job_ids: tuple[int, ...]
    reasons: tuple[str, ...]  # why these jobs, or why none
    missing: tuple[str, ...] = ()  # evidence that could not be had

    @property
    def reruns(self) -> bool:
        return self.mode != "none"


def _has_evidence(verdict: JobVerdict) -> bool:
    facts = verdict.facts
    return facts.log_status is LogStatus.AVAILABLE or facts.classification.source == "annotations"


def plan_reruns(run: Run, verdicts: Sequence[JobVerdict], *, max_reruns: int, force: bool = False,
                requested_by: str = "automatic") -> RerunPlan:
    """The rerun decision for one run, from its failed jobs' verdicts.

    `max_reruns` is how many reruns the run may have had before this one (attempt N means N - 1
    reruns happened). `force` (a maintainer's `/rerun --force`) lifts the verdict filter, never the
    state checks: a run still in progress or cancelled is not rerun by anyone.
    """
    def none(*reasons: str, missing: tuple[str, ...] = ()) -> RerunPlan:
        return RerunPlan(run.id, run.attempt, "none", (), tuple(reasons), missing)

    if not run.is_completed:
        return none(f"Run {run.id} is still {run.status}: nothing is rerun before it completes.")
    if run.conclusion == "cancelled":
        return none(f"Run {run.id} was cancelled (a newer push or a concurrency group replaced it): not rerun.")
    if run.conclusion == "success":
        return none(f"Run {run.id} succeeded on attempt {run.attempt}.")
    if run.attempt > max_reruns:
        done = run.attempt - 1
        return none(f"Attempt {run.attempt} of run {run.id} failed again after {done} rerun(s); the policy allows "
                    f"{max_reruns} {requested_by} rerun(s) per run, so a person should look.")

    mine = [v for v in verdicts if v.facts.run.id == run.id]
    if not mine:
        return none(f"Run {run.id} has no failed job to rerun.")
    missing = tuple(f"{v.facts.job.name}: log {v.facts.log_status.value}" for v in mine if not _has_evidence(v))
    chosen, reasons = [], []
    for verdict in mine:
        name = verdict.facts.job.name
        if not _has_evidence(verdict):
            reasons.append(f"{name}: not rerun, its log is {verdict.facts.log_status.value} (incomplete evidence).")
        elif force:
            chosen.append(verdict)
            reasons.append(f"{name}: rerun on a maintainer's request (--force; verdict {verdict.verdict.value}).")
        elif verdict.verdict is Verdict.INFRA_FLAKE and verdict.rerun_recommended:
            chosen.append(verdict)
            reasons.append(f"{name}: rerun, verdict infra_flake ({verdict.facts.classification.category}).")
        else:
            why = "rerun not recommended" if verdict.verdict is Verdict.INFRA_FLAKE else f"verdict {verdict.verdict.value}"
            reasons.append(f"{name}: not rerun, {why}.")
    if not chosen:
        return none(*reasons, missing=missing)
    job_ids = tuple(sorted(v.facts.job.id for v in chosen))
    every_failed = {v.facts.job.id for v in mine}
    mode = "failed" if set(job_ids) == every_failed else "jobs"
    return RerunPlan(run.id, run.attempt, mode, job_ids, tuple(reasons), missing)
