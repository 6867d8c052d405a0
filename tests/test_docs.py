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
    assert "python -m pip install '.[test]' && python -m pytest -q" in head
    ci = (Path(__file__).parent.parent / ".ci" / "run").read_text()
    assert "python -m pip install '.[test]' && python -m pytest -q" in ci

