"""The root command group, built one command group at a time: only the command a user runs is built.

typer turns every command's signature into click parameters when the app is built; for all of
ci-triage's commands that is most of what `ci-triage --help` costs beyond importing typer. Here each
command module registers into its own small Typer app, the root lists them from their help text, and
a module's commands are built the first time one of them is looked up (the one being run, or all of
them when something reads `commands`, as the docs tests do).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperGroup
from typer.main import get_command_name
from typer.models import DefaultPlaceholder


class CommandModule:
    """One module's commands, registered into its own Typer app and built on first use."""

    def __init__(self, register: Callable[[typer.Typer], None]) -> None:
        self.app = typer.Typer(rich_markup_mode=None, add_completion=False)
        register(self.app)
        self._built: dict[str, Any] | None = None

    def entries(self) -> list[tuple[str, str]]:
        """(name, help text) of each command and sub-group, in registration order."""
        found = []
        for info in self.app.registered_commands:
            name = info.name or get_command_name(info.callback.__name__)
            found.append((name, inspect.cleandoc(info.help) if info.help else inspect.getdoc(info.callback) or ""))
        for group in self.app.registered_groups:
            text = group.help
            if isinstance(text, DefaultPlaceholder) or text is None:
                text = group.typer_instance.info.help
            found.append((group.name, "" if isinstance(text, DefaultPlaceholder) else inspect.cleandoc(text or "")))
        return found

    def command(self, name: str) -> Any:
        if self._built is None:
            built = typer.main.get_command(self.app)
            # One command and no group: typer gives the command itself.
            self._built = dict(built.commands) if isinstance(built, TyperGroup) else {built.name: built}
        return self._built.get(name)


MODULES: list[CommandModule] = []


class LazyGroup(TyperGroup):
    """The root group: lists every module's commands, builds a module when one of them is needed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = {name: (text, module) for module in MODULES for name, text in module.entries()}

    @property  # type: ignore[override]
    def commands(self) -> dict[str, Any]:
        for name in getattr(self, "_lazy", {}):
            self._load(name)
        return self._commands

    @commands.setter
    def commands(self, value: dict[str, Any]) -> None:
        self._commands = value

    def _load(self, name: str) -> Any:
        if name not in self._commands and name in self._lazy:
            command = self._lazy[name][1].command(name)
            if command is not None:
                self._commands[name] = command
        return self._commands.get(name)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self._load(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self._commands, *(name for name in self._lazy if name not in self._commands)]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The root's command list from each command's help text, without building any command."""
        from typer._click.utils import make_default_short_help

        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self._commands:
                rows.append((name, self._commands[name].get_short_help_str(limit)))
            else:
                rows.append((name, make_default_short_help(self._lazy[name][0], limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
