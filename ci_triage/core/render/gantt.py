"""The correlation window as a Gantt chart: one row per runner, grouped by host.

Pure. `build_chart` turns a PullReport into a chart model (plain values); `render_terminal` turns the
model into a rich renderable that fits the console width; `mermaid` writes the compact chart a PR
comment embeds (GitHub renders ```mermaid blocks: https://mermaid.js.org/syntax/gantt.html).
The picture files (.png, .html) are drawn from the same model by ci_triage.render_files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from ci_triage.core.evidence.hosts import host_of
from ci_triage.model import FAILED_CONCLUSIONS, Job, PullReport

OWN_COLOR = "#1f4fd8"
FAILED_COLOR = "#d62728"
NO_PR_COLOR = "#8c8c8c"
# Colours for other PRs, in PR-number order. Red is kept for failures, blue for this PR and grey for
# branches: none of these is near red, and each stays distinct (from the others and from those three)
# when a terminal has only 16 or 256 colours (rich downgrades a colour to the nearest it has).
PR_PALETTE = ("#2ca02c", "#c4a000", "#a000a0", "#00a0a0", "#50c850", "#e0e000", "#ff50ff", "#50e0e0")
# Without colour (piped, NO_COLOR) a bar is drawn with these, and carries its PR in its text.
OWN_FILL, OTHER_FILL = "▓", "░"
MARKS = "abcdefghijklmnopqrstuvwxyz"
# Tick spacings for the time axis, in minutes: the first that keeps labels apart is used.
TICK_STEPS_MIN = (1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 720, 1440)
MAX_MERMAID_TASKS = 40


class BarState(StrEnum):
    FAILED = "failed"
    PASSED = "passed"
    OTHER = "other"  # cancelled, skipped, still running


@dataclass(frozen=True)
class Bar:
    job_id: int
    run_id: int
    job_name: str
    short_name: str  # the matrix part of the job name: `vllm-example (eagle3)` -> `eagle3`
    who: str  # `#66`, or the branch of a run that is not a PR's (`main`)
    pr: int | None
    start: datetime
    end: datetime
    state: BarState
    own: bool  # a job of the PR the chart is about
    failure_note: str | None  # what the failure was, e.g. `port 35191`, for failed bars
    url: str
    running: bool = False  # no completion time yet: the bar runs to the end of the window

    @property
    def label(self) -> str:
        return f"{self.short_name} {self.who}"


@dataclass(frozen=True)
class Row:
    host: str  # as hosts.host_of names it
    host_label: str  # the host without the runner pool prefix: `node2`
    runner_name: str
    runner_label: str  # the runner within its host: `r1`
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Series:
    """One legend entry: the jobs of one PR (or of one non-PR branch) share a colour."""

    who: str
    pr: int | None
    own: bool
    color: str


@dataclass(frozen=True)
class Chart:
    repo: str
    pr: int
    pull_title: str
    pool: str | None  # the runner label shared by the rows, when there is one
    start: datetime
    end: datetime
    rows: tuple[Row, ...]
    series: tuple[Series, ...]
    focus: tuple[tuple[datetime, datetime], ...]  # when this PR's failed jobs ran

    @property
    def bars(self) -> tuple[Bar, ...]:
        return tuple(bar for row in self.rows for bar in row.bars)

    def hosts(self) -> list[tuple[str, list[Row]]]:
        grouped: dict[str, list[Row]] = {}
        for row in self.rows:
            grouped.setdefault(row.host_label, []).append(row)
        return list(grouped.items())

    def mark_of(self, bar: Bar) -> str:
        """A one-letter name of the bar's PR or branch, for bars too short to hold it (the legend keys it)."""
        index = next((i for i, s in enumerate(self.series) if s.who == bar.who), None)
        return "" if index is None else MARKS[index % len(MARKS)]

    def color_of(self, bar: Bar) -> str:
        if bar.state is BarState.FAILED:
            return FAILED_COLOR
        return next((s.color for s in self.series if s.who == bar.who), NO_PR_COLOR)

    @property
    def window_text(self) -> str:
        first, last = self.start, self.end
        day = first.strftime("%Y-%m-%d")
        if first.date() == last.date():
            return f"{day} {first:%H:%M}–{last:%H:%M} UTC"
        return f"{day} {first:%H:%M} – {last:%Y-%m-%d %H:%M} UTC"

    @property
    def heading(self) -> str:
        pool = f" on {self.pool}" if self.pool else ""
        return f"{self.repo} · PR #{self.pr} · jobs{pool} · {self.window_text}"


# --- the model --------------------------------------------------------------------------------
def short_job_name(name: str) -> str:
    if name.endswith(")") and "(" in name:
        return name[name.rindex("(") + 1 : -1]
    return name


def _strip_pool(name: str, labels: Iterable[str]) -> str:
    for label in sorted(labels, key=len, reverse=True):
        if name.startswith(label + "-") and len(name) > len(label) + 1:
            return name[len(label) + 1 :]
    return name


def _runner_parts(job: Job, host_pattern: re.Pattern[str] | None = None) -> tuple[str, str, str]:
    """(host, short host label, runner label within the host) for a job's runner, the host as the
    verdict infers it (the configured host_pattern, else hosts.host_of's default). A runner that is a host
    of its own (GitHub-hosted `GitHub Actions 12`) has no label within it: its name is shown once."""
    runner = job.runner_name or "no runner"
    host = host_of(job.runner_name, host_pattern) or runner
    host_label = _strip_pool(host, job.labels)
    if host == runner:
        return host, host_label, ""
    rest = runner[len(host):].lstrip("-_.") if runner.startswith(host) else ""
    return host, host_label, rest or _strip_pool(runner, job.labels)


def _pr_of(report: PullReport, run_id: int) -> int | None:
    if run_id in report.pr_of_run:
        return report.pr_of_run[run_id]
    run = report.runs_by_id.get(run_id)
    return run.pr_numbers[0] if run and run.pr_numbers else None


def _failure_note(report: PullReport, job_id: int) -> str | None:
    for verdict in report.failed_jobs:
        if verdict.facts.job.id == job_id:
            c = verdict.facts.classification
            return f"port {c.captures['port']}" if c.captures.get("port") else c.category
    return None


def _state(job: Job) -> BarState:
    if job.failed:
        return BarState.FAILED
    return BarState.PASSED if job.conclusion == "success" else BarState.OTHER


def build_chart(report: PullReport) -> Chart:
    host_pattern = re.compile(report.host_pattern) if report.host_pattern else None
    own_runs = {run.id for run in report.runs}
    jobs = {job.id: job for job in report.timeline_jobs}
    for verdict in report.failed_jobs:  # the failed jobs are always on the chart
        jobs.setdefault(verdict.facts.job.id, verdict.facts.job)
    started = [job for job in jobs.values() if job.started_at is not None]
    known = [t for job in started for t in (job.started_at, job.completed_at) if t is not None]
    if not known:
        return Chart(report.repo, report.pull.number, report.pull.title, None, datetime.min, datetime.min, (), (), ())
    start, end = min(known), max(known)
    if end <= start:
        end = start + timedelta(minutes=1)

    rows: dict[tuple[str, str], list[Bar]] = {}
    parts: dict[tuple[str, str], tuple[str, str, str]] = {}
    whos: dict[str, tuple[int | None, bool]] = {}
    for job in sorted(started, key=lambda j: (j.started_at, j.id)):
        pr = _pr_of(report, job.run_id)
        own = job.run_id in own_runs or pr == report.pull.number
        run = report.runs_by_id.get(job.run_id)
        who = f"#{pr}" if pr is not None else (run.head_branch if run else job.head_branch) or "?"
        state = _state(job)
        note = _failure_note(report, job.id) or ("failed" if state is BarState.FAILED else None)
        bar = Bar(job.id, job.run_id, job.name, short_job_name(job.name), who, pr, job.started_at,
                  job.completed_at or end, state, own, note if state is BarState.FAILED else None, job.html_url,
                  running=job.completed_at is None)
        host, host_label, runner_label = _runner_parts(job, host_pattern)
        key = (host, job.runner_name or "")
        rows.setdefault(key, []).append(bar)
        parts[key] = (host, host_label, runner_label)
        whos.setdefault(who, (pr, own))
    ordered = sorted(rows, key=lambda k: (_natural(parts[k][1]), _natural(parts[k][2])))
    chart_rows = tuple(Row(parts[k][0], parts[k][1], k[1] or "no runner", parts[k][2], tuple(rows[k]))
                       for k in ordered)
    pools = {_strip_prefix_pool(job) for job in started}
    pool = next(iter(pools)) if len(pools) == 1 else None
    focus = tuple((v.facts.job.started_at, v.facts.job.completed_at or end) for v in report.failed_jobs
                  if v.facts.job.started_at is not None)
    return Chart(report.repo, report.pull.number, report.pull.title, pool, start, end, chart_rows,
                 _series(whos), focus)


def _strip_prefix_pool(job: Job) -> str | None:
    """The label that prefixes the runner name (the pool), when one does."""
    name = job.runner_name or ""
    matching = [label for label in job.labels if name.startswith(label + "-")]
    return max(matching, key=len) if matching else None


def _natural(text: str) -> tuple[object, ...]:
    """Sort `node10` after `node2`."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _series(whos: dict[str, tuple[int | None, bool]]) -> tuple[Series, ...]:
    entries: list[Series] = []
    others = sorted((pr, who) for who, (pr, own) in whos.items() if pr is not None and not own)
    for who, (pr, own) in whos.items():
        if own:
            entries.append(Series(who, pr, True, OWN_COLOR))
    for index, (pr, who) in enumerate(others):
        entries.append(Series(who, pr, False, PR_PALETTE[index % len(PR_PALETTE)]))
    for who, (pr, own) in sorted(whos.items()):
        if pr is None and not own:
            entries.append(Series(who, None, False, NO_PR_COLOR))
    return tuple(entries)


def ticks(start: datetime, end: datetime, max_ticks: int) -> list[datetime]:
    """Round UTC times between start and end, at most max_ticks of them (at least one step's worth)."""
    span_min = max((end - start).total_seconds() / 60, 1.0)
    step = next((s for s in TICK_STEPS_MIN if span_min / s <= max(max_ticks, 1)), TICK_STEPS_MIN[-1])
    midnight = start.replace(hour=0, minute=0, second=0, microsecond=0)
    minutes_in = (start - midnight).total_seconds() / 60
    first = midnight + timedelta(minutes=-(-minutes_in // step) * step)
    found = []
    at = first
    while at <= end:
        found.append(at)
        at += timedelta(minutes=step)
    return found


# --- the terminal -------------------------------------------------------------------------------
def _text_on(color: str) -> str:
    """Black or white, whichever reads better on the given background."""
    red, green, blue = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return "black" if (0.299 * red + 0.587 * green + 0.114 * blue) > 150 else "white"


@dataclass(frozen=True)
class TerminalGantt:
    """A rich renderable: lays the chart out for the width the console offers."""

    chart: Chart

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width, plain=console.no_color or console.color_system is None)

    def lines(self, width: int, plain: bool = False) -> Iterator[Text]:
        """The chart's lines; `plain` (no colour: piped, NO_COLOR) draws bars with fill characters and
        puts the PR in each bar's text, since colour cannot tell them apart."""
        chart = self.chart
        yield Text(chart.heading, style="bold")
        if not chart.rows:
            yield Text("No jobs in the correlation window (the PR has no failed jobs to correlate).", style="dim")
            return
        host_w = max(len(h) for h, _ in chart.hosts())
        runner_w = max(len(row.runner_label) for row in chart.rows)
        label_w = host_w + runner_w + (3 if runner_w else 2)
        track_w = max(width - label_w - 1, 20)
        span_s = (chart.end - chart.start).total_seconds()

        def col(at: datetime) -> int:
            return min(track_w - 1, int((at - chart.start).total_seconds() / span_s * (track_w - 1)))

        focus_cols = {c for a, b in chart.focus for c in range(col(a), col(b) + 1)}
        for index, (host, rows) in enumerate(chart.hosts()):
            for number, row in enumerate(rows):
                line = Text(no_wrap=True, overflow="crop")
                line.append(f"{host if number == 0 else '':<{host_w}} ", style="bold")
                line.append(f"{row.runner_label:<{runner_w}} │" if runner_w else "│", style="dim")
                line.append_text(self._track(row, col, track_w, focus_cols, plain))
                yield line
            if index < len(chart.hosts()) - 1:
                yield Text(" " * (label_w - 1) + "│", style="dim")  # a gap between hosts
        yield from self._axis(label_w, track_w, col)
        yield self._plain_legend() if plain else self._legend()

    def _track(self, row: Row, col, track_w: int, focus_cols: set[int], plain: bool = False) -> Text:  # noqa: ANN001
        cells: list[tuple[str, str]] = [("·", "dim red") if c in focus_cols else (" ", "") for c in range(track_w)]
        for bar in row.bars:
            a, b = col(bar.start), col(bar.end)
            # Leave the last column empty so back-to-back jobs on one runner stay apart.
            filled = b - a - 1 if b - a >= 3 else max(1, b - a)
            color = self.chart.color_of(bar)
            style = f"{_text_on(color)} on {color}" + (" bold underline" if bar.own else "")
            room = filled - 1 if bar.state is BarState.FAILED else filled  # the last cell holds the ✗
            label = _fit_plain(bar, room, self.chart.mark_of(bar)) if plain else _fit(bar, room)
            fill = (OWN_FILL if bar.own else OTHER_FILL) if plain else " "
            for offset in range(filled):
                cells[a + offset] = (label[offset] if offset < len(label) else fill, style)
            if bar.state is BarState.FAILED:
                cells[a + filled - 1] = ("✗", f"bold white on {FAILED_COLOR}")
        text = Text(no_wrap=True, overflow="crop")
        for char, style in cells:
            text.append(char, style=style or None)
        return text

    def _axis(self, label_w: int, track_w: int, col) -> Iterator[Text]:  # noqa: ANN001
        chart = self.chart
        marks = ticks(chart.start, chart.end, max(1, track_w // 9))
        rule = ["─"] * track_w
        labels = [" "] * (track_w + 6)
        for at in marks:
            c = col(at)
            rule[c] = "┬"
            stamp = at.strftime("%H:%M")
            left = min(c, track_w - len(stamp))
            if all(ch == " " for ch in labels[max(0, left - 1) : left + len(stamp)]):
                labels[left : left + len(stamp)] = stamp
        yield Text(" " * (label_w - 1) + "└" + "".join(rule), style="dim", no_wrap=True, overflow="crop")
        # `UTC` in the label column, where it cannot be cropped at the right edge of a narrow console.
        yield Text(f"{'UTC':>{label_w - 1}} " + "".join(labels[:track_w + 1]).rstrip(), style="dim", no_wrap=True,
                   overflow="crop")

    def _legend(self) -> Text:
        legend = Text(no_wrap=False)
        for entry in self.chart.series:
            legend.append("  ", style=f"on {entry.color}")
            name = f"{entry.who} (this PR)" if entry.own else entry.who
            legend.append(f" {name}   ", style="bold" if entry.own else None)
        legend.append(" ✗ ", style=f"bold white on {FAILED_COLOR}")
        legend.append(" failed   ")
        legend.append("bold underline", style="bold underline")
        legend.append(" = this PR's job   ")
        legend.append("···", style="dim red")
        legend.append(" while this PR's job failed")
        return legend

    def _plain_legend(self) -> Text:
        keyed = ", ".join(f"{MARKS[i % len(MARKS)]}={s.who}" + (" (this PR)" if s.own else "")
                          for i, s in enumerate(self.chart.series))
        return Text(f"{OWN_FILL * 3} this PR's jobs   {OTHER_FILL * 3} other jobs; each bar names its PR or branch, "
                    f"or its letter when short: {keyed}   ✗ failed   ··· while this PR's job failed", no_wrap=False)


def _fit_plain(bar: Bar, room: int, mark: str) -> str:
    """Without colour the PR is what tells bars apart: the label as in colour, else the PR alone, else
    the PR's one-letter mark from the legend (a cut `#6` of #66 would name another PR)."""
    note = f" {bar.failure_note}" if bar.failure_note and bar.failure_note != "failed" else ""
    for candidate in (bar.label + note, bar.label, bar.who, mark):
        if len(candidate) <= room:
            return candidate
    return ""


def _fit(bar: Bar, room: int) -> str:
    """The longest of the bar's labels that fits: with the failure note, with the PR, or the name alone."""
    note = f" {bar.failure_note}" if bar.failure_note and bar.failure_note != "failed" else ""
    for candidate in (bar.label + note, bar.label, bar.short_name):
        if len(candidate) <= room:
            return candidate
    return bar.short_name[: max(room, 0)]


def render_terminal(chart: Chart) -> TerminalGantt:
    return TerminalGantt(chart)


# --- Mermaid --------------------------------------------------------------------------------------
# Mermaid's gantt lexer ends a task name at ':', reads '#' and '%%' as the start of a comment and ';'
# as a statement end; a line starting with a keyword is a directive, not a task.
_MERMAID_KEYWORDS = ("gantt", "title", "section", "dateformat", "axisformat", "tickinterval", "excludes",
                     "includes", "todaymarker", "inclusiveenddates", "topaxis", "weekday", "accTitle",
                     "accDescr", "click")


def mermaid_text(text: str) -> str:
    cleaned = text.replace("#", "").replace(":", " ").replace(";", ",").replace("%", " pct")
    cleaned = re.sub(r"[\x00-\x1f\x7f]", " ", cleaned)
    cleaned = re.sub(r"\s+", " ", cleaned).strip() or "job"
    if cleaned.lower().startswith(tuple(k.lower() for k in _MERMAID_KEYWORDS)):
        cleaned = "job " + cleaned
    return cleaned


def _compact_bars(report: PullReport, chart: Chart) -> tuple[list[tuple[Row, Bar]], int]:
    """The PR's failed jobs and the jobs that overlapped them (failures, then same-host jobs, then the
    longest overlaps first, up to MAX_MERMAID_TASKS), and how many candidates there were."""
    rank: dict[int, tuple[int, float]] = {v.facts.job.id: (0, 0.0) for v in report.failed_jobs}
    for verdict in report.failed_jobs:
        for other in verdict.facts.overlapping_jobs:
            failed = other.conclusion in FAILED_CONCLUSIONS
            candidate = (1 if failed else 2 if other.same_host else 3, -other.overlap_s)
            rank[other.job_id] = min(rank.get(other.job_id, candidate), candidate)
    chosen = sorted((bar for bar in chart.bars if bar.job_id in rank), key=lambda b: (rank[b.job_id], b.job_id))
    keep = {bar.job_id for bar in chosen[:MAX_MERMAID_TASKS]}
    return [(row, bar) for row in chart.rows for bar in row.bars if bar.job_id in keep], len(chosen)


def mermaid(report: PullReport, chart: Chart | None = None) -> str:
    """A Mermaid gantt of the PR's failed jobs and what overlapped them; empty when nothing failed."""
    chart = chart or build_chart(report)
    picked, candidates = _compact_bars(report, chart)
    if not picked:
        return ""
    shown = f", {len(picked)} of {candidates} jobs" if candidates > len(picked) else ""
    lines = ["gantt",
             f"    title {mermaid_text(f'PR {chart.pr} failed jobs and what ran alongside them (UTC{shown})')}",
             "    dateFormat YYYY-MM-DDTHH:mm:ss",
             "    axisFormat %H:%M",
             "    todayMarker off"]
    section = None
    for row, bar in picked:
        if row.host_label != section:
            section = row.host_label
            lines.append(f"    section {mermaid_text(section)}")
        tags = [tag for tag, on in (("crit", bar.state is BarState.FAILED), ("active", bar.own)) if on]
        who = f"PR {bar.pr}" if bar.pr is not None else bar.who
        name = f"{bar.short_name} {who} {row.runner_label}"
        if bar.state is BarState.FAILED:
            name += f" FAILED {bar.failure_note}" if bar.failure_note and bar.failure_note != "failed" else " FAILED"
        fields = [*tags, f"{bar.start:%Y-%m-%dT%H:%M:%S}", f"{bar.end:%Y-%m-%dT%H:%M:%S}"]
        lines.append(f"    {mermaid_text(name)} :{', '.join(fields)}")
    return "\n".join(lines) + "\n"


def mermaid_block(report: PullReport) -> list[str]:
    """Markdown lines embedding the chart in a collapsed section of the PR comment."""
    text = mermaid(report)
    if not text:
        return []
    return ["<details><summary>Timeline</summary>", "", "```mermaid", *text.rstrip("\n").split("\n"), "```", "",
            "</details>", ""]
