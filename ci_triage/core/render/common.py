"""Wording shared by the human-facing renderers, so the terminal and the PR comment say the same."""

from __future__ import annotations

from datetime import datetime

from ci_triage.model import Job, JobVerdict, OverlappingJob, Verdict

VERDICT_LABEL = {
    Verdict.INFRA_FLAKE: "infra flake",
    Verdict.PR_RELATED: "caused by this PR",
    Verdict.BROKEN_BASE: "broken on the base branch",
    Verdict.NEEDS_REVIEW: "needs a human",
}
VERDICT_ICON = {
    Verdict.INFRA_FLAKE: "🔁",
    Verdict.PR_RELATED: "❌",
    Verdict.BROKEN_BASE: "🧱",
    Verdict.NEEDS_REVIEW: "🔍",
}


def clock(value: datetime | None) -> str:
    return value.strftime("%H:%M:%S") if value else "?"


def minutes(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds / 60:.1f} min"


def rerun_text(verdict: JobVerdict) -> str:
    return "rerun recommended" if verdict.rerun_recommended else "no rerun"


def who(other: OverlappingJob) -> str:
    if other.pr is not None:
        return f"#{other.pr}"
    return other.branch or "?"


def contract_line(job: Job) -> str:
    result = job.conclusion or job.status
    meaning = {"success": "the checkpoints' d2t mappings hold the offset contract",
               "failure": "a d2t mapping breaks the offset contract"}.get(job.conclusion or "", "")
    return f"{job.name}: {result}" + (f" ({meaning})" if meaning else "")


def span(job: Job) -> str:
    return f"{clock(job.started_at)}–{clock(job.completed_at)}"
