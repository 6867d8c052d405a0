"""Changed files x what a job exercises x the failing stack -> relatedness.

What a job exercises, most specific source first:
1. the repository's config file (`[[jobs.owns]]`: job-name pattern -> path globs), when it names
   the job: the maintainers said so;
2. the job's own words: the matrix values in its name (`vllm-example (eagle3)` exercises
   `.../eagle3_trainer_backend.py` and, through the stem without the version digit,
   `.../llama_eagle.py`);
3. for a job with no such words, its workflow's `on.pull_request.paths` filters.
The failing stack is stronger evidence than any of these: a frame of any stack format
(`core/logs/frames.py`) in a changed file, a failing test in a changed file, or a failing test whose
module under test (`tests/test_top_p.py` -> `top_p.py`, `x_test.go` -> `x.go`) was changed makes the
failure `related`, and the answer names the frame or file that decided it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

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
    """The changed file a stack path is: the same path; an absolute path that ends with it (a checkout
    this module does not know); or a relative path it alone ends with (a `src/` layout's installed copy,
    Go's bare `x_test.go`, Java's package path `com/x/Foo.java`)."""
    if path in changed:
        return path
    found = next((name for name in sorted(changed) if path.endswith("/" + name)), None)
    if found or path.startswith(("/", ".")) or not path:
        return found
    ending = [name for name in changed if name.endswith("/" + path)]
    return ending[0] if len(ending) == 1 else None


def _frame_hits(frames: Sequence[Frame], changed: frozenset[str]) -> list[tuple[Frame, str]]:
    # Third-party code (a package other than the repository's own) is never a changed file, but an
    # installed copy of the repository's package is: its site-packages path is the repository's path.
    hits = []
    for frame in frames:
        name = _in_changed(frame.path, changed)
        if name is None or (frame.package is not None and not name.endswith(frame.path)):
            continue
        hits.append((frame, name))
    return hits


# Test files by the naming conventions of pytest/unittest, go test, jest/vitest/mocha and JUnit: the
# pattern, the extensions of the source it tests, whether that source shares the test's directory.
_TEST_NAMES = (
    (re.compile(r"^(?:test_(?P<a>\w+)|(?P<b>\w+?)_tests?)\.py$"), ("py",), False),
    (re.compile(r"^(?P<a>\w+)_test\.go$"), ("go",), True),
    (re.compile(r"^(?P<a>[\w.-]+?)\.(?:test|spec)\.[cm]?[jt]sx?$"), ("js", "jsx", "ts", "tsx", "mjs", "cjs"), False),
    (re.compile(r"^(?:(?P<a>\w+?)Tests?|Test(?P<b>[A-Z]\w*))\.(?:java|kt)$"), ("java", "kt"), False),
)


def module_under_test(test_path: str) -> tuple[str, tuple[str, ...]] | None:
    """(directory or "", source file names) a test file tests by its name: `tests/test_top_p.py` ->
    `top_p.py` anywhere; `x_test.go` -> `x.go` in the same directory; `a.test.ts` -> `a.ts`/`a.js`...;
    `FooTest.java` -> `Foo.java`/`Foo.kt`. None for a file that is not named as a test."""
    directory, _, name = test_path.rpartition("/")
    for pattern, extensions, same_directory in _TEST_NAMES:
        found = pattern.match(name)
        if found:
            stem = found.group("a") or found.groupdict().get("b")
            return (directory if same_directory else ""), tuple(f"{stem}.{ext}" for ext in extensions)
    return None


def _tested_modules(test_path: str, changed: frozenset[str]) -> tuple[str, ...]:
    target = module_under_test(test_path)
    if target is None:
        return ()
    directory, names = target
    found = []
    for name in sorted(changed):
        changed_dir, _, base = name.rpartition("/")
        if base not in names:
            continue
        # A directory printed as a relative tail (`go test` prints none; a checkout prefix may remain)
        # must end the changed file's directory.
        if directory and not (changed_dir == directory or directory.endswith("/" + changed_dir)
                              or changed_dir.endswith("/" + directory)):
            continue
        found.append(name)
    return tuple(found)


def _test_files(frames: Sequence[Frame], failed_tests: Sequence[str]) -> list[str]:
    files = [test.split("::", 1)[0] for test in failed_tests if "::" in test]
    files += [f.path for f in frames if f.package is None and module_under_test(f.path) is not None]
    return list(dict.fromkeys(files))


def _where(frame: Frame) -> str:
    where = f"{frame.path}:{frame.line}" if frame.line else frame.path
    return f"{where} in {frame.function}" if frame.function else where


def stack_relation(frames: Sequence[Frame], failed_tests: Sequence[str],
                   changed: frozenset[str]) -> tuple[tuple[str, ...], str | None]:
    """The changed files the failure runs through, and what says so (the deciding frame or test file):
    a frame in a changed file (the innermost one of the first stack that has any), a failing test in a
    changed file, or a failing test whose module under test (by the test's name) was changed."""
    hits: dict[str, None] = {}
    decided_by: str | None = None
    frame_hits = _frame_hits(frames, changed)
    for frame, name in frame_hits:
        hits[name] = None
    if frame_hits:
        first_stack = frame_hits[0][0].stack
        frame, _ = [hit for hit in frame_hits if hit[0].stack == first_stack][-1]
        decided_by = f"frame {_where(frame)}"
    for test_file in _test_files(frames, failed_tests):
        own = _in_changed(test_file, changed)
        if own:
            hits[own] = None
            decided_by = decided_by or f"failing test file {own}"
            continue
        for module in _tested_modules(test_file, changed):
            hits[module] = None
            decided_by = decided_by or f"failing test {test_file} tests {module}"
    return tuple(hits), decided_by


def stack_files(frames: Sequence[Frame], failed_tests: Sequence[str], changed: frozenset[str]) -> tuple[str, ...]:
    return stack_relation(frames, failed_tests, changed)[0]


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


class Relation(NamedTuple):
    """Relatedness of a failure to the change, the changed files behind it, and what decided it."""

    relatedness: Relatedness
    files: tuple[str, ...] = ()
    decided_by: str | None = None  # "frame pkg/x.py:22 in f", "failing test tests/test_x.py tests pkg/x.py"


def relate(
    job_name: str,
    frames: Sequence[Frame],
    failed_tests: Sequence[str],
    changed_files: Sequence[ChangedFile],
    owned_globs: Sequence[str] = (),
    workflow_paths: Sequence[str] = (),
) -> Relation:
    """Relatedness of a failure to the change, the changed files behind that answer, and the deciding evidence."""
    changed = frozenset(f.filename for f in changed_files)
    in_stack, decided_by = stack_relation(frames, failed_tests, changed)
    if in_stack:
        return Relation(Relatedness.RELATED, in_stack, decided_by)
    exercised = exercised_by(job_name, changed_files, owned_globs, workflow_paths)
    if exercised:
        return Relation(Relatedness.POSSIBLY_RELATED, exercised)
    return Relation(Relatedness.UNRELATED, ())
