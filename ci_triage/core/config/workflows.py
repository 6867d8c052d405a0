"""Facts read from a GitHub Actions workflow file (YAML)."""

from __future__ import annotations

from typing import Any


def _load(text: str) -> dict[Any, Any]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def pull_request_paths(text: str) -> tuple[str, ...]:
    """The `paths` filter of the workflow's pull_request trigger; () when it runs for any change.

    YAML 1.1 reads a bare `on:` key as the boolean true, hence the second lookup.
    """
    data = _load(text)
    triggers = data.get("on", data.get(True))
    if not isinstance(triggers, dict):
        return ()
    for event in ("pull_request", "pull_request_target"):
        spec = triggers.get(event)
        if isinstance(spec, dict) and isinstance(spec.get("paths"), list):
            return tuple(str(p) for p in spec["paths"])
    return ()
