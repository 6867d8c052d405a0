"""Reading workflow YAML for the pure core (ci_triage/core/config/): text in, documents out.

PyYAML stays in the shell so the core imports no parser library; every failure becomes an
`Unreadable` value with a reason, never an exception, because workflow files are input we did not write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_triage.core.config.infer import Unreadable


def parse(text: str) -> Any:
    """The YAML document of a workflow file, or Unreadable saying why it is not one."""
    import yaml  # PyYAML; imported on use so `ci-triage --help` does not pay for it

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        return Unreadable(f"not valid YAML{where}")
    except (RecursionError, ValueError, OverflowError) as exc:
        return Unreadable(f"not readable YAML: {type(exc).__name__}")


def parse_all(texts: Mapping[str, str]) -> dict[str, Any]:
    return {path: parse(text) for path, text in texts.items()}
