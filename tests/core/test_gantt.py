"""The timeline chart model, its terminal rendering and the Mermaid text, on small hand-made reports."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from rich.console import Console

from ci_triage.core.evidence.window import correlate_window
from ci_triage.core.render import gantt, markdown
from ci_triage.model import (
    Classification,
    Job,
    JobFacts,
    JobVerdict,
    LogStatus,
    PullReport,
    PullRequest,
    Relatedness,
    RootCause,
    Run,
    Verdict,
)

T0 = datetime(2026, 5, 12, 13, 0, tzinfo=UTC)
POOL = ("pool",)
OWN_RUN, FORK_RUN, OTHER_RUN, MAIN_RUN = 100, 200, 250, 300


def job(job_id: int, run_id: int, start_min: float | None, end_min: float | None, runner: str | None,
        conclusion: str | None = "success", name: str = "vllm-example (eagle3)") -> Job:
    started = None if start_min is None else T0 + timedelta(minutes=start_min)
    completed = None if end_min is None else T0 + timedelta(minutes=end_min)
    status = "completed" if completed else ("in_progress" if started else "queued")
    return Job(job_id, run_id, 1, "NPU", name, status, conclusion if completed else None, T0, started, completed,
               runner, "Default", POOL, "sha", "branch", f"https://example/job/{job_id}")


def run(run_id: int, prs: tuple[int, ...] = (), branch: str = "feature") -> Run:
    return Run(run_id, 1, 1, "NPU", ".github/workflows/npu.yml", "pull_request", "completed", "failure", "sha",
               branch, "o/r", prs, T0, T0, f"https://example/run/{run_id}")


PULL = PullRequest(5, "fix: things", "open", "me", "sha", "fix-things", "o/r", "o/r", "main", "base",
                   "https://example/pull/5")
OWN_FAILED = job(1, OWN_RUN, 0, 10, "pool-node1-r1", "failure")
JOBS = (
    OWN_FAILED,
    job(2, OWN_RUN, 11, 20, "pool-node1-r1", name="vllm-example (dflash)"),
    job(3, FORK_RUN, 2, 15, "pool-node1-r0"),  # a fork PR's run: no pr_numbers, resolved by head SHA
    job(4, OTHER_RUN, 1, 8, "pool-node2-r0", "failure"),
    job(5, MAIN_RUN, 25, 40, "pool-node10-r0", name="vllm-example (dspark)"),
    job(6, MAIN_RUN, None, None, "pool-node2-r0"),  # still queued: not on the chart
    job(7, OTHER_RUN, 30, 35, "pool-node2-r0", "cancelled"),
)


def overlapping_of(failed: Job, jobs: tuple[Job, ...], runs: dict[int, Run], pr_of_run: dict[int, int | None]):
    return correlate_window([(runs[failed.run_id], failed)], jobs, runs, pr_of_run, later_window_s=0)[0].overlapping


def make_report(jobs: tuple[Job, ...] = JOBS, failed: tuple[Job, ...] = (OWN_FAILED,),
                captures: dict[str, str] | None = None, pr_of_run: dict[int, int | None] | None = None) -> PullReport:
    runs = {OWN_RUN: run(OWN_RUN, (5,)), FORK_RUN: run(FORK_RUN, ()), OTHER_RUN: run(OTHER_RUN, (8,)),
            MAIN_RUN: run(MAIN_RUN, (), "main")}
    resolved = {OWN_RUN: 5, FORK_RUN: 7, OTHER_RUN: 8, MAIN_RUN: None} if pr_of_run is None else pr_of_run
    verdicts = []
    for failed_job in failed:
        classification = Classification("port_in_use", True, "r", RootCause(3, "address already in use", "Run"),
                                        {"port": "35191"} if captures is None else captures, (), (), "v1:x")
        facts = JobFacts(failed_job, runs[OWN_RUN], LogStatus.AVAILABLE, classification,
                         overlapping_of(failed_job, jobs, runs, resolved), (), (), None, None)
        verdicts.append(JobVerdict(facts, Relatedness.UNRELATED, (), Verdict.INFRA_FLAKE, 0.9, True, ()))
    return PullReport("o/r", PULL, (), (runs[OWN_RUN],), tuple(verdicts), jobs, runs, (), (), resolved)


def bar_by_id(chart: gantt.Chart) -> dict[int, gantt.Bar]:
    return {bar.job_id: bar for bar in chart.bars}


# --- the model -------------------------------------------------------------------------------------
def test_rows_are_grouped_by_host_then_runner_in_natural_order():
    chart = gantt.build_chart(make_report())
    assert [(row.host_label, row.runner_label) for row in chart.rows] == [
        ("node1", "r0"), ("node1", "r1"), ("node2", "r0"), ("node10", "r0")]
    assert [host for host, _ in chart.hosts()] == ["node1", "node2", "node10"]
    assert [len(rows) for _, rows in chart.hosts()] == [2, 1, 1]
    assert chart.rows[1].host == "pool-node1" and chart.rows[1].runner_name == "pool-node1-r1"
    assert [bar.job_id for bar in chart.rows[1].bars] == [1, 2]  # in time order on their runner
    assert 6 not in bar_by_id(chart)  # a queued job has no place on a time axis
    assert chart.pool == "pool"
    assert (chart.start, chart.end) == (T0, T0 + timedelta(minutes=40))


def test_failures_are_marked_and_the_prs_own_jobs_highlighted():
    bars = bar_by_id(gantt.build_chart(make_report()))
    assert bars[1].state is gantt.BarState.FAILED and bars[1].own and bars[1].failure_note == "port 35191"
    assert bars[2].state is gantt.BarState.PASSED and bars[2].own and bars[2].failure_note is None
    assert bars[4].state is gantt.BarState.FAILED and not bars[4].own and bars[4].failure_note == "failed"
    assert bars[7].state is gantt.BarState.OTHER
    assert [b.job_id for b in bars.values() if b.own] == [1, 2]
    assert bars[1].label == "eagle3 #5" and bars[2].short_name == "dflash"


def test_without_a_port_the_note_is_the_category():
    bars = bar_by_id(gantt.build_chart(make_report(captures={})))
    assert bars[1].failure_note == "port_in_use"


def test_fork_prs_come_from_pr_of_run_and_non_pr_runs_from_their_branch():
    bars = bar_by_id(gantt.build_chart(make_report()))
    assert (bars[3].who, bars[3].pr) == ("#7", 7)
    assert (bars[5].who, bars[5].pr) == ("main", None)
    # Without the resolved map the run's own pull_requests are used; a fork run then has no PR.
    bars = bar_by_id(gantt.build_chart(make_report(pr_of_run={})))
    assert bars[4].who == "#8" and bars[3].pr is None and bars[3].who == "feature"


def test_legend_colours_this_pr_then_other_prs_then_branches():
    chart = gantt.build_chart(make_report())
    assert [(s.who, s.own) for s in chart.series] == [("#5", True), ("#7", False), ("#8", False), ("main", False)]
    assert chart.series[0].color == gantt.OWN_COLOR and chart.series[-1].color == gantt.NO_PR_COLOR
    assert len({s.color for s in chart.series}) == 4
    bars = bar_by_id(chart)
    assert chart.color_of(bars[1]) == chart.color_of(bars[4]) == gantt.FAILED_COLOR
    assert chart.color_of(bars[3]) == chart.series[1].color


def test_heading_names_repo_pr_pool_and_window():
    chart = gantt.build_chart(make_report())
    assert chart.heading == "o/r · PR #5 · jobs on pool · 2026-05-12 13:00–13:40 UTC"
    assert chart.focus == ((T0, T0 + timedelta(minutes=10)),)


def test_ticks_are_round_utc_times_inside_the_window():
    start, end = T0 + timedelta(minutes=3, seconds=20), T0 + timedelta(hours=4, minutes=9)
    marks = gantt.ticks(start, end, 10)
    assert 2 <= len(marks) <= 10
    assert all(start <= at <= end and at.second == 0 and at.minute % 30 == 0 for at in marks)
    assert marks[0] == T0 + timedelta(minutes=30)
    assert gantt.ticks(T0, T0 + timedelta(minutes=10), 12)[:3] == [T0, T0 + timedelta(minutes=1),
                                                                   T0 + timedelta(minutes=2)]


def test_an_empty_window_gives_an_empty_chart():
    report = replace(make_report(), failed_jobs=(), timeline_jobs=())
    chart = gantt.build_chart(report)
    assert chart.rows == () and gantt.mermaid(report) == "" and gantt.mermaid_block(report) == []
    text = _terminal_text(chart)
    assert "No jobs in the correlation window" in text


# --- the terminal ---------------------------------------------------------------------------------
def _terminal_text(chart: gantt.Chart, width: int = 120) -> str:
    console = Console(record=True, width=width, color_system=None)
    console.print(gantt.render_terminal(chart))
    return console.export_text()


def test_terminal_chart_has_hosts_runners_marks_axis_and_legend():
    text = _terminal_text(gantt.build_chart(make_report()))
    lines = text.splitlines()
    assert lines[0].startswith("o/r · PR #5")
    assert all(len(line) <= 120 for line in lines)
    row_lines = [line for line in lines if "│" in line and re.match(r"^\S+\s+r\d", line)]
    assert [line.split()[0] for line in row_lines] == ["node1", "node2", "node10"]  # host once per group
    assert re.match(r"^\s+r1 │", lines[lines.index(row_lines[0]) + 1])  # node1's second runner, no host
    assert text.count("✗") >= 3  # two failed bars and the legend
    assert "eagle3 #5 port 35191" in text  # the failed bar has room for its note at this width
    assert "13:00" in text and "13:30" in text and "UTC" in text
    assert "#5 (this PR)" in text and "#7" in text and "main" in text and "failed" in text


def test_terminal_chart_fits_a_narrow_console():
    text = _terminal_text(gantt.build_chart(make_report()), width=60)
    assert all(len(line) <= 60 for line in text.splitlines())
    assert "node10" in text and "✗" in text


def test_bars_are_placed_on_the_time_axis():
    text = _terminal_text(gantt.build_chart(make_report()), width=100)
    lines = text.splitlines()
    axis = next(line for line in lines if "└" in line)
    node10 = next(line for line in lines if line.startswith("node10"))
    track_start = axis.index("└") + 1
    # job 5 runs 13:25-13:40 in a 13:00-13:40 window: it starts at 25/40 of the track.
    first_cell = node10.index("dspark") - track_start
    track_width = len(axis) - track_start
    assert abs(first_cell - 25 / 40 * (track_width - 1)) <= 1


# --- Mermaid ---------------------------------------------------------------------------------------
TASK = re.compile(r"^    (?P<name>[^:#;%\n]+) :(?P<tags>(?:(?:crit|active), )*)"
                  r"(?P<start>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d), (?P<end>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)$")


def _tasks(text: str) -> list[re.Match[str]]:
    return [m for m in (TASK.match(line) for line in text.splitlines()) if m]


def test_mermaid_structure_sections_and_tags():
    text = gantt.mermaid(make_report())
    lines = text.splitlines()
    assert lines[0] == "gantt"
    assert "    dateFormat YYYY-MM-DDTHH:mm:ss" in lines and "    axisFormat %H:%M" in lines
    assert lines[1].startswith("    title ") and "#" not in lines[1]
    body = [line for line in lines[1:] if not line.startswith(("    title", "    dateFormat", "    axisFormat",
                                                                 "    todayMarker"))]
    assert all(line.startswith("    section ") or TASK.match(line) for line in body), body
    assert [line.split(" ", 5)[-1] for line in body if "section" in line] == ["node1", "node2"]
    tasks = {m["name"]: m for m in _tasks(text)}
    # only the failed job and the jobs that overlapped it: not the later main job (5) or the own job 2
    assert set(tasks) == {"eagle3 PR 5 r1 FAILED port 35191", "eagle3 PR 7 r0", "eagle3 PR 8 r0 FAILED"}
    assert tasks["eagle3 PR 5 r1 FAILED port 35191"]["tags"] == "crit, active, "
    assert tasks["eagle3 PR 8 r0 FAILED"]["tags"] == "crit, "
    assert tasks["eagle3 PR 7 r0"]["tags"] == ""
    assert tasks["eagle3 PR 5 r1 FAILED port 35191"]["start"] == "2026-05-12T13:00:00"
    assert tasks["eagle3 PR 5 r1 FAILED port 35191"]["end"] == "2026-05-12T13:10:00"


def test_mermaid_text_escapes_what_the_gantt_grammar_reserves():
    assert gantt.mermaid_text("a: b # c; d %% e\nf") == "a b c, d pct pct e f"
    assert gantt.mermaid_text("section x") == "job section x"
    assert gantt.mermaid_text("title") == "job title"
    assert gantt.mermaid_text(":#;") == ","
    assert gantt.mermaid_text("#") == "job"


def test_mermaid_job_names_with_reserved_characters_stay_one_task():
    odd = job(1, OWN_RUN, 0, 10, "pool-node1-r1", "failure", name="tests (py3.11: #1; 100%%)")
    jobs = (odd, *JOBS[1:])
    text = gantt.mermaid(make_report(jobs, (odd,)))
    tasks = _tasks(text)
    assert len(tasks) == 3
    own = next(m for m in tasks if "active" in m["tags"])
    assert own["name"].startswith("py3.11 1, 100 pct pct PR 5")


def test_mermaid_is_capped_and_keeps_failures_first():
    crowd = tuple(job(1000 + i, OTHER_RUN, 1 + i * 0.01, 9, f"pool-node{3 + i % 7}-r{i % 3}") for i in range(90))
    report = make_report(JOBS + crowd)
    assert len(report.failed_jobs[0].facts.overlapping_jobs) > gantt.MAX_MERMAID_TASKS
    tasks = _tasks(gantt.mermaid(report))
    assert len(tasks) == gantt.MAX_MERMAID_TASKS
    assert any("crit, active" in m["tags"] for m in tasks)
    assert any(m["name"] == "eagle3 PR 8 r0 FAILED" for m in tasks)  # another PR's failure at the same time
    assert "40 of 93 jobs" in gantt.mermaid(report).splitlines()[1]


def test_markdown_embeds_the_chart_after_the_summary_table():
    text = markdown.render(make_report())
    table = text.index("| job | verdict |")
    block = text.index("```mermaid\ngantt\n")
    assert table < block < text.index("\n### ")
    assert "<details><summary>Timeline</summary>" in text and text.count("```mermaid") == 1
    fence_end = text.index("\n```\n", block)
    assert text[block:fence_end].count("\n    section ") == 2
