"""A PR report as GitHub-flavoured Markdown: what the sticky PR comment says."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.categories import describe_capture
from ci_triage.core.render import gantt
from ci_triage.core.render.common import (
    VERDICT_ICON,
    VERDICT_LABEL,
    contract_result,
    frame_text,
    minutes,
    rerun_text,
    root_cause_url,
    span,
    top_frames,
    who,
)
from ci_triage.core.text import shown_document
from ci_triage.core.text import shown as shown_line
from ci_triage.model import Evidence, JobVerdict, PullReport

MAX_OVERLAPS = 8
MAX_ROOT_CAUSE_CHARS = 2000  # one log line can be megabytes; a PR comment holds 65,536 characters


def escape(text: str) -> str:
    """Text safe in a table cell or a link label; `<` cannot open an HTML comment or tag that hides the rest."""
    return text.replace("|", "\\|").replace("`", "'").replace("<", "&lt;")


def code_escape(text: str) -> str:
    """Text safe inside a `code span` in a table cell (entities are not decoded there)."""
    return text.replace("|", "\\|").replace("`", "'")


def code_fence(text: str) -> str:
    """A backtick fence longer than any backtick run in the text, so log text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def job_section(verdict: JobVerdict, *, max_overlaps: int = MAX_OVERLAPS, max_evidence: int | None = None,
                extra: Sequence[str] = ()) -> list[str]:
    """One failed job as Markdown lines; `extra` bullets go after the evidence (the PR comment's reruns).

    The PR comment passes smaller limits to stay within GitHub's size."""
    facts = verdict.facts
    job, c = facts.job, facts.classification
    lines = [
        f"### {VERDICT_ICON[verdict.verdict]} [{escape(job.name)}]({job.html_url}) "
        f"({escape(facts.run.workflow_name)}): "
        f"**{verdict.verdict.value}** ({VERDICT_LABEL[verdict.verdict]}; {rerun_text(verdict)})",
        "",
        f"- **Category:** `{c.category}`" + (f" (rule `{c.rule_id}`)" if c.rule_id else "")
        + (f" (no rule; the root-cause line resembles `{c.resembles}`)" if c.resembles else "")
        + f", confidence {verdict.confidence:.2f}",
    ]
    if c.root_cause:
        step = f" in step *{c.root_cause.step}*" if c.root_cause.step else ""
        url = root_cause_url(facts)
        where = f"[log line {c.root_cause.line}]({url})" if url else f"log line {c.root_cause.line}"
        lines.append(f"- **Root cause** ({where}{step}):")
        # One log line; a line break would end the list item and the fence with it.
        root_cause = shown_line(c.root_cause.text.strip().replace("\r", " ").replace("\n", " "), MAX_ROOT_CAUSE_CHARS)
        fence = code_fence(root_cause)
        lines += ["", f"  {fence}", f"  {root_cause}", f"  {fence}", ""]
    frames, hidden = top_frames(c.frames)
    if frames:
        more = f"; {hidden} outer frame(s) not shown" if hidden else ""
        lines.append(f"- **Stack** (innermost last{more}): "
                     + " → ".join(f"`{code_escape(frame_text(f))}`" for f in frames))
    if c.captures:
        lines.append("- **Facts:** " + ", ".join(f"{k} `{describe_capture(k, v)}`" for k, v in sorted(c.captures.items())))
    lines.append(f"- **Ran:** {span(job)} UTC on `{job.runner_name}` ({', '.join(job.labels)}), "
                 f"{minutes(job.duration_s)}")
    if verdict.related_by:
        lines.append(f"- **Related by:** {escape(verdict.related_by)}")
    lines.append("- **Evidence:**")
    shown = [item for item in verdict.evidence if item.kind != "root_cause"]  # the root cause is shown above
    limit = len(shown) if max_evidence is None else max_evidence
    for item in shown[:limit]:
        lines.append(f"  - {escape(item.text)}{evidence_links(verdict, item)}")
    if len(shown) > limit:
        lines.append(f"  - … {len(shown) - limit} more (run `ci-triage report` for all of them)")
    lines += extra
    if facts.overlapping_jobs and max_overlaps > 0:
        lines += ["", "| overlapping job | PR / branch | runner | same host | overlap | result |",
                  "|---|---|---|---|---|---|"]
        for other in facts.overlapping_jobs[:max_overlaps]:
            lines.append(f"| [{escape(other.name)}]({other.html_url}) | {escape(who(other))} | "
                         f"`{code_escape(other.runner_name or '?')}` | {'yes' if other.same_host else 'no'} | "
                         f"{minutes(other.overlap_s)} | {other.conclusion} |")
        if len(facts.overlapping_jobs) > max_overlaps:
            lines.append(f"| … {len(facts.overlapping_jobs) - max_overlaps} more | | | | | |")
    lines.append("")
    return lines


MAX_LINKED_JOBS = 10


def evidence_links(verdict: JobVerdict, item: Evidence) -> str:
    """The links after an evidence sentence: each job a sentence counts, when it counts several."""
    if item.kind == "queue_drained" and verdict.facts.later_jobs_passed:
        jobs = verdict.facts.later_jobs_passed
        links = [f"[{escape(gantt.short_job_name(o.name))} {escape(who(o))}]({o.html_url})" for o in jobs[:MAX_LINKED_JOBS]]
        more = f", … {len(jobs) - MAX_LINKED_JOBS} more" if len(jobs) > MAX_LINKED_JOBS else ""
        return f" ({', '.join(links)}{more})"
    return f" ([link]({item.url}))" if item.url else ""


def summary_table(failed_jobs: Sequence[JobVerdict]) -> list[str]:
    lines = ["| job | verdict | category | rerun |", "|---|---|---|---|"]
    for verdict in failed_jobs:
        lines.append(f"| [{escape(verdict.facts.job.name)}]({verdict.facts.job.html_url}) | "
                     f"{VERDICT_ICON[verdict.verdict]} `{verdict.verdict.value}` | `{verdict.facts.classification.category}` | "
                     f"{'yes' if verdict.rerun_recommended else 'no'} |")
    return lines


def render(report: PullReport) -> str:
    pull = report.pull
    lines = [f"## ci-triage: PR #{pull.number} — {escape(pull.title)}", ""]
    for job in report.contract_checks:
        lines += [f"**Contract check** [{escape(job.name)}]({job.html_url}): {contract_result(job)}", ""]
    if not report.failed_jobs:
        lines.append(f"No failed jobs on the head commit `{pull.head_sha[:7]}`.")
        return shown_document("\n".join(lines) + "\n")
    reruns = [v for v in report.failed_jobs if v.rerun_recommended]
    lines.append(f"{len(report.failed_jobs)} failed job(s) on `{pull.head_sha[:7]}`; "
                 f"{len(reruns)} look like infrastructure flakes worth a rerun.")
    lines.append("")
    lines += summary_table(report.failed_jobs)
    lines.append("")
    lines += gantt.mermaid_block(report)
    for verdict in report.failed_jobs:
        lines += job_section(verdict)
    if report.notes:
        lines += ["<sub>" + " ".join(escape(n) for n in report.notes) + "</sub>", ""]
    # The one pass over everything that leaves: log text, names and titles are untrusted.
    return shown_document("\n".join(lines) + "\n")
