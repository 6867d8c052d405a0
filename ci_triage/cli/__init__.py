"""Command line: one module per command group; each only parses arguments, calls the service, renders.

`main` hands a plain `ci-triage classify` call to `cli/fast.py`, which runs it without importing
typer (typer builds pydantic adapters for a command's parameters: most of a short classify's
time); every other call, and any classify call it does not parse exactly as typer would, goes to
the typer app in `cli/root.py`. `ci_triage.cli.app` is that app, imported when first read.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    from ci_triage.cli.fast import run_fast

    if run_fast(sys.argv[1:]):
        return
    from ci_triage.cli.root import app

    app()


def __getattr__(name: str) -> Any:
    if name == "app":
        from ci_triage.cli.root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
