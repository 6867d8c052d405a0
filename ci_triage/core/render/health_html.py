"""Runner health as one self-contained HTML page (`runners --format html`): the trends picture embedded
as a data URI, then the digest's tables (sick hosts and runners with their p-values, contention
hotspots with what to do, reruns per day, flaky jobs).

No script, no stylesheet or font from elsewhere, and a Content-Security-Policy that forbids them, so the
file can be opened from an artifact or a mail attachment as it is. Every text that came from GitHub
(runner, host, job and workflow names, branches, the repository's name) is sanitised (control and
bidi characters made visible, credentials redacted) and then HTML-escaped: runner names are chosen by
whoever registers a runner, job names by whoever writes a workflow.
"""

from __future__ import annotations

import base64
from html import escape

from ci_triage.core.health.records import HealthReport, RunnerHealth
from ci_triage.core.health.trends import DailyTrends
from ci_triage.core.render.health import MAX_ROWS, _categories, _interesting, _p, _percent, _window
from ci_triage.core.text import shown

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1500px;color:#222;"
    "padding:0 16px}h1{font-size:1.45em}h2{font-size:1.15em;margin-top:1.8em}"
    "table{border-collapse:collapse;margin:.6em 0;font-size:.92em}th,td{border:1px solid #ccc;padding:4px 8px;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.sick td{background:#fbe9eb}.sick-tag{color:#b2182b;font-weight:bold}code{font-size:.95em}"
    "img{max-width:100%;height:auto;border:1px solid #ddd}.note{color:#555}p.what{max-width:60em}"
)


def _h(text: str, limit: int | None = None) -> str:
    """Untrusted text as HTML: sanitised and redacted first, then escaped (quotes too: safe in attributes)."""
    return escape(shown(text, limit), quote=True)


def _cell(value: object, numeric: bool = False) -> str:
    return f'<td class="n">{value}</td>' if numeric else f"<td>{value}</td>"


def _health_table(rows: tuple[RunnerHealth, ...], key: str) -> list[str]:
    shown_rows = _interesting(rows)
    if not shown_rows:
        return ["<p>No infra failures.</p>"]
    out = ["<table>", f"<tr><th>{key}</th><th>Pool</th><th>Jobs</th><th>Infra failures</th><th>Rate</th>"
                      "<th>Rest of pool</th><th>p</th><th>q</th><th>Sick</th><th>Categories</th></tr>"]
    for r in shown_rows:
        out.append(
            ('<tr class="sick">' if r.sick else "<tr>") + _cell(f"<code>{_h(r.key, 120)}</code>")
            + _cell(_h(r.pool, 120)) + _cell(r.jobs, True) + _cell(r.infra_failures, True)
            + _cell(_percent(r.infra_failure_rate), True) + _cell(_percent(r.pool_infra_failure_rate), True)
            + _cell(_p(r.p_value), True) + _cell(_p(r.q_value), True)
            + _cell('<span class="sick-tag">sick</span>' if r.sick else "") + _cell(_h(_categories(r))) + "</tr>")
    out.append("</table>")
    return out


def _hotspots(report: HealthReport) -> list[str]:
    if not report.hotspots:
        return ["<p>No contention failure overlapped another job on its host.</p>"]
    out = ["<table>", "<tr><th>Host</th><th>Jobs that overlapped</th><th>Category</th><th>Failures</th>"
                      "<th>PRs / branches</th><th>Ports / devices</th><th>What to do</th></tr>"]
    for spot in report.hotspots[:MAX_ROWS]:
        out.append("<tr>" + _cell(f"<code>{_h(spot.host, 120)}</code>")
                   + _cell(f"{_h(spot.jobs[0], 160)}<br>+ {_h(spot.jobs[1], 160)}") + _cell(_h(spot.category))
                   + _cell(spot.count, True) + _cell(_h(", ".join(spot.prs[:12]), 300))
                   + _cell(_h(", ".join(spot.ports[:12]), 300)) + _cell(_h(spot.recommendation)) + "</tr>")
    out.append("</table>")
    return out


def _per_day(trends: DailyTrends) -> list[str]:
    if not trends.days:
        return ["<p>No jobs in the window.</p>"]
    out = ["<table>", "<tr><th>Day (UTC)</th><th>Jobs</th><th>Failures</th><th>Infra failures</th><th>Reruns</th>"
                      "<th>by ci-triage</th><th>by people</th><th>Rescued</th><th>Rerun runner-minutes "
                      "(ci-triage + people)</th></tr>"]
    for day, totals, reruns in zip(trends.days, trends.totals, trends.reruns):
        out.append("<tr>" + _cell(f"{day:%a %Y-%m-%d}") + _cell(totals.jobs, True) + _cell(totals.failures, True)
                   + _cell(totals.infra_failures, True) + _cell(reruns.requested, True)
                   + _cell(reruns.automatic, True) + _cell(reruns.manual, True) + _cell(reruns.rescued, True)
                   + _cell(f"{reruns.runner_minutes:g} ({reruns.automatic_minutes:g} + {reruns.manual_minutes:g})",
                           True) + "</tr>")
    out.append("</table>")
    return out


def _flaky(report: HealthReport) -> list[str]:
    flaky = [j for j in report.flaky_jobs if j.flaky_runs][:MAX_ROWS]
    if not flaky:
        return ["<p>None.</p>"]
    out = ["<table>", "<tr><th>Workflow</th><th>Job</th><th>Commits</th><th>Flaky</th><th>Rate</th></tr>"]
    out += ["<tr>" + _cell(_h(j.workflow, 160)) + _cell(_h(j.name, 160)) + _cell(j.runs, True)
            + _cell(j.flaky_runs, True) + _cell(_percent(j.rate), True) + "</tr>" for j in flaky]
    out.append("</table>")
    return out


def _picture_text(report: HealthReport, trends: DailyTrends) -> str:
    """The picture's alt text: what it shows, for a reader who cannot see it."""
    sick = [h.key for h in report.hosts if h.sick]
    worst = max(((sum(infra), host) for host, infra in trends.host_infra.items()), default=(0, ""))
    parts = [f"Heatmap of infra failures per host and UTC day over {len(trends.days)} days"]
    if worst[0]:
        parts.append(f"the most on {worst[1]} ({worst[0]})")
    if sick:
        parts.append("sick: " + ", ".join(sick))
    parts.append(f"then runner-minutes spent on reruns per day, {report.reruns.requested} reruns in all")
    return "; ".join(parts) + "."


def render_html(report: HealthReport, trends: DailyTrends, png: bytes | None = None) -> str:
    title = f"Runner health of {report.repo}"
    sick_hosts = [h.key for h in report.hosts if h.sick]
    sick_runners = [r.key for r in report.runners if r.sick]
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<title>{_h(title, 200)}</title>",
           f"<style>{STYLE}</style>", "</head>", "<body>", f"<h1>{_h(title, 200)}</h1>",
           f'<p class="what">Window: {_h(_window(report))}. A runner or host is <b>sick</b> when its infra failure '
           f"rate is above its pool's with evidence (Fisher's exact test against the rest of the pool, "
           f"Benjamini-Hochberg q &lt; {report.alpha:g}, at least {report.min_infra_failures} infra failures). "
           f"Infra failures are the runner's or its host's fault (a port held by another process, a lost "
           f"runner, an out-of-memory host), not the code's.</p>"]
    if sick_hosts or sick_runners:
        out.append("<p><b>Sick hosts:</b> " + (", ".join(f"<code>{_h(h, 120)}</code>" for h in sick_hosts) or "none")
                   + "; <b>sick runners:</b> "
                   + (", ".join(f"<code>{_h(r, 120)}</code>" for r in sick_runners) or "none") + ".</p>")
    else:
        out.append("<p>No runner or host is sick.</p>")
    out.append("<h2>Trends per day</h2>")
    if png is not None:
        data = base64.b64encode(png).decode("ascii")
        out.append(f'<img src="data:image/png;base64,{data}" alt="{_h(_picture_text(report, trends))}">')
    out += _per_day(trends)
    if trends.clipped_days:
        out.append(f'<p class="note">The window\'s first {trends.clipped_days} days are left out of the picture '
                   f"and this table (at most {len(trends.days)} days are drawn).</p>")
    out += ["<h2>Hosts</h2>", *_health_table(report.hosts, "Host"),
            "<h2>Runners</h2>", *_health_table(report.runners, "Runner"),
            "<h2>Contention hotspots</h2>",
            "<p>Pairs of jobs that ran on one host at the same time as a port, memory, device or collective "
            "failure of one of them, counted over the window.</p>", *_hotspots(report)]
    r = report.reruns
    out += ["<h2>Reruns</h2>",
            f"<p>{r.requested} reruns requested ({r.automatic} by ci-triage, {r.manual} by people); {r.rescued} "
            f"rescued their run; {r.runner_minutes:g} runner-minutes spent on them.</p>",
            "<h2>Flaky jobs (failed, then passed on the same commit)</h2>", *_flaky(report)]
    out += [f'<p class="note">{_h(note)}</p>' for note in report.notes]
    out += ["</body>", "</html>", ""]
    return "\n".join(out)
