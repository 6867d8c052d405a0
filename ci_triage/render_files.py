"""Write the timeline chart to a picture file: .png (matplotlib) or .html (inline SVG, no scripts).

The drawing functions take the chart model (ci_triage.core.render.gantt.Chart) and return an object or
text; only `write_chart` touches the disk. matplotlib is imported when a .png is asked for, since it is
slow to import and nothing else needs it; it is an optional extra (`ci-triage[charts]`), and
`require_matplotlib` says so in one line before any work when it is missing.
"""

from __future__ import annotations

from datetime import datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_triage.core.render.gantt import FAILED_COLOR, BarState, Chart, ticks
from ci_triage.errors import UsageError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = (".png", ".html")
INSTALL_HINT = "pip install 'ci-triage[charts]'"
FAILED_EDGE = "#7f0000"
OWN_EDGE = "#000000"


def require_matplotlib(what: str) -> None:
    """Fail with one line, before any work, when matplotlib (the `charts` extra) is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(f"{what} needs matplotlib, which is not installed", f"Install it: {INSTALL_HINT}") from None


def check_output(path: Path) -> str:
    """The picture format for a file name, or a UsageError saying which ones exist (or what a .png needs)."""
    suffix = path.suffix.lower()
    if suffix == ".htm":
        suffix = ".html"
    if suffix not in FORMATS:
        problem = f"'{path.suffix}' is not a picture format ci-triage writes" if path.suffix else \
            "the file name has no extension"
        raise UsageError(f"cannot write {path}: {problem}", "Use a .png or .html file name")
    if suffix == ".png":
        require_matplotlib(f"writing {path}")
    return suffix


def write_chart(chart: Chart, path: Path) -> Path:
    kind = check_output(path)
    try:
        if kind == ".png":
            from matplotlib.backends.backend_agg import FigureCanvasAgg

            figure = png_figure(chart)
            FigureCanvasAgg(figure)
            figure.savefig(path, format="png", dpi=110)
        else:
            path.write_text(html_document(chart), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


# --- layout shared by both pictures ----------------------------------------------------------------
def _layout(chart: Chart, gap: float) -> tuple[list[tuple[str, float, float]], list[tuple[float, Any]]]:
    """Host bands (label, top, bottom) and row positions (y, row), top to bottom, in row units."""
    bands, placed = [], []
    y = 0.0
    for host, rows in chart.hosts():
        top = y
        for row in rows:
            placed.append((y + 0.5, row))
            y += 1.0
        bands.append((host, top, y))
        y += gap
    return bands, placed


def _minutes(chart: Chart, at: datetime) -> float:
    return (at - chart.start).total_seconds() / 60


def _edge(chart: Chart, bar: Any) -> str:
    """This PR's bars are outlined in black; another PR's failed bar keeps its PR's colour as an outline."""
    if bar.own:
        return OWN_EDGE
    if bar.state is BarState.FAILED:
        return next((s.color for s in chart.series if s.who == bar.who), FAILED_EDGE)
    return "white"


def _failure_text(note: str | None) -> str:
    return f"failed: {note}" if note and note != "failed" else "failed"


# --- PNG (matplotlib) -----------------------------------------------------------------------------
def png_figure(chart: Chart) -> Figure:
    """A matplotlib Figure of the chart, not bound to pyplot's global state."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    host_gap = 0.35
    bands, placed = _layout(chart, host_gap)
    total = bands[-1][2] if bands else 1.0
    row_in = 0.62
    width_in = 15.0
    figure = Figure(figsize=(width_in, 2.3 + row_in * max(total, 1.0)), layout="constrained")
    ax = figure.add_subplot()
    figure.suptitle(chart.heading, fontsize=13, fontweight="bold")
    ax.set_title(f"PR #{chart.pr}: {chart.pull_title}", fontsize=10, color="#444444")
    if not placed:
        ax.text(0.5, 0.5, "No jobs in the correlation window (the PR has no failed jobs to correlate).",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return figure

    span_min = max(_minutes(chart, chart.end), 1.0)
    pad = span_min * 0.01
    ax.set_xlim(-pad, span_min + pad)
    ax.set_ylim(total - host_gap + 0.1, -0.1)
    # Roughly how many minutes one character of 8-point text takes, to keep labels inside their bars.
    axes_in = width_in * 0.86
    minutes_per_char = span_min / axes_in * (8 * 0.6 / 72)

    # The host name goes left of the runner labels (the y tick labels, 9 pt): past the longest of them,
    # so a long runner label never overprints it; a runner that is its own host has no label.
    runner_chars = max((len(row.runner_label) for _, row in placed), default=0)
    host_offset = -(runner_chars * 9 * 0.62 + 14) if runner_chars else -6
    for index, (host, top, bottom) in enumerate(bands):
        if index % 2 == 0:
            ax.axhspan(top, bottom, color="#f2f2f2", zorder=0)
        ax.annotate(host, xy=(0, (top + bottom) / 2), xycoords=("axes fraction", "data"), xytext=(host_offset, 0),
                    textcoords="offset points", ha="right", va="center", fontsize=11, fontweight="bold")
    for start, end in chart.focus:
        ax.axvspan(_minutes(chart, start), _minutes(chart, end), color=FAILED_COLOR, alpha=0.08, zorder=0.5)
        ax.axvline(_minutes(chart, end), color=FAILED_COLOR, linestyle="--", linewidth=1, alpha=0.7, zorder=0.6)

    for y, row in placed:
        for bar in row.bars:
            left, right = _minutes(chart, bar.start), _minutes(chart, bar.end)
            failed = bar.state is BarState.FAILED
            edge = _edge(chart, bar)
            ax.barh(y, right - left, left=left, height=0.56, color=chart.color_of(bar), edgecolor=edge,
                    linewidth=0.8 if edge == "white" else 2.4, hatch="//" if bar.state is BarState.OTHER else None,
                    zorder=2)
            label = bar.label if len(bar.label) * minutes_per_char < (right - left) * 0.95 else bar.short_name
            if len(label) * minutes_per_char < (right - left) * 0.95:
                ax.text((left + right) / 2, y, label, ha="center", va="center", fontsize=8, zorder=3,
                        color="white" if failed or bar.own else "black",
                        fontweight="bold" if bar.own else "normal")
            if failed:
                ax.plot([right], [y], marker="X", markersize=11, color="black", markeredgecolor="white",
                        markeredgewidth=1, zorder=4)
                ax.text(right, y - 0.31, _failure_text(bar.failure_note) + (f" ({bar.who})" if not bar.own else ""),
                        ha="right", va="bottom", fontsize=7.5, color=FAILED_EDGE, zorder=4,
                        fontweight="bold" if bar.own else "normal")

    ax.set_yticks([y for y, _ in placed], [row.runner_label for _, row in placed], fontsize=9)
    marks = ticks(chart.start, chart.end, 14)
    ax.set_xticks([_minutes(chart, at) for at in marks], [at.strftime("%H:%M") for at in marks], fontsize=9)
    ax.set_xlabel(f"time (UTC), {chart.start:%Y-%m-%d}", fontsize=9)
    ax.grid(axis="x", color="#cccccc", linewidth=0.6, zorder=1)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    handles: list[Any] = [
        Patch(facecolor=s.color, edgecolor=OWN_EDGE if s.own else "white", linewidth=2 if s.own else 0.8,
              label=f"{s.who} (this PR)" if s.own else s.who)
        for s in chart.series
    ]
    handles.append(Patch(facecolor=FAILED_COLOR, edgecolor=FAILED_EDGE, label="failed job"))
    handles.append(Line2D([], [], marker="X", markersize=10, color="black", markeredgecolor="white",
                          linestyle="none", label="when it failed"))
    if chart.focus:
        handles.append(Patch(facecolor=FAILED_COLOR, alpha=0.15, label=f"while PR #{chart.pr}'s failed job ran"))
    figure.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 5), fontsize=9,
                  frameon=False)
    return figure


# --- HTML (inline SVG) ----------------------------------------------------------------------------
def html_document(chart: Chart) -> str:
    title = escape(chart.heading)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{title}</title>\n"
        "<style>body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:16px;color:#222}"
        "svg text{font-family:inherit} a:hover rect{opacity:.85}</style>\n"
        f"</head>\n<body>\n{svg(chart)}\n</body>\n</html>\n"
    )


def svg(chart: Chart, width: int = 1280) -> str:
    """The chart as one <svg> element. Hovering a bar shows its job, PR, times and result."""
    right_m, top_m, row_h, gap_h = 24, 70, 38, 12
    bands, placed = _layout(chart, gap_h / row_h)
    # Room on the left for the host names (14 px bold) beside the runner labels (12 px): both whole.
    runner_px = max((len(row.runner_label) for _, row in placed), default=0) * 7
    host_x_gap = runner_px + 16 if runner_px else 8
    left_m = max(150, int(max((len(host) for host, _, _ in bands), default=0) * 9 + host_x_gap + 12))
    plot_h = (bands[-1][2] if bands else 1) * row_h
    legend_y = top_m + plot_h + 56
    height = int(legend_y + 16)
    plot_w = width - left_m - right_m
    span_min = max(_minutes(chart, chart.end), 1.0) if placed else 1.0

    pad = span_min * 0.01

    def x(at: datetime) -> float:
        return left_m + (_minutes(chart, at) + pad) / (span_min + 2 * pad) * plot_w

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(chart.heading)}">',
           f'<text x="{left_m}" y="24" font-size="17" font-weight="bold">{escape(chart.heading)}</text>',
           f'<text x="{left_m}" y="44" font-size="13" fill="#555">PR #{chart.pr}: {escape(chart.pull_title)}</text>']
    if not placed:
        out.append(f'<text x="{left_m}" y="{top_m + 20}" font-size="14">No jobs in the correlation window '
                   "(the PR has no failed jobs to correlate).</text></svg>")
        return "\n".join(out)
    for index, (host, top, bottom) in enumerate(bands):
        y0, y1 = top_m + top * row_h, top_m + bottom * row_h
        if index % 2 == 0:
            out.append(f'<rect x="{left_m}" y="{y0:.1f}" width="{plot_w}" height="{y1 - y0:.1f}" fill="#f2f2f2"/>')
        out.append(f'<text x="{left_m - host_x_gap}" y="{(y0 + y1) / 2 + 5:.1f}" font-size="14" font-weight="bold" '
                   f'text-anchor="end">{escape(host)}</text>')
    for at in ticks(chart.start, chart.end, 14):
        tx = x(at)
        out.append(f'<line x1="{tx:.1f}" y1="{top_m}" x2="{tx:.1f}" y2="{top_m + plot_h}" stroke="#ccc"/>')
        out.append(f'<text x="{tx:.1f}" y="{top_m + plot_h + 18}" font-size="12" text-anchor="middle">'
                   f'{at:%H:%M}</text>')
    out.append(f'<text x="{left_m + plot_w / 2:.1f}" y="{top_m + plot_h + 36}" font-size="12" text-anchor="middle" '
               f'fill="#555">time (UTC), {chart.start:%Y-%m-%d}</text>')
    for start, end in chart.focus:
        out.append(f'<rect x="{x(start):.1f}" y="{top_m}" width="{x(end) - x(start):.1f}" height="{plot_h}" '
                   f'fill="{FAILED_COLOR}" fill-opacity="0.08"/>')
    overlays: list[str] = []
    for y, row in placed:
        cy = top_m + y * row_h
        out.append(f'<text x="{left_m - 8}" y="{cy + 4:.1f}" font-size="12" text-anchor="end">'
                   f'{escape(row.runner_label)}</text>')
        for bar in row.bars:
            drawn, marks = _svg_bar(chart, bar, x(bar.start), x(bar.end), cy)
            out.append(drawn)
            overlays.append(marks)
    out.extend(mark for mark in overlays if mark)  # failure marks on top of the next job's bar
    out.append(f'<line x1="{left_m}" y1="{top_m + plot_h}" x2="{left_m + plot_w}" y2="{top_m + plot_h}" '
               'stroke="#333"/>')
    out.append(_svg_legend(chart, left_m, legend_y))
    out.append("</svg>")
    return "\n".join(out)


def _svg_bar(chart: Chart, bar: Any, x0: float, x1: float, cy: float) -> tuple[str, str]:
    """The bar (a link to the job, with a tooltip) and its failure mark, drawn later on top."""
    failed = bar.state is BarState.FAILED
    w = max(x1 - x0, 1.5)
    edge = _edge(chart, bar)
    bold = ' font-weight="bold"' if bar.own else ""
    tip = (f"{bar.job_name} · {bar.who} · {bar.start:%H:%M:%S}–{bar.end:%H:%M:%S} UTC · "
           + (_failure_text(bar.failure_note) if failed else bar.state.value))
    parts = [f'<a href="{escape(bar.url)}"><g><title>{escape(tip)}</title>',
             f'<rect x="{x0:.1f}" y="{cy - 9:.1f}" width="{w:.1f}" height="18" rx="2" fill="{chart.color_of(bar)}" '
             f'stroke="{edge}" stroke-width="{1 if edge == "white" else 2.5}"/>']
    label = bar.label if len(bar.label) * 6.2 < w - 6 else bar.short_name
    if len(label) * 6.2 < w - 6:
        parts.append(f'<text x="{x0 + w / 2:.1f}" y="{cy + 4:.1f}" font-size="11" text-anchor="middle" '
                     f'fill="{"#fff" if failed or bar.own else "#000"}"{bold}>{escape(label)}</text>')
    parts.append("</g></a>")
    if not failed:
        return "".join(parts), ""
    note = _failure_text(bar.failure_note) + ("" if bar.own else f" ({bar.who})")
    mark = (f'<path d="M{x1 - 5:.1f},{cy - 5:.1f} l10,10 M{x1 + 5:.1f},{cy - 5:.1f} l-10,10" stroke="#fff" '
            f'stroke-width="5"/><path d="M{x1 - 5:.1f},{cy - 5:.1f} l10,10 M{x1 + 5:.1f},{cy - 5:.1f} l-10,10" '
            f'stroke="#000" stroke-width="3"/><text x="{x1:.1f}" y="{cy - 11:.1f}" font-size="10" '
            f'text-anchor="end" fill="{FAILED_EDGE}"{bold}>{escape(note)}</text>')
    return "".join(parts), mark


def _svg_legend(chart: Chart, x0: float, y: float) -> str:
    items = []
    x = x0
    for series in chart.series:
        name = f"{series.who} (this PR)" if series.own else series.who
        stroke = f' stroke="{OWN_EDGE}" stroke-width="2.5"' if series.own else ""
        items.append(f'<rect x="{x}" y="{y - 11}" width="16" height="14" fill="{series.color}"{stroke}/>'
                     f'<text x="{x + 22}" y="{y}" font-size="12">{escape(name)}</text>')
        x += 34 + 7 * len(name)
    items.append(f'<rect x="{x}" y="{y - 11}" width="16" height="14" fill="{FAILED_COLOR}"/>'
                 f'<path d="M{x + 3},{y - 9} l10,10 M{x + 13},{y - 9} l-10,10" stroke="#000" stroke-width="2"/>'
                 f'<text x="{x + 22}" y="{y}" font-size="12">failed</text>')
    x += 80
    if chart.focus:
        items.append(f'<rect x="{x}" y="{y - 11}" width="16" height="14" fill="{FAILED_COLOR}" fill-opacity="0.15"/>'
                     f'<text x="{x + 22}" y="{y}" font-size="12">while PR #{chart.pr}\'s failed job ran</text>')
    return "".join(items)
