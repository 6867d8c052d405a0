"""Acting on a triage: rerun what the evidence clears, keep one sticky PR comment, answer `/rerun`.

Idempotence has three guards, strongest first, because a GitHub Action keeps no disk between runs:
1. GitHub's own state: the run's `run_attempt` caps automatic reruns, the run is re-read just
   before a rerun (a newer attempt or a run no longer completed means someone already reran it),
   and GitHub itself refuses to rerun a run that is running (403), which settles a race between two
   invocations that both read "completed".
2. The sticky comment's state records every rerun by run and attempt.
3. The local store holds one claim per run attempt, so invocations on one machine rerun once.
Every rerun request, refusal and comment write is recorded in the store's audit log.

One sticky comment per identity however many invocations write at once (`core.decide.converge` decides,
this module lists, patches and deletes): the comment is ours when it carries the marker and is written by
the token's own identity (GET /user; for an installation token GraphQL's viewer, else the author of a
comment or reaction we wrote); after writing, we list again, make the oldest of ours hold every state of ours, then delete
our own duplicates, and check once more after a pause for a concurrent writer's late edit.

What to rerun, who may ask and what to answer is decided by `core.decide.actions` (pure); this module
reads what those decisions need, carries out their answer and records it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ci_triage.core.decide.actions import (
    authorize,
    cooldown_refusal,
    plan_command,
    plan_run_event,
    pr_of_run,
    rerun_overtaken,
    rerun_reply,
    screen_comment,
)
from ci_triage.core.decide.comment_state import (
    CommentState,
    RerunRecord,
    parse_comment,
)
from ci_triage.core.decide.converge import converge, foreign_state, login_of, merge_states, ours
from ci_triage.core.decide.refusals import may_answer_refusal, refusal_reply
from ci_triage.core.decide.rerun import RerunPlan, plan_reruns
from ci_triage.core.github.convert import run_from_payload
from ci_triage.core.github.events import CommentEvent, is_bot
from ci_triage.core.render.comment import needs_update, render_comment, render_incomplete
from ci_triage.core.timefmt import iso_seconds
from ci_triage.errors import Forbidden, GitHubError
from ci_triage.github.transport import over_budget
from ci_triage.github.writer import GitHubWriter
from ci_triage.model import PullReport, Run
from ci_triage.service import Triage


@dataclass
class Outcome:
    """What one invocation found and did; the CLI prints it as JSON."""

    repo: str
    pr: int | None
    run_id: int | None = None
    plans: list[RerunPlan] = field(default_factory=list)
    reruns: list[dict] = field(default_factory=list)  # {"run_id", "attempt", "mode", "job_ids"}
    comment: str = "none"  # created, updated, unchanged, merged (into an older one of ours), none
    notes: list[str] = field(default_factory=list)
    report: PullReport | None = None

    def as_dict(self) -> dict:
        from ci_triage.core.render.json import outcome_dict

        return outcome_dict(self)


MAX_CONVERGE_ROUNDS = 8
SETTLE_S = 1.0  # after deleting a duplicate: how long a concurrent writer's late PATCH is waited for


class Actor:
    def __init__(self, triage: Triage, writer: GitHubWriter, clock: Callable[[], datetime] | None = None,
                 claimant: str | None = None, sleep: Callable[[float], None] = time.sleep,
                 settle_s: float = SETTLE_S) -> None:
        self.triage = triage
        self.writer = writer
        self.store = triage.store
        self.clock = clock or (lambda: datetime.now(UTC))
        self.claimant = claimant or f"{os.uname().nodename}:{os.getpid()}"
        self.sleep = sleep
        self.settle_s = settle_s
        self._identity: str | None = None  # the login the token writes as, once known
        self._identity_asked = False

    # --- who we are -----------------------------------------------------------------------------
    def identity(self) -> str | None:
        """The token's login (`GitHubWriter.identity`: GET /user, or GraphQL's viewer for an installation
        token); when GitHub says neither, learned from the first comment or reaction we write; until then
        None, which `core.decide.converge` reads as github-actions[bot]."""
        if self._identity is None and not self._identity_asked:
            self._identity_asked = True
            self._identity = self.writer.identity()
        return self._identity

    def _learn(self, written: dict | None) -> None:
        """Take the identity from the author of something we just wrote (a comment, a reaction)."""
        if not isinstance(written, dict):
            return
        login = login_of(written)
        if isinstance(login, str) and login:
            self._identity = login

    # --- the workflow_run entry point -----------------------------------------------------------
    def triage_run(self, repo: str, run_id: int, apply: bool) -> Outcome:
        run = run_from_payload(self.writer.run(repo, run_id))
        outcome = Outcome(repo, None, run_id)
        if not run.is_completed:
            outcome.plans.append(plan_reruns(run, [], max_reruns=0))
            return outcome
        # A fork's run names no PR: its head SHA does, among the open PRs (listed only then).
        outcome.pr = pr_of_run(run, () if run.pr_numbers else self.triage.client.pulls(repo, state="open"))
        if outcome.pr is None:
            outcome.notes.append(f"Run {run_id} belongs to no open pull request: nothing to comment on or rerun.")
            return outcome
        try:
            report = self.triage.report(repo, outcome.pr)
        except GitHubError as error:
            if apply and over_budget(error):
                self._report_incomplete(repo, outcome.pr, error)
            raise
        outcome.report = report
        sticky, state = self._sticky(repo, outcome.pr)
        state = state.observe(report, iso_seconds(self.clock()))
        plan = plan_run_event(report, run, state, self.triage.config.max_auto_reruns)
        outcome.plans.append(plan)
        if not plan.reruns:
            outcome.notes.extend(plan.reasons)
        if apply:
            state = self._apply(repo, run, plan, state, "auto", outcome)
            self._write_sticky(repo, outcome.pr, sticky, report, state, outcome)
        return outcome

    # --- the /rerun entry point -----------------------------------------------------------------
    def handle_comment(self, event: CommentEvent, apply: bool = True) -> Outcome:
        repo, number = event.repo, event.issue_number
        outcome = Outcome(repo, number)
        screening = screen_comment(event)
        if screening.command is None or event.commenter is None:
            outcome.notes.append(screening.note or "Nothing to do.")
            return outcome
        commenter = event.commenter
        authorization = authorize(event, screening.command, self.writer.permission(repo, commenter))
        outcome.notes.extend(authorization.notes)
        if not authorization.allowed:
            self.store.audit(repo, "rerun_refused", f"pr:{number}", authorization.audit or {"by": commenter})
            # A refusal is answered once per user per cooldown: a flood of /rerun gets one reply.
            if apply and authorization.reply and may_answer_refusal(self._our_comments(repo, number), commenter,
                                                                   self.clock(), bot_login=None):
                self._learn(self.writer.create_comment(repo, number, refusal_reply(commenter, authorization.reply)))
            return outcome
        if apply:
            self._learn(self.writer.react(repo, event.comment_id, "eyes"))
        sticky, state = self._sticky(repo, number)
        now = self.clock()
        refusal = cooldown_refusal(state, now)
        if refusal is not None:
            outcome.notes.append(refusal)
            # Answered once per user per cooldown too: a flood of /rerun during the cooldown gets one reply.
            if apply and may_answer_refusal(self._our_comments(repo, number), commenter, now, bot_login=None):
                self._learn(self.writer.create_comment(repo, number, refusal_reply(commenter, f"@{commenter}, {refusal}")))
            return outcome
        report = self.triage.report(repo, number)
        outcome.report = report
        state = state.observe(report, iso_seconds(now))
        by = f"bot:{commenter}"
        for plan in plan_command(report, state, self.triage.config.max_auto_reruns, force=authorization.force):
            outcome.plans.append(plan)
            if apply:
                run = next(r for r in report.runs if r.id == plan.run_id)
                state = self._apply(repo, run, plan, state, by, outcome)
        if outcome.reruns:
            state = state.with_bot_rerun(iso_seconds(now))
        if apply:
            self._learn(self.writer.create_comment(repo, number, rerun_reply(commenter, outcome.reruns, outcome.plans,
                                                                             outcome.notes)))
            self._write_sticky(repo, number, sticky, report, state, outcome)
        return outcome

    # --- carrying out ---------------------------------------------------------------------------
    def _report_incomplete(self, repo: str, number: int, error: GitHubError) -> None:
        """GitHub's limit outlasted the wait budget: say `needs_review` on the PR (rerun nothing), if
        GitHub still takes a write; the budget is spent, so nothing here waits."""
        try:
            sticky, state = self._sticky(repo, number)
            body = render_incomplete(number, state, error.message, generated_at=iso_seconds(self.clock()))
            if sticky is None:
                self._learn(self.writer.create_comment(repo, number, body))
            elif needs_update(sticky["body"], body):
                self.writer.update_comment(repo, sticky["id"], body)
            self.store.audit(repo, "comment_needs_review", f"pr:{number}", {"reason": error.message[:200]})
            error.hint = "A needs_review comment says so on the PR; nothing was rerun. " \
                         "Try again after the reset, or raise --max-wait."
        except GitHubError:
            error.hint = "Nothing was rerun, and GitHub refused the needs_review comment too; " \
                         "try again after the reset, or raise --max-wait."

    def _our_comments(self, repo: str, number: int) -> list[dict]:
        """The PR's comments that may be ours: by our identity, or while it is unknown, by any bot."""
        me = self.identity()

        def mine(comment: dict) -> bool:
            login = login_of(comment) or ""
            if me is not None:
                return login.lower() == me.lower()
            return is_bot(login, (comment.get("user") or {}).get("type"))

        return [c for c in self.writer.comments(repo, number) if isinstance(c, dict) and mine(c)]

    def _sticky(self, repo: str, number: int) -> tuple[dict | None, CommentState]:
        """Our sticky comment (the oldest of ours) and the state to decide by: every state of ours merged
        (a race may have left duplicates), with the state other trusted identities wrote (read only)."""
        comments = self.writer.comments(repo, number)
        me = self.identity()
        mine = ours(comments, me)
        own = [parse_comment(c["body"]) or CommentState() for c in mine]
        state = merge_states([*own, foreign_state(comments, me, self.clock())])
        return (mine[0] if mine else None), state

    def _apply(self, repo: str, run: Run, plan: RerunPlan, state: CommentState, by: str,
               outcome: Outcome) -> CommentState:
        if not plan.reruns:
            return state
        if not self.store.claim(repo, f"rerun:{run.id}:{run.attempt}", self.claimant):
            outcome.notes.append(f"Attempt {run.attempt} of run {run.id} is being handled by another invocation.")
            return state
        overtaken = rerun_overtaken(run, run_from_payload(self.writer.run(repo, run.id)))
        if overtaken is not None:
            outcome.notes.append(overtaken)
            return state
        job_ids = plan.job_ids
        try:
            if plan.mode == "failed":
                self.writer.rerun_failed_jobs(repo, run.id)
            else:
                # While a run is running GitHub reruns no other job of it: one job now, and the
                # others wait for a person (the next attempt is past the automatic cap).
                job_ids = job_ids[:1]
                self.writer.rerun_job(repo, job_ids[0])
                if len(plan.job_ids) > 1:
                    outcome.notes.append(f"Reran job {job_ids[0]}; GitHub reruns no other job of run {run.id} "
                                         "until that attempt finishes.")
        except Forbidden as error:
            self.store.audit(repo, "rerun_refused_by_github", f"run:{run.id}", {"attempt": run.attempt,
                                                                                "error": error.message})
            outcome.notes.append(f"GitHub refused the rerun of run {run.id}: {error.message}")
            return state
        except GitHubError as error:
            self.store.audit(repo, "rerun_failed", f"run:{run.id}", {"attempt": run.attempt, "error": error.message})
            raise
        record = RerunRecord(run.id, run.attempt, tuple(job_ids), plan.mode, iso_seconds(self.clock()), by,
                             "; ".join(plan.reasons)[:200])
        self.store.audit(repo, "rerun", f"run:{run.id}", {"attempt": run.attempt, "mode": plan.mode,
                                                          "job_ids": list(job_ids), "by": by})
        outcome.reruns.append({"run_id": run.id, "attempt": run.attempt, "mode": plan.mode, "job_ids": list(job_ids)})
        return state.with_rerun(record)

    def _write_sticky(self, repo: str, number: int, sticky: dict | None, report: PullReport, state: CommentState,
                      outcome: Outcome) -> None:
        body = render_comment(report, state, outcome.notes, generated_at=iso_seconds(self.clock()))
        created: list[int] = []
        if sticky is None:
            made = self.writer.create_comment(repo, number, body)
            self._learn(made)
            created.append(made["id"])
            outcome.comment = "created"
        elif needs_update(sticky["body"], body):
            self.writer.update_comment(repo, sticky["id"], body)
            outcome.comment = "updated"
        else:
            outcome.comment = "unchanged"
        if outcome.comment != "unchanged":
            self.store.audit(repo, f"comment_{outcome.comment}", f"pr:{number}", {"chars": len(body)})
        self._converge(repo, number, report, state, outcome, created)

    def _converge(self, repo: str, number: int, report: PullReport, state: CommentState, outcome: Outcome,
                  created: list[int]) -> None:
        """List again until one comment of ours holds every state of ours and our duplicates are gone."""
        for _ in range(MAX_CONVERGE_ROUNDS):
            plan = converge(self.writer.comments(repo, number), self.identity(), state, created, self.clock())
            if plan.keep is None:  # ours was deleted meanwhile (by a person): write it again
                made = self.writer.create_comment(repo, number, render_comment(
                    report, plan.state, outcome.notes, generated_at=iso_seconds(self.clock())))
                self._learn(made)
                created.append(made["id"])
            elif plan.patch:
                self.writer.update_comment(repo, plan.keep["id"], render_comment(
                    report, plan.state, outcome.notes, generated_at=iso_seconds(self.clock())))
                if outcome.comment in ("created", "unchanged") and plan.keep["id"] not in created:
                    outcome.comment = "merged"
            elif plan.delete:
                for comment_id in plan.delete:
                    self.writer.delete_comment(repo, comment_id)
                    self.store.audit(repo, "comment_deleted", f"pr:{number}", {"id": comment_id,
                                                                               "kept": plan.keep["id"]})
                if outcome.comment == "created":
                    outcome.comment = "merged"
                # A writer that listed before our comment existed may still PATCH the kept one without
                # our state: look again after a pause (our state is still in hand to write back).
                self.sleep(self.settle_s)
            else:
                return
            state = plan.state
        outcome.notes.append("The sticky comment was still being written by another invocation; "
                             "the next triage merges what is left.")

