"""The repository's own config file (`.github/ci-triage.toml`): parse and validate, and the queries
on a parsed config. Writing a config (the default one, or one inferred from workflows) is core.config.infer.

Pure: TOML or workflow YAML text in, values or text out; reading and writing files is the CLI's job
(ci_triage/cli/config.py). Every key is optional and its default is the value a busy repository
with shared self-hosted runners wants (docs/config.md says why for each). A mistake is a
ConfigError naming the file, the key path and the problem, so a typo never silently falls back to
a default.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ci_triage.core import limits
from ci_triage.core.categories import CATEGORIES, NEVER_RETRYABLE
from ci_triage.core.decide.policy import OutageGuard, Policy
from ci_triage.core.evidence.globs import path_matches
from ci_triage.core.evidence.hosts import host_of
from ci_triage.errors import ConfigError

DEFAULT_PATH = ".github/ci-triage.toml"
DEFAULT_WORKFLOWS_DIR = ".github/workflows"


# path_matches is the config file's glob semantics; it lives in core.globs, shared with workflow filters.
__all__ = ["JobOwnership", "OutageGuard", "RepoConfig", "default_repo_config", "matches_job",
           "owned_paths", "parse_repo_config", "path_matches", "runner_host"]

@dataclass(frozen=True)
class JobOwnership:
    job: str  # fnmatch pattern on the job name, e.g. "vllm-example (eagle3)" or "vllm-example (*)"
    paths: tuple[str, ...]  # path globs (gitignore-like ** supported) of the code the job exercises


@dataclass(frozen=True)
class RepoConfig:
    policy: Policy = Policy()
    max_auto_reruns: int = 1  # automatic reruns per run
    host_pattern: str | None = None  # regex on runner_name; see runner_host()
    ownership: tuple[JobOwnership, ...] = ()
    include_jobs: tuple[str, ...] = ()  # fnmatch patterns; empty = all jobs
    exclude_jobs: tuple[str, ...] = ()
    outage: OutageGuard = OutageGuard()
    window_before_hours: float = 3.0
    window_after_hours: float = 2.0
    rules_file: str | None = None  # extra rules (TOML), relative to the repository root


def default_repo_config() -> RepoConfig:
    return RepoConfig()


# Section -> its keys. The one list the parser, the "did you mean" hints and the docs test share.
SCHEMA: dict[str, tuple[str, ...]] = {
    "policy": ("retryable_categories", "need_contention", "possibly_related_blocks_rerun", "died_early_ratio",
               "max_auto_reruns"),
    "runners": ("host_pattern",),
    "jobs": ("include", "exclude", "owns"),
    "outage": ("max_failed_jobs", "max_prs", "window_minutes"),
    "window": ("before_hours", "after_hours"),
    "rules": ("file",),
}
OWNS_KEYS = ("job", "paths")
# Categories that say nothing about the runner: rerunning them only hides the PR's fault (or, for
# "unknown", a failure nobody has explained yet).
NOT_RETRYABLE = NEVER_RETRYABLE | {"unknown"}
# A wider search window fetches more runs than contention evidence needs, and keeps datetime
# arithmetic far from its limits.
MAX_WINDOW_HOURS = 168.0

# ---------------------------------------------------------------------------------------------
# Parsing and validation


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"


def _suggest(word: str, candidates: tuple[str, ...] | list[str]) -> str | None:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


@dataclass(frozen=True)
class _Reader:
    origin: str

    def error(self, key: str, problem: str, hint: str | None = None) -> ConfigError:
        return ConfigError(f"{self.origin}: {key}: {problem}" if key else f"{self.origin}: {problem}", hint)

    def unknown(self, key: str, where: str, known: tuple[str, ...]) -> ConfigError:
        full = f"{where}.{key}" if where else key
        close = _suggest(key, known)
        if close:
            hint = f"Did you mean '{f'{where}.{close}' if where else close}'?"
        else:
            # The right key in the wrong section is the commonest slip.
            homes = [f"{section}.{key}" for section, keys in SCHEMA.items() if key in keys and section != where]
            hint = f"Did you mean '{homes[0]}'?" if homes else f"Known here: {', '.join(known)}."
        kind = "section" if not where else "key"
        return self.error(full, f"unknown {kind}", hint)

    def table(self, document: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
        value = document.get(key, {})
        if not isinstance(value, dict):
            raise self.error(where, f"must be a table ([{where}]), got {_kind(value)}")
        return value

    def integer(self, table: Mapping[str, Any], key: str, where: str, default: int, minimum: int) -> int:
        if key not in table:
            return default
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{where}.{key}", f"must be an integer, got {_kind(value)}")
        if value < minimum:
            raise self.error(f"{where}.{key}", f"must be at least {minimum}, got {value}")
        return value

    def number(self, table: Mapping[str, Any], key: str, where: str, default: float) -> float:
        if key not in table:
            return default
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"{where}.{key}", f"must be a number, got {_kind(value)}")
        if not math.isfinite(value):
            raise self.error(f"{where}.{key}", f"must be a finite number, got {value}")
        return float(value)

    def boolean(self, table: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
        if key not in table:
            return default
        value = table[key]
        if not isinstance(value, bool):
            raise self.error(f"{where}.{key}", f"must be true or false, got {_kind(value)}")
        return value

    def string(self, table: Mapping[str, Any], key: str, where: str) -> str | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, str):
            raise self.error(f"{where}.{key}", f"must be a string, got {_kind(value)}")
        if not value.strip():
            raise self.error(f"{where}.{key}", "must not be empty")
        return value

    def strings(self, table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, list):
            raise self.error(f"{where}.{key}", f"must be an array of strings, got {_kind(value)}")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error(f"{where}.{key}[{index}]", f"must be a string, got {_kind(item)}")
            if not item.strip():
                raise self.error(f"{where}.{key}[{index}]", "must not be empty")
        return tuple(value)

    def check_keys(self, table: Mapping[str, Any], where: str, known: tuple[str, ...]) -> None:
        for key in table:
            if key not in known:
                raise self.unknown(key, where, known)


def parse_repo_config(text: str, origin: str = DEFAULT_PATH) -> RepoConfig:
    """TOML text -> RepoConfig. Raises ConfigError (and nothing else) on any problem."""
    reader = _Reader(origin)
    problem = limits.toml_problem(text)  # before tomllib, which is quadratic in dotted-key parts
    if problem:
        raise reader.error("", problem, "A ci-triage config is a few kilobytes of flat tables.")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise reader.error("", f"not valid TOML: {exc}") from None
    except RecursionError:  # arrays nested thousands deep exhaust tomllib's recursive parser
        raise reader.error("", "not valid TOML: nested too deeply") from None
    reader.check_keys(document, "", tuple(SCHEMA))
    sections = {name: reader.table(document, name, name) for name in SCHEMA}
    for name, table in sections.items():
        reader.check_keys(table, name, SCHEMA[name])

    policy_table = sections["policy"]
    policy, max_auto_reruns = _policy(reader, policy_table)
    jobs = sections["jobs"]
    outage = sections["outage"]
    window = sections["window"]
    return RepoConfig(
        policy=policy,
        max_auto_reruns=max_auto_reruns,
        host_pattern=_host_pattern(reader, sections["runners"]),
        ownership=_ownership(reader, jobs),
        include_jobs=reader.strings(jobs, "include", "jobs") or (),
        exclude_jobs=reader.strings(jobs, "exclude", "jobs") or (),
        outage=OutageGuard(
            # Zero would call every failure (or none) an outage: the thresholds start at one.
            max_failed_jobs=reader.integer(outage, "max_failed_jobs", "outage", OutageGuard.max_failed_jobs, 1),
            max_prs=reader.integer(outage, "max_prs", "outage", OutageGuard.max_prs, 1),
            window_minutes=reader.integer(outage, "window_minutes", "outage", OutageGuard.window_minutes, 1),
        ),
        window_before_hours=_hours(reader, window, "before_hours", RepoConfig.window_before_hours),
        window_after_hours=_hours(reader, window, "after_hours", RepoConfig.window_after_hours),
        rules_file=_rules_file(reader, sections["rules"]),
    )


def _categories(reader: _Reader, table: Mapping[str, Any], key: str) -> frozenset[str] | None:
    names = reader.strings(table, key, "policy")
    if names is None:
        return None
    for index, name in enumerate(names):
        if name not in CATEGORIES:
            close = _suggest(name, CATEGORIES)
            hint = f"Did you mean '{close}'?" if close else f"Known categories: {', '.join(CATEGORIES)}."
            raise reader.error(f"policy.{key}[{index}]", f"unknown category '{name}'", hint)
        if name in NOT_RETRYABLE:
            raise reader.error(f"policy.{key}[{index}]", f"category '{name}' is never retryable",
                               "A failing test, an import error or an unexplained failure is evidence about "
                               "the code, not the runner; rerunning it would hide that.")
    return frozenset(names)


def _policy(reader: _Reader, table: Mapping[str, Any]) -> tuple[Policy, int]:
    defaults = Policy()
    retryable = _categories(reader, table, "retryable_categories")
    need = _categories(reader, table, "need_contention")
    if retryable is None:
        retryable = defaults.retryable_categories
    if need is None:
        # Narrowing retryable_categories alone must not trip the subset rule below.
        need = defaults.need_contention & retryable
    outside = sorted(need - retryable)
    if outside:
        raise reader.error("policy.need_contention", f"'{outside[0]}' is not in policy.retryable_categories",
                           "Contention only matters for a category that may be rerun: add it to "
                           "retryable_categories or drop it here.")
    ratio = reader.number(table, "died_early_ratio", "policy", defaults.died_early_ratio)
    if not 0 < ratio <= 1:
        raise reader.error("policy.died_early_ratio", f"must be in (0, 1], got {ratio:g}",
                           "It is the fraction of a job's usual duration before which a failure counts as early.")
    policy = Policy(
        retryable_categories=retryable,
        need_contention=need,
        possibly_related_blocks_rerun=reader.boolean(table, "possibly_related_blocks_rerun", "policy",
                                                     defaults.possibly_related_blocks_rerun),
        died_early_ratio=ratio,
    )
    return policy, reader.integer(table, "max_auto_reruns", "policy", RepoConfig.max_auto_reruns, 0)


def _host_pattern(reader: _Reader, table: Mapping[str, Any]) -> str | None:
    source = reader.string(table, "host_pattern", "runners")
    if source is None:
        return None
    too_long = limits.pattern_problem(source)
    if too_long:
        raise reader.error("runners.host_pattern", too_long)
    try:
        compiled = re.compile(source)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise reader.error("runners.host_pattern", f"does not compile as a regular expression: {exc}") from None
    if compiled.groups and "host" not in compiled.groupindex and compiled.groups != 1:
        raise reader.error("runners.host_pattern", f"has {compiled.groups} groups but none is named 'host'",
                           "Name the group that captures the host: (?P<host>...).")
    return source


def _ownership(reader: _Reader, jobs: Mapping[str, Any]) -> tuple[JobOwnership, ...]:
    entries = jobs.get("owns", [])
    if not isinstance(entries, list):
        raise reader.error("jobs.owns", f"must be an array of tables ([[jobs.owns]]), got {_kind(entries)}")
    owned = []
    for index, entry in enumerate(entries):
        where = f"jobs.owns[{index}]"
        if not isinstance(entry, dict):
            raise reader.error(where, f"must be a table with job and paths, got {_kind(entry)}")
        reader.check_keys(entry, where, OWNS_KEYS)
        job = reader.string(entry, "job", where)
        if job is None:
            raise reader.error(f"{where}.job", "is missing", "Give the job name or an fnmatch pattern on it.")
        paths = reader.strings(entry, "paths", where)
        if not paths:
            raise reader.error(f"{where}.paths", "is missing or empty",
                               "List the path globs of the code this job exercises.")
        for path_index, glob in enumerate(paths):
            problem = glob_problem(glob)
            if problem:
                raise reader.error(f"{where}.paths[{path_index}]", problem)
        owned.append(JobOwnership(job, paths))
    return tuple(owned)


def _hours(reader: _Reader, table: Mapping[str, Any], key: str, default: float) -> float:
    hours = reader.number(table, key, "window", default)
    if not 0 <= hours <= MAX_WINDOW_HOURS:
        raise reader.error(f"window.{key}", f"must be between 0 and {MAX_WINDOW_HOURS:g} hours, got {hours:g}")
    return hours


def _rules_file(reader: _Reader, table: Mapping[str, Any]) -> str | None:
    path = reader.string(table, "file", "rules")
    if path is None:
        return None
    # Read from the repository checkout: a path that leaves it would read whatever the runner has.
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path) or ".." in re.split(r"[/\\]", path):
        raise reader.error("rules.file", f"must be a path inside the repository, got '{path}'",
                           "Give it relative to the repository root, e.g. .github/ci-triage-rules.toml.")
    return path


# ---------------------------------------------------------------------------------------------
# Pure helpers the service uses


def matches_job(config: RepoConfig, job_name: str) -> bool:
    """Whether ci-triage should look at this job: in `include` (or include is empty), not in `exclude`."""
    included = not config.include_jobs or any(fnmatch.fnmatchcase(job_name, p) for p in config.include_jobs)
    return included and not any(fnmatch.fnmatchcase(job_name, p) for p in config.exclude_jobs)


def owned_paths(config: RepoConfig, job_name: str) -> tuple[str, ...]:
    """The path globs of every [[jobs.owns]] entry whose job pattern matches, in file order, once each."""
    found: dict[str, None] = {}
    for entry in config.ownership:
        if fnmatch.fnmatchcase(job_name, entry.job):
            found.update(dict.fromkeys(entry.paths))
    return tuple(found)


def runner_host(config: RepoConfig, runner_name: str | None) -> str | None:
    """The host a runner runs on per host_pattern; None without a pattern (the caller's default applies)."""
    if not runner_name or config.host_pattern is None:
        return None
    return host_of(runner_name, re.compile(config.host_pattern))


def glob_problem(glob: str) -> str | None:
    if not glob.strip("/ "):
        return "must name a path, got an empty glob"
    if glob.startswith("!"):
        return "negated globs ('!...') are not supported; list only the paths the job exercises"
    return None


# ---------------------------------------------------------------------------------------------
# Rendering: the commented default file, and one inferred from the workflows
