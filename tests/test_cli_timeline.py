"""`ci-triage timeline`: the picture files, and the command end to end on the demo case."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from ci_triage import render_files
from ci_triage.core.render import gantt
from ci_triage.errors import UsageError
from tests.core.test_gantt import make_report

CLI = [sys.executable, "-m", "ci_triage"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY",
                                                           "GITHUB_API_URL", "CI_TRIAGE_STORE")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env={**env, "COLUMNS": "120"},
                          timeout=120, cwd=cwd)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which must come first (PNG spec, section 11.2.2)."""
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


# --- the drawing functions, in process --------------------------------------------------------------
def test_png_figure_has_a_row_per_runner_and_grows_with_them():
    chart = gantt.build_chart(make_report())
    figure = render_files.png_figure(chart)
    width, height = figure.get_size_inches()
    assert width == 15.0 and 3.5 < height < 8
    [axes] = figure.axes
    assert [t.get_text() for t in axes.get_yticklabels()] == ["r0", "r1", "r0", "r0"]
    assert all(":" in t.get_text() and len(t.get_text()) == 5 for t in axes.get_xticklabels())
    texts = [t.get_text() for t in axes.texts]
    assert "node10" in texts and "failed: port 35191" in texts and "failed (#8)" in texts
    assert chart.heading == figure.get_suptitle()


def test_svg_is_self_contained_with_one_link_per_bar():
    chart = gantt.build_chart(make_report())
    document = render_files.html_document(chart)
    assert document.startswith("<!DOCTYPE html>") and document.count("<svg") == 1
    assert "<script" not in document and "http" not in document.replace("https://example/job/", "").replace(
        "http://www.w3.org/2000/svg", "")
    assert document.count('<a href="https://example/job/') == len(chart.bars)
    assert "failed: port 35191" in document and "node10" in document and "13:30" in document
    assert "o/r · PR #5" in document


def test_svg_escapes_job_names():
    report = make_report()
    odd = report.timeline_jobs[1].__class__(**{**report.timeline_jobs[1].__dict__, "name": "x (<b>&</b>)"})
    chart = gantt.build_chart(make_report(jobs=(report.timeline_jobs[0], odd, *report.timeline_jobs[2:])))
    assert "&lt;b&gt;&amp;&lt;/b&gt;" in render_files.svg(chart) and "<b>" not in render_files.svg(chart)


@pytest.mark.parametrize("name", ["t.pdf", "t", "t.svg"])
def test_other_extensions_are_a_usage_error(name):
    with pytest.raises(UsageError) as raised:
        render_files.check_output(Path(name))
    assert raised.value.one_line().endswith(". Use a .png or .html file name") and raised.value.exit_code == 2
    assert render_files.check_output(Path("T.PNG")) == ".png" and render_files.check_output(Path("a.htm")) == ".html"


# --- end to end ----------------------------------------------------------------------------------------
def test_timeline_writes_a_readable_png(tmp_path):
    result = run("timeline", "--pr", "67", "--demo", "--output", "t.png", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "t.png\n" and result.stderr == ""
    data = (tmp_path / "t.png").read_bytes()
    width, height = png_size(data)
    assert len(data) > 30_000
    assert 1200 <= width <= 3000 and 400 <= height <= 2000 and width > height


def test_timeline_writes_html_with_inline_svg(tmp_path):
    result = run("timeline", "--pr", "67", "--demo", "-o", str(tmp_path / "t.html"))
    assert result.returncode == 0, result.stderr
    document = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert "<svg" in document and "</svg>" in document and "<script" not in document
    assert "failed: port 35191" in document and "PR #67" in document


def test_timeline_in_the_terminal():
    result = run("timeline", "--pr", "67", "--demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "PR #67" in out and "node2" in out and "✗" in out and "#67 (this PR)" in out and "13:00" in out
    assert all(len(line) <= 120 for line in out.splitlines())


def test_a_bad_extension_is_one_line_and_exit_2(tmp_path):
    result = run("timeline", "--pr", "67", "--demo", "--output", "t.pdf", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("ci-triage: error: cannot write t.pdf")
    assert not (tmp_path / "t.pdf").exists()
