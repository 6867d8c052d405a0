"""The root group builds a command only when it is needed: `--help` lists every command from its
help text without turning any signature into click parameters (issue 9.6, start-up)."""

import typer.main

from ci_triage.cli import app


def test_help_lists_every_command_without_building_one():
    root = typer.main.get_command(app)
    ctx = root.make_context("ci-triage", ["--help"], resilient_parsing=True)
    text = root.get_help(ctx)
    assert root._commands == {}
    for name in ("report", "record", "timeline", "sync", "runners", "triage", "bot", "classify", "clusters",
                 "rules", "config", "d2t"):
        assert f"  {name} " in text


def test_running_a_command_builds_only_that_one():
    root = typer.main.get_command(app)
    ctx = root.make_context("ci-triage", ["report", "--help"], resilient_parsing=True)
    assert root.get_command(ctx, "report").name == "report"
    assert set(root._commands) == {"report"}
    # Reading `commands` (as tools and the docs tests do) builds the rest, in the listed order.
    assert list(root.commands) == root.list_commands(ctx)
    assert len(root.commands) == 12
