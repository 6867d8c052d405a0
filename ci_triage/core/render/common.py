"""Wording shared by the human-facing renderers, so the terminal and the PR comment say the same."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ci_triage.model import Frame, Job, JobFacts, JobVerdict, OverlappingJob, Verdict

VERDICT_LABEL = {
    Verdict.INFRA_FLAKE: "the runner's fault, not the PR's",
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


def contract_result(job: Job) -> str:
    """What the contract check said, without its name (the caller shows the name, often as a link)."""
    result = job.conclusion or job.status
    meaning = {"success": "the checkpoints' d2t mappings hold the offset contract",
               "failure": "a d2t mapping breaks the offset contract"}.get(job.conclusion or "", "")
    return result + (f" ({meaning})" if meaning else "")


def contract_line(job: Job) -> str:
    return f"{job.name}: {contract_result(job)}"


def span(job: Job) -> str:
    """When the job ran, dated: `2026-05-12 13:36:05–13:48:15` (the end dated too when it is another day)."""
    if job.started_at is None:
        return f"?–{clock(job.completed_at)}"
    end = clock(job.completed_at)
    if job.completed_at is not None and job.completed_at.date() != job.started_at.date():
        end = f"{job.completed_at:%Y-%m-%d} {end}"
    return f"{job.started_at:%Y-%m-%d} {clock(job.started_at)}–{end}"


def step_anchor(job: Job, step_name: str | None, line_in_step: int | None) -> str | None:
    """A link to one line of a job's log: GitHub's job page takes `#step:N:L` (step number N, line L
    counted within that step's log, its header line being 1), e.g.
    https://github.com/git/git/runs/2366364023?check_suite_focus=true#step:4:115 (quoted on the git
    mailing list) and https://github.com/apache/pulsar/runs/3440411059?check_suite_focus=true#step:9:1079
    (apache/pulsar's flaky-test issues)."""
    if not step_name or line_in_step is None or not job.html_url or "#" in job.html_url:
        return None
    number = next((step.number for step in job.steps if step.name == step_name), None)
    return None if number is None else f"{job.html_url}#step:{number}:{line_in_step}"


def frame_text(frame: Frame) -> str:
    return f"{frame.path}:{frame.line} in {frame.function}"


MAX_FRAMES_SHOWN = 5


def top_frames(frames: Sequence[Frame], limit: int = MAX_FRAMES_SHOWN) -> tuple[tuple[Frame, ...], int]:
    """The innermost `limit` frames of a stack (printed last in a Python traceback), and how many
    outer ones are left out."""
    shown = tuple(frames[-limit:]) if limit > 0 else ()
    return shown, len(frames) - len(shown)


def root_cause_url(facts: JobFacts) -> str | None:
    """GitHub's link to the root-cause line on the job page, when the line's step is known."""
    root = facts.classification.root_cause
    if root is None:
        return None
    return step_anchor(facts.job, root.step, facts.line_in_step(root.line, root.step))
