"""Facts read from a parsed GitHub Actions workflow file (the shell parses the YAML: ci_triage/workflow_yaml.py)."""

from __future__ import annotations

from typing import Any


def pull_request_paths(document: Any) -> tuple[str, ...]:
    """The `paths` filter of the workflow's pull_request trigger; () when it runs for any change.

    YAML 1.1 reads a bare `on:` key as the boolean true, hence the second lookup.
    """
    if not isinstance(document, dict):
        return ()
    triggers = document.get("on", document.get(True))
    if not isinstance(triggers, dict):
        return ()
    for event in ("pull_request", "pull_request_target"):
        spec = triggers.get(event)
        if isinstance(spec, dict) and isinstance(spec.get("paths"), list):
            return tuple(str(p) for p in spec["paths"])
    return ()
