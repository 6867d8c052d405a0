"""What a maintainer reading the report trips on (issue 13, item 3): each defect pinned by a test on the
demo, through the real client, the local fake and a real store; the three views must agree."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.color import Color, ColorSystem
from rich.console import Console

from ci_triage.core.config.repo_config import parse_repo_config
from ci_triage.core.logs.clusters import cluster
from ci_triage.core.render import gantt, markdown, terminal
from ci_triage.core.render import json as render_json
from ci_triage.core.render.common import VERDICT_LABEL
from ci_triage.demo.replay import FakeGitHub
from ci_triage.github.client import Connection, GitHubClient
from ci_triage.model import Verdict
from ci_triage.service import Triage
from ci_triage.store import Store
from tests.conftest import DEMO_REPO


@pytest.fixture(scope="module")
def demo(demo_case: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One fake, client and store for the module; reports are made once per PR."""
    with FakeGitHub(demo_case) as fake:
        client = GitHubClient(Connection(api_url=fake.base_url, token="test-token", retries=1, backoff_s=0.01),
                              sleep=lambda seconds: None)
        with Store(tmp_path_factory.mktemp("fixes") / "store.sqlite3") as store:
            reports: dict[int, Any] = {}

            def report(pr: int) -> Any:
                if pr not in reports:
                    reports[pr] = Triage(client, store).report(DEMO_REPO, pr)
                return reports[pr]

            yield {"report": report, "store": store, "client": client, "case": demo_case}
        client.close()


def _plain(renderable: Any, width: int = 80, **console: Any) -> str:
    out = Console(width=width, record=True, file=open(os.devnull, "w"), **console)  # noqa: SIM115
    out.print(renderable)
    return out.export_text()


def _evidence(report: Any, kind: str) -> Any:
    [verdict] = report.failed_jobs
    return next(item for item in verdict.evidence if item.kind == kind)


# --- the store and clusters ------------------------------------------------------------------------
def test_the_store_files_each_pr_under_the_failure_its_report_names(demo):
    r71, r72 = demo["report"](71), demo["report"](72)
    saved = {f.pr: f for f in demo["store"].failures(DEMO_REPO)}
    for report in (r71, r72):
        [verdict] = report.failed_jobs
        stored = saved[report.pull.number]
        assert stored.fingerprint == verdict.facts.classification.fingerprint
        assert stored.root_cause == verdict.facts.classification.root_cause.text
    groups = cluster(demo["store"].failures(DEMO_REPO, "test_failure"))
    assert not any({71, 72} <= set(group.prs) for group in groups)


# --- the evidence sentences ------------------------------------------------------------------------
def test_longest_overlap_says_same_host_and_gives_the_longest_of_all(demo):
    text = _evidence(demo["report"](68), "contention").text
    # Same host: #70's dflash for 2.9 min; of all: #66's dspark for 12.2 min (the JSON's numbers).
    assert re.search(r"same host: [^;]*2\.9 min", text), text
    assert "12.2 min" in text and "#66" in text.split("12.2 min")[0].rsplit(";", 1)[-1], text
    overlaps = [o["overlap_s"] / 60 for o in render_json.report_dict(demo["report"](68))["failed_jobs"][0]
                ["overlapping_jobs"]]
    assert f"{max(overlaps):.1f} min" in text


def test_no_sentence_repeats_itself_or_reads_as_a_riddle(demo):
    for verdict, label in VERDICT_LABEL.items():
        assert not label.lower().startswith(verdict.value.replace("_", " ")), label
    for pr in (66, 67, 68, 70, 71, 72):
        report = demo["report"](pr)
        md = markdown.render(report)
        text = _plain(terminal.render(report), width=200)
        for view in (md, text):
            assert "changes that different" not in view
            assert "infra_flake — infra flake" not in view and "(infra flake," not in view
            assert not re.search(r"d2t-contract\W+d2t-contract", view), view


def test_jobs_that_passed_afterwards_are_each_linked(demo):
    report = demo["report"](66)
    [verdict] = report.failed_jobs
    later = verdict.facts.later_jobs_passed
    assert len(later) == 7
    line = next(line for line in markdown.render(report).splitlines() if "passed" in line and "after it ended" in line)
    for job in later:
        assert job.html_url in line
    data = render_json.report_dict(report)["failed_jobs"][0]["later_jobs_passed"]
    assert [item["html_url"] for item in data] == [job.html_url for job in later]


# --- dates, frames and the root-cause link -------------------------------------------------------
def test_every_view_dates_the_failure(demo):
    report = demo["report"](68)
    assert "2026-05-12" in markdown.render(report)
    assert "2026-05-12" in _plain(terminal.render(report), width=200)
    assert render_json.report_dict(report)["failed_jobs"][0]["started_at"].startswith("2026-05-12")


def test_the_comment_shows_the_top_frames_and_links_the_root_cause_line(demo):
    report = demo["report"](68)
    [verdict] = report.failed_jobs
    job = verdict.facts.job
    md = markdown.render(report)
    frames = verdict.facts.classification.frames
    assert frames
    for frame in frames[-3:]:  # the innermost frames, printed last in a Python traceback
        assert f"{frame.path}:{frame.line}" in md
    step = next(s for s in job.steps if s.name == verdict.facts.classification.root_cause.step)
    link = re.search(re.escape(job.html_url) + rf"#step:{step.number}:(\d+)\)", md)
    assert link, md
    # The anchor counts lines within the step: the step's own header is line 1.
    line = int(link.group(1))
    # The step's section starts at its first line stamped at or after the step's start (the jobs API's time).
    log = demo["case"]["logs"][str(job.id)].splitlines()
    started = step.started_at.strftime("%Y-%m-%dT%H:%M:%S")
    header = next(i for i, text in enumerate(log, 1) if text.lstrip("\ufeff")[:19] >= started)
    assert line == verdict.facts.classification.root_cause.line - header + 1
    entry = render_json.report_dict(report)["failed_jobs"][0]
    assert entry["root_cause"]["url"] == link.group(0)[:-1]
    # The sticky PR comment is made of the same sections.
    from ci_triage.core.decide.comment_state import CommentState
    from ci_triage.core.render.comment import render_comment

    body = render_comment(report, CommentState(), [])
    assert entry["root_cause"]["url"] in body and f"{frames[-1].path}:{frames[-1].line}" in body
    assert "2026-05-12" in body
    assert "#step:" in _plain(terminal.render(report), width=300)


# --- one host inference ----------------------------------------------------------------------------
def test_the_chart_groups_hosts_as_the_configured_host_pattern_does(demo):
    config = parse_repo_config('[runners]\nhost_pattern = "^(?P<host>linux-aarch64-a2-8)-"\n', origin="test")
    report = Triage(demo["client"], demo["store"], config=config).report(DEMO_REPO, 68)
    [verdict] = report.failed_jobs
    assert all(o.same_host for o in verdict.facts.overlapping_jobs)  # the verdict: one host
    chart = gantt.build_chart(report)
    assert len(chart.hosts()) == 1, [h for h, _ in chart.hosts()]  # and the picture agrees
    assert "section node1" not in gantt.mermaid(report)


# --- the terminal timeline -------------------------------------------------------------------------
def test_series_colours_stay_apart_and_away_from_red_in_every_colour_system(demo):
    chart = gantt.build_chart(demo["report"](66))
    whos = {s.who for s in chart.series}
    assert {"#68", "main"} <= whos
    for system in (ColorSystem.STANDARD, ColorSystem.EIGHT_BIT):
        red = Color.parse(gantt.FAILED_COLOR).downgrade(system).number
        numbers = [Color.parse(s.color).downgrade(system).number for s in chart.series]
        assert len(set(numbers)) == len(numbers), (system, dict(zip(whos, numbers, strict=False)))
        assert red not in numbers and 9 not in numbers and 1 not in numbers
    for color in (*gantt.PR_PALETTE, gantt.OWN_COLOR, gantt.NO_PR_COLOR):
        r, g, b = (int(color[i: i + 2], 16) for i in (1, 3, 5))
        assert not (r > 150 and g < 110 and b < 110), color  # nothing that reads as red


def test_without_colour_the_bars_carry_their_pr(demo):
    chart = gantt.build_chart(demo["report"](68))
    text = _plain(gantt.render_terminal(chart), width=160, color_system=None)
    track = "\n".join(line.split("│", 1)[1] for line in text.splitlines() if "│" in line)
    for who in ("#66", "#67", "#70", "main"):
        assert who in track, text


def _hosted_only_case(demo_case: dict[str, Any]) -> dict[str, Any]:
    """The demo cut down to its GitHub-hosted workflow: runners `GitHub Actions N` on ubuntu-latest."""
    case = copy.deepcopy(demo_case)
    keep = {j["run_id"] for j in case["jobs"] if j["labels"] == ["ubuntu-latest"]}
    case["runs"] = [r for r in case["runs"] if r["id"] in keep]
    case["jobs"] = [j for j in case["jobs"] if j["run_id"] in keep]
    ids = {str(j["id"]) for j in case["jobs"]}
    case["logs"] = {k: v for k, v in case["logs"].items() if k in ids}
    case["annotations"] = {k: v for k, v in case["annotations"].items() if k in ids}
    return case


@pytest.fixture(scope="module")
def hosted(demo_case: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    case = _hosted_only_case(demo_case)
    assert all(j["runner_name"].startswith("GitHub Actions ") for j in case["jobs"])
    with FakeGitHub(case) as fake:
        client = GitHubClient(Connection(api_url=fake.base_url, token="test-token", retries=1, backoff_s=0.01),
                              sleep=lambda seconds: None)
        with Store(tmp_path_factory.mktemp("hosted") / "store.sqlite3") as store:
            yield Triage(client, store).report(DEMO_REPO, 72)
        client.close()


def test_github_hosted_rows_are_labelled_once(hosted):
    chart = gantt.build_chart(hosted)
    text = _plain(gantt.render_terminal(chart), width=100)
    for line in text.splitlines():
        assert line.count("GitHub Actions") <= 1, line
    assert all(row.runner_label == "" for row in chart.rows)


def _png_labels_apart(chart: Any) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from ci_triage.render_files import png_figure

    figure = png_figure(chart)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = figure.axes[0]
    hosts = {host for host, _ in chart.hosts()}
    texts = [t for t in ax.texts if t.get_text() in hosts] + [t for t in ax.get_yticklabels() if t.get_text()]
    boxes = [t.get_window_extent(renderer) for t in texts]
    assert len([t for t in texts if t.get_text() in hosts]) == len(hosts)
    for i, a in enumerate(boxes):
        assert a.x0 >= 0, texts[i].get_text()  # not cut at the figure's left edge
        for j, b in enumerate(boxes[i + 1:], i + 1):
            assert not a.overlaps(b), (texts[i].get_text(), texts[j].get_text())


def _svg_labels_inside(chart: Any) -> None:
    from ci_triage.render_files import svg

    for match in re.finditer(r'<text x="([\d.]+)"[^>]*font-size="14" font-weight="bold" text-anchor="end">([^<]*)<',
                             svg(chart)):
        assert float(match.group(1)) - len(match.group(2)) * 9 >= 0, match.group(2)  # room on the left


def test_github_hosted_png_and_html_labels_do_not_overprint(hosted):
    chart = gantt.build_chart(hosted)
    _png_labels_apart(chart)
    _svg_labels_inside(chart)


def test_long_runner_labels_do_not_overprint_their_host(demo):
    config = parse_repo_config('[runners]\nhost_pattern = "^(?P<host>linux-aarch64-a2-8)-"\n', origin="test")
    chart = gantt.build_chart(Triage(demo["client"], demo["store"], config=config).report(DEMO_REPO, 68))
    assert any(len(row.runner_label) >= 8 for row in chart.rows)  # node1-r0 and the like
    _png_labels_apart(chart)
    _svg_labels_inside(chart)


# --- 80 columns --------------------------------------------------------------------------------
def test_at_80_columns_links_and_test_names_are_whole(demo):
    report = demo["report"](72)
    text = _plain(terminal.render(report), width=80)
    joined = re.sub(r"\s*[│╭╰─]+\s*", "", text.replace("\n", ""))
    [verdict] = report.failed_jobs
    assert verdict.facts.job.html_url in joined
    assert "tests/integration/test_dflash_block_mask.py::test_block_mask_respects_draft_length" in joined


# --- rules explain -------------------------------------------------------------------------------
def test_rules_explain_never_cuts_inside_a_number(demo_case, tmp_path):
    log = tmp_path / "j.log"
    log.write_text(demo_case["logs"]["42118900678"], encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "ci_triage", "rules", "explain", str(log)], capture_output=True,
                            text=True, timeout=60, env={**os.environ, "COLUMNS": "300"})
    assert result.returncode == 0, result.stderr
    assert "35191" in result.stdout
    assert not re.search(r"\d…", result.stdout), result.stdout


def test_clip_backs_off_to_a_word_boundary():
    from ci_triage.core.text import clip_words

    text = "name: [::]:35191, message: address already in use"
    for limit in range(12, len(text)):
        cut = clip_words(text, limit)
        assert len(cut) <= limit and cut.endswith("…"), cut
        kept = cut[:-1].rstrip()
        assert text.startswith(kept)
        after = text[len(kept)]
        assert not (kept[-1].isalnum() and after.isalnum()), cut  # never inside a word or a number
    assert clip_words(text, len(text)) == text
    assert clip_words("x" * 50, 10) == "x" * 9 + "…"  # one long word: cut it rather than show nothing


# --- the command line ----------------------------------------------------------------------------
def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ci_triage", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_flags_read_as_flags_in_every_help_layout():
    """typer's rich help shows a bool option's type (`--demo <bool>`) unless its metavar is empty."""
    import typer.main

    from ci_triage.cli import app

    def commands(group: Any, path: str = "") -> Iterator[tuple[str, Any]]:
        for name, command in getattr(group, "commands", {}).items():
            yield f"{path} {name}".strip(), command
            yield from commands(command, f"{path} {name}")

    root = typer.main.get_command(app)
    flags = []
    for name, command in [("", root), *commands(root)]:
        ctx = command.make_context(name or "ci-triage", ["--help"], resilient_parsing=True)
        for param in command.params:
            if getattr(param, "is_flag", False) and param.name != "help":
                flags.append((name, param.name))
                assert not param.display_type_rich(ctx), (name, param.name, param.display_type_rich(ctx))
    assert ("report", "demo") in flags and ("triage", "apply") in flags and ("bot", "apply") in flags


def test_version():
    from importlib.metadata import version

    result = _cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"ci-triage {version('ci-triage')}"


def test_bot_only_plans_without_apply():
    import inspect

    from ci_triage.cli.act import rerun_bot, triage_run

    for command in (rerun_bot, triage_run):
        assert inspect.signature(command).parameters["apply"].default is False
    root = Path(__file__).parents[1]
    shipped = [root / "action.yml", root / "README.md", *root.glob("workflows/*.yml"), *root.glob("docs/*.md")]
    calls = [(path, line) for path in shipped for line in path.read_text(encoding="utf-8").splitlines()
             if re.search(r"\bbot --event", line)]
    assert calls  # the Action answers /rerun through `bot`
    for path, line in calls:
        assert "--apply" in line, (path, line)


def test_clusters_refuses_an_unknown_category(tmp_path):
    result = _cli("clusters", "--category", "bogus", "--store", str(tmp_path / "s.sqlite3"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "bogus" in lines[0] and "port_in_use" in lines[0] and "all" in lines[0], result.stderr


def test_a_wrong_pr_in_demo_mode_lists_the_demo_prs():
    result = _cli("report", "--demo", "--pr", "69")
    assert result.returncode != 0
    line = result.stderr.strip()
    assert "token" not in line and "#66" in line and "#72" in line, line


def test_views_agree_on_the_verdict_and_the_root_cause(demo):
    for pr in (67, 72):
        report = demo["report"](pr)
        [verdict] = report.failed_jobs
        data = json.loads(render_json.render(report))["failed_jobs"][0]
        md, text = markdown.render(report), _plain(terminal.render(report), width=400)
        assert data["verdict"] == verdict.verdict.value
        assert verdict.verdict.value in md and verdict.verdict.value in text
        assert data["root_cause"]["text"] in md and data["root_cause"]["text"] in text
        assert (verdict.verdict is Verdict.PR_RELATED) == (pr == 72)
