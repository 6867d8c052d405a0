"""The runner-health trends as a PNG: a host x day heatmap of infra failures above a chart of what reruns
cost each day (runner-minutes asked for by ci-triage and by people, and how many reruns rescued their run).

matplotlib is an optional extra (`pip install 'ci-triage[charts]'`): it is imported here only, when a
picture is asked for; the command calls render_files.require_matplotlib first, which turns its absence
into one line and exit 2 before any work.
Figures are built on matplotlib's object API with the Agg canvas, never pyplot's global state. Host
names come from runner names, which whoever registers a runner chooses: they are sanitised and clipped,
and `$` is escaped so that matplotlib's mathtext never parses them.
"""

from __future__ import annotations

from io import BytesIO
from typing import TYPE_CHECKING

from ci_triage.core.health.records import HealthReport
from ci_triage.core.health.trends import DailyTrends, HeatmapRow, heatmap_rows
from ci_triage.core.text import shown

if TYPE_CHECKING:
    from matplotlib.figure import Figure

AUTOMATIC_COLOR = "#3b6fb6"  # reruns ci-triage asked for
MANUAL_COLOR = "#e08a2c"  # reruns people asked for
SICK_COLOR = "#b2182b"
NO_JOBS_COLOR = "#e9e9e9"
HOST_CHARS = 44
DPI = 110


def plain(text: str, limit: int = HOST_CHARS) -> str:
    """Untrusted text as matplotlib draws it literally: no control characters, no mathtext."""
    return shown(text, limit).replace("$", r"\$")


def trends_png(report: HealthReport, trends: DailyTrends) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = trends_figure(report, trends)
    FigureCanvasAgg(figure)
    buffer = BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _window_title(report: HealthReport, trends: DailyTrends) -> str:
    if not trends.days:
        return f"Runner health of {plain(report.repo, 100)}"
    first, last = trends.days[0], trends.days[-1]
    return f"Runner health of {plain(report.repo, 100)}, {first:%d %b} to {last:%d %b %Y} (UTC days)"


def trends_figure(report: HealthReport, trends: DailyTrends) -> Figure:
    from matplotlib.figure import Figure

    rows = heatmap_rows(trends, report)
    days = len(trends.days)
    # The day axis is at least 9 inches (the titles and the legend fit above and below it), 0.62 per day
    # beyond; the host names (9.5 pt) and the totals beside the rows take their own room.
    label_in = max((len(_host_label(row)) for row in rows), default=10) * 9.5 * 0.6 / 72
    width_in = min(max(9.0, 0.62 * days) + label_in + 2.9, 30.0)
    heat_in = 0.9 + 0.42 * max(len(rows), 1)
    figure = Figure(figsize=(width_in, heat_in + 4.2), layout="constrained")
    # A narrow second column holds the colour bar, so the two charts keep one width and one day axis.
    grid = figure.add_gridspec(2, 2, height_ratios=[heat_in, 3.4], width_ratios=[1, 0.015])
    heat_ax = figure.add_subplot(grid[0, 0])
    cost_ax = figure.add_subplot(grid[1, 0], sharex=heat_ax)
    bar_ax = figure.add_subplot(grid[0, 1])
    figure.suptitle(_window_title(report, trends), fontsize=14, fontweight="bold")
    if not days:
        heat_ax.text(0.5, 0.5, "No jobs in the window.", ha="center", va="center", transform=heat_ax.transAxes)
        heat_ax.set_axis_off()
        cost_ax.set_axis_off()
        bar_ax.set_axis_off()
        return figure
    _heatmap(figure, heat_ax, bar_ax, rows, trends)
    _rerun_cost(cost_ax, trends)
    labels = [f"{day:%a}\n{day:%d %b}" for day in trends.days]
    step = 1 if days <= 31 else 7
    cost_ax.set_xticks(range(0, days, step), labels[::step], fontsize=8.5)
    cost_ax.set_xlim(-0.5, days - 0.5)
    return figure


def _heatmap(figure: Figure, ax, bar_ax, rows: tuple[HeatmapRow, ...], trends: DailyTrends) -> None:
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    ax.set_title("Infra failures per host and day: jobs that failed because of the runner or its host, not the code",
                 fontsize=10.5, loc="left")
    if not rows:
        ax.text(0.5, 0.5, "No infra failures on any self-hosted pool in the window.", ha="center", va="center",
                transform=ax.transAxes, fontsize=11)
        ax.set_yticks([])
        ax.tick_params(axis="x", labelbottom=False)
        bar_ax.set_axis_off()
        return
    infra = np.array([row.infra for row in rows], dtype=float)
    jobs = np.array([row.jobs for row in rows], dtype=float)
    shown_values = np.ma.masked_where(jobs == 0, infra)
    # The scale is the hosts' own: a row summing many hosts would wash every other row out.
    top = max(max((max(row.infra, default=0) for row in rows if not row.merged), default=0), 1)
    base = colormaps["YlOrRd"]
    # White for none, then yellow to dark red; a day the host ran nothing is grey (masked).
    colors = ListedColormap(np.vstack([[1, 1, 1, 1], base(np.linspace(0.18, 1.0, 256))])).with_extremes(
        bad=NO_JOBS_COLOR)
    mesh = ax.pcolormesh(np.arange(len(trends.days) + 1) - 0.5, np.arange(len(rows) + 1) - 0.5, shown_values,
                         cmap=colors, vmin=0, vmax=top, edgecolors="white", linewidth=1.5)
    for y, row in enumerate(rows):
        for x, (count, ran) in enumerate(zip(row.infra, row.jobs)):
            if not ran:
                continue
            dark = count > top * 0.55
            ax.text(x, y, str(count), ha="center", va="center", fontsize=9.5,
                    fontweight="bold" if count else "normal",
                    color="white" if dark else ("#222222" if count else "#b0b0b0"))
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), [_host_label(row) for row in rows], fontsize=9.5)
    for label, row in zip(ax.get_yticklabels(), rows):
        if row.sick:
            label.set_color(SICK_COLOR)
            label.set_fontweight("bold")
    # Each host's total for the window, beside its row.
    right = ax.secondary_yaxis("right")
    right.set_yticks(range(len(rows)), [_total(row) for row in rows], fontsize=8.5)
    right.tick_params(length=0)
    right.spines["right"].set_visible(False)
    ax.tick_params(axis="x", labelbottom=False, length=0)
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    bar = figure.colorbar(mesh, cax=bar_ax)
    bar.set_label("infra failures that day", fontsize=9)
    bar.ax.tick_params(labelsize=8)
    if top <= 10:
        bar.set_ticks(range(0, top + 1, 1 if top <= 5 else 2))
    ax.legend(handles=[Patch(facecolor=NO_JOBS_COLOR, edgecolor="#cccccc", label="host ran no jobs that day"),
                       Patch(facecolor="white", edgecolor="#cccccc", label="jobs ran, none failed for infra"),
                       Patch(facecolor=SICK_COLOR, label="sick host: its name in red (fails far more than its pool)")],
              loc="upper left", bbox_to_anchor=(0, -0.02), ncol=3, fontsize=8.5, frameon=False)


def _host_label(row: HeatmapRow) -> str:
    name = plain(row.host)
    return f"{name}  (sick)" if row.sick else name


def _total(row: HeatmapRow) -> str:
    infra, jobs = sum(row.infra), sum(row.jobs)
    rate = f" ({infra / jobs:.1%})" if jobs else ""
    return f"{infra} of {jobs} jobs{rate}"


def _rerun_cost(ax, trends: DailyTrends) -> None:
    import numpy as np

    reruns = trends.reruns
    x = np.arange(len(reruns))
    automatic = np.array([r.automatic_minutes for r in reruns])
    manual = np.array([r.manual_minutes for r in reruns])
    requested = sum(r.requested for r in reruns)
    rescued = sum(r.rescued for r in reruns)
    minutes = float(automatic.sum() + manual.sum())
    ax.set_title(f"Rerun cost per day: runner-minutes spent on reruns ({requested} reruns, {rescued} rescued their "
                 f"run, {minutes:,.0f} runner-minutes in all)", fontsize=10.5, loc="left")
    ax.bar(x, automatic, width=0.7, color=AUTOMATIC_COLOR, label="reruns ci-triage asked for")
    ax.bar(x, manual, width=0.7, bottom=automatic, color=MANUAL_COLOR, label="reruns people asked for")
    peak = float((automatic + manual).max()) if len(x) else 0.0
    ax.set_ylim(0, max(peak * 1.28, 10.0))
    if len(x) <= 31:
        for position, day in zip(x, reruns):
            if day.requested:
                ax.text(position, day.runner_minutes + max(peak, 10.0) * 0.02,
                        f"{day.rescued}/{day.requested}\nrescued", ha="center", va="bottom", fontsize=7.5,
                        color="#333333", linespacing=0.95)
            else:
                ax.text(position, max(peak, 10.0) * 0.02, "no\nreruns", ha="center", va="bottom", fontsize=7.5,
                        color="#999999", linespacing=0.95)
    ax.set_ylabel("runner-minutes", fontsize=9)
    ax.grid(axis="y", color="#dddddd", linewidth=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(loc="upper right", fontsize=8.5, frameon=False, ncol=2)
