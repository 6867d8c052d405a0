"""Runner health per day: the host x day grid, reruns per day (adding up to the report's totals), which
hosts get a heatmap row, the HTML page's escaping and self-containment, and the PNG drawing hostile names."""

from __future__ import annotations

import base64
import random
import re
from datetime import UTC, date, datetime, timedelta
from html.parser import HTMLParser

import pytest

from ci_triage.core.health.analysis import analyse
from ci_triage.core.health.records import JobRecord
from ci_triage.core.health.trends import MAX_DAYS, daily_trends, heatmap_rows
from ci_triage.core.render.health_html import render_html

DAY0 = datetime(2026, 5, 11, tzinfo=UTC)  # a Monday
HOSTS = re.compile(r"^(?P<host>.+)-r\d+$")
POOL = ("self-hosted", "npu")


def _job(job_id, runner, start, *, run_id=None, attempt=1, conclusion="success", category=None, minutes=10.0,
         labels=POOL, name="example"):
    return JobRecord(run_id=run_id or job_id, attempt=attempt, job_id=job_id, workflow="CI", name=name, pr=7,
                     branch=None, head_sha=f"sha{run_id or job_id}", runner_name=runner, runner_group="Default",
                     labels=labels, started_at=start, completed_at=start + timedelta(minutes=minutes),
                     conclusion=conclusion, category=category)


def test_jobs_fall_on_the_utc_day_they_started_and_only_counted_ones_count():
    records = [
        _job(1, "a-r0", DAY0 + timedelta(hours=23, minutes=55), conclusion="failure", category="port_in_use"),
        _job(2, "a-r1", DAY0 + timedelta(days=1, hours=1), conclusion="failure", category="test_failure"),
        _job(3, "b-r0", DAY0 + timedelta(days=1, hours=2)),
        _job(4, "b-r0", DAY0 + timedelta(days=1, hours=3), conclusion="cancelled"),  # says nothing
        _job(5, "b-r0", DAY0 + timedelta(days=2, hours=3), conclusion="failure", category=None),  # unclassified
        _job(6, "b-r0", DAY0 - timedelta(hours=1), conclusion="failure", category="port_in_use"),  # before
    ]
    trends = daily_trends(records, since=DAY0, until=DAY0 + timedelta(days=3), host_pattern=HOSTS)
    # A window ending at midnight does not take in the day that starts then.
    assert trends.days == (date(2026, 5, 11), date(2026, 5, 12), date(2026, 5, 13))
    assert trends.host_infra == {"a": (1, 0, 0), "b": (0, 0, 0)}
    assert trends.host_jobs == {"a": (1, 1, 0), "b": (0, 1, 1)}
    assert [(t.jobs, t.failures, t.infra_failures) for t in trends.totals] == [(1, 1, 1), (2, 1, 0), (1, 1, 0)]
    assert trends.clipped_days == 0


def test_reruns_per_day_add_up_to_the_reports_totals():
    rng = random.Random(3)
    records, automatic, next_id = [], {}, 1
    for run_id in range(1, 80):
        start = DAY0 + timedelta(hours=rng.uniform(0, 24 * 6))
        attempts = rng.choice((1, 1, 2, 3))
        for attempt in range(1, attempts + 1):
            red = attempt < attempts or rng.random() < 0.3
            for index in range(2):
                failed = red and index == 0
                records.append(_job(next_id, f"h{rng.randint(0, 3)}-r{index}", start + timedelta(hours=attempt),
                                    run_id=run_id, attempt=attempt, conclusion="failure" if failed else "success",
                                    category="port_in_use" if failed else None, minutes=rng.uniform(1, 30)))
                next_id += 1
            if attempt > 1:
                automatic[(run_id, attempt)] = rng.random() < 0.5
    until = DAY0 + timedelta(days=8)
    report = analyse(records, repo="o/r", since=DAY0, until=until, host_pattern=HOSTS, automatic=automatic)
    trends = daily_trends(records, since=DAY0, until=until, host_pattern=HOSTS, automatic=automatic)
    r = report.reruns
    assert r.requested > 10 and 0 < r.automatic < r.requested
    assert sum(d.requested for d in trends.reruns) == r.requested
    assert sum(d.automatic for d in trends.reruns) == r.automatic
    assert sum(d.manual for d in trends.reruns) == r.manual
    assert sum(d.rescued for d in trends.reruns) == r.rescued
    assert sum(d.runner_minutes for d in trends.reruns) == pytest.approx(r.runner_minutes, abs=0.5)
    # ... and the host grid adds up to the host table.
    for host in report.hosts:
        assert sum(trends.host_infra[host.key]) == host.infra_failures
        assert sum(trends.host_jobs[host.key]) == host.jobs


def test_a_rerun_counts_on_the_day_its_first_job_started_and_its_minutes_go_to_who_asked():
    records = [
        _job(1, "a-r0", DAY0 + timedelta(hours=10), run_id=9, conclusion="failure", category="port_in_use"),
        _job(2, "a-r0", DAY0 + timedelta(days=1, hours=9), run_id=9, attempt=2, minutes=20),
        _job(3, "a-r1", DAY0 + timedelta(days=1, hours=8), run_id=9, attempt=2, minutes=5),
        _job(4, "a-r0", DAY0 + timedelta(days=1, hours=11), run_id=9, attempt=3, conclusion="failure",
             category="port_in_use", minutes=7),
    ]
    trends = daily_trends(records, since=DAY0, until=DAY0 + timedelta(days=2), host_pattern=HOSTS,
                          automatic={(9, 2): True})
    first, second = trends.reruns
    assert first.requested == 0
    assert (second.requested, second.automatic, second.manual, second.rescued) == (2, 1, 1, 1)
    assert (second.automatic_minutes, second.manual_minutes) == (25.0, 7.0)


def test_a_long_window_keeps_its_last_days():
    records = [_job(1, "a-r0", DAY0 + timedelta(days=99, hours=1), conclusion="failure", category="port_in_use")]
    trends = daily_trends(records, since=DAY0, until=DAY0 + timedelta(days=100), host_pattern=HOSTS)
    assert len(trends.days) == MAX_DAYS and trends.clipped_days == 100 - MAX_DAYS
    assert trends.days[-1] == (DAY0 + timedelta(days=99)).date() and trends.host_infra["a"][-1] == 1


def test_no_records_and_no_window_is_empty():
    trends = daily_trends([])
    assert trends.days == () and trends.host_jobs == {} and trends.reruns == ()


def _fleet():
    """Four hosts of one pool (h3 leaks ports), one hosted runner per job on another pool."""
    rng = random.Random(11)
    records = []
    for job_id in range(1, 400):
        host = f"h{job_id % 4}"
        bad = rng.random() < (0.4 if host == "h3" else 0.02)
        records.append(_job(job_id, f"{host}-r0", DAY0 + timedelta(hours=job_id * 0.4),
                            conclusion="failure" if bad else "success", category="port_in_use" if bad else None))
    for job_id in range(400, 440):
        records.append(_job(job_id, f"GitHub Actions {job_id}", DAY0 + timedelta(hours=job_id - 400),
                            labels=("ubuntu-latest",), name="cpu"))
    return records


def test_heatmap_rows_are_the_pools_with_infra_failures_sick_first_and_the_rest_summed():
    records = _fleet()
    until = DAY0 + timedelta(days=7)
    report = analyse(records, repo="o/r", since=DAY0, until=until, host_pattern=HOSTS)
    trends = daily_trends(records, since=DAY0, until=until, host_pattern=HOSTS)
    rows = heatmap_rows(trends, report)
    assert rows[0].host == "h3" and rows[0].sick
    assert {r.host for r in rows} == {"h0", "h1", "h2", "h3"}  # no hosted runner: its pool never failed
    assert not any(r.sick for r in rows[1:])
    capped = heatmap_rows(trends, report, max_hosts=2)
    assert [r.host for r in capped] == ["h3", "3 other hosts"] and capped[1].merged == 3
    assert sum(capped[1].jobs) == sum(sum(r.jobs) for r in rows[1:])


HOSTILE = "<script>alert(1)</script>\x1b]0;pwned\x07$\\frac{a}{b}$\"'&"


def _hostile_report():
    records = _fleet()
    records = [r if not r.runner_name.startswith("h3") else
               JobRecord(**{**r.__dict__, "runner_name": f"{HOSTILE}-r0", "name": f"job {HOSTILE}"}) for r in records]
    until = DAY0 + timedelta(days=7)
    report = analyse(records, repo="o/<r>", since=DAY0, until=until, host_pattern=HOSTS)
    return report, daily_trends(records, since=DAY0, until=until, host_pattern=HOSTS)


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.urls = set(), [], []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.urls += [value for name, value in attrs if name in ("src", "href")]

    def handle_data(self, data):
        self.text.append(data)


def test_the_html_page_escapes_what_github_sent_and_fetches_nothing():
    report, trends = _hostile_report()
    assert report.hosts[0].sick and report.hosts[0].key.startswith("<script>")
    page = render_html(report, trends, png=b"\x89PNG fake")
    parser = _Page()
    parser.feed(page)
    assert "script" not in parser.tags and "\x1b" not in page and "\x07" not in page
    assert parser.tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "b", "code", "br",
                           "span", "img", "table", "tr", "th", "td"}
    text = "".join(parser.text)
    assert "<script>alert(1)</script>" in text  # shown as text, the escape sequence gone
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert parser.urls == ["data:image/png;base64," + base64.b64encode(b"\x89PNG fake").decode()]
    assert "Runner health of o/<r>" in text and "Contention hotspots" in text and "Flaky jobs" in text


def test_the_html_page_without_a_picture_still_has_the_per_day_table():
    report, trends = _hostile_report()
    page = render_html(report, trends, png=None)
    assert "<img" not in page and page.count("<tr>") > len(trends.days)


def test_the_png_draws_hostile_host_names_literally():
    pytest.importorskip("matplotlib")
    from ci_triage.render_trends import trends_figure, trends_png

    report, trends = _hostile_report()
    figure = trends_figure(report, trends)
    heat = figure.axes[0]
    labels = [label.get_text() for label in heat.get_yticklabels()]
    assert labels[0].startswith("<script>") and labels[0].endswith("(sick)")
    assert "\x1b" not in labels[0] and r"\$\frac" in labels[0]  # mathtext never parses it
    png = trends_png(report, trends)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000


def test_a_png_without_matplotlib_is_a_usage_error_naming_the_extra(monkeypatch):
    from pathlib import Path

    from ci_triage import render_files
    from ci_triage.errors import UsageError

    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    with pytest.raises(UsageError) as caught:
        render_files.check_output(Path("t.png"))
    assert "matplotlib" in caught.value.one_line() and "ci-triage[charts]" in caught.value.one_line()
    assert render_files.check_output(Path("t.html")) == ".html"  # the SVG page needs nothing
