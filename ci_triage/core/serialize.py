"""Model values <-> JSON-able dicts, for the store. One place, so the two directions stay in step."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from ci_triage.core.timefmt import iso, parse_iso
from ci_triage.model import ChangedFile, Job, Run, Step


def _dump(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


def dump(value: Run | Job | Step | ChangedFile) -> dict[str, Any]:
    return _dump(asdict(value))


def load_run(data: dict[str, Any]) -> Run:
    return Run(
        **{
            **data,
            "pr_numbers": tuple(data["pr_numbers"]),
            "created_at": parse_iso(data["created_at"]),
            "updated_at": parse_iso(data["updated_at"]),
        }
    )


def load_step(data: dict[str, Any]) -> Step:
    return Step(**{**data, "started_at": parse_iso(data["started_at"]), "completed_at": parse_iso(data["completed_at"])})


def load_job(data: dict[str, Any]) -> Job:
    return Job(
        **{
            **data,
            "labels": tuple(data["labels"]),
            "steps": tuple(load_step(s) for s in data["steps"]),
            "created_at": parse_iso(data["created_at"]),
            "started_at": parse_iso(data["started_at"]),
            "completed_at": parse_iso(data["completed_at"]),
        }
    )


def load_changed_file(data: dict[str, Any]) -> ChangedFile:
    return ChangedFile(**data)
