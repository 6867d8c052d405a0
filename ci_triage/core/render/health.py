"""Runner health as the `runners --format json` contract, Markdown (the weekly digest) and rich tables.

The JSON contract (issue 14; fields are added, never renamed): schema_version, repo, window {since,
until}, runners [...], hosts [...] (the same fields, keyed by "host"), hotspots [...], reruns {...},
flaky_jobs [...]. Beyond the contract's fields each entry also carries `q_value`, `pool_jobs`,
`pool_infra_failures` (runners, hosts) and `recommendation` (hotspots).
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ci_triage.core.health.records import HealthReport, RunnerHealth
from ci_triage.core.render.markdown import escape
from ci_triage.core.text import shown
from ci_triage.core.timefmt import iso

SCHEMA_VERSION = 1
DIGEST_MARKER = "<!-- ci-triage:runner-health -->"  # the digest issue is found by this hidden line
MAX_ROWS = 20


def _entry(health: RunnerHealth, key: str) -> dict[str, Any]:
    entry: dict[str, Any] = {key: health.key}
    if key == "runner_name":
        entry["host"] = health.host
    else:
        entry["runners"] = list(health.runners)
    entry.update({
        "labels": list(health.labels),
        "jobs": health.jobs,
        "failures": health.failures,
        "infra_failures": health.infra_failures,
        "infra_failure_rate": round(health.infra_failure_rate, 6),
        "pool": health.pool,
        "pool_infra_failure_rate": round(health.pool_infra_failure_rate, 6),
        "p_value": health.p_value,
        "q_value": health.q_value,
        "sick": health.sick,
        "categories": dict(health.categories),
        "pool_jobs": health.pool_jobs,
        "pool_infra_failures": health.pool_infra_failures,
    })
    return entry


def health_dict(report: HealthReport) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "repo": report.repo,
        "window": {"since": iso(report.since), "until": iso(report.until)},
        "runners": [_entry(r, "runner_name") for r in report.runners],
        "hosts": [_entry(h, "host") for h in report.hosts],
        "hotspots": [{"host": h.host, "jobs": list(h.jobs), "category": h.category, "count": h.count,
                      "prs": list(h.prs), "ports": list(h.ports), "recommendation": h.recommendation}
                     for h in report.hotspots],
        "reruns": {"requested": report.reruns.requested, "automatic": report.reruns.automatic,
                   "manual": report.reruns.manual, "rescued": report.reruns.rescued,
                   "runner_minutes": report.reruns.runner_minutes},
        "flaky_jobs": [{"workflow": j.workflow, "name": j.name, "runs": j.runs, "flaky_runs": j.flaky_runs,
                        "rate": round(j.rate, 6)} for j in report.flaky_jobs],
        "test": {"method": "Fisher's exact test, one-sided, against the rest of the pool; Benjamini-Hochberg "
                           "across runners (hosts separately)", "alpha": report.alpha,
                 "min_infra_failures": report.min_infra_failures},
        "notes": list(report.notes),
    }


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def _categories(health: RunnerHealth, limit: int = 3) -> str:
    return ", ".join(f"{name} {count}" for name, count in list(health.categories.items())[:limit])


def _window(report: HealthReport) -> str:
    since = report.since.strftime("%Y-%m-%d") if report.since else "the first stored run"
    until = report.until.strftime("%Y-%m-%d %H:%M UTC") if report.until else "now"
    return f"{since} to {until}"


def _interesting(rows: tuple[RunnerHealth, ...]) -> list[RunnerHealth]:
    """Sick ones, then those with infra failures, by evidence; at most MAX_ROWS."""
    return [r for r in rows if r.sick or r.infra_failures][:MAX_ROWS]


def render_markdown(report: HealthReport) -> str:
    sick_hosts = [h.key for h in report.hosts if h.sick]
    sick_runners = [r.key for r in report.runners if r.sick]
    lines = [DIGEST_MARKER, f"## Runner health of {escape(report.repo)}", "",
             f"Window: {_window(report)}. A runner or host is **sick** when its infra failure rate is above its "
             f"pool's with evidence (Fisher's exact test against the rest of the pool, Benjamini-Hochberg "
             f"q < {report.alpha:g}, at least {report.min_infra_failures} infra failures).", ""]
    if sick_hosts or sick_runners:
        lines.append(f"**Sick hosts:** {', '.join(f'`{escape(h)}`' for h in sick_hosts) or 'none'}; "
                     f"**sick runners:** {', '.join(f'`{escape(r)}`' for r in sick_runners) or 'none'}.")
    else:
        lines.append("No runner or host is sick.")
    lines.append("")
    for title, rows, key in (("Hosts", report.hosts, "Host"), ("Runners", report.runners, "Runner")):
        shown_rows = _interesting(rows)
        lines.append(f"### {title}")
        if not shown_rows:
            lines += ["No infra failures.", ""]
            continue
        lines += [f"| {key} | Pool | Jobs | Infra failures | Rate | Rest of pool | p | q | Sick | Categories |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
        for r in shown_rows:
            lines.append(f"| `{escape(r.key)}` | {escape(r.pool)} | {r.jobs} | {r.infra_failures} | "
                         f"{_percent(r.infra_failure_rate)} | {_percent(r.pool_infra_failure_rate)} | {_p(r.p_value)} | "
                         f"{_p(r.q_value)} | {'**sick**' if r.sick else ''} | {escape(_categories(r))} |")
        lines.append("")
    lines.append("### Contention hotspots")
    if report.hotspots:
        lines += ["| Host | Jobs that overlapped | Category | Failures | PRs / branches | Ports / devices |",
                  "|---|---|---|---:|---|---|"]
        for h in report.hotspots[:MAX_ROWS]:
            lines.append(f"| `{escape(h.host)}` | {escape(h.jobs[0])} + {escape(h.jobs[1])} | {h.category} | {h.count} | "
                         f"{escape(', '.join(h.prs[:12]))} | {escape(', '.join(h.ports[:12]))} |")
        lines += ["", "What to do: " + "; ".join(sorted({f"{h.category}: {h.recommendation}"
                                                          for h in report.hotspots[:3] if h.recommendation})) + "."]
    else:
        lines.append("No contention failure overlapped another job on its host.")
    r = report.reruns
    lines += ["", "### Reruns",
              f"{r.requested} reruns requested ({r.automatic} by ci-triage, {r.manual} by people); {r.rescued} "
              f"rescued their run; {r.runner_minutes:g} runner-minutes spent on them.", ""]
    flaky = [j for j in report.flaky_jobs if j.flaky_runs][:MAX_ROWS]
    lines.append("### Flaky jobs (failed, then passed on the same commit)")
    if flaky:
        lines += ["| Workflow | Job | Commits | Flaky | Rate |", "|---|---|---:|---:|---:|"]
        lines += [f"| {escape(j.workflow)} | {escape(j.name)} | {j.runs} | {j.flaky_runs} | {_percent(j.rate)} |"
                  for j in flaky]
    else:
        lines.append("None.")
    lines += [*(f"> {escape(note)}" for note in report.notes)]
    return shown("\n".join(lines) + "\n", keep_newlines=True)


def render_terminal(report: HealthReport) -> RenderableType:
    parts: list[RenderableType] = [Text(f"Runner health of {shown(report.repo)} — {_window(report)}", style="bold")]
    for title, rows in (("Hosts", report.hosts), ("Runners", report.runners)):
        table = Table(title=title, title_justify="left")
        for column, justify in (("name", "left"), ("pool", "left"), ("jobs", "right"), ("infra", "right"),
                                ("rate", "right"), ("pool rate", "right"), ("p", "right"), ("q", "right"),
                                ("sick", "left"), ("categories", "left")):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for r in _interesting(rows):
            table.add_row(shown(r.key), shown(r.pool), str(r.jobs), str(r.infra_failures),
                          _percent(r.infra_failure_rate), _percent(r.pool_infra_failure_rate), _p(r.p_value),
                          _p(r.q_value), Text("SICK", style="bold red") if r.sick else "", shown(_categories(r)))
        parts.append(table if table.row_count else Text(f"{title}: no infra failures."))
    if report.hotspots:
        table = Table(title="Contention hotspots", title_justify="left")
        for column in ("host", "jobs", "category", "failures", "PRs", "ports"):
            table.add_column(column)
        for h in report.hotspots[:MAX_ROWS]:
            table.add_row(shown(h.host), shown(f"{h.jobs[0]} + {h.jobs[1]}"), h.category, str(h.count),
                          shown(", ".join(h.prs[:8])), shown(", ".join(h.ports[:8])))
        parts.append(table)
        parts += [Text(f"{h.category}: {h.recommendation}") for h in report.hotspots[:1] if h.recommendation]
    else:
        parts.append(Text("No contention hotspots."))
    r = report.reruns
    parts.append(Text(f"Reruns: {r.requested} requested ({r.automatic} by ci-triage, {r.manual} by people), "
                      f"{r.rescued} rescued, {r.runner_minutes:g} runner-minutes."))
    flaky = [j for j in report.flaky_jobs if j.flaky_runs][:5]
    if flaky:
        parts.append(Text("Flakiest jobs: " + "; ".join(f"{shown(j.name)} {_percent(j.rate)} of {j.runs} commits"
                                                        for j in flaky)))
    parts += [Text(shown(note), style="dim") for note in report.notes]
    return Group(*parts)
