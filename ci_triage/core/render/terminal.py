"""A PR report as rich renderables for the terminal. Pure: builds objects, prints nothing."""

from __future__ import annotations

from datetime import datetime

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ci_triage.core.categories import describe_capture
from ci_triage.core.render.common import (
    VERDICT_LABEL,
    clock,
    contract_line,
    frame_text,
    minutes,
    rerun_text,
    root_cause_url,
    span,
    top_frames,
    who,
)
from ci_triage.core.text import shown
from ci_triage.model import Job, JobVerdict, PullReport, Verdict

VERDICT_STYLE = {
    Verdict.INFRA_FLAKE: "bold yellow",
    Verdict.PR_RELATED: "bold red",
    Verdict.BROKEN_BASE: "bold magenta",
    Verdict.NEEDS_REVIEW: "bold cyan",
}
BAR_WIDTH = 48
MAX_ROWS = 10
MAX_ROOT_CAUSE_CHARS = 2000  # a log line can be 100 MB; wrapping it would take minutes


def _bar(start: datetime | None, end: datetime | None, low: datetime, high: datetime, char: str) -> str:
    if start is None or end is None:
        return " " * BAR_WIDTH
    total = max((high - low).total_seconds(), 1.0)
    a = int((start - low).total_seconds() / total * BAR_WIDTH)
    b = max(a + 1, int((end - low).total_seconds() / total * BAR_WIDTH))
    return " " * a + char * (b - a) + " " * (BAR_WIDTH - b)


def short_timeline(verdict: JobVerdict, jobs_by_id: dict[int, Job]) -> Table:
    """The failed job against the jobs of other runs it overlapped, on one time axis."""
    failed = verdict.facts.job
    others = [jobs_by_id[o.job_id] for o in verdict.facts.overlapping_jobs[: MAX_ROWS - 1] if o.job_id in jobs_by_id]
    rows = [failed, *others]
    low = min(j.started_at for j in rows if j.started_at)
    high = max(j.completed_at for j in rows if j.completed_at)
    table = Table(box=None, show_header=True, pad_edge=False, header_style="dim")
    table.add_column("PR", no_wrap=True)
    table.add_column("job", no_wrap=True)
    table.add_column("runner", no_wrap=True)
    table.add_column(f"{clock(low)} … {clock(high)} UTC", no_wrap=True)
    pr_by_job = {o.job_id: who(o) for o in verdict.facts.overlapping_jobs}
    for job in rows:
        is_failed_job = job.id == failed.id
        char = "█" if job.conclusion == "success" else "▓"
        style = "red" if job.failed else "green"
        table.add_row("▶ this" if is_failed_job else pr_by_job.get(job.id, "?"), Text(shown(_short_job(job.name))),
                      Text(shown(_short_runner(job))), Text(_bar(job.started_at, job.completed_at, low, high, char), style=style))
    return table


def _short_job(name: str) -> str:
    """The matrix part of a job name, when there is one: `vllm-example (eagle3)` -> `eagle3`."""
    if name.endswith(")") and "(" in name:
        return name[name.rindex("(") + 1 : -1]
    return name


def _short_runner(job: Job) -> str:
    """The runner name without its pool label prefix: `linux-aarch64-a2-8-node2-r1` -> `node2-r1`."""
    name = job.runner_name or "?"
    for label in job.labels:
        if name.startswith(label + "-"):
            return name[len(label) + 1 :]
    return name


def _link(address: str) -> Text:
    """An address shown whole (folded over lines when the console is narrow, never cut). A link (OSC 8)
    only to a plain https address: the terminal shows its text, not its target."""
    url = shown(address)
    plain = url.startswith("https://") and not any(ch.isspace() for ch in url)
    return Text(url, style=("link " + url) if plain else "", overflow="fold")


def _job_panel(verdict: JobVerdict, jobs_by_id: dict[int, Job]) -> Panel:
    facts = verdict.facts
    job, c = facts.job, facts.classification
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"{verdict.verdict.value}", style=VERDICT_STYLE[verdict.verdict])
    head.append(f" — {VERDICT_LABEL[verdict.verdict]}; {rerun_text(verdict)} (confidence {verdict.confidence:.2f})")
    parts.append(head)
    info = Table.grid(padding=(0, 1))
    info.add_column(style="dim")
    info.add_column()
    category = Text(shown(c.category))
    if c.rule_id:
        category.append(f"  (rule {shown(c.rule_id)})", style="dim")
    elif c.resembles:
        category.append(f"  (no rule; the root-cause line resembles {shown(c.resembles)})", style="dim")
    info.add_row("category", category)
    if c.root_cause:
        info.add_row("root cause", Text(f"line {c.root_cause.line}"
                                        + (f", step '{shown(c.root_cause.step)}'" if c.root_cause.step else "")))
        # Fold, never crop: a test name or a port is read whole, at any width.
        info.add_row("", Text(shown(c.root_cause.text.strip(), MAX_ROOT_CAUSE_CHARS), style="bold", overflow="fold"))
    frames, hidden = top_frames(c.frames)
    if frames:
        stack = Text("\n".join(shown(frame_text(f)) for f in frames), overflow="fold")
        if hidden:
            stack.append(f"\n({hidden} outer frame(s) not shown; innermost last)", style="dim")
        info.add_row("stack", stack)
    if c.captures:
        info.add_row("captures",
                     Text(shown(", ".join(f"{k}={describe_capture(k, v)}" for k, v in sorted(c.captures.items())))))
    info.add_row("ran", Text(shown(f"{span(job)} UTC on {job.runner_name} "
                                   f"({', '.join(job.labels)}), {minutes(job.duration_s)}")))
    info.add_row("job", _link(job.html_url))
    line_url = root_cause_url(facts)
    if line_url:
        info.add_row("log line", _link(line_url))
    if facts.overlapping_jobs:
        prs = ", ".join(f"#{n}" for n in facts.in_flight_prs) or "none"
        info.add_row("overlapping", f"{len(facts.overlapping_jobs)} job(s) of other runs; PRs in flight: {prs}")
    related = ", ".join(verdict.related_changed_files) or "none"
    info.add_row("related files", Text(shown(related) + f"  ({verdict.relatedness.value})"))
    if verdict.related_by:
        info.add_row("decided by", Text(shown(verdict.related_by)))
    parts.append(info)
    evidence = Table.grid(padding=(0, 1))
    evidence.add_column()
    evidence.add_column()
    for item in verdict.evidence:
        if item.kind != "root_cause":  # shown above
            evidence.add_row("•", Text(shown(item.text), overflow="fold"))
    parts.append(Text("evidence", style="dim"))
    parts.append(evidence)
    if facts.overlapping_jobs:
        parts.append(Text("timeline", style="dim"))
        parts.append(short_timeline(verdict, jobs_by_id))
    return Panel(Group(*parts), title=Text(shown(f"{job.name} · {facts.run.workflow_name}"), style="bold"), title_align="left")


def render(report: PullReport) -> RenderableType:
    pull = report.pull
    title = Text()
    title.append(f"PR #{pull.number}", style="bold")
    title.append(f" {shown(pull.title)}\n")  # Text.append takes no markup: a title with [brackets] stays as written
    title.append(f"{shown(report.repo)} · head {pull.head_sha[:7]} · {len(report.changed_files)} changed file(s)",
                 style="dim")
    contracts = [Text(shown(contract_line(job)), style="green" if job.conclusion == "success" else "red")
                 for job in report.contract_checks]
    if not report.failed_jobs:
        return Group(title, *contracts, Text("No failed jobs on the head commit.", style="green"))
    summary = Table(title=None, show_lines=False)
    summary.add_column("failed job")
    summary.add_column("workflow")
    summary.add_column("category")
    summary.add_column("verdict")
    summary.add_column("rerun")
    for verdict in report.failed_jobs:
        summary.add_row(Text(shown(verdict.facts.job.name)), Text(shown(verdict.facts.run.workflow_name)),
                        Text(shown(verdict.facts.classification.category)),
                        Text(verdict.verdict.value, style=VERDICT_STYLE[verdict.verdict]),
                        "yes" if verdict.rerun_recommended else "no")
    jobs_by_id = {job.id: job for job in report.timeline_jobs}
    panels = [_job_panel(v, jobs_by_id) for v in report.failed_jobs]
    notes = [Text(shown(note), style="dim") for note in report.notes]
    return Group(title, *contracts, summary, *panels, *notes)
