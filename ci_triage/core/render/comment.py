"""The sticky PR comment's body: the triage, the rerun history and the hidden state.

Pure. The state and how the comment is found live in `core.decide.comment_state`; this module writes the
body (`render_comment`) and says when a PATCH is worth sending (`needs_update`).

GitHub refuses comment bodies over 65,536 characters ("body is too long (maximum is 65536 characters)");
`render_comment` degrades in steps until the body fits: overlap tables go first, then evidence beyond a
few items, then older attempts, then whole job sections (the summary table still names every job).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ci_triage.core.decide.comment_state import (
    MARKER,
    MAX_COMMENT_CHARS,
    VOLATILE,
    CommentState,
    RerunRecord,
    _lines,
    serialize_state,
)
from ci_triage.core.render.common import contract_result
from ci_triage.core.render.markdown import escape, job_section, summary_table
from ci_triage.core.text import clip, shown_document
from ci_triage.core.timefmt import parse_iso_aware
from ci_triage.model import JobVerdict, PullReport


# --- rendering ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Detail:
    """How much of each job section fits; the steps of graceful degradation."""

    max_overlaps: int
    max_evidence: int | None
    max_history: int | None  # earlier attempts shown in full per job; None: all
    max_sections: int | None = None  # job sections shown at all; None: all


LEVELS = (
    _Detail(8, None, None),
    _Detail(0, None, None),  # drop the overlap tables
    _Detail(0, 4, None),  # evidence beyond 4 items
    _Detail(0, 4, 1),  # collapse older history
    _Detail(0, 2, 0),
)


def comment_size(body: str) -> int:
    """Characters as GitHub may count them: UTF-16 code units, which is never fewer than code points."""
    return len(body.encode("utf-16-le")) // 2


def _when(at: str) -> str:
    value = parse_iso_aware(at)
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else escape(at)


def _by(by: str) -> str:
    return "automatically" if by == "auto" else f"on request of @{escape(by[4:])}"


def _rerun_line(record: RerunRecord) -> str:
    what = "the failed jobs" if record.mode == "failed" else f"{len(record.job_ids)} job(s)"
    reason = f": {escape(record.reason)}" if record.reason else ""
    return (f"attempt {record.attempt} → {what} rerun {_by(record.by)} at {_when(record.at)}"
            f" (attempt {record.attempt + 1}){reason}")


def _covers(record: RerunRecord, job_id: int | None) -> bool:
    return record.mode == "failed" or (job_id is not None and job_id in record.job_ids)


def _history(verdict: JobVerdict, state: CommentState, max_history: int | None) -> list[str]:
    job, run = verdict.facts.job, verdict.facts.run
    run_state = state.run(run.id)
    lines: list[str] = []
    now = [r for r in (run_state.reruns if run_state else ()) if r.attempt == run.attempt and _covers(r, job.id)]
    if now:
        lines.append("- **Rerun:** " + "; ".join(_rerun_line(r) for r in now))
    else:
        lines.append(f"- **Rerun:** not rerun (attempt {run.attempt})")
    earlier = [a for a in (run_state.attempts if run_state else ()) if a.attempt < run.attempt]
    if not earlier:
        if run.attempt > 1:
            lines.append(f"- **Earlier attempts:** {run.attempt - 1}, not seen by ci-triage")
        return lines
    if max_history is None:
        shown = earlier
    else:
        shown = earlier[len(earlier) - max_history:] if max_history > 0 else []
    lines.append(f"- **Earlier attempts:** {len(earlier)}" + ("" if shown else " (details left out for size)"))
    if len(shown) < len(earlier) and shown:
        lines.append(f"  - … {len(earlier) - len(shown)} older attempt(s) left out for size")
    for attempt in shown:
        same = next((j for j in attempt.failed_jobs if j.name == job.name), None)
        result = (f"failed: `{escape(same.verdict)}` (`{escape(same.category)}`)" if same
                  else "this job did not fail")
        reruns = [r for r in (run_state.reruns if run_state else ())
                  if r.attempt == attempt.attempt and _covers(r, same.job_id if same else None)]
        rerun = "; " + "; ".join(f"rerun {_by(r.by)} at {_when(r.at)}" for r in reruns) if reruns else ""
        lines.append(f"  - attempt {attempt.attempt} (seen {_when(attempt.seen_at)}): {result}{rerun}")
    return lines


def _state_history(state: CommentState) -> list[str]:
    """With no failed jobs left: what was rerun to get there."""
    lines = []
    for run in state.runs:
        for record in run.reruns:
            lines.append(f"- run {run.run_id}: {_rerun_line(record)}")
    return (["**Reruns so far:**", "", *lines, ""]) if lines else []


def _compose(report: PullReport, state_line: str, notes: Sequence[str], state: CommentState,
             detail: _Detail, footer: list[str]) -> str:
    pull = report.pull
    lines = [MARKER, state_line, f"## ci-triage: PR #{pull.number} — {escape(pull.title)}", ""]
    for job in report.contract_checks:
        lines += [f"**Contract check** [{escape(job.name)}]({job.html_url}): {escape(contract_result(job))}", ""]
    if notes:
        lines += [*(f"> - {escape(note)}" for note in notes), ""]
    if not report.failed_jobs:
        lines += [f"No failed jobs on the head commit `{pull.head_sha[:7]}`.", ""]
        lines += _state_history(state)
    else:
        reruns = [v for v in report.failed_jobs if v.rerun_recommended]
        lines += [f"{len(report.failed_jobs)} failed job(s) on `{pull.head_sha[:7]}`; "
                  f"{len(reruns)} look like infrastructure flakes worth a rerun.", ""]
        lines += summary_table(report.failed_jobs)
        lines.append("")
        sections = report.failed_jobs if detail.max_sections is None else report.failed_jobs[: detail.max_sections]
        for verdict in sections:
            lines += job_section(verdict, max_overlaps=detail.max_overlaps, max_evidence=detail.max_evidence,
                                 extra=_history(verdict, state, detail.max_history))
        left_out = len(report.failed_jobs) - len(sections)
        if left_out:
            lines += [f"… {left_out} more failed job(s) are in the table above; their details did not fit in "
                      f"one comment (GitHub allows {MAX_COMMENT_CHARS:,} characters). "
                      f"The triage run's step summary has them all.", ""]
    if report.notes:
        lines += ["<sub>" + " ".join(escape(n) for n in report.notes) + "</sub>", ""]
    lines += footer
    return shown_document("\n".join(lines) + "\n")  # sanitised and redacted before its size is judged


def render_comment(report: PullReport, state: CommentState, notes: Sequence[str] = (), *,
                   generated_at: str | None = None, max_chars: int = MAX_COMMENT_CHARS) -> str:
    """The sticky comment's body, at most max_chars characters (see `comment_size`).

    `notes` are lines from the action, e.g. why nothing was rerun. `generated_at` (an ISO time the shell
    supplies) goes on a line `needs_update` ignores.
    """
    state = state.compacted()
    state_line = serialize_state(state)
    footer = ([f"<sub>ci-triage · updated {_when(generated_at)}</sub> {VOLATILE}"] if generated_at else [])
    notes = [clip(" ".join(note.split()), 1000) for note in notes][:20]
    for detail in LEVELS:
        body = _compose(report, state_line, notes, state, detail, footer)
        if comment_size(body) <= max_chars:
            return body
    # Whole job sections go, from the last one; then the summary table rows, as a last resort.
    low, high = 0, len(report.failed_jobs)
    best = None
    while low <= high:  # the most sections that fit
        middle = (low + high) // 2
        body = _compose(report, state_line, notes, state, replace(LEVELS[-1], max_sections=middle), footer)
        if comment_size(body) <= max_chars:
            best, low = body, middle + 1
        else:
            high = middle - 1
    if best is not None:
        return best
    return _truncated(report, state_line, notes, footer, max_chars)


def _truncated(report: PullReport, state_line: str, notes: Sequence[str], footer: list[str], max_chars: int) -> str:
    """Even the summary table is too long: keep the head, the state and as many table rows as fit."""
    pull = report.pull
    head = [MARKER, state_line, f"## ci-triage: PR #{pull.number} — {escape(clip(pull.title, 200))}", "",
            *(f"> {escape(note)}" for note in notes[:3]), "",
            f"{len(report.failed_jobs)} failed job(s) on `{pull.head_sha[:7]}`; too many to list in one comment.", ""]
    table = summary_table(report.failed_jobs)
    tail = ["", f"… and {len(report.failed_jobs):,} more failed job(s); the triage run's step summary has them all.",
            "", *footer]
    budget = max_chars - comment_size("\n".join(head + tail) + "\n") - 1
    rows: list[str] = []
    for row in table:
        cost = comment_size(row) + 1
        if cost > budget:
            break
        rows.append(row)
        budget -= cost
    shown = max(len(rows) - 2, 0)  # the table's header and delimiter rows
    tail[1] = f"… and {len(report.failed_jobs) - shown:,} more failed job(s); the triage run's step summary has them all."
    body = shown_document("\n".join(head + rows + tail) + "\n")
    while comment_size(body) > max_chars:  # absurd inputs (a title of notes alone too long)
        body = body[: len(body) - (comment_size(body) - max_chars) - 1] + "\n"
    return body


def _visible(body: str) -> list[str]:
    return [line.rstrip() for line in _lines(body) if not line.rstrip().endswith(VOLATILE)]


def needs_update(old_body: str | None, new_body: str) -> bool:
    """Whether PATCHing the comment would change anything but its volatile lines ("updated at ...")."""
    if old_body is None:
        return True
    return "\n".join(_visible(old_body)).strip() != "\n".join(_visible(new_body)).strip()



def render_incomplete(number: int, state: CommentState, reason: str, *, generated_at: str | None = None) -> str:
    """The sticky comment when the triage stopped before it had every fact (GitHub's rate limit outlasted
    the wait budget): `needs_review`, nothing rerun, the saved state kept for the next triage."""
    lines = [MARKER, serialize_state(state.compacted()), f"## ci-triage: PR #{number}", "",
             "**Verdict: `needs_review`.** ci-triage stopped before it had all the evidence, so it reran "
             "nothing and cannot say whether this failure is the PR's or the runner's.", "",
             f"> {escape(clip(' '.join(reason.split()), 1000))}", "",
             "A maintainer can rerun the failed jobs by hand, or a later triage (the next failure, or "
             "`/rerun` once GitHub's limit has reset) will fill this comment in.", ""]
    lines += _state_history(state)
    if generated_at:
        lines.append(f"<sub>ci-triage · updated {_when(generated_at)}</sub> {VOLATILE}")
    return shown_document("\n".join(lines) + "\n")
