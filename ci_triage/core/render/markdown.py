"""A PR report as GitHub-flavoured Markdown: what the sticky PR comment says."""

from __future__ import annotations

from ci_triage.core.render import gantt
from ci_triage.core.render.common import (
    VERDICT_ICON,
    VERDICT_LABEL,
    contract_line,
    minutes,
    rerun_text,
    span,
    who,
)
from ci_triage.core.rules import describe_capture
from ci_triage.model import JobVerdict, PullReport

MAX_OVERLAPS = 8


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def _job_section(verdict: JobVerdict) -> list[str]:
    facts = verdict.facts
    job, c = facts.job, facts.classification
    lines = [
        f"### {VERDICT_ICON[verdict.verdict]} [{job.name}]({job.html_url}) ({facts.run.workflow_name}): "
        f"**{verdict.verdict.value}** ({VERDICT_LABEL[verdict.verdict]}, {rerun_text(verdict)})",
        "",
        f"- **Category:** `{c.category}`" + (f" (rule `{c.rule_id}`)" if c.rule_id else "")
        + f", confidence {verdict.confidence:.2f}",
    ]
    if c.root_cause:
        step = f" in step *{c.root_cause.step}*" if c.root_cause.step else ""
        lines.append(f"- **Root cause** (log line {c.root_cause.line}{step}):")
        lines += ["", "  ```", f"  {c.root_cause.text.strip()}", "  ```", ""]
    if c.captures:
        lines.append("- **Facts:** " + ", ".join(f"{k} `{describe_capture(k, v)}`" for k, v in sorted(c.captures.items())))
    lines.append(f"- **Ran:** {span(job)} UTC on `{job.runner_name}` ({', '.join(job.labels)}), "
                 f"{minutes(job.duration_s)}")
    lines.append("- **Evidence:**")
    for item in verdict.evidence:
        if item.kind == "root_cause":  # shown above
            continue
        link = f" ([link]({item.url}))" if item.url else ""
        lines.append(f"  - {_escape(item.text)}{link}")
    if facts.overlapping_jobs:
        lines += ["", "| overlapping job | PR / branch | runner | same host | overlap | result |",
                  "|---|---|---|---|---|---|"]
        for other in facts.overlapping_jobs[:MAX_OVERLAPS]:
            lines.append(f"| [{other.name}]({other.html_url}) | {who(other)} | `{other.runner_name}` | "
                         f"{'yes' if other.same_host else 'no'} | {minutes(other.overlap_s)} | {other.conclusion} |")
        if len(facts.overlapping_jobs) > MAX_OVERLAPS:
            lines.append(f"| … {len(facts.overlapping_jobs) - MAX_OVERLAPS} more | | | | | |")
    lines.append("")
    return lines


def render(report: PullReport) -> str:
    pull = report.pull
    lines = [f"## ci-triage: PR #{pull.number} — {_escape(pull.title)}", ""]
    for job in report.contract_checks:
        lines += [f"**Contract check** [{job.name}]({job.html_url}): {contract_line(job)}", ""]
    if not report.failed_jobs:
        lines.append(f"No failed jobs on the head commit `{pull.head_sha[:7]}`.")
        return "\n".join(lines) + "\n"
    reruns = [v for v in report.failed_jobs if v.rerun_recommended]
    lines.append(f"{len(report.failed_jobs)} failed job(s) on `{pull.head_sha[:7]}`; "
                 f"{len(reruns)} look like infrastructure flakes worth a rerun.")
    lines.append("")
    lines += ["| job | verdict | category | rerun |", "|---|---|---|---|"]
    for verdict in report.failed_jobs:
        lines.append(f"| [{verdict.facts.job.name}]({verdict.facts.job.html_url}) | "
                     f"{VERDICT_ICON[verdict.verdict]} `{verdict.verdict.value}` | `{verdict.facts.classification.category}` | "
                     f"{'yes' if verdict.rerun_recommended else 'no'} |")
    lines.append("")
    lines += gantt.mermaid_block(report)
    for verdict in report.failed_jobs:
        lines += _job_section(verdict)
    if report.notes:
        lines += ["<sub>" + " ".join(_escape(n) for n in report.notes) + "</sub>", ""]
    return "\n".join(lines) + "\n"
