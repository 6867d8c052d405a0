"""What to do about a triaged PR: which runs to rerun, who may ask with `/rerun`, what to answer. Pure.

The shell (`act.Actor`) reads the run, the sticky comment, the commenter's permission and the clock,
calls these functions, and carries out what they return. The rules, strongest first:
- GitHub's own state: a run that is not completed, was cancelled or succeeded is not rerun; its
  `run_attempt` caps the reruns (attempt N means N - 1 reruns happened); a run whose attempt moved on
  or that is running again when re-read just before the rerun was rerun by someone else.
- The sticky comment's state: an attempt recorded as rerun is not rerun again.
- `/rerun`: a deleted user or a bot is ignored; the PR's author or a collaborator with write access
  (GitHub's `permission` field: admin, maintain or write) may ask; `--force` is for the latter only;
  one `/rerun` per PR per cooldown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ci_triage.core.decide.comment_state import CommentState
from ci_triage.core.decide.rerun import RerunPlan, plan_reruns
from ci_triage.core.github.events import CommentEvent, RerunCommand, parse_rerun_command
from ci_triage.model import Access, CollaboratorPermission, JobVerdict, PullReport, Run

BOT_COOLDOWN = timedelta(minutes=10)
# /rerun may go a little further than the automatic reruns: a person asked, after reading the report.
BOT_EXTRA_RERUNS = 2


# --- reruns -----------------------------------------------------------------------------------------
def verdicts_of(report: PullReport, run: Run) -> list[JobVerdict]:
    return [v for v in report.failed_jobs if v.facts.run.id == run.id]


def plan_run(run: Run, verdicts: Sequence[JobVerdict], state: CommentState, max_reruns: int, *,
             force: bool = False, requested_by: str = "automatic") -> RerunPlan:
    """The rerun plan of one run; an attempt the sticky comment records as rerun is never rerun again."""
    done = [r for r in state.reruns(run.id) if r.attempt >= run.attempt]
    if done:
        return RerunPlan(run.id, run.attempt, "none", (), (
            f"Attempt {run.attempt} of run {run.id} was already rerun at {done[0].at} ({done[0].by}).",))
    return plan_reruns(run, verdicts, max_reruns=max_reruns, force=force, requested_by=requested_by)


def plan_run_event(report: PullReport, run: Run, state: CommentState, max_auto_reruns: int) -> RerunPlan:
    """A completed workflow run of the PR: rerun what the evidence clears, within the automatic cap."""
    return plan_run(run, verdicts_of(report, run), state, max_auto_reruns, requested_by="automatic")


def plan_command(report: PullReport, state: CommentState, max_auto_reruns: int, *, force: bool) -> list[RerunPlan]:
    """An authorized `/rerun`: a plan for every run of the PR that failed or has failed jobs."""
    plans = []
    for run in report.runs:
        verdicts = verdicts_of(report, run)
        if run.conclusion in (None, "success") and not verdicts:
            continue
        plans.append(plan_run(run, verdicts, state, max_auto_reruns + BOT_EXTRA_RERUNS, force=force,
                              requested_by="/rerun"))
    return plans


def rerun_overtaken(planned: Run, current: Run) -> str | None:
    """Why a planned rerun must not happen after all, from the run re-read just before it, else None."""
    if current.attempt != planned.attempt or not current.is_completed:
        return (f"Run {planned.id} was rerun meanwhile (now attempt {current.attempt}, {current.status}): "
                "not rerun again.")
    return None


def pr_of_run(run: Run, open_pulls: Sequence[dict] = ()) -> int | None:
    """The PR a run belongs to. `run.pr_numbers` holds only PRs into the run's own repository (the
    converter drops the others); a fork's run names none, so its head SHA is matched to an open PR."""
    if run.pr_numbers:
        return run.pr_numbers[0]
    return next((pull["number"] for pull in open_pulls if pull["head"]["sha"] == run.head_sha), None)


# --- /rerun -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Screening:
    """Whether a comment is a `/rerun` worth looking up its author's permission for."""

    command: RerunCommand | None
    note: str | None = None  # why it is ignored (nothing is posted: a bot or a ghost gets no reply)


def screen_comment(event: CommentEvent) -> Screening:
    command = parse_rerun_command(event.comment_body)
    if command is None or not event.is_pull_request or event.action != "created":
        return Screening(None, "Not a /rerun command on a pull request: nothing to do.")
    if event.commenter is None:
        return Screening(None, "The /rerun comment's author was deleted (GitHub shows a ghost): nothing to do.")
    if event.by_bot:  # `user.type == "Bot"` or a `[bot]` login
        # A bot's words are not a person's request, and answering one can start a loop between bots.
        return Screening(None, f"@{event.commenter} is a bot; ci-triage takes /rerun from people only.")
    return Screening(command)


@dataclass(frozen=True)
class Authorization:
    allowed: bool
    force: bool = False
    notes: tuple[str, ...] = ()
    reply: str | None = None  # the comment to post when refused
    audit: dict | None = None  # what the audit log records of a refusal


def authorize(event: CommentEvent, command: RerunCommand, permission: CollaboratorPermission) -> Authorization:
    """Who may ask: the PR's author, or someone GitHub says has write access. `role_name` only informs:
    a custom role with write access reads `permission: write`, which is what counts."""
    commenter = event.commenter
    is_author = commenter is not None and event.issue_author is not None and commenter == event.issue_author
    maintainer = permission.can_write
    notes: list[str] = []
    if not is_author and not maintainer:
        audit = {"by": commenter, "permission": permission.permission, "role_name": permission.role_name,
                 "access": permission.access.value}
        if permission.access is Access.UNKNOWN:
            why = permission.detail or "the token may not read collaborator permissions"
            note = f"ci-triage cannot tell whether @{commenter} has write access ({why}), so nothing was rerun."

            reply = (f"@{commenter}, ci-triage could not check your access to this repository, so nothing was "
                     "rerun. Only the pull request's author or someone with write access to the repository can "
                     "ask ci-triage to rerun jobs.")
        else:
            why = "is not a collaborator" if permission.access is Access.NOT_COLLABORATOR else (
                f"has {permission.permission or 'no'} access")
            note = f"@{commenter} may not ask for reruns on this pull request ({why})."
            reply = (f"@{commenter}, thanks for looking into this. Only the pull request's author or "
                     "someone with write access to the repository can ask ci-triage to rerun jobs, so nothing "
                     "was rerun.")
        return Authorization(False, notes=(note,), reply=reply, audit=audit)
    if command.force and not maintainer:
        if permission.access is Access.UNKNOWN:
            notes.append(f"--force is for maintainers and ci-triage cannot tell whether @{commenter} is one; "
                         "rerunning only the jobs whose verdict is infra_flake.")
        else:
            notes.append("--force is for maintainers; rerunning only the jobs whose verdict is infra_flake.")
    return Authorization(True, force=command.force and maintainer, notes=tuple(notes))


def cooldown_refusal(state: CommentState, now: datetime, cooldown: timedelta = BOT_COOLDOWN) -> str | None:
    """One /rerun per PR per cooldown: reruns take a while, and a second request would only queue more."""
    if state.in_cooldown(now, cooldown):
        return (f"A /rerun ran less than {int(cooldown.total_seconds() // 60)} minutes ago on this pull request; "
                "try again after the reruns have finished.")
    return None


def rerun_reply(commenter: str, reruns: Sequence[dict], plans: Sequence[RerunPlan], notes: Sequence[str]) -> str:
    """The bot's answer to an authorized /rerun, from what was actually rerun."""
    if reruns:
        lines = [f"@{commenter}, rerunning:"]
        lines += [f"- run {r['run_id']} (attempt {r['attempt']}): "
                  + ("its failed jobs" if r["mode"] == "failed" else f"job(s) {', '.join(map(str, r['job_ids']))}")
                  for r in reruns]
    else:
        lines = [f"@{commenter}, nothing was rerun."]
    reasons = [reason for plan in plans for reason in plan.reasons] + list(notes)
    lines += [f"- {reason}" for reason in reasons[:20]]
    lines.append("The sticky ci-triage comment on this pull request has the evidence.")
    return "\n".join(lines)
