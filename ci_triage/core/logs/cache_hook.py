"""Where the shell registers its cache of the built-in rule set's loaded form (ci_triage/rules_cache.py).

A module of its own, importing nothing, so that registering at package import costs nothing: the
rule loader (rules.py, with tomllib and dataclasses behind it) is imported only when rules are used.
`load(files)` gives the rule set those (name, bytes) files make, or None; `store(files, rule_set)`
keeps a set just built. Either may fail: the files are then parsed, as without a cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

BUILTIN_CACHE: list[tuple[Callable[[list[tuple[str, bytes]]], Any], Callable[[list[tuple[str, bytes]], Any], None]]] = []


def register_builtin_cache(load: Callable[[list[tuple[str, bytes]]], Any],
                           store: Callable[[list[tuple[str, bytes]], Any], None]) -> None:
    BUILTIN_CACHE[:] = [(load, store)]
