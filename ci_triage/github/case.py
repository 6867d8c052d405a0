"""A triage case: GitHub's own payloads for one PR's failure, saved to replay offline.

Written by `ci-triage record` (from a live repository) or built by the demo scenario; served by the
local GitHub fake (replay.py). Payloads are kept exactly as GitHub sent them, with the API and web
bases normalised to api.github.com and github.com so a case recorded on GitHub Enterprise replays
the same way; the fake rewrites them to its own address when it serves them.

Layout (format "ci-triage-case", version 1):
    source:     {kind: "recording" | "reconstruction", description, recorded_at, ...}
    repository: the full repository object (GET /repos/{owner}/{repo})
    pulls:      full pull request objects (GET /repos/{owner}/{repo}/pulls/{number})
    pull_files: {"<number>": [file objects]} (GET .../pulls/{number}/files)
    workflows:  workflow objects (GET .../actions/workflows)
    runs:       workflow run objects, one per attempt (GET .../actions/runs/{id}/attempts/{n})
    jobs:       job objects of every attempt (GET .../actions/runs/{id}/attempts/{n}/jobs)
    logs:       {"<job_id>": raw log text} (GET .../actions/jobs/{id}/logs, after the redirect); a log
                over LOG_INLINE_LIMIT bytes is kept beside the case instead, as {"file": "<relative path>"}
                (`<case name>.logs/<job_id>.log`), so neither the reader nor the fake holds it in memory
    annotations: {"<job_id>": [annotations]} (GET .../check-runs/{job_id}/annotations; optional)
    files:      {"<path>": text} repository files at the default branch (workflow files, config)
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ci_triage.errors import CaseFileError

CASE_FORMAT = "ci-triage-case"
CASE_VERSION = 1
API_BASE = "https://api.github.com"
WEB_BASE = "https://github.com"
_SECTIONS = ("repository", "pulls", "pull_files", "workflows", "runs", "jobs", "logs")
# Logs above this size go beside the case file: a JSON string has to be held whole to be parsed.
LOG_INLINE_LIMIT = 8 * 2**20


@dataclass(frozen=True)
class LogFile:
    """A log kept beside its case file (`relative` is how the case names it)."""

    path: Path
    relative: str

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def _log_file(entry: Any, case_dir: Path, job_id: str, origin: str) -> LogFile:
    """The file a case's log entry names, which must lie inside the case's folder (a case is input
    we did not write: no absolute paths, no `..`)."""
    name = entry.get("file") if isinstance(entry, dict) else None
    parts = PurePosixPath(name).parts if isinstance(name, str) and name else ()
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts or "\\" in name:
        raise CaseFileError(f"{origin}: the log of job {job_id} must be text or {{\"file\": <path inside the "
                            "case's folder>}")
    path = case_dir.joinpath(*parts)
    if not path.is_file():
        raise CaseFileError(f"{origin}: the log of job {job_id} names {name}, which is not a file beside the case")
    return LogFile(path, name)


def validate_case(case: Any, origin: str = "case") -> dict[str, Any]:
    if not isinstance(case, dict) or case.get("format") != CASE_FORMAT:
        raise CaseFileError(f"{origin} is not a ci-triage case file (no \"format\": \"{CASE_FORMAT}\")")
    if case.get("version") != CASE_VERSION:
        raise CaseFileError(
            f"{origin} is a case of version {case.get('version')!r}; this ci-triage reads version {CASE_VERSION}"
        )
    missing = [section for section in _SECTIONS if section not in case]
    if missing:
        raise CaseFileError(f"{origin} lacks the section(s) {', '.join(missing)}")
    return case


def load_case(path: Path) -> dict[str, Any]:
    try:
        raw = Path(path).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        case = json.loads(raw)
    except FileNotFoundError:
        raise CaseFileError(f"case file {path} does not exist") from None
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseFileError(f"case file {path} cannot be read: {exc}") from None
    case = validate_case(case, f"case file {path}")
    if not isinstance(case["logs"], dict):
        raise CaseFileError(f"case file {path}: logs must be an object keyed by job id")
    case_dir = Path(path).parent
    for job_id, entry in case["logs"].items():
        if not isinstance(entry, str):
            case["logs"][job_id] = _log_file(entry, case_dir, job_id, f"case file {path}")
    return case


def _externalise_logs(case: dict[str, Any], path: Path) -> dict[str, Any]:
    """The case as written: logs over LOG_INLINE_LIMIT (and logs already kept in files) become files
    in `<case name>.logs/` beside it."""
    folder = path.with_name(path.name + ".logs")
    logs: dict[str, Any] = {}
    for job_id, log in case["logs"].items():
        if isinstance(log, str) and len(log) <= LOG_INLINE_LIMIT:  # characters <= bytes
            logs[job_id] = log
            continue
        if not str(job_id).isdigit():
            raise CaseFileError(f"cannot write case file {path}: job id {job_id!r} is not a number")
        target = folder / f"{job_id}.log"
        folder.mkdir(exist_ok=True)
        if isinstance(log, LogFile):
            if log.path.resolve() != target.resolve():
                with open(log.path, "rb") as src, open(target, "wb") as out:
                    while chunk := src.read(2**20):
                        out.write(chunk)
        else:
            target.write_text(log, encoding="utf-8")
        logs[job_id] = {"file": f"{folder.name}/{target.name}"}
    return {**case, "logs": logs}


def dump_case(case: dict[str, Any], path: Path, overwrite: bool = True) -> None:
    """Write the case; with overwrite=False an existing file is an error (checked as the file is
    created, so a file that appeared meanwhile is not replaced either). Written whole or not at all."""
    path = Path(path)
    try:
        if not overwrite and path.exists():
            raise FileExistsError(path)
        case = _externalise_logs(case, path)
        text = json.dumps(case, indent=1, sort_keys=True) + "\n"
        data = gzip.compress(text.encode(), mtime=0) if str(path).endswith(".gz") else text.encode()
        if overwrite:
            scratch = path.with_name(f".{path.name}.partial")
            scratch.write_bytes(data)
            scratch.replace(path)
        else:
            with open(path, "xb") as out:  # "x": fails if the file exists
                out.write(data)
    except FileExistsError:
        raise CaseFileError(f"{path} already exists; pass --force to overwrite it") from None
    except OSError as exc:
        raise CaseFileError(f"cannot write case file {path}: {exc.strerror or exc}") from None


def normalise_urls(payload: Any, api_url: str, web_url: str) -> Any:
    """Rewrite a live API's bases to api.github.com / github.com (for GitHub Enterprise recordings)."""
    text = json.dumps(payload)
    api_url, web_url = api_url.rstrip("/"), web_url.rstrip("/")
    if api_url != API_BASE:
        text = text.replace(api_url, API_BASE)
    if web_url != WEB_BASE:
        text = text.replace(web_url, WEB_BASE)
    return json.loads(text)
