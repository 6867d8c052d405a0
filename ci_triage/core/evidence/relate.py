"""Changed files x what a job exercises x the failing stack -> relatedness.

What a job exercises, most specific source first:
1. the repository's config file (`[[jobs.owns]]`: job-name pattern -> path globs), when it names
   the job: the maintainers said so;
2. the job's own words: the matrix values in its name (`vllm-example (eagle3)` exercises
   `.../eagle3_trainer_backend.py` and, through the stem without the version digit,
   `.../llama_eagle.py`);
3. for a job with no such words, its workflow's `on.pull_request.paths` filters.
The failing stack is stronger evidence than any of these: a traceback frame or a failing test
inside a changed file makes the failure `related`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ci_triage.core.evidence.globs import any_match
from ci_triage.model import ChangedFile, Frame, Relatedness

_MATRIX = re.compile(r"\(([^)]*)\)")
_PATH_SEPARATORS = re.compile(r"[/_.\-]+")
_MIN_TOKEN = 3  # shorter words ("py", "v2", "a2") name nothing specific


def job_tokens(job_name: str) -> frozenset[str]:
    """The words a job is about: its matrix values and their stems without trailing digits."""
    tokens: set[str] = set()
    for group in _MATRIX.findall(job_name):
        for value in group.split(","):
            value = value.strip().lower()
            for word in re.split(r"[\s/_.\-]+", value):
                if len(word) >= _MIN_TOKEN:
                    tokens.add(word)
                    stem = word.rstrip("0123456789")
                    if len(stem) >= _MIN_TOKEN:
                        tokens.add(stem)
    return frozenset(tokens)


def path_words(path: str) -> frozenset[str]:
    return frozenset(word for word in _PATH_SEPARATORS.split(path.lower()) if word)


def exercised_files(job_name: str, changed_files: Iterable[ChangedFile]) -> tuple[str, ...]:
    tokens = job_tokens(job_name)
    if not tokens:
        return ()
    return tuple(f.filename for f in changed_files if tokens & path_words(f.filename))


def _in_changed(path: str, changed: frozenset[str]) -> str | None:
    if path in changed:
        return path
    # Tracebacks from an installed copy of the package still end with the repo-relative path.
    return next((name for name in changed if path.endswith("/" + name)), None)


def stack_files(frames: Sequence[Frame], failed_tests: Sequence[str], changed: frozenset[str]) -> tuple[str, ...]:
    hits: dict[str, None] = {}
    for frame in frames:
        if frame.package is None:
            name = _in_changed(frame.path, changed)
            if name:
                hits[name] = None
    for test in failed_tests:
        name = _in_changed(test.split("::", 1)[0], changed)
        if name:
            hits[name] = None
    return tuple(hits)


def exercised_by(job_name: str, changed_files: Sequence[ChangedFile], owned_globs: Sequence[str] = (),
                 workflow_paths: Sequence[str] = ()) -> tuple[str, ...]:
    """The changed files the job exercises, from the most specific source that speaks of it."""
    if owned_globs:
        return tuple(f.filename for f in changed_files if any_match(tuple(owned_globs), f.filename))
    if job_tokens(job_name):
        return exercised_files(job_name, changed_files)
    if workflow_paths:
        return tuple(f.filename for f in changed_files if any_match(tuple(workflow_paths), f.filename))
    return ()


def relate(
    job_name: str,
    frames: Sequence[Frame],
    failed_tests: Sequence[str],
    changed_files: Sequence[ChangedFile],
    owned_globs: Sequence[str] = (),
    workflow_paths: Sequence[str] = (),
) -> tuple[Relatedness, tuple[str, ...]]:
    """Relatedness of a failure to the change, and the changed files behind that answer."""
    changed = frozenset(f.filename for f in changed_files)
    in_stack = stack_files(frames, failed_tests, changed)
    if in_stack:
        return Relatedness.RELATED, in_stack
    exercised = exercised_by(job_name, changed_files, owned_globs, workflow_paths)
    if exercised:
        return Relatedness.POSSIBLY_RELATED, exercised
    return Relatedness.UNRELATED, ()
